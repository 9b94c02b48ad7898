"""Fit the engine catalog's parameters to published measurements (``sweep calibrate``).

What is fitted is the serving software, not the hardware: the hardware catalog states what the
best software reaches on a device (sourced or class-default achievable fractions); an engine profile
(``grids/data/engines``) states how far a serving stack falls short of that and what it costs on top
(docs/engines.md). Fitting units are hierarchical, as the engine catalog resolves:

1. ``<engine>.defaults``: one parameter set per engine, over every row that names it, where at
   least ``min_rows`` rows do (fewer: the engine file's values stand, reported). A parameter that
   one vendor's rows alone inform (:data:`SINGLE_VENDOR_SHARE` of its information) is that
   vendor's, not the engine's: it keeps its prior here, goes to the vendor's level (or to the
   vendor's own unit), and the rest is fitted again (:func:`single_vendor_params`);
2. ``<engine>.vendor.<vendor>``: the same engine on one vendor's devices, where that vendor has at
   least ``min_rows`` rows and is not the engine's only vendor; it starts from the engine's values
   (1.) and a prior pulls it toward them, so thin data stay near the engine's fit;
3. ``pooled``: one parameter set for every row that names an engine, all engines and vendors at
   once (the set applied at every level of every engine the rows name), started from the median
   of those engines' file values. It is what the measurements say about a serving stack in
   general; only its factors (:data:`~grids.engines.parameters.POOLABLE`) ship, in ``[pooled]``,
   and replace the values that the files of stacks without measurements mark ``pooled = true``
   (issue 20: such a stack inherits the pooled values, never a factor of 1 by definition). It
   does not feed the fits of 1 and 2, which start from the engine files as before.

Parameters per unit, each only where the unit's rows carry information on it: ``bandwidth``,
``decode_compute.<dtype>`` and ``prefill_compute.<dtype>`` for the compute dtypes of its rows
(fp16 and bf16 as one 16-bit factor, :data:`TIED_DTYPES`; factors on the device's achievable
efficiency, physical bounds (0.05, 1]: an engine cannot beat what the hardware catalog says the
best software reaches), ``iteration_overhead``
and ``request_overhead`` [s], ``kv8_efficiency`` where rows use an 8-bit KV cache. Device-level
values are never fitted: two devices of one vendor share their engine's parameters, so a device
at least as good in every resource is never predicted slower.

The collectives are not fitted: their cost is the algorithm the engine runs on the device's
fabric (docs/model.md section 5), from the hardware's measured bus bandwidth and the engines'
sourced per-call costs, thresholds and limits (docs/engines.md). Multi-device rows inform the
parameters above like any other row. (The ring model's ``link_efficiency`` and
``collective_latency``, which this fit used to absorb multi-device error into, were retired by
issue 20.)

A parameter whose fit ends at one of its bounds is a finding, not a value: the rows want what
the physics does not allow, so a mechanism is missing. It keeps its prior (the engine file's
value, or the engine fit's for a vendor unit), is reported (``reverted_at_bound``), and the unit's
other parameters are fitted again without it (:func:`fit_within_bounds`). Likewise a narrower
compute dtype's factor that would make a device compute it slower than the wider dtype (fp8
below bf16, fp4 below fp8, on a device with both units) is raised to the floor where it is not,
kept there and reported (``floored``; :func:`dtype_floors`). A parameter no row of the unit
responds to (its Jacobian column zero: memory-bound rows do not see a compute factor) is not
a fitted value either: it is not written and keeps its prior (``uninformed``). Nor is one the rows
barely inform, whose standard error exceeds the value itself (:data:`WEAK_RELATIVE_STDERR`): the
data do not tell it from zero, so it keeps its prior, is reported (``weakly_informed``) and the
rest is fitted again without it, as for a bound.

The objective is the log error ``ln(predicted / measured)`` of every usable row with a stated
engine, minimised robustly (:func:`scipy.optimize.least_squares`, ``loss='soft_l1'``,
``f_scale = 0.1``) plus a weak prior toward the starting values (the engine files' estimates, then
the pooled fit). Rows whose engine the source does not state are validated (with ``native``) but
never fitted. The result is an overlay (``[<engine>.defaults]``, ``[<engine>.vendor.<v>]``) with a
``[provenance]`` table, the format ``grids.engines.resolve`` applies.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import subprocess
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from grids import tomlio
from grids.engines import PARAMS, engines_dir
from grids.engines.parameters import POOLABLE, POOLED
from grids.errors import SpecError
from sweep import validate as V
from sweep.validate.evaluator import Evaluator
from sweep.validate.floors import dtype_floors, floor_label
from sweep.validate.units import (  # noqa: F401  (BOUNDS, plan_units, ... are this module's API)
    BOUNDS,
    DECODE_METRICS,
    PREFILL_METRICS,
    TIED_DTYPES,
    Calibration,
    Unit,
    UnitFit,
    _apply,
    _bounds_of,
    _get,
    _pooled_start,
    _set,
    _set_flat,
    _unit_pairs,
    fit_engines,
    plan_pooled,
    plan_units,
    unit_params,
)

DEFAULT_MIN_ROWS = 20
#: the robust losses of :func:`scipy.optimize.least_squares`
Loss = Literal["linear", "soft_l1", "huber", "cauchy", "arctan"]
DEFAULT_LOSS: Loss = "soft_l1"
DEFAULT_F_SCALE = 0.1
#: weight of the prior residuals (ln-ratio for factors, (x - start) / scale_prior for times)
PRIOR_WEIGHT = 0.05
PRIOR_TIME_SCALE = {"iteration_overhead": 2e-3, "request_overhead": 20e-3}
#: a fitted value whose standard error exceeds this multiple of the value is weakly informed: its
#: one-standard-error interval reaches zero (for a factor, a standard error of its logarithm
#: above ~1: the rows do not pin it within a factor of e), so it keeps its prior
WEAK_RELATIVE_STDERR = 1.0


def default_output() -> Path:
    """The shipped engine calibration overlay, ``grids/data/engines/calibration.toml``."""
    return engines_dir() / "calibration.toml"


def inside_installation(path: str | Path) -> bool:
    """True if ``path`` lies inside an installed copy of the package (site-packages): the tool
    never writes there. A source checkout (editable install) is the developer's own tree."""
    parts = {p.lower() for p in Path(path).resolve().parts}
    return bool(parts & {"site-packages", "dist-packages"})


