"""Seed 002, quantitatively: the six operational regimes (section IV-A, Fig. 8) and the scaling
strategies comparison (section V: "expert parallelism: 8.4x parameter-to-compute advantage, 2.1x
latency variance versus tensor parallelism"), computed from any result Dataset.

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
from sweep import analysis as an
from sweep.accessor import masked, metric_direction

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


def regime_scores(ds: xr.Dataset, regimes: tuple[Regime, ...] | None = None) -> xr.Dataset:
    """Score every accelerator in every regime, normalised to the best = 1.0.

    Returns a Dataset over ``(regime, hardware)``: ``score`` (best = 1.0; NaN when the regime's
    slice is absent), ``relative`` (the mean relative value before renormalising), ``value``
    (geometric mean over the workload points where the device is feasible of its best raw
    metric), ``coverage`` (fraction of workload points the device can serve); per regime the
    coords ``title``, ``metric``, ``units``, ``direction``, ``definition``, ``n_points``,
    ``winner`` and ``reason`` (empty when scored).
    """
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
        best, reason, units, direction = _regime_values(ds, r)
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
    return out


def _regime_values(ds: xr.Dataset, r: Regime):
    """(best DataArray over (hardware, workload dims) or None, reason, units, direction)."""
    units = ""
    direction = "max"
    if r.metric == HEADROOM:
        units, direction = "1", "max"
        for need in ("memory_per_device", "device_memory"):
            if need not in ds.variables:
                return None, f"needs {need!r} in the result", units, direction
    elif r.metric not in ds.data_vars:
        return None, f"metric {r.metric!r} is not in the result", units, direction
    else:
        units = str(ds[r.metric].attrs.get("units", ""))
        direction = metric_direction(ds, r.metric)
    if r.slo is not None and r.slo[0] not in ds.data_vars:
        return None, f"SLO metric {r.slo[0]!r} is not in the result", units, direction
    need = [v for v in ("fits", "memory_per_device" if r.metric == HEADROOM else r.metric,
                        r.slo[0] if r.slo else None) if v is not None and v in ds.data_vars]
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
        sub, reason = p.apply(sub)
        if sub is None:
            return None, reason, units, direction
    if r.metric == HEADROOM:
        mem = masked(sub, "memory_per_device")
        vals = sub["device_memory"] / mem
    else:
        vals = masked(sub, r.metric)
    if r.slo is not None:
        vals = vals.where(masked(sub, r.slo[0]) <= r.slo[1])
    choose = [d for d in r.choose if d in vals.dims]
    if choose:
        vals = vals.max(choose) if direction == "max" else vals.min(choose)
    return vals.compute(), "", units, direction


# ------------------------------------------------------------------------------ strategies
def layout_degrees(ds: xr.Dataset) -> dict[str, np.ndarray]:
    """tp, pp, ep, dp, offload per layout, from the coords or parsed from the layout names."""
    names = np.atleast_1d(np.asarray(ds["parallelism"].values))
    out: dict[str, np.ndarray] = {}
    parsed = None
    for k in ("tp", "pp", "ep", "dp", "offload"):
        if k in ds.coords and ds[k].dims == ("parallelism",):
            out[k] = np.asarray(ds[k].values, dtype=np.float64)
            continue
        if parsed is None:
            from grids.layouts import parse_layout

            parsed = [parse_layout(str(n)) for n in names]
        out[k] = np.array([getattr(p, k) for p in parsed], dtype=np.float64)
    return out


def classify(tp: float, pp: float, ep: float, dp: float, offload: float) -> str:
    """Scaling strategy of a layout (the most distinctive part of a hybrid wins)."""
    if ep > 1:
        return "expert" if tp == 1 and pp == 1 else "expert+tensor"
    if offload > 0:
        return "offload"
    if pp > 1:
        return "pipeline" if tp == 1 else "tensor+pipeline"
    if tp > 1:
        return "tensor"
    return "data" if dp > 1 else "single"


def strategy_table(ds: xr.Dataset) -> xr.Dataset:
    """Seed 002 section V, computed: per layout and EP versus TP.

    Per layout (dim ``parallelism``), over the models the layout can serve (feasible at some
    point of the grid) and its feasible points:

    - ``param_compute_ratio`` = mean over served models of ``params_total / params_active``:
      parameters hosted by a replica per parameter computed per token [1];
    - ``params_per_device`` = mean of ``params_total / (tp pp ep)`` (hosted per device; a lower
      bound for EP, whose attention weights are replicated per expert group) and
      ``flops_per_token_per_device`` = mean of ``2 params_active / (tp pp ep)`` [FLOP]; their
      ratio is ``param_compute_ratio / 2`` per FLOP, since both split evenly over the replica;
    - ``throughput_per_device`` (geometric mean) and ``latency_cov`` (mean) over feasible points.

    EP versus TP (scalar variables): EP layouts have ``ep > 1``; TP layouts are pure tensor
    parallel (``tp > 1``, no pp/ep/dp/offload; ``tp1`` if there is no such layout).
    ``ep_vs_tp_param_compute`` = mean ratio over EP (layout, served model) pairs / the same over
    TP pairs. The latency and throughput ratios are *matched*: for every EP layout and every TP
    layout with the same devices per replica (any TP layout if none matches), at every point
    where both are feasible (same hardware, model, batch, context, precision):
    ``ep_vs_tp_latency_cov`` = mean CoV (EP) / mean CoV (TP), ``ep_vs_tp_latency_std`` the same
    for the per-token latency standard deviation ``latency_cov x tpot``, ``ep_vs_tp_tpot`` and
    ``ep_vs_tp_throughput_per_device`` geometric means of the EP/TP ratios.
    """
    if "parallelism" not in ds.coords:
        raise SpecError("strategies need a parallelism coordinate")
    if "parallelism" not in ds.dims:
        ds = ds.expand_dims("parallelism")
    for need in ("throughput_per_device",):
        if need not in ds.data_vars:
            raise SpecError(f"strategies need the metric {need!r}")
    deg = layout_degrees(ds)
    names = np.asarray(ds["parallelism"].values)
    n_l = len(names)
    per_rep = deg["tp"] * deg["pp"] * deg["ep"]
    strategy = np.array([classify(*(deg[k][i] for k in ("tp", "pp", "ep", "dp", "offload")))
                         for i in range(n_l)], dtype=object)

    fe = masked(ds, "throughput_per_device")
    has_params = {"params_total", "params_active"} <= set(ds.variables)
    thr = (fe.transpose("parallelism", "model", ...) if "model" in fe.dims
           else fe.transpose("parallelism", ...))
    thr_v = np.asarray(thr.values, dtype=np.float64)
    ok = np.isfinite(thr_v)
    cov_v = (np.asarray(masked(ds, "latency_cov").transpose(*thr.dims).values, dtype=np.float64)
             if "latency_cov" in ds.data_vars else np.full_like(thr_v, np.nan))
    tpot_v = (np.asarray(masked(ds, "tpot").transpose(*thr.dims).values, dtype=np.float64)
              if "tpot" in ds.data_vars else np.full_like(thr_v, np.nan))

    served = np.zeros((n_l, 0), dtype=bool)
    ratio_m = total_m = active_m = np.zeros(0)
    if has_params:
        total_m = np.atleast_1d(np.asarray(ds["params_total"].values, dtype=np.float64))
        active_m = np.atleast_1d(np.asarray(ds["params_active"].values, dtype=np.float64))
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio_m = total_m / active_m
        if "model" in thr.dims:
            served = ok.reshape(n_l, ok.shape[1], -1).any(axis=2)
        else:
            served = ok.reshape(n_l, -1).any(axis=1)[:, None]

    def over_served(per_model: np.ndarray) -> np.ndarray:
        out = np.full(n_l, np.nan)
        for li in range(n_l):
            if served.shape[1] and served[li].any():
                out[li] = float(np.mean(per_model[li][served[li]]))
        return out

    with np.errstate(invalid="ignore", divide="ignore"):
        pcr = over_served(np.broadcast_to(ratio_m, (n_l, len(ratio_m))))
        ppd = over_served(total_m[None, :] / per_rep[:, None])
        fpt = over_served(2 * active_m[None, :] / per_rep[:, None])
    flat = ok.reshape(n_l, -1)
    n_feas = flat.sum(axis=1)
    thr_gm = an.geometric_mean(thr_v.reshape(n_l, -1), axis=1)
    cov_flat = cov_v.reshape(n_l, -1)
    cov_ok = flat & np.isfinite(cov_flat)
    with np.errstate(invalid="ignore", divide="ignore"):
        cov_mean = np.where(cov_ok.sum(1) > 0,
                            np.where(cov_ok, cov_flat, 0).sum(1) / cov_ok.sum(1), np.nan)

    is_ep = deg["ep"] > 1
    pure_tp = ((deg["ep"] == 1) & (deg["pp"] == 1) & (deg["dp"] == 1)
               & (deg["offload"] == 0))
    is_tp = pure_tp & (deg["tp"] > 1)
    tp_note = "TP = pure tensor-parallel layouts with tp > 1"
    if not is_tp.any():
        is_tp = pure_tp
        tp_note = "no tp > 1 layout in the grid; TP = the single-device layout"

    scalars: dict[str, float] = {}
    notes = [tp_note]
    # parameter-to-compute: over (layout, served model) pairs
    if has_params and is_ep.any() and is_tp.any():
        ep_pairs = [ratio_m[served[li]] for li in np.flatnonzero(is_ep)]
        tp_pairs = [ratio_m[served[li]] for li in np.flatnonzero(is_tp)]
        ep_r = np.concatenate(ep_pairs) if ep_pairs else np.zeros(0)
        tp_r = np.concatenate(tp_pairs) if tp_pairs else np.zeros(0)
        scalars["ep_param_compute"] = float(ep_r.mean()) if ep_r.size else np.nan
        scalars["tp_param_compute"] = float(tp_r.mean()) if tp_r.size else np.nan
    else:
        scalars["ep_param_compute"] = scalars["tp_param_compute"] = np.nan
        if not has_params:
            notes.append("no params_total/params_active coords: parameter ratios unavailable")
    with np.errstate(invalid="ignore", divide="ignore"):
        scalars["ep_vs_tp_param_compute"] = scalars["ep_param_compute"] / \
            scalars["tp_param_compute"]

    # matched comparison
    pairs = [(e, t) for e in np.flatnonzero(is_ep) for t in np.flatnonzero(is_tp)
             if per_rep[e] == per_rep[t]]
    if not pairs:
        pairs = [(e, t) for e in np.flatnonzero(is_ep) for t in np.flatnonzero(is_tp)]
        if pairs:
            notes.append("no TP layout with the same devices per replica as an EP layout: "
                         "every EP layout is compared with every TP layout")
    cov_e, cov_t, std_e, std_t, thr_r, tpot_r = [], [], [], [], [], []
    for e, t in pairs:
        both = flat[e] & flat[t]
        ce, ct = cov_flat[e][both], cov_flat[t][both]
        te = tpot_v.reshape(n_l, -1)[e][both]
        tt = tpot_v.reshape(n_l, -1)[t][both]
        cov_e.append(ce)
        cov_t.append(ct)
        std_e.append(ce * te)
        std_t.append(ct * tt)
        with np.errstate(invalid="ignore", divide="ignore"):
            thr_r.append(thr_v.reshape(n_l, -1)[e][both] / thr_v.reshape(n_l, -1)[t][both])
            tpot_r.append(te / tt)
    n_matched = int(sum(len(x) for x in cov_e))

    def ratio_of_means(a: list, b: list) -> float:
        if not a:
            return np.nan
        x, y = np.concatenate(a), np.concatenate(b)
        good = np.isfinite(x) & np.isfinite(y)
        if not good.any():
            return np.nan
        with np.errstate(invalid="ignore", divide="ignore"):
            return float(np.mean(x[good]) / np.mean(y[good]))

    scalars["ep_vs_tp_latency_cov"] = ratio_of_means(cov_e, cov_t)
    scalars["ep_vs_tp_latency_std"] = ratio_of_means(std_e, std_t)
    scalars["ep_vs_tp_tpot"] = (float(an.geometric_mean(np.concatenate(tpot_r)))
                                if n_matched else np.nan)
    scalars["ep_vs_tp_throughput_per_device"] = (
        float(an.geometric_mean(np.concatenate(thr_r))) if n_matched else np.nan)
    if not is_ep.any():
        notes.append("no expert-parallel layout (ep > 1) in the grid")
    elif n_matched == 0:
        notes.append("no point where an EP and a TP layout are both feasible")

    d = ("parallelism",)
    out = xr.Dataset(
        {
            "strategy": (d, strategy, {"long_name": "scaling strategy of the layout"}),
            "devices_per_replica": (d, per_rep, {"units": "1", "long_name": "tp x pp x ep"}),
            "n_models": (d, served.sum(axis=1).astype(np.int64) if served.shape[1]
                         else np.zeros(n_l, dtype=np.int64),
                         {"units": "1", "long_name": "models the layout can serve"}),
            "feasible_points": (d, n_feas.astype(np.int64),
                                {"units": "1", "long_name": "feasible grid points"}),
            "param_compute_ratio": (d, pcr, {"units": "1", "long_name":
                                    "parameters hosted per parameter computed per token"}),
            "params_per_device": (d, ppd, {"units": "1", "long_name":
                                  "parameters hosted per device (params_total / (tp pp ep))"}),
            "flops_per_token_per_device": (d, fpt, {"units": "FLOP", "long_name":
                                           "2 params_active / (tp pp ep)"}),
            "throughput_per_device": (d, thr_gm, {"units": "token/s", "long_name":
                                      "geometric mean over feasible points"}),
            "latency_cov": (d, cov_mean, {"units": "1", "long_name":
                            "mean per-token latency CoV over feasible points"}),
            **{k: ((), v, {"units": "1"}) for k, v in scalars.items()},
            "matched_points": ((), n_matched, {"units": "1", "long_name":
                               "(EP, TP) point pairs in the matched comparison"}),
        },
        coords={"parallelism": ("parallelism", names),
                **{k: ("parallelism", deg[k]) for k in ("tp", "pp", "ep", "dp", "offload")}},
    )
    out.attrs["notes"] = "; ".join(notes)
    out.attrs["description"] = ("seed 002 section V computed from the grid; see "
                                "docs/analysis.md (strategies)")
    return out


def _fmt(v) -> str:
    if v is None:
        return "-"
    v = float(v)
    return f"{v:g}" if v < 1e5 else f"{v:.3g}"
