"""Fit the catalog's efficiency parameters to published measurements (``sweep calibrate``).

Per device (falling back to one set per architecture class where a device has fewer than
``min_rows`` usable rows), three parameters are fitted, starting from the *uncalibrated* catalog:

* ``bandwidth_efficiency`` (achievable fraction of peak memory bandwidth), bounds [0.05, 1];
* ``flops_efficiency`` (achievable fraction of dense peak FLOP/s), bounds [0.05, 1];
* ``layer_overhead`` (per layer per forward pass), bounds [0, 200 us].

The objective is the log error ``ln(predicted / measured)`` of every usable row that fits in the
model, minimised robustly (:func:`scipy.optimize.least_squares`, ``loss='soft_l1'`` with
``f_scale = 0.1``, i.e. residuals beyond ~10% count linearly), plus a weak prior
(``PRIOR_WEIGHT``) pulling each parameter toward its uncalibrated value so that directions the data
do not constrain stay at the documented defaults instead of drifting to a bound. Idle power is not
fitted: it would need power or energy rows (there are none usable in the shipped data) and the
overlay format of :mod:`grids.hardware` carries efficiency fields only.

The result is written as the TOML overlay ``grids/data/calibration.toml`` (``[device.<id>]``
tables of plain numbers, applied by :func:`grids.hardware.parse_device` when ``calibrated=True``)
with a ``[provenance]`` table: date, sha256 of the measurements file, code commit, rows used per
device, error before and after, leave-one-source-out error and the command. Devices without rows
are not in the overlay and keep their documented class defaults.
"""

from __future__ import annotations

import datetime as _dt
import math
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from grids import tomlio
from grids.errors import SpecError
from grids.hardware import (
    apply_overlay,
    calibration_path,
    clear_caches,
    load_device,
)
from kernels.params import HW
from sweep import validate as V

#: fitted parameters: name -> (lower, upper, unit scale used inside the optimiser)
PARAMS = {
    "bandwidth_efficiency": (0.05, 1.0, 1.0),
    "flops_efficiency": (0.05, 1.0, 1.0),
    "layer_overhead": (0.0, 200e-6, 1e-6),  # optimised in microseconds
}
PARAM_NAMES = tuple(PARAMS)
DEFAULT_MIN_ROWS = 8
DEFAULT_LOSS = "soft_l1"
DEFAULT_F_SCALE = 0.1
#: weight of the prior residuals (ln-ratio for efficiencies, (overhead - start) / 20 us)
PRIOR_WEIGHT = 0.05
PRIOR_OVERHEAD_SCALE = 20e-6

_TIER_EFF = [HW[f"tier{i}_efficiency"] for i in range(3)] + [HW["host_efficiency"]]
_FEFF = HW["flops_efficiency"]
_OVH = HW["layer_overhead"]


def default_output() -> Path:
    return calibration_path()


def overlay_devices(ids: list[str], overlay: dict[str, Any] | None,
                    base: dict[str, Any] | None = None) -> dict[str, Any]:
    """Uncalibrated catalog devices with ``overlay`` (a parsed calibration TOML) applied: the
    ``[device.<id>]`` table, else the ``[class.<cls>]`` table, as the catalog loader does.
    ``base`` (label -> Device) replaces the catalog look-up for its labels."""
    out = {}
    base = base or {}
    for i in ids:
        try:
            dev = base[i] if i in base else load_device(i, calibrated=False)
        except SpecError:
            continue  # reported by the evaluator with the rows that use it
        out[i] = apply_overlay(dev, overlay or {})
    return out


def _set_params(hw: np.ndarray, rows: list[int], x: np.ndarray) -> None:
    bw, fe, ovh = x
    for r in rows:
        hw[r, _TIER_EFF] = bw
        hw[r, _FEFF] = fe
        hw[r, _OVH] = ovh


# --------------------------------------------------------------------------------------------
# fitting


