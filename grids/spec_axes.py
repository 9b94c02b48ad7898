"""The value axes of a grid spec: whole-number axes (batch, context, output_len) and request
rates as lists or ranges, with their limits; lists of names; the parallelism axis (listed
layouts, a degree product or ``auto``); the prefill chunk size. Each reader appends what is wrong
to ``problems`` (:func:`grids.spec.spec_from_dict` reports them all at once)."""

from __future__ import annotations

import math
from typing import Any, TypeGuard

import numpy as np

from grids.auto_layouts import DEFAULT_MAX_DEVICES
from grids.errors import SpecError
from grids.layouts import Layout, expand_degrees, parse_layout

#: the load axis of a grid over request rates takes the place of ``batch``
RATE_DIM = "request_rate"
#: largest values of the integer axes (beyond them the arithmetic leaves float precision, and no
#: deployment runs them): sequences per replica, tokens
AXIS_MAX = {"batch": 1 << 24, "context": 1 << 31, "output_len": 1 << 31}


def _plain(value: Any) -> Any:
    """``value`` with numpy scalars and arrays, tuples and ranges turned into plain Python numbers
    and lists (a spec dict built in Python may hold them; TOML has only lists)."""
    if isinstance(value, dict):
        return {str(k) if isinstance(k, np.str_) else k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, range)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


def _whole(v: Any) -> int | None:
    """``v`` as an int if it is a finite whole number (not a boolean), else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if isinstance(v, float) and not (math.isfinite(v) and v.is_integer()):
        return None
    return int(v)


def _int_axis(value: Any, key: str, problems: list[str], minimum: int = 1) -> list[int]:
    """A list of whole numbers (or a range) for the axis ``key``, each in [minimum, AXIS_MAX]."""
    n_bad = len(problems)
    vals = _int_axis_values(value, key, problems, minimum)
    top = AXIS_MAX.get(key)
    if top is not None and len(problems) == n_bad:
        big = [v for v in vals if v > top]
        if big:
            problems.append(f"{key}: {big[0]:.4g} is beyond the largest supported {key} "
                            f"({top:,}); give a smaller value")
            return []
    return vals


def _int_axis_values(value: Any, key: str, problems: list[str], minimum: int) -> list[int]:
    if isinstance(value, dict):
        unknown = set(value) - {"from", "to", "scale", "num"}
        if unknown:
            problems.append(f"{key}: unknown range keys {sorted(unknown)} (use from, to, scale "
                            f"= 'log2' | 'linear', num)")
            return []
        lo, hi = _whole(value.get("from")), _whole(value.get("to"))
        if lo is None or hi is None:
            problems.append(f"{key}: a range needs whole numbers 'from' and 'to'")
            return []
        if lo < minimum or hi < lo:
            problems.append(f"{key}: range from {lo} to {hi} must satisfy {minimum} <= from <= to")
            return []
        if hi > AXIS_MAX.get(key, hi):
            problems.append(f"{key}: range to {hi:.4g} is beyond the largest supported {key} "
                            f"({AXIS_MAX[key]:,}); give a smaller value")
            return []
        scale = value.get("scale", "log2")
        if scale == "log2":
            vals, x = [], lo
            while x <= hi:
                vals.append(x)
                x *= 2
            return vals
        if scale == "linear":
            num = _whole(value.get("num", 10))
            if num is None or num < 1:
                problems.append(f"{key}: num must be a whole number >= 1, got "
                                f"{value.get('num')!r}")
                return []
            if num == 1:
                return [lo]
            return sorted({round(lo + (hi - lo) * i / (num - 1)) for i in range(num)})
        problems.append(f"{key}: scale must be 'log2' or 'linear', got {scale!r}")
        return []
    items = value if isinstance(value, list) else [value]
    out = []
    for v in items:
        if _whole(v) is None:
            problems.append(f"{key}: {v!r} is not a whole number of tokens/sequences")
        elif v < minimum:
            problems.append(f"{key}: {v!r} must be >= {minimum}")
        else:
            out.append(int(v))
    if not items:
        problems.append(f"{key}: empty list (give at least one value)")
    if len(set(out)) != len(out):
        problems.append(f"{key}: duplicate values {sorted(out)}")
    return out


#: largest request rate of a grid [1/s]
RATE_MAX = 1e9


def _finite_number(v: Any) -> TypeGuard[float]:
    """``v`` is a finite int or float (not a boolean)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _rate_axis(value: Any, problems: list[str]) -> list[float]:
    """Request rates [1/s]: positive numbers, or a range ``{from, to, scale, num}`` (log2:
    doubling from ``from``; linear: ``num`` values)."""
    key = RATE_DIM
    if isinstance(value, dict):
        unknown = set(value) - {"from", "to", "scale", "num"}
        lo, hi = value.get("from"), value.get("to")
        if unknown or not (_finite_number(lo) and _finite_number(hi)):
            problems.append(f"{key}: a range needs numbers 'from' and 'to' (and optionally scale "
                            f"= 'log2' | 'linear', num)")
            return []
        if not 0 < lo <= hi <= RATE_MAX:
            problems.append(f"{key}: range from {lo} to {hi} must satisfy 0 < from <= to <= "
                            f"{RATE_MAX:.0e}")
            return []
        scale = value.get("scale", "log2")
        if scale == "log2":
            out, x = [], float(lo)
            while x <= hi * (1 + 1e-12):
                out.append(x)
                x *= 2
            return out
        num = _whole(value.get("num", 10))
        if scale != "linear" or num is None or num < 1:
            problems.append(f"{key}: scale must be 'log2' or 'linear' with num >= 1")
            return []
        return [float(lo)] if num == 1 else [lo + (hi - lo) * i / (num - 1) for i in range(num)]
    items = value if isinstance(value, list) else [value]
    if not items:
        problems.append(f"{key}: empty list (give at least one rate in requests per second)")
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                or not 0 < v <= RATE_MAX:
            problems.append(f"{key}: {v!r} is not a request rate in (0, {RATE_MAX:.0e}] "
                            f"requests per second")
        else:
            out.append(float(v))
    if len(set(out)) != len(out):
        problems.append(f"{key}: duplicate values {sorted(out)}")
    return out


