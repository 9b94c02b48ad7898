"""Dimensions and heads of a config: width, layers, query and KV heads, head size, vocabulary,
context window and whether the LM head is tied to the embedding."""

from __future__ import annotations

from dataclasses import dataclass

from grids.models.fields import _bool, _Ctx, _first, _int, _known
from grids.models.tables import (
    _BLOOM_TYPES,
    _CONTEXT_DEFAULTS,
    _FALCON_TYPES,
    _GPTJ_TYPES,
    _PRETRAINED_TIE,
    _TIE_DEFAULTS,
)


@dataclass
class _Dims:
    """The dimensions of a config without problems: every one present."""

    d: int
    L: int
    H: int
    V: int
    max_pos: int
    KV: int
    hd: int
    tied: bool


@dataclass
class _ReadDims:
    """The dimensions as read: None where the field is missing or invalid (a problem says so)."""

    d: int | None
    L: int | None
    H: int | None
    V: int | None
    max_pos: int | None
    KV: int | None
    hd: int | None
    tied: bool

    def checked(self) -> _Dims:
        """The dimensions, once the config has no problem."""
        return _Dims(_known(self.d), _known(self.L), _known(self.H), _known(self.V),
                     _known(self.max_pos), _known(self.KV), _known(self.hd), self.tied)


def _read_dims(x: _Ctx) -> _ReadDims:
    c, p = x.c, x.problems
    d = _int(c, "hidden_size", p)
    L = _int(c, "num_hidden_layers", p)
    H = _int(c, "num_attention_heads", p)
    V = _int(c, "vocab_size", p)
    max_pos = _read_context(x)
    KV = _kv_heads(x, H)
    hd = _int(c, "head_dim", p, required=False)
    if hd is None and d is not None and H is not None:
        if d % H:
            p.append(f"hidden_size {d} is not divisible by num_attention_heads {H}: "
                     f"set 'head_dim' explicitly")
        else:
            hd = d // H
    if H is not None and KV is not None and H % KV:
        p.append(f"num_attention_heads {H} is not divisible by num_key_value_heads {KV} "
                 f"(GQA needs a whole number of query heads per KV head)")
    return _ReadDims(d, L, H, V, max_pos, KV, hd, _read_tie(x))


def _read_context(x: _Ctx) -> int | None:
    if x.c.get("max_position_embeddings") is None and x.mt in _CONTEXT_DEFAULTS:
        value, source = _CONTEXT_DEFAULTS[x.mt]
        x.assume(f"max_position_embeddings absent: {value} tokens ({source})")
        return value
    return _int(x.c, "max_position_embeddings", x.problems)


def _kv_heads(x: _Ctx, H: int | None) -> int | None:
    c, p = x.c, x.problems
    if x.mt in _FALCON_TYPES:
        # HF FalconAttention: num_kv_heads if new_decoder_architecture or not multi_query, else 1
        new_arch = _bool(c, "new_decoder_architecture", p, False)
        multi_query = _bool(c, "multi_query", p, None)
        if multi_query is None:
            multi_query = True
            if not new_arch:
                x.assume("multi_query absent: FalconConfig default true (one KV head)")
        key = _first(c, ("num_kv_heads", "n_head_kv", "num_key_value_heads"))
        if not new_arch and multi_query:
            return 1
        if key is None:
            x.assume("num_kv_heads absent: FalconConfig default num_attention_heads (MHA)")
            return H
        return _int(c, key, p)
    if c.get("num_key_value_heads") is None and not (
            x.mt in _GPTJ_TYPES | _BLOOM_TYPES or c.get("kv_lora_rank") is not None
            or c.get("block_configs") is not None):
        x.assume("num_key_value_heads absent: multi-head attention (KV heads = "
                 "num_attention_heads), the HF default")
    return _int(c, "num_key_value_heads", p, required=False, default=H)


def _read_tie(x: _Ctx) -> bool:
    tied = _bool(x.c, "tie_word_embeddings", x.problems, None)
    if tied is not None:
        return tied
    value, source = _TIE_DEFAULTS.get(x.mt, _PRETRAINED_TIE)
    x.assume(f"tie_word_embeddings absent: {'tied' if value else 'untied'} "
             f"(model_type {x.mt or 'absent'!r}: {source})")
    return value