@dataclass
class UnitFit:
    """The fit of one parameter set (a device, or a class pooled over its devices)."""

    name: str
    basis: str  # 'device' or 'class <cls>'
    devices: list[str]
    rows: int
    start: dict[str, float]
    values: dict[str, float]
    stderr: dict[str, float]
    at_bound: list[str]
    before: float  # median abs rel error at the start
    after: float
    male_before: float
    male_after: float
    success: bool
    message: str = ""


@dataclass
class Calibration:
    """All fits of one calibration run."""

    device_fits: dict[str, UnitFit]
    class_fits: dict[str, UnitFit]
    overlay: dict[str, dict[str, float]]  # device id -> parameter values written
    basis: dict[str, str]  # device id -> 'device' | 'class <cls>'
    rows: pd.DataFrame  # the usable rows
    fit_rows: dict[str, int] = field(default_factory=dict)  # device -> rows that fit
    options: dict[str, Any] = field(default_factory=dict)


def _start_values(dev: Any) -> np.ndarray:
    bw = dev.tiers[0].efficiency if dev.tiers else dev.efficiency.bandwidth_efficiency
    return np.array([bw, dev.efficiency.flops_efficiency, dev.efficiency.layer_overhead])


def fit_unit(rows: pd.DataFrame, devices: dict[str, Any], dev_ids: list[str], name: str,
             basis: str, *, loss: str = DEFAULT_LOSS, f_scale: float = DEFAULT_F_SCALE,
             prior_weight: float = PRIOR_WEIGHT, whatif: dict[str, Any] | None = None
             ) -> UnitFit | None:
    """Fit one parameter set shared by ``dev_ids`` on ``rows`` (their usable rows).

    Returns None when no row fits in the model.
    """
    from scipy.optimize import least_squares

    ev = V.Evaluator(rows, devices=devices, **(whatif or {}))
    base = ev.hw_table()
    hw_rows = [r for d in dev_ids for r in ev.hw_rows(d)]
    meas = rows["value"].to_numpy(np.float64)
    pred0 = ev.predict_values(base)
    ok = np.isfinite(pred0) & (pred0 > 0)
    if not ok.any():
        return None
    starts = np.array([_start_values(devices[d]) for d in dev_ids])
    x0 = np.exp(np.mean(np.log(np.maximum(starts, 1e-12)), axis=0))  # geometric mean
    x0[2] = float(np.mean(starts[:, 2]))
    lo = np.array([PARAMS[p][0] for p in PARAM_NAMES])
    hi = np.array([PARAMS[p][1] for p in PARAM_NAMES])
    scale = np.array([PARAMS[p][2] for p in PARAM_NAMES])
    x0 = np.clip(x0, lo + 1e-3 * (hi - lo), hi - 1e-3 * (hi - lo))
    z0 = x0 / scale
    log_meas = np.log(meas[ok])
    sw = math.sqrt(prior_weight)

    def residuals(z: np.ndarray) -> np.ndarray:
        x = z * scale
        hw = base.copy()
        _set_params(hw, hw_rows, x)
        p = ev.predict_values(hw)[ok]
        r = np.log(np.maximum(p, 1e-300)) - log_meas
        r = np.where(np.isfinite(r), r, 10.0)
        prior = sw * np.array([math.log(x[0] / x0[0]), math.log(x[1] / x0[1]),
                               (x[2] - x0[2]) / PRIOR_OVERHEAD_SCALE])
        return np.concatenate([r, prior])

    res = least_squares(residuals, z0, bounds=(lo / scale, hi / scale), loss=loss,
                        f_scale=f_scale, diff_step=1e-3, x_scale=np.array([0.1, 0.1, 10.0]),
                        max_nfev=400)
    x = res.x * scale
    hw = base.copy()
    _set_params(hw, hw_rows, x)
    pred1 = ev.predict_values(hw)
    # approximate standard errors from the Jacobian of the data residuals (robust scale)
    stderr = dict.fromkeys(PARAM_NAMES, math.nan)
    n = int(ok.sum())
    try:
        jac = res.jac[:n] / scale  # d r / d x
        r = res.fun[:n]
        dof = max(n - len(x), 1)
        s2 = float(np.sum(r * r) / dof)
        cov = np.linalg.pinv(jac.T @ jac) * s2
        stderr = {p: float(math.sqrt(max(cov[i, i], 0.0))) for i, p in enumerate(PARAM_NAMES)}
    except (np.linalg.LinAlgError, ValueError):
        pass
    at_bound = [p for i, p in enumerate(PARAM_NAMES)
                if abs(x[i] - lo[i]) <= 1e-3 * (hi[i] - lo[i])
                or abs(x[i] - hi[i]) <= 1e-3 * (hi[i] - lo[i])]
    return UnitFit(
        name=name, basis=basis, devices=list(dev_ids), rows=n,
        start=dict(zip(PARAM_NAMES, map(float, x0))), values=dict(zip(PARAM_NAMES, map(float, x))),
        stderr=stderr, at_bound=at_bound,
        before=V.median_abs_rel_error(pred0[ok], meas[ok]),
        after=V.median_abs_rel_error(pred1[ok], meas[ok]),
        male_before=V.mean_abs_log_error(pred0[ok], meas[ok]),
        male_after=V.mean_abs_log_error(pred1[ok], meas[ok]),
        success=bool(res.success), message=str(res.message))