# --------------------------------------------------------------------------------------------
# fitting


def fit_unit(ev: Evaluator, unit: Unit, overlay: dict[str, Any], *, loss: Loss = DEFAULT_LOSS,
             f_scale: float = DEFAULT_F_SCALE, prior_weight: float = PRIOR_WEIGHT,
             max_nfev: int = 200) -> UnitFit | None:
    """Fit ``unit``'s parameters on its rows, on top of ``overlay`` (the fits so far); returns
    None when none of its rows can be evaluated."""
    from scipy.optimize import least_squares

    sub = Evaluator.subset(ev, unit.rows)
    meas = sub.rows["value"].to_numpy(np.float64)
    pairs = _unit_pairs(ev, unit) if unit.level == POOLED else []  # where _apply sets it
    if unit.level == POOLED:
        x0 = _pooled_start(ev, unit)
    else:  # the starting point: what the engine resolves to now on a device of the unit
        from grids.engines import resolve

        first = sub.points.objects["hardware"][int(sub.points.index["hardware"][0])]
        start_params = resolve(unit.engine, first, overlay)
        x0 = np.array([_get(start_params, p) for p in unit.params], dtype=np.float64)
    lo = np.array([_bounds_of(p)[0] for p in unit.params])
    hi = np.array([_bounds_of(p)[1] for p in unit.params])
    scale = np.array([_bounds_of(p)[2] for p in unit.params])
    x0 = np.clip(x0, lo + 1e-4 * (hi - lo), hi - 1e-4 * (hi - lo))
    is_time = np.array([p.split(".")[0] in PRIOR_TIME_SCALE for p in unit.params])
    tscale = np.array([PRIOR_TIME_SCALE.get(p, 1.0) for p in unit.params])

    def overlay_for(x: np.ndarray) -> dict[str, Any]:
        o = _copy(overlay)
        for p, v in zip(unit.params, x):
            _apply(o, unit, pairs, p, v)
        return o

    def predict(x: np.ndarray) -> np.ndarray:
        return sub.predict_values(sub.tables_for(overlay_for(x)))

    pred0 = predict(x0)
    ok = np.isfinite(pred0) & (pred0 > 0)
    if not ok.any():
        return None
    log_meas = np.log(meas[ok])
    sw = math.sqrt(prior_weight)

    def residuals(z: np.ndarray) -> np.ndarray:
        x = z * scale
        p = predict(x)[ok]
        r = np.log(np.maximum(p, 1e-300)) - log_meas
        r = np.where(np.isfinite(r), r, 10.0)
        prior = np.where(is_time, (x - x0) / tscale,
                         np.log(np.maximum(x, 1e-12) / np.maximum(x0, 1e-12)))
        return np.concatenate([r, sw * prior])

    # scipy documents diff_step as array_like (a scalar applies to every variable);
    # scipy-stubs accepts only arrays and sequences
    res = least_squares(residuals, x0 / scale, bounds=(lo / scale, hi / scale), loss=loss,
                        f_scale=f_scale, diff_step=1e-3,  # type: ignore[arg-type]
                        max_nfev=max_nfev)
    x = res.x * scale
    pred1 = predict(x)
    n = int(ok.sum())
    stderr = dict.fromkeys(unit.params, math.nan)
    uninformed: list[str] = []
    try:
        jac = np.asarray(res.jac)[:n] / scale  # dense: the default 2-point Jacobian
        # a parameter no row responds to stays where the prior holds it: not a fitted value
        uninformed = [p for i, p in enumerate(unit.params) if not np.any(jac[:, i])]
        r = res.fun[:n]
        s2 = float(np.sum(r * r) / max(n - len(x), 1))
        cov = np.linalg.pinv(jac.T @ jac) * s2
        stderr = {p: float(math.sqrt(max(cov[i, i], 0.0))) for i, p in enumerate(unit.params)
                  if p not in uninformed}
        vendor_share = _vendor_shares(jac, np.asarray(ev.vendors)[unit.rows][ok], unit.params)
    except (np.linalg.LinAlgError, ValueError):
        vendor_share = {}
    tol = 1e-3 * (hi - lo)
    at_bound = [p for i, p in enumerate(unit.params) if p not in uninformed
                and (abs(x[i] - lo[i]) <= tol[i] or abs(x[i] - hi[i]) <= tol[i])]
    return UnitFit(
        unit=unit, start=dict(zip(unit.params, map(float, x0))),
        values={p: float(v) for p, v in zip(unit.params, x) if p not in uninformed},
        stderr=stderr, at_bound=at_bound, rows=n, uninformed=uninformed,
        before=V.median_abs_rel_error(pred0[ok], meas[ok]),
        after=V.median_abs_rel_error(pred1[ok], meas[ok]),
        male_before=V.mean_abs_log_error(pred0[ok], meas[ok]),
        male_after=V.mean_abs_log_error(pred1[ok], meas[ok]),
        success=bool(res.success), message=str(res.message), vendor_share=vendor_share)


