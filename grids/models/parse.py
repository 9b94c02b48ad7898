"""The parser: :func:`model_from_config` runs the readers over a parsed ``config.json``, reports
every problem at once, and builds the :class:`ModelArch` from the counts."""

from __future__ import annotations

from collections import Counter

from grids.errors import SpecError
from grids.models.counts import _block, _param_counts
from grids.models.dims import _read_dims
from grids.models.fields import _check_int_fields, _Ctx, _model_types, _text_config
from grids.models.layers import _layer_list
from grids.models.mla import _read_mla
from grids.models.moe import _read_moe
from grids.models.record import ModelArch
from grids.models.rope import _read_rope
from grids.models.tables import _FULL, _MAX_DIM, _WINDOW
from grids.models.traffic import _traffic


def model_from_config(cfg: dict, *, id: str = "custom", name: str | None = None,
                      sources: tuple[str, ...] | list[str] = (), published_total: int | None = None,
                      published_active: int | None = None, context: str = "") -> ModelArch:
    """Build a :class:`ModelArch` from a parsed ``config.json``; raise :class:`SpecError` with
    every problem found."""
    ctx = context or f"model {id!r}"
    if not isinstance(cfg, dict):
        raise SpecError(f"a model config must be a JSON object (dict), got {type(cfg).__name__}",
                        ctx)
    problems: list[str] = []
    c = _text_config(cfg)
    top_type, mt = _model_types(cfg, c, problems)
    _check_int_fields(c, problems)
    x = _Ctx(c, top_type, mt, problems)

    read_dims = _read_dims(x)
    rope = _read_rope(x)
    read_mla = _read_mla(x)
    moe = _read_moe(x)
    blk = _block(x, read_dims.d)
    layers, window, chunked = _layer_list(x, read_dims, moe, blk.dense_default)
    if layers and read_dims.d is not None:
        too_wide = sorted({lay.inter for lay in layers if lay.inter > _MAX_DIM})
        if too_wide:
            problems.append(f"MLP width {too_wide[0]:,} is out of range (<= {_MAX_DIM:,}): "
                            f"check intermediate_size / ffn_mult")
    if problems:
        raise SpecError(list(dict.fromkeys(problems)), ctx)

    dims = read_dims.checked()
    mla = read_mla.checked() if read_mla is not None else None
    counts = _param_counts(x, dims, mla, moe, blk, layers)
    t = _traffic(dims, mla, moe, layers)
    attn_kv = [lay.kv_heads for lay in layers if lay.attn in (_FULL, _WINDOW)]
    if mla is not None:
        n_kv_heads = dims.H
    else:
        n_kv_heads = Counter(attn_kv).most_common(1)[0][0] if attn_kv else dims.KV or 0
    head_dim = (mla.nope + mla.rope) if mla is not None else dims.hd
    n_moe = counts.n_moe
    return ModelArch(
        id=str(id), name=str(name or id), model_type=top_type or mt,
        n_layers=dims.L, d_model=dims.d, vocab_size=dims.V, n_heads=dims.H, n_kv_heads=n_kv_heads,
        head_dim=head_dim, is_mla=mla is not None, params_attn=counts.attn,
        params_dense_mlp=counts.dense, params_expert=counts.expert, n_moe_layers=n_moe,
        n_experts=moe.E if n_moe else 0, experts_per_token=moe.k_top if n_moe else 0,
        params_shared_experts=counts.shared, params_router=counts.router,
        params_embed=counts.embed, params_lm_head=counts.lm_head, lm_head_tied=dims.tied,
        params_other=counts.other, kv_elems_full=t.kv_full, kv_elems_window=t.kv_win,
        window=window if t.kv_win else 0, kv_tp_shardable=mla is None,
        attn_flops_full_decode=t.f_full_dec, attn_flops_window_decode=t.f_win_dec,
        attn_flops_full_prefill=t.f_full_pre, attn_flops_window_prefill=t.f_win_pre,
        act_elems=t.act, tp_divisor=dims.H, max_position_embeddings=dims.max_pos,
        sources=tuple(sources), published_total=published_total,
        published_active=published_active, window_chunked=chunked and t.kv_win > 0,
        rope_scaling_type=rope.kind, rope_scaling_factor=rope.factor,
        rope_original_max_position_embeddings=rope.original,
        assumptions=tuple(dict.fromkeys(x.assumptions)))
