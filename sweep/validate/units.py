"""Fitting units of ``sweep calibrate`` and the parameters each fits (the method:
:mod:`sweep.validate.calibration`): an engine's defaults, one vendor of it, or the cross-engine
``pooled`` unit; where a fitted value is set in an overlay while fitting."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from grids.engines.parameters import POOLED, SAME_RATE
from sweep.validate.evaluator import Evaluator

#: fitted scalar parameters: name -> (lower bound, upper bound, optimiser scale)
BOUNDS = {
    "bandwidth": (0.05, 1.0, 1.0),
    "compute": (0.05, 1.0, 1.0),  # decode_compute.<dtype>, prefill_compute.<dtype>
    "iteration_overhead": (0.0, 20e-3, 1e-3),
    "request_overhead": (0.0, 0.2, 1e-3),
    "kv8_efficiency": (0.05, 1.0, 1.0),
}
#: compute dtypes fitted as one factor: fp16 and bf16 run at the same tensor-core rate on every
#: catalog device that has both (:data:`~grids.engines.parameters.SAME_RATE`), so a difference
#: between their fits would only absorb other differences between the sources that used each
#: (one 16-bit factor, fitted as bf16 and written to both)
TIED_DTYPES = {d: t for d, t in SAME_RATE.items() if t == "bf16"}
#: metrics that inform decode and prefill parameters
DECODE_METRICS = {"tpot", "throughput", "total_throughput", "e2e_latency", "tokens_per_joule",
                  "total_tokens_per_joule"}
PREFILL_METRICS = {"ttft", "e2e_latency", "throughput", "total_throughput", "prefill_throughput"}

# --------------------------------------------------------------------------------------------
# units and their parameters


@dataclass
class Unit:
    """One fitting unit: an engine's defaults, one vendor of it, or the cross-engine ``pooled``
    unit (engine and level ``pooled``)."""

    engine: str
    level: str  # "defaults", "vendor" or "pooled"
    key: str  # vendor name ("" for defaults)
    rows: np.ndarray  # indices into the usable rows
    params: list[str]  # flat names: "bandwidth", "decode_compute.bf16", ...

    @property
    def name(self) -> str:
        if self.level == POOLED:
            return POOLED
        return f"{self.engine}.{self.level}" + (f".{self.key}" if self.key else "")


@dataclass
class UnitFit:
    unit: Unit
    start: dict[str, float]
    values: dict[str, float]
    stderr: dict[str, float]
    at_bound: list[str]
    rows: int
    before: float
    after: float
    male_before: float
    male_after: float
    success: bool
    message: str = ""
    #: parameters whose fit ended at a physical bound, with the bound value they reached: a
    #: finding (the rows want what the physics does not allow, so a mechanism is missing), not a
    #: value to ship; they keep their prior (the engine file's, or the engine fit's for a vendor
    #: unit) and the rest is fitted again without them
    reverted: dict[str, float] = field(default_factory=dict)
    #: narrower-dtype compute factors raised to their floor (:func:`dtype_floors`): the value the
    #: fit (or the prior) had, and the floor it was set to and kept at while the rest was refitted
    floored: dict[tuple[str, str, str], tuple[float, float]] = field(default_factory=dict)
    #: parameters no row of the unit responds to (every column of the Jacobian zero: a memory-
    #: bound row does not see a compute factor): the fit cannot move them, so they are neither
    #: written nor reported as fitted; they keep their prior
    uninformed: list[str] = field(default_factory=list)
    #: parameters the rows barely inform: the fit's standard error exceeded the value itself
    #: (:func:`~sweep.validate.calibration.weakly_informed`), so the data do not tell it from
    #: zero; like a value at a bound it is a finding, not a value to ship: it keeps its prior and
    #: the rest is fitted again without it. The value and its standard error
    weak: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: per parameter, each vendor's share of the information the rows carry on it (the squared
    #: Jacobian of the log errors of its rows at the solution, summed)
    vendor_share: dict[str, dict[str, float]] = field(default_factory=dict)
    #: parameters of an engine's defaults that one vendor's rows alone inform (share >=
    #: ``SINGLE_VENDOR_SHARE``): the vendor and the value the joint fit gave; they keep their prior
    #: at the engine level and the value goes to that vendor's level instead
    single_vendor: dict[str, tuple[str, float]] = field(default_factory=dict)


@dataclass
class Calibration:
    fits: list[UnitFit]
    overlay: dict[str, Any]  # engine -> {"defaults": {...}, "vendor": {v: {...}}}
    rows: pd.DataFrame
    options: dict[str, Any] = field(default_factory=dict)
    #: engines named by fewer than ``min_rows`` usable rows: not fitted (engine -> rows)
    thin: dict[str, int] = field(default_factory=dict)
    #: per fitted unit, the narrower-dtype factors the final overlay leaves below their floor
    #: (:func:`dtype_floors`): findings, reported whether or not ``floor_dtypes`` raised them
    dtype_violations: dict[str, dict[tuple[str, str, str], tuple[float, float]]] = field(
        default_factory=dict)


def _bounds_of(name: str) -> tuple[float, float, float]:
    base = name.split(".")[0]
    return BOUNDS["compute" if base.endswith("_compute") else base]


def _set(overlay: dict[str, Any], engine: str, level: str, key: str, name: str, v: float) -> None:
    sec = overlay.setdefault(engine, {})
    table = sec.setdefault("defaults", {}) if level == "defaults" else \
        sec.setdefault(level, {}).setdefault(key, {})
    _set_flat(table, name, v)


def _set_flat(table: dict[str, Any], name: str, v: float) -> None:
    """``name`` (``bandwidth``, ``decode_compute.bf16``, ...) = ``v`` in one level's table, a
    tied dtype with it."""
    if "." in name:
        p, dtype = name.split(".", 1)
        for d in (dtype, *(k for k, to in TIED_DTYPES.items() if to == dtype)):
            table.setdefault(p, {})[d] = float(v)
    else:
        table[name] = float(v)


def _set_pooled(overlay: dict[str, Any], pairs: list[tuple[str, str]], name: str,
                v: float) -> None:
    """The pooled unit's value ``v`` at every level the rows reach: each engine's defaults and
    each (engine, vendor) of the rows, so no file value of a fitted parameter shadows it (the
    catalog's engines set fitted parameters at these two levels only)."""
    for engine in sorted({e for e, _ in pairs}):
        _set(overlay, engine, "defaults", "", name, v)
    for engine, vendor in pairs:
        _set(overlay, engine, "vendor", vendor, name, v)


def _apply(overlay: dict[str, Any], unit: Unit, pairs: list[tuple[str, str]], name: str,
           v: float) -> None:
    """Set one fitted value of ``unit`` in ``overlay`` (the pooled unit: everywhere its rows are)."""
    if unit.level == POOLED:
        _set_pooled(overlay, pairs, name, v)
    else:
        _set(overlay, unit.engine, unit.level, unit.key, name, v)


def _get(params: Any, name: str) -> float:
    if "." in name:
        p, dtype = name.split(".", 1)
        return float(getattr(params, p)[dtype])
    return float(getattr(params, name))


def unit_params(rows: pd.DataFrame, dtypes: pd.Series) -> list[str]:
    """The parameters a unit's rows carry information on (see the module docstring)."""
    metrics = set(rows["metric"])
    dtypes = dtypes.map(lambda d: TIED_DTYPES.get(d, d))
    out = ["bandwidth", "iteration_overhead"]
    for dt in sorted(set(dtypes[rows["metric"].isin(DECODE_METRICS)])):
        out.append(f"decode_compute.{dt}")
    for dt in sorted(set(dtypes[rows["metric"].isin(PREFILL_METRICS)])):
        out.append(f"prefill_compute.{dt}")
    if "ttft" in metrics or "e2e_latency" in metrics:
        out.append("request_overhead")
    if rows["precision"].str.contains(r"-kv(?:4|8)$", regex=True).any():
        out.append("kv8_efficiency")
    return out


def _build_of(ref: str) -> Any:
    """The :class:`~grids.engines.profile.Build` that ``ref`` (``<id>@<build>``) names, or None
    (a bare engine id, or the file's own build)."""
    from grids.engines import load_engine

    return load_engine(ref).active if "@" in ref else None


def fits_apart(ref: str) -> bool:
    """Whether ``ref`` (``<id>@<build>``) names a build whose file marks it ``fit_apart``: its rows
    fit its own section even when the other releases of its file fit together."""
    active = _build_of(ref)
    return active is not None and active.fit_apart


def fit_engines(ev: Evaluator, by_build: bool) -> pd.Series:
    """The engine each row fits: its engine id, or its release (``ev.engine_ref``: ``vllm@0.6.0``
    for a row whose ``engine_version`` matches that build) with ``by_build`` or where that
    build is marked ``fit_apart``."""
    refs = list(ev.engine_ref)
    engines = ev.rows["engine"].to_numpy()
    apart = {r: fits_apart(r) for r in set(refs)}
    return pd.Series([r if by_build or apart[r] else e for r, e in zip(refs, engines)],
                     index=ev.rows.index, dtype=object)


def plan_units(ev: Evaluator, min_rows: int, by_build: bool = False) -> list[Unit]:
    """Fitting units for the rows of ``ev`` that name their engine (see the module docstring).

    With ``by_build`` a release is its own engine: the rows that run as one of a file's
    ``[builds]`` (``vllm@0.6.0``, by their ``engine_version``) fit that build's overlay section,
    and only the rest fit the file's (``vllm``), so one release's behaviour is not charged to
    another; a build with fewer than ``min_rows`` rows is not fitted and inherits the file's fit
    (or its ``fit_fallback`` build's); a build whose rows are all of one vendor fits that vendor's
    section only (``vllm@0.6.0.vendor.NVIDIA``), so that its other vendors keep their own fits.
    Without it every row fits its file's sections, whatever its release, except the rows of a
    build marked ``fit_apart``, which fit as they would with it."""
    rows = ev.rows
    stated = ~ev.engine_assumed
    refs = fit_engines(ev, by_build)
    dtypes = pd.Series(ev.compute_dtypes, index=rows.index)
    vendors = pd.Series(ev.vendors, index=rows.index)
    units: list[Unit] = []
    for engine in sorted(set(refs[stated])):
        sel = stated & refs.eq(engine).to_numpy()
        idx = np.flatnonzero(sel)
        if len(idx) < min_rows:  # too few to fit: the file's values (a build: its file's fit) stand
            continue
        vs = sorted(set(vendors.iloc[idx]))
        if "@" in engine and len(vs) == 1:
            # a build measured on one vendor only: its fit is that vendor's, so the build's other
            # vendors keep the file's (vendor) fit instead of another vendor's host costs
            units.append(_unit(engine, "vendor", vs[0], idx, rows, dtypes))
            continue
        units.append(_unit(engine, "defaults", "", idx, rows, dtypes))
        if len(vs) < 2:
            continue
        for v in vs:
            vidx = idx[vendors.iloc[idx].to_numpy() == v]
            if len(vidx) >= min_rows:
                units.append(_unit(engine, "vendor", v, vidx, rows, dtypes))
    return units


def _unit(engine: str, level: str, vendor: str, idx: np.ndarray, rows: pd.DataFrame,
          dtypes: pd.Series) -> Unit:
    """A unit of ``engine`` at ``level`` over the rows ``idx``, fitting what they inform and the
    engine (a build) does not state itself."""
    stated = build_stated(engine, vendor)
    names = unit_params(rows.iloc[idx], dtypes.iloc[idx])
    return Unit(engine, level, vendor, idx, [n for n in names if n not in stated])


def build_stated(ref: str, vendor: str) -> set[str]:
    """The parameters the build ``ref`` (``<id>@<build>``) states itself at its defaults or at
    ``vendor``'s level: they beat its fit (docs/engines.md "Builds"), so its unit does not fit
    them (a fitted value would be written and never read)."""
    active = _build_of(ref)
    if active is None:
        return set()
    out = set(active.levels.get(("defaults", ""), {}))
    if vendor:
        out |= set(active.levels.get(("vendor", vendor), {}))
    return out


def plan_pooled(ev: Evaluator, min_rows: int) -> Unit | None:
    """The cross-engine unit: every row that names its engine, except the rows of builds marked
    ``fit_apart``, where at least two engines have ``min_rows`` rows each (else None: one
    engine's fit is not a pooled value)."""
    rows = ev.rows
    # the rows of a build that fits apart describe a release unlike the file's (an eager engine
    # of 2023): they do not set the values every stack without measurements inherits either
    apart_of = {r: fits_apart(r) for r in set(ev.engine_ref)}
    apart = np.array([apart_of[r] for r in ev.engine_ref], dtype=bool)
    stated = ~np.asarray(ev.engine_assumed) & ~apart
    counts = pd.Series(rows.loc[stated, "engine"]).value_counts()
    if int((counts >= min_rows).sum()) < 2:
        return None
    idx = np.flatnonzero(stated)
    dtypes = pd.Series(ev.compute_dtypes, index=rows.index)
    return Unit(POOLED, POOLED, "", idx, unit_params(rows.iloc[idx], dtypes.iloc[idx]))


def _unit_pairs(ev: Evaluator, unit: Unit) -> list[tuple[str, str]]:
    """(engine, vendor) pairs of the unit's rows."""
    engines = ev.rows["engine"].to_numpy()[unit.rows]
    vendors = np.asarray(ev.vendors)[unit.rows]
    return sorted({(str(e), str(v)) for e, v in zip(engines, vendors)})


def _pooled_start(ev: Evaluator, unit: Unit) -> np.ndarray:
    """The pooled unit's start: per parameter the median over the rows' engines of what each
    engine file gives on the first device of its rows (no overlay)."""
    from grids.engines import resolve

    sub = Evaluator.subset(ev, unit.rows)
    engines = sub.rows["engine"].to_numpy()
    hw = sub.points.index["hardware"]
    starts = []
    for e in sorted(set(engines)):
        first = sub.points.objects["hardware"][int(hw[int(np.flatnonzero(engines == e)[0])])]
        p = resolve(str(e), first, {})
        starts.append([_get(p, name) for name in unit.params])
    return np.median(np.array(starts, dtype=np.float64), axis=0)
