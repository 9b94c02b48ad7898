"""Uncertainty bands: how far a prediction of each engine on each vendor's devices may be from a
measurement, read from ``grids/data/bands.toml``.

The file is written by ``sweep bands`` (:mod:`sweep.validate.bands`) from leave-one-publisher-out
residuals ``ln(predicted / measured)`` of the shipped measurements: a band is a factor
``f >= 1`` such that 68% of the held-out measurements of its group lie within ``[predicted / f,
predicted x f]``. Groups are (engine that serves the device, device vendor); the rules that pick
a device's band (docs/analysis.md, "Uncertainty bands"):

- a group with at least ``min_rows`` held-out rows: its own band (``calibrated``);
- a group with fewer rows: the wider of its own band and the band of a vendor without data
  (``calibrated``, level ``thin``);
- no row: the band of a vendor without data (leave-one-vendor-out residuals, each held-out
  vendor weighted equally; ``calibrated = False``);
- the ``ideal`` engine is the physics bound, not a prediction of a measured engine: no band.

Two devices of one group share the group's systematic error, so the band of their *ratio* is the
measured band of such ratios (``same_group_ratio``), not the two bands combined.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grids import tomlio
from grids.engines.parameters import engine_family
from grids.errors import SpecError

BANDS_FILE = Path(__file__).resolve().parent / "data" / "bands.toml"
#: the engine that is the physics bound (no band)
BOUND_ENGINE = "ideal"


@dataclass(frozen=True)
class Band:
    """The band of one (engine, vendor) group."""

    factor: float  # [1] >= 1, NaN = none
    rows: int  # held-out measurements behind ``factor`` (0 = none of this group)
    bias: float  # median ln(predicted / measured) of the group [1] (NaN without rows)
    level: str  # "engine x vendor", "thin", "no data" or "bound"
    calibrated: bool  # measurements of the group were in the calibration data


@dataclass(frozen=True)
class Bands:
    """The contents of a bands file."""

    groups: dict[tuple[str, str], Band]  # (engine, vendor) -> band of its held-out rows
    no_data: float  # [1] band of a vendor without measurements
    same_group_ratio: float  # [1] band of the ratio of two devices of one group (NaN = unknown)
    min_rows: int
    quantile: float
    provenance: dict[str, Any]

    def band(self, engine: str, vendor: str) -> Band:
        """The band of a device of ``vendor`` served by ``engine`` (the delegate a ``native``
        engine resolves to), by the rules of the module docstring."""
        if engine == BOUND_ENGINE:
            return Band(math.nan, 0, math.nan, "bound", False)
        # a build (``vllm@0.6.0``) carries its engine's band: the bands are measured per engine
        g = self.groups.get((engine_family(engine), vendor))
        if g is None or g.rows == 0:
            return Band(self.no_data, 0, math.nan, "no data", False)
        if g.rows >= self.min_rows:
            return Band(g.factor, g.rows, g.bias, "engine x vendor", True)
        return Band(max(g.factor, self.no_data), g.rows, g.bias, "thin", True)

    def ratio_factor(self, a: tuple[str, str], b: tuple[str, str]) -> float:
        """Band [1] of the ratio of two predictions, for devices of groups ``a`` and ``b``
        ((engine, vendor) each): the measured same-group ratio band when the groups are one,
        else the two bands combined as independent log-normal errors,
        ``exp(sqrt(ln(f_a)^2 + ln(f_b)^2))``. NaN when either has no band."""
        return float(pair_band(self.band(*a).factor, self.band(*b).factor, a == b,
                               self.same_group_ratio))


def pair_band(f_a: Any, f_b: Any, same: Any, same_ratio: float) -> Any:
    """The band [1] of the ratio of two predictions with bands ``f_a`` and ``f_b`` (arrays
    broadcast): ``same_ratio`` where ``same`` (one serving engine and vendor) and it is known,
    else ``exp(hypot(ln f_a, ln f_b))``; NaN where either band is NaN."""
    fa, fb = np.asarray(f_a, dtype=np.float64), np.asarray(f_b, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        indep = np.exp(np.hypot(np.log(fa), np.log(fb)))
    out = np.where(np.asarray(same) & math.isfinite(same_ratio), same_ratio, indep)
    return np.where(np.isfinite(fa) & np.isfinite(fb), out, np.nan)


def _number(raw: dict[str, Any], key: str, where: str, problems: list[str], *,
            low: float = 0.0) -> float:
    v = raw.get(key)
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not v >= low:
        problems.append(f"{where}.{key} must be a number >= {low:g}, not {v!r}")
        return math.nan
    return float(v)


def parse_bands(raw: dict[str, Any], file: str = "bands.toml") -> Bands:
    """A bands file's tables, checked; every problem in one :class:`SpecError`."""
    problems: list[str] = []
    prov = raw.get("provenance", {})
    settings = raw.get("settings", {})
    if not isinstance(settings, dict) or not isinstance(raw.get("groups", {}), dict):
        raise SpecError(f"{file}: [settings] and [groups] must be tables; rerun `sweep bands`")
    min_rows = settings.get("min_rows")
    if not isinstance(min_rows, int) or isinstance(min_rows, bool) or min_rows < 1:
        problems.append(f"settings.min_rows must be an integer >= 1, not {min_rows!r}")
        min_rows = 1
    quantile = _number(settings, "quantile", "settings", problems)
    no_data = _number(settings, "no_data", "settings", problems, low=1.0)
    ratio = (_number(settings, "same_group_ratio", "settings", problems, low=1.0)
             if "same_group_ratio" in settings else math.nan)
    groups: dict[tuple[str, str], Band] = {}
    for engine, table in raw.get("groups", {}).items():
        if not isinstance(table, dict):
            problems.append(f"groups.{engine} must be a table of vendors")
            continue
        for vendor, g in table.items():
            where = f"groups.{engine}.{vendor!r}"
            if not isinstance(g, dict):
                problems.append(f"{where} must be a table (factor, rows, bias)")
                continue
            rows = g.get("rows")
            if not isinstance(rows, int) or isinstance(rows, bool) or rows < 0:
                problems.append(f"{where}.rows must be an integer >= 0, not {rows!r}")
                continue
            bias = g.get("bias", math.nan)
            groups[(str(engine), str(vendor))] = Band(
                _number(g, "factor", where, problems, low=1.0), rows,
                float(bias) if isinstance(bias, (int, float)) else math.nan,
                "engine x vendor", rows > 0)
    if problems:
        raise SpecError([f"{file}: {p}" for p in problems], "uncertainty bands")
    return Bands(groups, no_data, ratio, min_rows, quantile,
                 dict(prov) if isinstance(prov, dict) else {})


def load_bands(path: str | Path) -> Bands:
    """A bands file written by ``sweep bands``."""
    return parse_bands(tomlio.load(path), Path(path).name)


@functools.cache
def shipped_bands() -> Bands | None:
    """The shipped bands (None when the package has no bands file)."""
    return load_bands(BANDS_FILE) if BANDS_FILE.exists() else None


__all__ = ["BANDS_FILE", "Band", "Bands", "load_bands", "pair_band", "parse_bands",
           "shipped_bands"]
