"""Per-token traffic of the layer list: K+V cache elements, attention FLOPs (decode and prefill,
full-attention and windowed layers) and activation elements."""

from __future__ import annotations

from dataclasses import dataclass

from grids.models.dims import _Dims
from grids.models.layers import _Layer
from grids.models.mla import _Mla
from grids.models.moe import _Moe
from grids.models.tables import _FULL, _WINDOW


@dataclass
class _Traffic:
    kv_full: int = 0
    kv_win: int = 0
    f_full_dec: float = 0.0
    f_win_dec: float = 0.0
    f_full_pre: float = 0.0
    f_win_pre: float = 0.0
    act: int = 0


def _traffic(dims: _Dims, mla: _Mla | None, moe: _Moe, layers: list[_Layer]) -> _Traffic:
    d, H, hd = dims.d, dims.H, dims.hd
    out = _Traffic()
    for lay in layers:
        if lay.attn in (_FULL, _WINDOW):
            if mla is not None:
                kv = mla.kv_lora + mla.rope
                fd = 2.0 * H * ((mla.kv_lora + mla.rope) + mla.kv_lora)  # absorbed decode
                fp = 2.0 * H * ((mla.nope + mla.rope) + mla.vdim)
            else:
                kv = 2 * lay.kv_heads * hd
                fd = fp = 2.0 * H * (hd + hd)
            if lay.attn == _FULL:
                out.kv_full += kv
                out.f_full_dec += fd
                out.f_full_pre += fp
            else:
                out.kv_win += kv
                out.f_win_dec += fd
                out.f_win_pre += fp
        if lay.mlp == "moe":
            width = moe.k_top * moe.I_e + moe.shared_width
        elif lay.mlp == "dense":
            width = lay.inter
        elif lay.mlp == "linear":
            width = d
        else:
            width = 0
        out.act += 4 * d + 2 * width
    return out