def usable_rows(df: pd.DataFrame) -> pd.DataFrame:
    return df.loc[V.usable_mask(df)].reset_index(drop=True)


def calibrate(df: pd.DataFrame, *, min_rows: int = DEFAULT_MIN_ROWS, loss: str = DEFAULT_LOSS,
              f_scale: float = DEFAULT_F_SCALE, prior_weight: float = PRIOR_WEIGHT,
              whatif: dict[str, Any] | None = None, devices: dict[str, Any] | None = None,
              progress=None) -> Calibration:
    """Fit per-device (or per-class for thin devices) parameter sets on the usable rows of
    ``df`` (a table from :func:`sweep.validation.read_measurements`).

    ``devices`` (hardware label -> uncalibrated Device) overrides the catalog look-up, e.g. to
    fit separate sets for subsets of one device's rows in a diagnostic.
    """
    rows = usable_rows(df)
    if rows.empty:
        raise SpecError("calibrate: the data have no usable rows (usable = yes) to fit")
    ids = [str(v) for v in pd.unique(rows["hardware"])]
    given = dict(devices or {})
    devices = {}
    problems = []
    for i in ids:
        try:
            devices[i] = given[i] if i in given else load_device(i, calibrated=False)
        except SpecError as exc:
            problems.append(f"hardware {i!r}: {exc.problems[0]}")
    if problems:
        raise SpecError(problems, "calibrate")
    # which rows fit in the model (independent of the fitted parameters)
    fit_ok = np.isfinite(V.Evaluator(rows, devices=devices, **(whatif or {})).predict_values())
    counts = rows.loc[fit_ok, "hardware"].value_counts().to_dict()
    say = progress or (lambda msg: None)
    opts = {"loss": loss, "f_scale": f_scale, "prior_weight": prior_weight, "whatif": whatif}
    class_fits: dict[str, UnitFit] = {}
    by_class: dict[str, list[str]] = {}
    for i in ids:
        by_class.setdefault(devices[i].cls, []).append(i)
    for cls, members in sorted(by_class.items()):
        members = [m for m in members if counts.get(m, 0) > 0]
        if not members:
            continue
        say(f"fitting class {cls} on {sum(counts[m] for m in members)} rows of "
            f"{', '.join(members)}")
        sub = rows[rows["hardware"].isin(members)]
        f = fit_unit(sub, devices, members, f"class {cls}", f"class {cls}", **opts)
        if f is not None:
            class_fits[cls] = f
    device_fits: dict[str, UnitFit] = {}
    overlay: dict[str, dict[str, float]] = {}
    basis: dict[str, str] = {}
    for i in ids:
        n = counts.get(i, 0)
        if n == 0:
            continue
        if n >= min_rows:
            say(f"fitting {i} on {n} rows")
            f = fit_unit(rows[rows["hardware"] == i], devices, [i], i, "device", **opts)
            if f is not None:
                device_fits[i] = f
                overlay[i] = dict(f.values)
                basis[i] = "device"
                continue
        cf = class_fits.get(devices[i].cls)
        if cf is not None:
            overlay[i] = dict(cf.values)
            basis[i] = f"class {devices[i].cls} ({n} < {min_rows} rows)"
    return Calibration(device_fits, class_fits, overlay, basis, rows,
                       fit_rows={k: int(v) for k, v in counts.items()},
                       options={"min_rows": min_rows, "loss": loss, "f_scale": f_scale,
                                "prior_weight": prior_weight, "whatif": whatif or {}})