def _str_list(value: Any, key: str, problems: list[str]) -> list[str]:
    items = value if isinstance(value, list) else [value]
    if not items:
        problems.append(f"{key}: empty list (give at least one value)")
    out = []
    for v in items:
        if isinstance(v, str) and v.strip():
            out.append(v.strip())
        else:
            problems.append(f"{key}: {v!r} is not a name (expected a string)")
    dups = sorted({x for x in out if out.count(x) > 1})
    if dups:
        problems.append(f"{key}: duplicate entries {dups}")
        out = list(dict.fromkeys(out))  # reported once: not again as ids given twice
    return out


def prefill_chunk_problem(value: Any, where: str = "prefill_chunk") -> str | None:
    """What is wrong with a prefill chunk size [token] (a whole number in [1, 2^31]), or None."""
    v = _plain(value)
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= AXIS_MAX["context"]:
        return (f"{where}: must be a whole number of tokens in [1, {AXIS_MAX['context']:,}], "
                f"got {value!r}")
    return None


def _auto_budget(value: Any, problems: list[str]) -> int | None:
    """The device budget of ``parallelism = "auto"`` / ``{ auto = true, max_devices = N }``, or
    None when the layouts are listed."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return DEFAULT_MAX_DEVICES
    if not (isinstance(value, dict) and "auto" in value):
        return None
    unknown = set(value) - {"auto", "max_devices"}
    if unknown:
        problems.append(f"parallelism: with auto, the only other key is max_devices (got "
                        f"{sorted(unknown)}); list layouts or use auto, not both")
    if value["auto"] is not True:
        problems.append(f"parallelism.auto must be true (or list the layouts), got "
                        f"{value['auto']!r}")
    n = value.get("max_devices", DEFAULT_MAX_DEVICES)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        problems.append(f"parallelism.max_devices: a whole number of devices >= 1 per replica, "
                        f"got {n!r}")
        return DEFAULT_MAX_DEVICES
    return n


def _layouts(value: Any, problems: list[str]) -> list[Layout]:
    if isinstance(value, dict):
        unknown = set(value) - {"tp", "pp", "ep", "dp", "offload"}
        if unknown:
            problems.append(f"parallelism: unknown degree keys {sorted(unknown)} "
                            f"(use tp, pp, ep, dp, offload)")
            return []
        lists = {}
        n_bad = len(problems)
        for k in ("tp", "pp", "ep", "dp", "offload"):
            v = value.get(k, [0.0] if k == "offload" else [1])
            lists[k] = v if isinstance(v, list) else [v]
            if not lists[k]:
                problems.append(f"parallelism.{k}: empty list (give at least one value)")
            for x in lists[k]:
                if k == "offload":
                    ok = (not isinstance(x, bool) and isinstance(x, (int, float))
                          and 0.0 <= x < 1.0)
                    what = "a fraction in [0, 1)"
                else:
                    ok = (_whole(x) or 0) >= 1
                    what = "a whole number >= 1"
                if not ok:
                    problems.append(f"parallelism.{k}: {x!r} is not {what}")
        if len(problems) > n_bad:
            return []
        try:
            return expand_degrees(**lists)
        except (SpecError, TypeError, ValueError) as exc:
            problems.append(f"parallelism: {exc}")
            return []
    out = []
    for name in _str_list(value, "parallelism", problems):
        try:
            out.append(parse_layout(name))
        except SpecError as exc:
            problems.extend(exc.problems)
    return out