def _vendor_shares(jac: np.ndarray, vendors: np.ndarray, params: list[str]
                   ) -> dict[str, dict[str, float]]:
    """Per parameter, each vendor's share of ``sum(jac**2)`` over its rows."""
    out: dict[str, dict[str, float]] = {}
    for i, p in enumerate(params):
        col = jac[:, i] ** 2
        total = float(col.sum())
        out[p] = {str(v): (float(col[vendors == v].sum()) / total if total > 0 else 0.0)
                  for v in sorted(set(vendors.tolist()))}
    return out


#: a vendor whose rows carry at least this share of the information on a parameter of an
#: engine's defaults alone informs it: the value is that vendor's, not the engine's
SINGLE_VENDOR_SHARE = 0.9


def single_vendor_params(f: UnitFit) -> dict[str, tuple[str, float]]:
    """Parameters of a multi-vendor defaults fit that one vendor's rows alone inform:
    ``{param: (vendor, fitted value)}`` (:data:`SINGLE_VENDOR_SHARE`)."""
    out = {}
    for p, shares in f.vendor_share.items():
        if len(shares) < 2 or p not in f.values:
            continue
        vendor, share = max(shares.items(), key=lambda kv: kv[1])
        if share >= SINGLE_VENDOR_SHARE and vendor:  # "": rows spanning vendors
            out[p] = (vendor, f.values[p])
    return out