def evaluate_with(df: pd.DataFrame, overlay: dict[str, dict[str, float]],
                  class_values: dict[str, dict[str, float]] | None = None,
                  whatif: dict[str, Any] | None = None,
                  devices: dict[str, Any] | None = None) -> pd.DataFrame:
    """:func:`sweep.validation.compare` with uncalibrated devices plus parameter sets
    (device id -> values; devices not in ``overlay`` take ``class_values[cls]`` if given, else
    stay uncalibrated). ``devices`` overrides the catalog look-up as in :func:`calibrate`."""
    ids = [str(v) for v in pd.unique(df.loc[V.usable_mask(df), "hardware"])]
    table = {"device": overlay, "class": class_values or {}}
    devs = overlay_devices(ids, table, base=devices)
    return V.compare(df, devices=devs, **(whatif or {}))


def leave_one_source_out(df: pd.DataFrame, *, min_rows: int = DEFAULT_MIN_ROWS,
                         loss: str = DEFAULT_LOSS, f_scale: float = DEFAULT_F_SCALE,
                         prior_weight: float = PRIOR_WEIGHT,
                         whatif: dict[str, Any] | None = None, progress=None
                         ) -> dict[str, dict[str, Any]]:
    """For each source group: fit on all other groups, test on it.

    Returns group -> {'rows': usable rows of the group, 'results': compare() frame of the held-out
    rows with devices unseen in training at their class defaults (as the shipped overlay leaves
    them), 'results_class': the same with unseen devices at the training fold's class fit,
    'note': why a group could not be tested}.
    """
    out: dict[str, dict[str, Any]] = {}
    say = progress or (lambda msg: None)
    use = V.usable_mask(df)
    for g in sorted(pd.unique(df["group"])):
        test_mask = (df["group"] == g).to_numpy()
        n_test = int((test_mask & use).sum())
        if n_test == 0:
            out[g] = {"rows": 0, "note": "no usable rows: nothing to test"}
            continue
        train = df.loc[~test_mask]
        if not V.usable_mask(train).any():
            out[g] = {"rows": n_test, "note": "no usable rows in the other sources: nothing to "
                                              "fit"}
            continue
        say(f"leave out {g}: fitting on the other sources")
        cal = calibrate(train, min_rows=min_rows, loss=loss, f_scale=f_scale,
                        prior_weight=prior_weight, whatif=whatif)
        test = df.loc[test_mask]
        cls_vals = {c: f.values for c, f in cal.class_fits.items()}
        out[g] = {"rows": n_test, "note": "",
                  "trained_devices": sorted(cal.overlay),
                  "results": evaluate_with(test, cal.overlay, whatif=whatif),
                  "results_class": evaluate_with(test, cal.overlay, cls_vals, whatif=whatif)}
    return out


# --------------------------------------------------------------------------------------------
# writing the overlay


def _display_path(path: str | Path) -> str:
    p = Path(path).resolve()
    root = Path(__file__).resolve().parents[1]
    try:
        return str(p.relative_to(root))
    except ValueError:
        return str(p)


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             cwd=Path(__file__).resolve().parent, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


