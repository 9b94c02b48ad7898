"""Seed 002, quantitatively: the six operational regimes (section IV-A, Fig. 8), computed from any
result Dataset (the scaling strategies of section V are :mod:`sweep.analysis.strategies`).

A regime is a documented *slice* of the grid (rules on batch, context and models), a *metric*
(with its direction from the registry), an optional *SLO* and the *choice dims* a deployment may
pick freely (layout, precision, sometimes batch). Scoring, for every workload point of the slice
(every remaining combination of model, context, batch, output_len):

1. each accelerator's value is its best over the choice dims (feasible points only);
2. it is divided by the best accelerator's value at that point (for lower-is-better metrics the
   inverse), so the best gets 1, others less, and an accelerator that cannot run the point 0;
3. the regime score is the mean of these relative values over the workload points at which at
   least one accelerator is feasible, renormalised so that the best accelerator scores 1.0.

A regime whose slice is absent from the grid gives NaN scores and a ``reason``, never an error.
See docs/analysis.md for the table of definitions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from grids.errors import SpecError
from sweep.analysis import core as an
from sweep.analysis.basis import DEFAULT_BASIS, EXTENSIVE, needed_variables, normalised, parse_basis
from sweep.analysis.select import masked, metric_direction

#: typical interactive prompt: seed 002 Table III uses a 1024-token input
INTERACTIVE_CONTEXT = 1024.0
#: long-context threshold of seed 002 section IV-A ("32K+ tokens")
LONG_CONTEXT = 32768.0
#: inter-token latency SLO of the moderate-batch regime (s)
TPOT_SLO = 0.050
#: derived metric of the multi-model regime
HEADROOM = "memory_headroom"


@dataclass(frozen=True)
class Pick:
    """A rule selecting values of one dim: the one nearest ``target`` (log scale) within
    ``[lo, hi]``, or (``target`` None) every value within ``[lo, hi]``."""

    dim: str
    lo: float | None = None
    hi: float | None = None
    target: float | None = None

    def describe(self) -> str:
        rng = (f"in [{_fmt(self.lo)}, {_fmt(self.hi)}]" if self.lo is not None
               and self.hi is not None else f">= {_fmt(self.lo)}" if self.lo is not None
               else f"<= {_fmt(self.hi)}" if self.hi is not None else "any")
        if self.target is None:
            return f"{self.dim} {rng}"
        if self.lo == self.hi == self.target:
            return f"{self.dim} = {_fmt(self.target)}"
        return f"{self.dim} nearest {_fmt(self.target)} {rng}"

    def apply(self, ds: xr.Dataset) -> tuple[xr.Dataset | None, str]:
        if self.dim not in ds.coords:
            return None, f"the result has no {self.dim} coordinate"
        vals = np.asarray(ds[self.dim].values, dtype=np.float64).ravel()
        ok = np.isfinite(vals)
        if self.lo is not None:
            ok &= vals >= self.lo
        if self.hi is not None:
            ok &= vals <= self.hi
        if self.target is not None:
            i = an.nearest_log(vals, self.target, self.lo, self.hi)
            ok = np.zeros(len(vals), dtype=bool)
            if i >= 0:
                ok[i] = True
        if not ok.any():
            have = ", ".join(_fmt(v) for v in vals[:8]) + (" ..." if len(vals) > 8 else "")
            return None, f"no {self.dim} value with {self.describe()} in the grid ({have})"
        if self.dim not in ds.dims:  # a scalar coord that passes the rule
            return ds, ""
        return ds.isel({self.dim: np.flatnonzero(ok)}), ""


@dataclass(frozen=True)
class Regime:
    key: str
    title: str
    metric: str
    picks: tuple[Pick, ...]
    choose: tuple[str, ...]
    models: str = "all"  # "all" or "moe" (params_active < params_total)
    slo: tuple[str, float] | None = None  # (metric, upper limit) a point must meet
    seed_measure: str = ""
    notes: str = field(default="")

    def describe(self) -> str:
        parts = [p.describe() for p in self.picks]
        if self.models == "moe":
            parts.append("MoE models only (params_active < params_total)")
        if self.slo:
            parts.append(f"{self.slo[0]} <= {self.slo[1] * 1e3:g} ms")
        parts.append("best over " + ", ".join(self.choose))
        return "; ".join(parts)


_CTX = Pick("context", 512, 4096, INTERACTIVE_CONTEXT)

#: the six operational regimes of seed 002 section IV-A, in its order
REGIMES: tuple[Regime, ...] = (
    Regime("low_latency", "Low-latency single-stream", "e2e_latency",
           (Pick("batch", 1, 1, 1), _CTX), ("parallelism", "precision"),
           seed_measure="(a) TTFT latency",
           notes="response time of one request (TTFT + (output_len - 1) TPOT), lower is better"),
    Regime("moderate_batch", "Moderate batch serving", "throughput_per_device",
           (Pick("batch", 8, 32), _CTX), ("parallelism", "precision", "batch"),
           slo=("tpot", TPOT_SLO), seed_measure="(b) requests/s at target latency",
           notes="tokens/s per device at batch 8-32 among points meeting a 50 ms TPOT SLO"),
    Regime("high_throughput", "High-throughput batch", "throughput_per_device",
           (_CTX,), ("parallelism", "precision", "batch"),
           seed_measure="(c) tokens/s", notes="tokens/s per device at the best batch size"),
    Regime("long_context", "Long context processing", "throughput_per_device",
           (Pick("context", LONG_CONTEXT, None),), ("parallelism", "precision", "batch"),
           seed_measure="(d) context length efficiency",
           notes="tokens/s per device at prompts of 32K tokens and more, best batch"),
    Regime("multi_model", "Multi-model serving", HEADROOM,
           (Pick("batch", 4, 16, 8), Pick("context", 1024, 4096, 2048)),
           ("parallelism", "precision"), seed_measure="(e) model switching overhead",
           notes="memory headroom: device_memory / memory_per_device = how many copies of the "
                 "model (with its KV cache) the layout's memory holds at a moderate point"),
    Regime("moe", "Mixture-of-Experts models", "throughput_per_device",
           (_CTX,), ("parallelism", "precision", "batch"), models="moe",
           seed_measure="(f) MoE parameter efficiency",
           notes="tokens/s per device on the MoE models of the grid, best batch"),
)


def regime_scores(ds: xr.Dataset, regimes: tuple[Regime, ...] | None = None,
                  basis: str | None = DEFAULT_BASIS) -> xr.Dataset:
    """Score every accelerator in every regime, normalised to the best = 1.0.

    Returns a Dataset over ``(regime, hardware)``: ``score`` (best = 1.0; NaN when the regime's
    slice is absent), ``relative`` (the mean relative value before renormalising), ``value``
    (geometric mean over the workload points where the device is feasible of its best raw
    metric), ``coverage`` (fraction of workload points the device can serve); per regime the
    coords ``title``, ``metric``, ``units``, ``direction``, ``definition``, ``n_points``,
    ``winner`` and ``reason`` (empty when scored). Throughput metrics are put on ``basis`` first
    (default per kW at the system boundary; None = raw grid values, as seed 002 compares).
    """
    on = None if basis is None else parse_basis(basis)
    regimes = REGIMES if regimes is None else tuple(regimes)
    if "hardware" not in ds.coords:
        raise SpecError("regimes need a hardware coordinate")
    if "hardware" not in ds.dims:
        ds = ds.expand_dims("hardware")
    hw = np.asarray(ds["hardware"].values)
    h = len(hw)
    shape = (len(regimes), h)
    score, rel, value, cover = (np.full(shape, np.nan) for _ in range(4))
    meta: dict[str, list] = {k: [] for k in ("title", "metric", "units", "direction",
                                             "definition", "n_points", "winner", "reason")}
    for i, r in enumerate(regimes):
        best, reason, units, direction = _regime_values(ds, r, on)
        n_points = 0
        winner = ""
        if best is not None:
            b = np.asarray(best.transpose("hardware", ...).values, dtype=np.float64).reshape(h, -1)
            ok = np.isfinite(b) & (b > 0)
            if direction == "max":
                ref = np.where(ok, b, -np.inf).max(axis=0)
                with np.errstate(invalid="ignore", divide="ignore"):
                    r_ = np.where(ok, b / ref, 0.0)
            else:
                ref = np.where(ok, b, np.inf).min(axis=0)
                with np.errstate(invalid="ignore", divide="ignore"):
                    r_ = np.where(ok, ref / b, 0.0)
            pts = ok.any(axis=0)
            n_points = int(pts.sum())
            if n_points == 0:
                reason = "no accelerator is feasible anywhere in the slice"
            else:
                raw = r_[:, pts].mean(axis=1)
                rel[i] = raw
                score[i] = raw / raw.max()
                value[i] = an.geometric_mean(np.where(ok, b, np.nan)[:, pts], axis=1)
                cover[i] = ok[:, pts].mean(axis=1)
                winner = str(hw[int(np.argmax(score[i]))])
        meta["title"].append(r.title)
        meta["metric"].append(r.metric)
        meta["units"].append(units)
        meta["direction"].append(direction)
        meta["definition"].append(r.describe())
        meta["n_points"].append(n_points)
        meta["winner"].append(winner)
        meta["reason"].append(reason)
    coords = {"regime": ("regime", np.array([r.key for r in regimes], dtype=object)),
              "hardware": ("hardware", hw)}
    for k, vals in meta.items():
        coords[k] = ("regime", np.array(vals, dtype=np.int64 if k == "n_points" else object))
    dims = ("regime", "hardware")
    out = xr.Dataset({
        "score": (dims, score, {"units": "1", "long_name": "regime score, best accelerator = 1"}),
        "relative": (dims, rel, {"units": "1", "long_name": "mean value relative to the best "
                                 "accelerator at each workload point (0 where infeasible)"}),
        "value": (dims, value, {"long_name": "geometric mean of the best raw metric over the "
                                "workload points where the accelerator is feasible"}),
        "coverage": (dims, cover, {"units": "1", "long_name": "fraction of workload points "
                                   "the accelerator can serve"}),
    }, coords=coords)
    out.attrs["description"] = ("seed 002 section IV-A regimes scored per accelerator; "
                                "see docs/analysis.md")
    out.attrs["basis"] = on.label if on else "grid values (no basis)"
    return out


def _regime_values(ds: xr.Dataset, r: Regime, basis=None):
    """(best DataArray over (hardware, workload dims) or None, reason, units, direction)."""
    units = ""
    direction = "max"
    if r.metric == HEADROOM:
        units, direction = "1", "max"
        for var in ("memory_per_device", "device_memory"):
            if var not in ds.variables:
                return None, f"needs {var!r} in the result", units, direction
    elif r.metric not in ds.data_vars:
        return None, f"metric {r.metric!r} is not in the result", units, direction
    else:
        units = str(ds[r.metric].attrs.get("units", ""))
        direction = metric_direction(ds, r.metric)
    if r.slo is not None and r.slo[0] not in ds.data_vars:
        return None, f"SLO metric {r.slo[0]!r} is not in the result", units, direction
    extra = needed_variables(basis) if basis is not None and r.metric in EXTENSIVE else ()
    need = [v for v in ("fits", "memory_per_device" if r.metric == HEADROOM else r.metric,
                        r.slo[0] if r.slo else None, *extra)
            if v is not None and v in ds.data_vars]
    need = list(dict.fromkeys(need))
    sub = ds[need]
    if r.models == "moe":
        if not {"params_total", "params_active"} <= set(sub.variables):
            return None, "needs params_total and params_active coords to find MoE models", \
                units, direction
        moe = np.atleast_1d(np.asarray(sub["params_active"].values, dtype=np.float64)
                            < np.asarray(sub["params_total"].values, dtype=np.float64))
        if not moe.any():
            return None, "no mixture-of-experts model in the grid", units, direction
        if "model" in sub.dims:
            sub = sub.isel(model=np.flatnonzero(moe))
    for p in r.picks:
        picked, reason = p.apply(sub)
        if picked is None:
            return None, reason, units, direction
        sub = picked
    if r.metric == HEADROOM:
        mem = masked(sub, "memory_per_device")
        vals = sub["device_memory"] / mem
    elif basis is not None:
        vals = normalised(sub, r.metric, basis)
        units = str(vals.attrs.get("units", units))
    else:
        vals = masked(sub, r.metric)
    if r.slo is not None:
        vals = vals.where(masked(sub, r.slo[0]) <= r.slo[1])
    choose = [d for d in r.choose if d in vals.dims]
    if choose:
        vals = vals.max(choose) if direction == "max" else vals.min(choose)
    return vals.compute(), "", units, direction


def _fmt(v) -> str:
    if v is None:
        return "-"
    v = float(v)
    return f"{v:g}" if v < 1e5 else f"{v:.3g}"
