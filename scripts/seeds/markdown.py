"""Formatting for the report: numbers, ratios, Markdown tables and the within-a-factor verdict."""

from __future__ import annotations

import math
from typing import Any

#: "agrees" means a model/seed ratio within [1/TOLERANCE, TOLERANCE] (issue 13's 1.5x)
TOLERANCE = 1.5


def finite(x: Any) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def fnum(x: Any, nd: int = 3) -> str:
    """A number for a table: NaN/None -> 'n/a', thousands separated, ``nd`` significant digits."""
    if x is None:
        return "n/a"
    try:
        x = float(x)
    except (TypeError, ValueError):
        return str(x)
    if not math.isfinite(x):
        return "inf" if x == math.inf else "n/a"
    ax = abs(x)
    if ax >= 10 ** nd:
        return f"{x:,.0f}"
    if ax == 0:
        return "0"
    digits = max(0, nd - 1 - math.floor(math.log10(ax)))
    return f"{x:,.{digits}f}"


def fx(x: Any, nd: int = 3) -> str:
    """A ratio: '3.70x'."""
    s = fnum(x, nd)
    return s if s in ("n/a", "inf") else s + "x"


def fpct(ratio: Any) -> str:
    """A ratio as a signed percentage change (1.2 -> '+20%')."""
    return f"{(float(ratio) - 1) * 100:+.0f}%" if finite(ratio) else "n/a"


def share(x: Any) -> str:
    """A fraction as a percentage ('n/a' when undefined)."""
    return f"{float(x) * 100:.0f}%" if finite(x) else "n/a"


def table(header: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table (cells converted with str; '|' escaped)."""
    def cell(c: Any) -> str:
        return str(c).replace("|", "/").replace("\n", " ")

    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def within(model: Any, seed: Any, tol: float = TOLERANCE) -> bool | None:
    """True when model / seed is within [1/tol, tol]; None when not computable."""
    if not (finite(model) and finite(seed)) or float(seed) == 0 or float(model) <= 0:
        return None
    r = float(model) / float(seed)
    return 1 / tol <= r <= tol


def verdict_ratio(model: Any, seed: Any, tol: float = TOLERANCE) -> str:
    """'agrees (model/seed = 0.93)' or 'disagrees (model higher by 2.2x)'."""
    ok = within(model, seed, tol)
    if ok is None:
        return "not computable"
    r = float(model) / float(seed)
    if ok:
        return f"agrees (model/seed = {r:.2f})"
    return f"disagrees (model {'higher' if r > 1 else 'lower'} by {max(r, 1 / r):.1f}x)"


def qty(value: Any, field: str) -> str:
    """A catalog quantity with its unit, the dimension taken from the field name."""
    from grids.units import format_quantity

    if not finite(value):
        return "n/a"
    f = field.lower()
    dim = ("flops" if "peak" in f or "flops" in f else "bandwidth" if "bandwidth" in f
           or " bw" in f else "power" if "tdp" in f or "power" in f or "idle" in f
           else "bytes" if "capacity" in f or "memory" in f else None)
    return format_quantity(float(value), dim) if dim else fnum(value)


def code(x: Any) -> str:
    """``x`` as inline code, or '-' when empty."""
    return f"`{x}`" if x not in (None, "") else "-"