def weakly_informed(f: UnitFit, weak_stderr: float = WEAK_RELATIVE_STDERR
                    ) -> dict[str, tuple[float, float]]:
    """``{param: (value, standard error)}`` of the fitted values of ``f`` whose standard error
    exceeds ``weak_stderr`` (:data:`WEAK_RELATIVE_STDERR`) times the value (a NaN standard error
    is not evidence either way and is not counted; ``inf`` counts none)."""
    return {p: (v, f.stderr[p]) for p, v in f.values.items()
            if f.stderr.get(p, math.nan) > weak_stderr * abs(v)}


def fit_within_bounds(ev: Evaluator, unit: Unit, overlay: dict[str, Any],
                      say: Any = None, floor_dtypes: bool = False,
                      weak_stderr: float = WEAK_RELATIVE_STDERR, **opts: Any
                      ) -> UnitFit | None:
    """:func:`fit_unit`, then again without every parameter that ended at a physical bound (it
    keeps its prior and is reported in ``reverted``) until none does (issue 20: a value at a
    bound is a finding, never shipped), then without every parameter the rows barely inform
    (:func:`weakly_informed`: kept at its prior, reported in ``weak``); with ``floor_dtypes``,
    also without every narrower-dtype
    compute factor that would make a device compute that dtype slower than the wider one (it is
    set to its floor, :func:`dtype_floors`, and reported in ``floored``). None when no row of the
    unit can be evaluated."""
    say = say or (lambda msg: None)
    f = fit_unit(ev, unit, overlay, **opts)
    reverted: dict[str, float] = {}
    weak: dict[str, tuple[float, float]] = {}
    floored: dict[tuple[str, str, str], tuple[float, float]] = {}
    base = overlay
    rounds = 0
    while f is not None:
        if f.at_bound:
            reverted.update({p: f.values[p] for p in f.at_bound})
            say(f"  {unit.name}: "
                f"{', '.join(f'{p} at its bound {f.values[p]:.4g}' for p in f.at_bound)}"
                f": kept at the prior, the rest refitted")
        elif new_weak := weakly_informed(f, weak_stderr):
            weak.update(new_weak)
            say(f"  {unit.name}: " + ", ".join(
                f"{p} {v:.4g} +/- {se:.3g}" for p, (v, se) in new_weak.items())
                + ": weakly informed (standard error above the value), kept at the prior, the "
                  "rest refitted")
        elif not floor_dtypes:
            break
        else:
            trial = _copy(base)
            for p, v in f.values.items():
                _set(trial, unit.engine, unit.level, unit.key, p, v)
            # a floor that rises again (the wider dtype's factor rose in the refit) is raised
            # again; at most MAX_FLOOR_ROUNDS refits
            new = {k: fl for k, fl in dtype_floors(unit, trial).items()
                   if k not in floored or fl[1] > floored[k][1] * (1 + 1e-3)}
            rounds += 1
            if not new or rounds > MAX_FLOOR_ROUNDS:
                break
            base = _copy(base)
            for k, (was, floor) in new.items():
                floored[k] = (floored[k][0] if k in floored else was, floor)
                _set(base, unit.engine, *k, floor)
            say(f"  {unit.name}: " + ", ".join(
                f"{floor_label(*k)} {was:.4g} raised to {fl:.4g}" for k, (was, fl) in new.items())
                + " (a narrower dtype is never computed slower than a wider one), the rest "
                  "refitted")
        # a parameter floored at the unit's own level, or at the vendor level of every vendor of
        # the unit's rows, no longer reaches the rows: it leaves the fit
        row_vendors = set(np.asarray(ev.vendors)[unit.rows]) if floored else set()
        own = {name for (level, key, name) in floored
               if (level, key) == (unit.level, unit.key)
               or row_vendors <= {k for (lv, k, n) in floored if lv == "vendor" and n == name}}
        free = [p for p in unit.params if p not in reverted and p not in weak and p not in own]
        if not free:
            f = dataclasses.replace(f, values={}, stderr={}, at_bound=[], after=f.before,
                                    male_after=f.male_before)
            break
        f = fit_unit(ev, dataclasses.replace(unit, params=free), base, **opts)
    if f is not None:
        f = dataclasses.replace(f, unit=unit, reverted=reverted, weak=weak, floored=floored)
    return f


