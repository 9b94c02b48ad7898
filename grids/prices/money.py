"""Money-like quantities: the units a price or cost parameter may be written in (``MONEY_UNITS``),
hours and joules per SI unit, and :func:`parse_money`, which reads ``"21.96 USD/h"`` or a plain
number into the file unit of its kind.
"""

from __future__ import annotations

import re
from typing import Any

from grids.errors import SpecError
from grids.sourced import Sourced, read_sourced
from grids.units import number_with_unit

HOURS_PER_YEAR = 8760.0  # 365 d x 24 h
HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0  # 730 h
SECONDS_PER_HOUR = 3600.0
JOULES_PER_KWH = 3.6e6

#: money-like quantities: kind -> (unit of a plain number, {accepted unit: factor to that unit})
MONEY_UNITS: dict[str, tuple[str, dict[str, float]]] = {
    "usd": ("USD", {"USD": 1.0, "kUSD": 1e3, "MUSD": 1e6}),
    "usd_per_hour": ("USD/h", {"USD/h": 1.0, "USD/hour": 1.0, "USD/hr": 1.0, "USD/min": 60.0,
                               "USD/s": SECONDS_PER_HOUR}),
    "usd_per_kwh": ("USD/kWh", {"USD/kWh": 1.0, "USD/MWh": 1e-3, "cents/kWh": 1e-2,
                                "USD/J": JOULES_PER_KWH}),
    "usd_per_kw_month": ("USD/kW/month", {"USD/kW/month": 1.0, "USD/kW-month": 1.0,
                                          "USD/kW/mo": 1.0, "USD/MW/month": 1e-3,
                                          "USD/W/month": 1e3}),
    "years": ("years", {"years": 1.0, "year": 1.0, "yr": 1.0, "y": 1.0, "months": 1.0 / 12.0,
                        "month": 1.0 / 12.0}),
    "fraction": ("1", {}),
}

_NUM = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")


# --------------------------------------------------------------------------------------------
# units


def parse_money(value: object, kind: str, where: str = "") -> float:
    """Convert a money-like quantity to the file unit of ``kind`` (``MONEY_UNITS``).

    Parameters
    ----------
    value : float or str
        A plain number in the unit of ``kind`` (``21.96``) or a string with a unit
        (``"21.96 USD/h"``, ``"0.12 USD/kWh"``, ``"163.44 USD/kW/month"``, ``"60 months"``).
    kind : str
        ``usd`` [USD], ``usd_per_hour`` [USD/h], ``usd_per_kwh`` [USD/kWh], ``usd_per_kw_month``
        [USD/(kW month)], ``years`` [year] or ``fraction`` [1] (plain numbers only).
    where : str
        Location for the error message.

    Raises
    ------
    SpecError
        Unparseable text, unknown unit, a unit of another kind, a boolean, a non-finite number.
    """
    loc = f"{where}: " if where else ""
    base, units = MONEY_UNITS[kind]

    def scale(unit: str) -> float:
        if unit in units:
            return units[unit]
        other = next((k for k, (_, u) in MONEY_UNITS.items() if unit in u), None)
        if other is not None:
            raise SpecError(f"{loc}{value!r} is in {unit}, a {other} unit, but {base} is "
                            f"expected here")
        accepted = ", ".join(units) if units else "none: give a plain number"
        raise SpecError(f"{loc}unknown unit {unit!r} in {value!r} (accepted units: {accepted})")

    return number_with_unit(value, scale, where, expected=f"a number in {base}",
                            example=f"'1.5 {base}' or a plain number in {base}", pattern=_NUM)


def _read_money(entry: Any, kind: str, where: str, problems: list[str], *,
                positive: bool = True) -> Sourced | None:
    """A sourced money-like number (``read_sourced`` with money units); problems appended."""
    if isinstance(entry, dict) and "value" in entry:
        try:
            value = parse_money(entry["value"], kind, where)
        except SpecError as exc:
            problems.extend(exc.problems)
            read_sourced({**entry, "value": 1.0}, "count", where, problems)  # source, keys
            return None
        entry = {**entry, "value": value}
    return read_sourced(entry, "count", where, problems, positive=positive)
