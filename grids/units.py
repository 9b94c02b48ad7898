"""Quantities with units, converted once to SI base units at load time.

Catalog and spec files may write a number either as a plain SI value (``3.35e12``) or as a string
with a unit (``"3.35 TB/s"``). Decimal prefixes are powers of 1000, binary prefixes (KiB, MiB, GiB,
TiB) powers of 1024; ``b`` is a bit, ``B`` a byte. Every quantity has a *dimension* and a value in
the SI base unit of that dimension:

=============  ===========  =====================================================
dimension      SI unit      accepted unit strings
=============  ===========  =====================================================
``bytes``      B            B kB MB GB TB PB KiB MiB GiB TiB
``bandwidth``  B/s          B/s kB/s MB/s GB/s TB/s PB/s GiB/s TiB/s, bits: Gb/s Tb/s Pb/s
``flops``      FLOP/s       FLOP/s GFLOP/s TFLOP/s PFLOP/s EFLOP/s, OP/s TOP/s POP/s (integer ops)
``power``      W            W kW MW
``time``       s            s ms us µs ns
``energy_per_byte``  J/B    J/B nJ/B pJ/B, per bit: pJ/bit nJ/bit (x 8)
``energy_per_flop``  J/FLOP J/FLOP nJ/FLOP pJ/FLOP fJ/FLOP (also /OP)
``count``      1            no unit
=============  ===========  =====================================================
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from grids.errors import SpecError

_DEC = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_BIN = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}


def _build_table() -> dict[str, tuple[str, float]]:
    table: dict[str, tuple[str, float]] = {}
    for p, f in _DEC.items():
        table[f"{p}B"] = ("bytes", f)
        table[f"{p}B/s"] = ("bandwidth", f)
        table[f"{p}b/s"] = ("bandwidth", f / 8.0)
        table[f"{p}bps"] = ("bandwidth", f / 8.0)
        table[f"{p}FLOP/s"] = ("flops", f)
        table[f"{p}FLOPS"] = ("flops", f)
        table[f"{p}OP/s"] = ("flops", f)
        table[f"{p}OPS"] = ("flops", f)
        table[f"{p}W"] = ("power", f)
    for p, f in _BIN.items():
        table[f"{p}B"] = ("bytes", f)
        table[f"{p}B/s"] = ("bandwidth", f)
    table.update({"s": ("time", 1.0), "ms": ("time", 1e-3), "us": ("time", 1e-6),
                  "µs": ("time", 1e-6), "ns": ("time", 1e-9)})
    for p, f in (("", 1.0), ("n", 1e-9), ("p", 1e-12), ("f", 1e-15)):
        table[f"{p}J/B"] = ("energy_per_byte", f)
        table[f"{p}J/bit"] = ("energy_per_byte", 8.0 * f)
        table[f"{p}J/FLOP"] = ("energy_per_flop", f)
        table[f"{p}J/OP"] = ("energy_per_flop", f)
    table.pop("W", None)
    table["W"] = ("power", 1.0)
    return table


UNITS = _build_table()
_NUM = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(\S*)\s*$")

SI_UNIT = {"bytes": "B", "bandwidth": "B/s", "flops": "FLOP/s", "power": "W", "time": "s",
           "energy_per_byte": "J/B", "energy_per_flop": "J/FLOP",
           "count": "1", "fraction": "1"}


def parse_quantity(value: object, dimension: str, where: str = "") -> float:
    """Convert ``value`` (number in SI units, or a string with a unit) to a float in SI units.

    Parameters
    ----------
    value : float or str
        ``3.35e12`` or ``"3.35 TB/s"``.
    dimension : str
        Expected dimension (``bytes``, ``bandwidth``, ``flops``, ``power``, ``time``, ``count``,
        ``fraction``); a unit of another dimension is an error.
    where : str
        Location used in the error message (e.g. ``"h100-sxm: memory_tiers[0].bandwidth"``).

    Raises
    ------
    SpecError
        Unparseable string, unknown unit, unit of the wrong dimension, or a non-finite number.
    """
    loc = f"{where}: " if where else ""

    def scale(unit: str) -> float:
        if unit not in UNITS:
            raise SpecError(f"{loc}unknown unit {unit!r} in {value!r} "
                            f"(a {dimension} takes {SI_UNIT.get(dimension, '?')} with an SI prefix)")
        dim, factor = UNITS[unit]
        if dim != dimension:
            raise SpecError(f"{loc}{value!r} is a {dim} but a {dimension} "
                            f"({SI_UNIT.get(dimension, '?')}) is expected here")
        return factor

    return number_with_unit(value, scale, where, expected=f"a {dimension} quantity",
                            example="'3.35 TB/s' or a plain SI number")


def number_with_unit(value: object, scale: Callable[[str], float], where: str = "", *,
                     expected: str, example: str, pattern: re.Pattern[str] = _NUM) -> float:
    """The frame every unit reader shares: a plain number as it is; a string split by
    ``pattern`` into a number and a unit, times ``scale(unit)`` (which raises :class:`SpecError`
    for a unit it does not take); a boolean, another type or a non-finite result is an error
    naming ``expected`` (e.g. "a bandwidth quantity") and, for unreadable text, ``example``."""
    loc = f"{where}: " if where else ""
    if isinstance(value, bool):
        raise SpecError(f"{loc}expected {expected}, got a boolean {value!r}")
    if isinstance(value, (int, float)):
        out = float(value)
    elif isinstance(value, str):
        m = pattern.match(value)
        if not m:
            raise SpecError(f"{loc}cannot read {value!r} as a number with a unit "
                            f"(write e.g. {example})")
        number, unit = float(m.group(1)), m.group(2)
        out = number if unit == "" else number * scale(unit)
    else:
        raise SpecError(f"{loc}expected {expected} (number or string with unit), "
                        f"got {type(value).__name__} {value!r}")
    if not math.isfinite(out):
        raise SpecError(f"{loc}{value!r} is not a finite number")
    return out


def format_quantity(value: float, dimension: str) -> str:
    """Human-readable form of an SI value (``3.35e12, 'bandwidth'`` -> ``'3.35 TB/s'``)."""
    if value is None or not math.isfinite(value):
        return "n/a"
    unit = SI_UNIT.get(dimension, "")
    if dimension in ("count", "fraction"):
        return f"{value:g}"
    if dimension == "time":
        for f, u in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
            if abs(value) >= f:
                return f"{value / f:.3g} {u}"
        return f"{value:.3g} s"
    for p in ("E", "P", "T", "G", "M", "k"):
        f = _DEC[p]
        if abs(value) >= f:
            return f"{value / f:.3g} {p}{unit}"
    return f"{value:.3g} {unit}"