OVERLAY_HEADER = """\
Fitted efficiency parameters of the hardware catalog, written by `sweep calibrate`
(sweep/validate/calibration.py; report and method in docs/validation.md). Do not edit by hand:
rerun the command in [provenance]. grids.hardware applies each [device.<id>] table on
top of the class defaults and catalog values when calibrated=True; devices without a
table keep their documented class defaults. Units: fractions, layer_overhead in s."""


def overlay_toml(cal: Calibration, *, data_path: str | Path, command: str,
                 before: dict[str, float], after: dict[str, float],
                 loso: dict[str, dict[str, float]] | None = None,
                 date: str | None = None) -> str:
    """The calibration overlay as TOML text (``[device.<id>]`` tables + ``[provenance]``)."""
    date = date or _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    device = {d: {k: float(cal.overlay[d][k]) for k in PARAM_NAMES} for d in sorted(cal.overlay)}
    prov: dict[str, Any] = {
        "tool": "sweep calibrate", "command": command, "date": date,
        "data": _display_path(data_path), "data_sha256": V.file_sha256(data_path),
        "code_commit": git_commit(),
        "fitted_parameters": list(PARAM_NAMES),
        "method": (f"scipy.optimize.least_squares on ln(predicted/measured), loss="
                   f"{cal.options['loss']}, f_scale={cal.options['f_scale']}, prior weight "
                   f"{cal.options['prior_weight']} toward the uncalibrated values, start = "
                   f"uncalibrated catalog"),
        "bounds": "bandwidth_efficiency, flops_efficiency in [0.05, 1]; layer_overhead in "
                  "[0, 200e-6] s",
        "min_rows_per_device": int(cal.options["min_rows"]),
        "not_fitted": "jitter, capacity_fraction (no data); idle power (no usable power or "
                      "energy rows, and the overlay carries efficiency fields only)",
    }
    n_fit = sum(int(f.rows) for f in cal.device_fits.values())
    n_fit += sum(int(cal.fit_rows.get(d, 0)) for d in cal.overlay if d not in cal.device_fits)
    prov["rows_usable"] = len(cal.rows)
    prov["rows_used"] = n_fit
    prov["rows_skipped"] = len(cal.rows) - n_fit
    prov["rows_skipped_reason"] = V.SKIP_NO_FIT + " (or layout incompatible)"
    prov.update({f"before_{k}": v for k, v in before.items()})
    prov.update({f"after_{k}": v for k, v in after.items()})
    prov["device"] = {}
    for dev_id in sorted(cal.overlay):
        f = cal.device_fits.get(dev_id)
        rec: dict[str, Any] = {"basis": cal.basis[dev_id]}
        if f is not None:
            rec.update(rows=f.rows, start=[f.start[p] for p in PARAM_NAMES],
                       stderr=[f.stderr[p] for p in PARAM_NAMES],
                       at_bound=f.at_bound,
                       before_median_abs_rel_error=f.before,
                       after_median_abs_rel_error=f.after,
                       before_mean_abs_log_error=f.male_before,
                       after_mean_abs_log_error=f.male_after)
        prov["device"][dev_id] = rec
    prov["class_fit"] = {cls: {
        "note": "pooled fit over the class's devices; used for devices with fewer than "
                "min_rows rows; NOT applied to devices without rows",
        "devices": f.devices, "rows": f.rows, **{p: f.values[p] for p in PARAM_NAMES},
        "after_median_abs_rel_error": f.after} for cls, f in sorted(cal.class_fits.items())}
    prov["leave_one_source_out"] = dict(loso or {})
    return tomlio.dumps({"device": device, "provenance": prov}, header=OVERLAY_HEADER)


def inside_installation(path: str | Path) -> bool:
    """True if ``path`` lies inside an installed copy of the package (site-packages): the tool
    never writes there. A source checkout (editable install) is the developer's own tree."""
    parts = {p.lower() for p in Path(path).resolve().parts}
    return bool(parts & {"site-packages", "dist-packages"})


def write_overlay(text: str, path: str | Path) -> Path:
    """Write atomically; when ``path`` is the catalog's overlay, clear the loader caches."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
    if path.resolve() == default_output().resolve():
        clear_caches()
    return path