#: refits a unit may take while narrower-dtype floors keep rising (``floor_dtypes``)
MAX_FLOOR_ROUNDS = 5


def _copy(overlay: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a nested dict of numbers."""
    return {k: _copy(v) if isinstance(v, dict) else v for k, v in overlay.items()}


def usable_rows(df: pd.DataFrame) -> pd.DataFrame:
    return df.loc[V.usable_mask(df)].reset_index(drop=True)


def calibrate(df: pd.DataFrame, *, min_rows: int = DEFAULT_MIN_ROWS, loss: Loss = DEFAULT_LOSS,
              f_scale: float = DEFAULT_F_SCALE, prior_weight: float = PRIOR_WEIGHT,
              max_nfev: int = 200, floor_dtypes: bool = False, pooled: bool = True,
              by_build: bool = False, weak_stderr: float = WEAK_RELATIVE_STDERR,
              progress=None) -> Calibration:
    """Fit every unit of the usable rows of ``df`` that name their engine (defaults first, then
    vendors on top of them), starting from the engine files without any overlay; then, with
    ``pooled``, the cross-engine unit (:func:`plan_pooled`) from the files alone, whose factors go
    to the overlay's ``[pooled]`` table.
    ``floor_dtypes``: raise narrower-dtype compute factors to their floor (:func:`dtype_floors`)
    instead of only reporting them (``dtype_violations``).
    ``weak_stderr``: a fitted value whose standard error exceeds this multiple of it keeps its
    prior (:func:`weakly_informed`; ``inf``: none does).
    ``by_build``: the rows of each of a file's ``[builds]`` fit that build's own overlay section
    (``["vllm@0.6.0"]``) and not the file's (:func:`plan_units`); without it only the builds
    marked ``fit_apart`` do (and their rows stay out of the pooled unit)."""
    rows = usable_rows(df)
    if rows.empty:
        raise SpecError("calibrate: the data have no usable rows (usable = yes) to fit")
    ev = Evaluator(rows, overlay={})
    say = progress or (lambda msg: None)
    overlay: dict[str, Any] = {}
    fits: list[UnitFit] = []
    units = plan_units(ev, min_rows, by_build)
    named = fit_engines(ev, by_build)[~ev.engine_assumed].value_counts()
    thin = {str(e): int(n) for e, n in named.items() if n < min_rows}
    for e, n in sorted(thin.items()):
        fallback = (f"it inherits the fit of {e.partition('@')[0]}" if "@" in e else
                    "the engine file's values stand")
        say(f"{e}: {n} usable row(s), fewer than --min-rows {min_rows}: not fitted, {fallback}")
    if not units:
        raise SpecError("calibrate: no engine has enough usable rows that name it "
                        f"(--min-rows {min_rows}); nothing to fit")
    opts: dict[str, Any] = {"loss": loss, "f_scale": f_scale, "prior_weight": prior_weight,
                            "max_nfev": max_nfev, "weak_stderr": weak_stderr}
    for unit in sorted(units, key=lambda u: (u.engine, u.level != "defaults", u.key)):
        say(f"fitting {unit.name} on {len(unit.rows)} rows: {', '.join(unit.params)}")
        f = fit_within_bounds(ev, unit, overlay, say, floor_dtypes, **opts)
        if f is not None and unit.level == "defaults":
            f = _without_single_vendor(ev, f, overlay, units, say, floor_dtypes, **opts)
        if f is None:
            say(f"  {unit.name}: no row can be evaluated, left at the file's values")
            continue
        fits.append(f)
        for k, (_, floor) in f.floored.items():
            _set(overlay, unit.engine, *k, floor)
        for p, v in f.values.items():
            _set(overlay, unit.engine, unit.level, unit.key, p, v)
    violations = {f.unit.name: found for f in fits if (found := dtype_floors(f.unit, overlay))}
    if pooled and (found_pooled := fit_pooled(ev, min_rows, say, **opts)):
        fits.append(found_pooled[0])
        overlay[POOLED] = found_pooled[1]
    return Calibration(fits, overlay, rows, options={
        "min_rows": min_rows, "loss": loss, "f_scale": f_scale, "prior_weight": prior_weight,
        "max_nfev": max_nfev, "floor_dtypes": floor_dtypes, "by_build": by_build,
        "weak_stderr": weak_stderr}, thin=thin,
        dtype_violations=violations)


def fit_pooled(ev: Evaluator, min_rows: int = DEFAULT_MIN_ROWS, say: Any = None, **opts: Any
               ) -> tuple[UnitFit, dict[str, Any]] | None:
    """Fit the cross-engine unit (:func:`plan_pooled`) from the engine files alone; returns the
    fit and the overlay's ``[pooled]`` table (its factors, :data:`POOLABLE`), or None when there
    is no such unit. A factor that reached a bound keeps its prior, the median of the files."""
    say = say or (lambda msg: None)
    unit = plan_pooled(ev, min_rows)
    if unit is None:
        return None
    say(f"fitting {unit.name} (every engine at once) on {len(unit.rows)} rows: "
        f"{', '.join(unit.params)}")
    f = fit_within_bounds(ev, unit, {}, say, **opts)
    if f is None:
        return None
    start = dict(zip(unit.params, map(float, _pooled_start(ev, unit))))
    values = {**{p: start[p] for p in (*f.reverted, *f.weak, *f.uninformed)}, **f.values}
    table: dict[str, Any] = {}
    for p in unit.params:
        if p in values and p.split(".")[0] in POOLABLE:
            _set_flat(table, p, values[p])
    return f, table


def _without_single_vendor(ev: Evaluator, f: UnitFit, overlay: dict[str, Any],
                           units: list[Unit], say: Any, floor_dtypes: bool, **opts: Any
                           ) -> UnitFit:
    """An engine's defaults fit again without the parameters one vendor's rows alone inform
    (:func:`single_vendor_params`): they keep their prior at the engine level, so that one
    vendor's rows do not set what every other vendor of the engine inherits (issue 20: coverage
    must not decide comparisons). The value goes to that vendor's level when the vendor has no
    unit of its own (which would fit it from its own rows)."""
    unit = f.unit
    single = single_vendor_params(f)
    if not single:
        return f
    say(f"  {unit.name}: " + ", ".join(f"{p} informed by {v}'s rows alone ({x:.4g})"
                                       for p, (v, x) in single.items())
        + ": set for that vendor, the engine level keeps its prior, the rest refitted")
    own = {u.key for u in units if u.engine == unit.engine and u.level == "vendor"}
    for p, (vendor, x) in single.items():
        if vendor not in own:
            _set(overlay, unit.engine, "vendor", vendor, p, x)
    free = [p for p in unit.params if p not in single and p not in f.reverted and p not in f.weak]
    g = fit_within_bounds(ev, dataclasses.replace(unit, params=free), overlay, say, floor_dtypes,
                          **opts) if free else None
    if g is None:
        g = dataclasses.replace(f, values={}, stderr={}, at_bound=[], after=f.before,
                                male_after=f.male_before)
    return dataclasses.replace(g, unit=unit, reverted={**f.reverted, **g.reverted},
                               weak={**f.weak, **g.weak},
                               floored={**f.floored, **g.floored}, single_vendor=single)


def leave_one_publisher_out(df: pd.DataFrame, *, progress=None, **opts: Any
                            ) -> dict[str, dict[str, Any]]:
    """For each publisher with usable rows: calibrate on every other publisher, predict its rows.

    Returns publisher -> {'rows': usable rows, 'results': compare() frame of the held-out rows
    with the overlay fitted without them, 'note': why it could not be tested}."""
    say = progress or (lambda msg: None)
    out: dict[str, dict[str, Any]] = {}
    use = V.usable_mask(df)
    for pub in sorted(pd.unique(df["publisher"])):
        test = (df["publisher"] == pub).to_numpy()
        n = int((test & use).sum())
        if n == 0:
            continue
        train = df.loc[~test]
        say(f"leave out {pub} ({n} rows): calibrating on the others")
        try:
            cal = calibrate(train, **opts)
            overlay = cal.overlay
            note = ""
        except SpecError as exc:
            overlay, note = {}, str(exc)
        res = V.compare(df.loc[test], overlay=overlay)
        out[pub] = {"rows": n, "results": res, "note": note}
    return out


# --------------------------------------------------------------------------------------------
# the overlay file

OVERLAY_HEADER = """\\
Fitted engine parameters, written by `sweep calibrate` (sweep/validate/calibration.py; method
and report in docs/validation.md). Do not edit by hand: rerun the command in [provenance].
grids.engines.resolve applies [<engine>.defaults] and [<engine>.vendor.<vendor>] on top of the
engine files (a device-level file value still wins), ["<engine>@<build>"] (fitted on the rows of
one of a file's [builds]) first for that build, and [pooled] (fitted on every engine's rows at
once) to the values that files of stacks without measurements mark pooled = true.
Units: factors [1], times [s]."""


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parents[2], timeout=10,
                              check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _display_path(path: str | Path) -> str:
    p = Path(path).resolve()
    root = Path(__file__).resolve().parents[2]
    try:
        return str(p.relative_to(root))
    except ValueError:
        return str(p)


def overlay_toml(cal: Calibration, *, data_path: str | Path, command: str,
                 summary: dict[str, Any], date: str | None = None) -> str:
    """The calibration overlay as TOML text: the fitted tables + ``[provenance]``."""
    date = date or _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    prov: dict[str, Any] = {
        "tool": "sweep calibrate", "command": command, "date": date,
        "data": _display_path(data_path), "data_sha256": V.file_sha256(data_path),
        "code_commit": git_commit(),
        "method": ("scipy.optimize.least_squares on ln(predicted/measured) per unit "
                   "(engine defaults, then engine x vendor"
                   + ("; a build's rows (<id>@<build>) fit their own sections, the rest the "
                      "file's" if cal.options.get("by_build") else "")
                   + f"; the pooled unit: every engine at once), loss={cal.options['loss']}, "
                   f"f_scale={cal.options['f_scale']}, prior weight "
                   f"{cal.options['prior_weight']} toward the starting values; a value whose "
                   f"standard error exceeds {cal.options.get('weak_stderr', WEAK_RELATIVE_STDERR):g} "
                   f"times it keeps its prior (weakly_informed)"),
        "bounds": "; ".join(f"{k} [{lo:g}, {hi:g}]" for k, (lo, hi, _) in BOUNDS.items()),
        "rows_usable": len(cal.rows),
        "not_fitted_too_few_rows": dict(cal.thin),
        "dtype_floors_applied": bool(cal.options.get("floor_dtypes", False)),
        "dtype_violations": {u: {floor_label(*k): [was, fl] for k, (was, fl) in v.items()}
                             for u, v in cal.dtype_violations.items()},
        **{k: v for k, v in summary.items() if v is not None},
        "unit": {f.unit.name: {
            "rows": f.rows, "parameters": list(f.values), "start": list(f.start.values()),
            "values": list(f.values.values()),
            "stderr": [f.stderr[p] for p in f.values], "at_bound": f.at_bound,
            "reverted_at_bound": list(f.reverted), "bound_reached": list(f.reverted.values()),
            "uninformed": list(f.uninformed),
            "weakly_informed": list(f.weak),
            "weakly_informed_value": [v for v, _ in f.weak.values()],
            "weakly_informed_stderr": [se for _, se in f.weak.values()],
            "floored": [floor_label(*k) for k in f.floored],
            "floored_from": [w for w, _ in f.floored.values()],
            "floored_to": [fl for _, fl in f.floored.values()],
            "single_vendor": [f"{p} -> {v}" for p, (v, _) in f.single_vendor.items()],
            "single_vendor_value": [x for _, x in f.single_vendor.values()],
            "before_median_abs_rel_error": f.before, "after_median_abs_rel_error": f.after,
        } for f in cal.fits},
    }
    return tomlio.dumps({**cal.overlay, "provenance": prov}, header=OVERLAY_HEADER)


def is_overlay_file(path: str | Path) -> bool:
    """True if ``path`` is a calibration overlay written by ``sweep calibrate`` (its
    ``[provenance]`` says so)."""
    try:
        raw = tomlio.load(Path(path))
    except (SpecError, OSError, UnicodeDecodeError):
        return False
    prov = raw.get("provenance")
    return isinstance(prov, dict) and prov.get("tool") == "sweep calibrate"


def check_overlay_output(path: str | Path, overwrite: bool = False) -> Path:
    """Check ``sweep calibrate -o`` before fitting: a ``.toml`` name, outside the installed
    package, in an existing writable directory; an existing file is replaced only if it is an
    overlay written by ``sweep calibrate`` (or with ``overwrite``)."""
    from sweep.results.target import check_file_output

    if inside_installation(path):
        raise SpecError(f"-o {path}: refusing to write into the installed package "
                        f"({Path(path).resolve().parent}); write the overlay to a path of your "
                        f"own and pass it to `sweep validate --calibration FILE` or a spec's "
                        f"`calibration = \"FILE\"`")
    return check_file_output(path, what="a calibration overlay", suffixes=(".toml",),
                             is_own=is_overlay_file, overwrite=overwrite)


def write_overlay(text: str, path: str | Path, overwrite: bool = False) -> Path:
    """Write atomically (see :func:`check_overlay_output`); when ``path`` is the shipped
    overlay, clear the engine caches."""
    from grids.engines import clear_caches
    from sweep.results.target import write_file

    path = check_overlay_output(path, overwrite)
    write_file(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    clear_caches()
    return path


def read_overlay_file(path: str | Path) -> dict[str, Any]:
    """A calibration overlay, parsed and checked, without its ``[provenance]``."""
    from grids.spec import load_overlay

    return load_overlay(path)


__all__ = ["PARAMS", "Calibration", "UnitFit", "calibrate", "default_output",
           "leave_one_publisher_out", "overlay_toml", "read_overlay_file", "write_overlay"]
