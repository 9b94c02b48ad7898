"""The layer list: attention kind (full / sliding / chunked-local / none / linear) and MLP kind
(dense / MoE / none / linear) of every layer, from ``layer_types``, ``attention_chunk_size``, the
alternating pattern of a ``model_type``, ``sliding_window``, or Nemotron-NAS ``block_configs``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from grids.models.dims import _ReadDims
from grids.models.fields import _bool, _Ctx, _int, _show
from grids.models.moe import _Moe, _moe_layer_indices
from grids.models.tables import (
    _ALTERNATING,
    _BLOOM_TYPES,
    _FULL,
    _LAYER_TYPES,
    _LINEAR,
    _LLAMA4_CHUNK,
    _LLAMA4_TYPES,
    _MAX_FFN_MULT,
    _NONE,
    _QWEN_SLIDING,
    _SLIDING_DEFAULTS,
    _WINDOW,
    _Pattern,
)


@dataclass
class _Layer:
    attn: str  # full | window | none | linear
    kv_heads: int = 0
    mlp: str = "dense"  # dense | moe | none | linear
    inter: int = 0  # dense MLP width
    window: int = 0


@dataclass
class _Kinds:
    kinds: list[str]
    window: int = 0
    chunked: bool = False


def _layer_list(x: _Ctx, dims: _ReadDims, moe: _Moe, dense_default: int | None
                ) -> tuple[list[_Layer], int, bool]:
    """Per-layer attention and MLP; the window length [tokens] and whether it is chunked."""
    c, p, L = x.c, x.problems, dims.L
    if L is None:
        return [], 0, False
    blocks = c.get("block_configs")
    if blocks is not None:
        layers, window = _nas_layers(blocks, L, dims.H, dims.d, p)
        return layers, window, False
    att = _attention_kinds(x, L)
    moe_idx = _moe_layer_indices(c, L, p) if moe.E > 0 else set()
    I_dense = 0
    if len(moe_idx) < L:
        I_dense = _dense_width(x, dense_default)
    layers = []
    for i in range(L):
        lay = _Layer(attn=att.kinds[i], kv_heads=dims.KV or 0,
                     window=att.window if att.kinds[i] == _WINDOW else 0)
        if i in moe_idx:
            lay.mlp = "moe"
        else:
            lay.mlp, lay.inter = "dense", I_dense
        layers.append(lay)
    return layers, att.window, att.chunked


def _dense_width(x: _Ctx, default: int | None) -> int:
    c = x.c
    key = "intermediate_size_mlp" if c.get("intermediate_size_mlp") is not None \
        else "intermediate_size"
    if default is not None and (x.mt in _BLOOM_TYPES or c.get(key) is None):
        return default  # a block whose MLP width is fixed by the architecture (see _block)
    return _int(c, key, x.problems) or 0


def _attention_kinds(x: _Ctx, L: int) -> _Kinds:
    """Per-layer attention kind (full / window), the window length and its kind."""
    c, p = x.c, x.problems
    use = _bool(c, "use_sliding_window", p, None)
    if c.get("layer_types") is not None:
        return _kinds_from_layer_types(x, L)
    if c.get("attention_chunk_size") is not None or (
            "attention_chunk_size" not in c and x.types & _LLAMA4_TYPES):
        return _kinds_chunked(x, L)
    if x.mt in _ALTERNATING and use is not False:
        return _kinds_alternating(x, L, _ALTERNATING[x.mt])
    if "sliding_window" not in c and x.mt in _SLIDING_DEFAULTS and use is not False:
        window, source = _SLIDING_DEFAULTS[x.mt]
        x.assume(f"sliding_window absent: {window} on every layer ({source})")
        return _Kinds([_WINDOW] * L, window)
    if c.get("sliding_window") is None or use is False:
        return _Kinds([_FULL] * L)
    window = _int(c, "sliding_window", p) or 0
    qwen = _QWEN_SLIDING.get(x.mt)
    if qwen is not None and use is None:
        x.assume(f"use_sliding_window absent: false, so sliding_window {window} is unused "
                 f"({qwen[1]})")
        return _Kinds([_FULL] * L)
    if use is True and (c.get("max_window_layers") is not None or qwen is not None):
        if qwen is not None and qwen[0] is None:
            return _Kinds([_WINDOW] * L, window)  # the class windows every layer
        mwl = _int(c, "max_window_layers", p, required=False, default=None, minimum=0)
        if mwl is None and c.get("max_window_layers") is None:
            mwl = qwen[0] if qwen is not None else 0
            x.assume(f"max_window_layers absent: {mwl} ({qwen[1] if qwen else ''})")
        return _Kinds([_WINDOW if i >= (mwl or 0) else _FULL for i in range(L)], window)
    return _Kinds([_WINDOW] * L, window)


def _kinds_from_layer_types(x: _Ctx, L: int) -> _Kinds:
    c, p = x.c, x.problems
    layer_types = c.get("layer_types")
    if not isinstance(layer_types, list) or len(layer_types) != L:
        got = len(layer_types) if isinstance(layer_types, list) else repr(layer_types)
        p.append(f"'layer_types' must be a list of num_hidden_layers = {L} entries, "
                 f"got {_show(got)}")
        return _Kinds([_FULL] * L)
    kinds = []
    bad: dict[str, list[int]] = {}  # one problem per unsupported value, naming its layers
    for i, t in enumerate(layer_types):
        if not isinstance(t, str) or t not in _LAYER_TYPES:
            bad.setdefault(_show(t), []).append(i)
            kinds.append(_FULL)
        else:
            kinds.append(_LAYER_TYPES[t])
    for shown, layers in bad.items():
        at = ", ".join(map(str, layers[:8])) + (", ..." if len(layers) > 8 else "")
        many = f" ({len(layers)} of {L} layers)" if len(layers) > 1 else ""
        p.append(f"layer_types[{at}] = {shown} is not supported{many} (use one of "
                 f"{', '.join(sorted(_LAYER_TYPES))})")
    sliding = "sliding_attention" in layer_types
    chunked = "chunked_attention" in layer_types
    window = 0
    if sliding:
        if c.get("sliding_window") is None:
            p.append("layer_types has 'sliding_attention' layers but 'sliding_window' is "
                     "not set")
        else:
            window = _int(c, "sliding_window", p) or 0
    if chunked:
        cw = _int(c, "attention_chunk_size", p) or 0
        if sliding:
            p.append(f"layer_types mixes 'sliding_attention' (sliding_window {window}) and "
                     f"'chunked_attention' (attention_chunk_size {cw}) layers: only one window "
                     f"kind and length per model is supported")
        window = window or cw
    return _Kinds(kinds, window, chunked and not sliding)


def _kinds_chunked(x: _Ctx, L: int) -> _Kinds:
    """Llama 4: chunked local attention on RoPE layers, full attention on NoPE layers."""
    c, p = x.c, x.problems
    if c.get("attention_chunk_size") is None:
        window = _LLAMA4_CHUNK[0]
        x.assume(f"attention_chunk_size absent: {window} ({_LLAMA4_CHUNK[1]})")
    else:
        window = _int(c, "attention_chunk_size", p) or 0
    nrl = c.get("no_rope_layers")
    if isinstance(nrl, list) and nrl:
        if len(nrl) != L or any(v not in (0, 1) or isinstance(v, float) for v in nrl):
            p.append(f"'no_rope_layers' must have num_hidden_layers = {L} entries of 0 or 1, "
                     f"got {_show(nrl)}")
            return _Kinds([_WINDOW] * L, window, True)
        # HF Llama 4: 1 = RoPE layer (chunked local attention), 0 = NoPE layer (full attention)
        return _Kinds([_WINDOW if v else _FULL for v in nrl], window, True)
    if nrl is not None and nrl != []:
        p.append(f"'no_rope_layers' must be a list of 0/1 per layer, got {_show(nrl)}")
    if c.get("no_rope_layer_interval") is None:
        x.assume("no_rope_layers and no_rope_layer_interval absent: every 4th layer is a NoPE "
                 "full-attention layer (Llama4TextConfig default interval 4)")
    interval = _int(c, "no_rope_layer_interval", p, required=False, default=4)
    return _Kinds([_FULL if (i + 1) % interval == 0 else _WINDOW for i in range(L)], window, True)


def _kinds_alternating(x: _Ctx, L: int, pat: _Pattern) -> _Kinds:
    """Gemma-2/3, Cohere2, gpt-oss without layer_types: sliding layers with a global layer every
    ``period`` layers, as the HF config class builds its default layer_types."""
    c, p = x.c, x.problems
    if "sliding_window" not in c:
        x.assume(f"sliding_window absent: {pat.window} ({pat.source})")
        window = pat.window
    elif c.get("sliding_window") is None:
        return _Kinds([_FULL] * L)  # explicitly null: no local layers
    else:
        window = _int(c, "sliding_window", p) or 0
    period = pat.period
    if pat.period_key is not None:
        if c.get(pat.period_key) is None:
            x.assume(f"{pat.period_key} absent: {period} ({pat.source})")
        period = _int(c, pat.period_key, p, required=False, default=period)
    return _Kinds([_FULL if (i + 1) % period == 0 else _WINDOW for i in range(L)], window)


def _roundup(x: int, m: int) -> int:
    return -(-x // m) * m


def _ffn_mult_to_intermediate(ffn_mult: float, d: int) -> int:
    """Nemotron-NAS / DeciLM rule: ``roundup_256(int(2 * ffn_mult * d / 3))``."""
    return _roundup(int(2 * ffn_mult * d / 3), 256)


def _nas_layers(blocks: Any, L: int, H: int | None, d: int | None,
                p: list[str]) -> tuple[list[_Layer], int]:
    """Nemotron-NAS (DeciLM) heterogeneous blocks."""
    if not isinstance(blocks, list) or len(blocks) != L:
        got = len(blocks) if isinstance(blocks, list) else repr(blocks)
        p.append(f"'block_configs' must be a list of num_hidden_layers = {L} blocks, "
                 f"got {_show(got)}")
        return [], 0
    layers: list[_Layer] = []
    window = 0
    for i, b in enumerate(blocks):
        where = f"block_configs[{i}]"
        a = b.get("attention") or {} if isinstance(b, dict) else None
        f = b.get("ffn") or {} if isinstance(b, dict) else None
        if not isinstance(a, dict) or not isinstance(f, dict):
            p.append(f"{where} must be an object with 'attention' and 'ffn' objects")
            continue
        lay = _Layer(attn=_FULL)
        window = window or _nas_attention(a, lay, H, where, p)
        _nas_ffn(f, lay, d, where, p)
        layers.append(lay)
    return layers, window


def _nas_attention(a: dict, lay: _Layer, H: int | None, where: str, p: list[str]) -> int:
    if a.get("no_op"):
        lay.attn = _NONE
        return 0
    if a.get("replace_with_linear"):
        lay.attn = _LINEAR
        return 0
    n = len(p)
    g = _int(a, "n_heads_in_group", p)
    if len(p) > n:
        p[-1] = f"{where}.attention: {p[-1]}"
    elif H is not None:
        if H % g:
            p.append(f"{where}.attention: num_attention_heads {H} is not divisible by "
                     f"n_heads_in_group {g}")
        else:
            lay.kv_heads = H // g
    if a.get("window_length") is not None:
        lay.attn = _WINDOW
        lay.window = _int(a, "window_length", p) or 0
    return lay.window


def _nas_ffn(f: dict, lay: _Layer, d: int | None, where: str, p: list[str]) -> None:
    if f.get("no_op"):
        lay.mlp = "none"
    elif f.get("replace_with_linear"):
        lay.mlp = "linear"
    elif f.get("intermediate_size") is not None:
        lay.inter = _int(f, "intermediate_size", p) or 0
    else:
        m = f.get("ffn_mult")
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not (
                math.isfinite(m) and 0 < m <= _MAX_FFN_MULT):
            p.append(f"{where}.ffn: 'ffn_mult' must be a number in (0, {_MAX_FFN_MULT:g}], "
                     f"got {_show(m)}")
        elif d is not None:
            lay.inter = _ffn_mult_to_intermediate(m, d)
