"""Field readers of a ``config.json``: typed, bounded reads that append to ``problems`` instead of
raising (so every problem is reported at once), the context the readers share, the decoder's
config (``text_config``, GPT-2 style aliases) and its ``model_type``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grids.models.tables import (
    _ALIASES,
    _EXPERT_MAX_KEYS,
    _HINTS,
    _INT_FIELDS,
    _LAYER_KEYS,
    _MAX_DIM,
    _MAX_EXPERTS,
    _MAX_LAYERS,
)

# ----------------------------------------------------------------------------------------------
# field readers: append to `problems` instead of raising, so every problem is reported at once


def _show(v: Any) -> str:
    """``repr`` of a config value for a message: short, and safe for any value."""
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10**18:
        return f"an integer of {v.bit_length()} bits"
    try:
        text = repr(v)
    except Exception:  # e.g. nesting too deep to print
        return f"a {type(v).__name__}"
    return text if len(text) <= 80 else text[:77] + "..."


def _int(c: dict, key: str, problems: list[str], *, required: bool = True, default: Any = None,
         minimum: int = 1, maximum: int | None = None) -> Any:
    v = c.get(key)
    hint = f" ({_HINTS[key]})" if key in _HINTS else ""
    if v is None:
        if required:
            problems.append(f"missing required field '{key}'{hint}")
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (
            isinstance(v, float) and not v.is_integer()):
        problems.append(f"'{key}' must be an integer, got {_show(v)}")
        return default
    if maximum is None:
        maximum = (_MAX_LAYERS if key in _LAYER_KEYS else _MAX_EXPERTS if key in _EXPERT_MAX_KEYS
                   else _MAX_DIM)
    if not minimum <= v <= maximum:
        bound = f">= {minimum}" if v < minimum else f"<= {maximum:,} (a sane bound)"
        problems.append(f"'{key}' must be {bound}, got {_show(v)}{hint}")
        return default
    return int(v)


def _bool(c: dict, key: str, problems: list[str], default: bool | None = None) -> bool | None:
    v = c.get(key)
    if v is None:
        return default
    if not isinstance(v, bool):
        problems.append(f"'{key}' must be true or false, got {_show(v)}")
        return default
    return v


def _first(c: dict, keys: tuple[str, ...]) -> str | None:
    for k in keys:
        if c.get(k) is not None:
            return k
    return None


def _index_list(c: dict, key: str, n: int, problems: list[str]) -> list[int] | None:
    """A list of layer indices 0..n-1 (None if the key is absent)."""
    v = c.get(key)
    if v is None:
        return None
    if not isinstance(v, list):
        problems.append(f"'{key}' must be a list of layer indices, got {_show(v)}")
        return []
    bad = [x for x in v if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < n]
    if bad:
        problems.append(f"'{key}' entries must be layer indices 0..{n - 1}, got {_show(bad[:5])}")
    return [x for x in v if x not in bad]


@dataclass
class _Ctx:
    """What the readers share: the (text) config, its model types and the collected output."""

    c: dict
    top_type: str
    mt: str  # model_type of the decoder (text_config's if any, else the top-level one)
    problems: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)

    @property
    def types(self) -> set[str]:
        return {self.top_type, self.mt}

    def assume(self, text: str) -> None:
        self.assumptions.append(text)


def _text_config(cfg: dict) -> dict:
    c = cfg
    if isinstance(cfg.get("text_config"), dict):
        # multimodal wrapper (llama4, mistral3, ...): the decoder lives in text_config; a
        # top-level tie_word_embeddings applies to it when text_config does not say
        c = dict(cfg["text_config"])
        if "tie_word_embeddings" not in c and "tie_word_embeddings" in cfg:
            c["tie_word_embeddings"] = cfg["tie_word_embeddings"]
    c = dict(c)
    for alias, canon in _ALIASES:
        if canon not in c and alias in c:
            c[canon] = c[alias]
    return c


def _check_int_fields(c: dict, problems: list[str]) -> None:
    """Type and upper bound of every known integer field, used by this model or not (the readers
    check the lower bounds; identical messages are merged)."""
    for key in _INT_FIELDS:
        _int(c, key, problems, required=False, minimum=-(2**63))


def _model_types(cfg: dict, c: dict, problems: list[str]) -> tuple[str, str]:
    """model_type of the config and of its decoder (text_config's, else the same)."""
    types = []
    for where, name in ((cfg, "model_type"), (c, "text_config.model_type")):
        v = where.get("model_type")
        if v is not None and not isinstance(v, str):
            if where is cfg or isinstance(cfg.get("text_config"), dict):
                problems.append(f"'{name}' must be a string, got {_show(v)}")
            v = None
        types.append(v or "")
    top, inner = types
    return top, inner or top


def _known(v: int | None) -> int:
    """A field the readers found present and valid. They record a problem for every field they
    return as None, and a config with problems stops before its records are checked."""
    if v is None:
        raise AssertionError("a required model field is missing but no problem was recorded")
    return v
