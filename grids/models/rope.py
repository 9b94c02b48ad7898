"""Rope scaling (context extension): ``rope_scaling`` or transformers-5 ``rope_parameters``, read
into the type, factor and original window that :attr:`ModelArch.max_context` applies."""

from __future__ import annotations

import math
from dataclasses import dataclass

from grids.models.fields import _Ctx, _int, _show
from grids.models.tables import _LAYER_TYPES, _MAX_ROPE_FACTOR, _ROPE_EXTENSION, _ROPE_NO_EXTENSION


@dataclass
class _Rope:
    kind: str = ""
    factor: float = 1.0
    original: int = 0


def _read_rope(x: _Ctx) -> _Rope:
    c, p = x.c, x.problems
    key = "rope_scaling" if c.get("rope_scaling") is not None else "rope_parameters"
    rs = c.get(key)
    if rs is None:
        return _Rope()
    if not isinstance(rs, dict):
        p.append(f"'{key}' must be an object (or null), got {_show(rs)}")
        return _Rope()
    per_layer_type = sorted(set(rs) & set(_LAYER_TYPES))
    if per_layer_type:
        # transformers 5: one entry per layer type; the global (full-attention) layers count
        bad = [t for t in per_layer_type if not isinstance(rs[t], dict)]
        if bad:
            p.append(f"'{key}.{bad[0]}' must be an object, got {_show(rs[bad[0]])}")
            return _Rope()
        rs = rs.get("full_attention") or rs[per_layer_type[0]]
    kind = rs.get("rope_type", rs.get("type", "default"))
    if not isinstance(kind, str):
        p.append(f"'{key}.rope_type' must be a string, got {_show(kind)}")
        return _Rope()
    factor = rs.get("factor", 1.0)
    if factor is None:
        factor = 1.0
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not (
            math.isfinite(factor) and 1.0 <= factor <= _MAX_ROPE_FACTOR):
        p.append(f"'{key}.factor' must be a number in [1, {_MAX_ROPE_FACTOR:g}], "
                 f"got {_show(factor)}")
        factor = 1.0
    n = len(p)
    original = _int(rs, "original_max_position_embeddings", p, required=False, default=0)
    if len(p) > n:
        p[-1] = f"'{key}.{p[-1][1:]}"
    if kind not in _ROPE_NO_EXTENSION | _ROPE_EXTENSION:
        x.assume(f"{key} type {kind!r} is not recognised: no context extension beyond "
                 f"max_position_embeddings")
    return _Rope(kind, float(factor), original or 0)
