"""Seed 002 section V, quantitatively: scaling strategies per layout ("expert parallelism: 8.4x
parameter-to-compute advantage, 2.1x latency variance versus tensor parallelism")."""

from __future__ import annotations

import numpy as np
import xarray as xr

from grids.errors import SpecError
from sweep.analysis import core as an
from sweep.analysis.kept import is_kept, need_every_layout
from sweep.analysis.select import masked


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
    if is_kept(ds):
        raise need_every_layout(ds, "strategies")
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
            # np.any, not ndarray.any: numpy's stubs let the method return a scalar
            served = np.any(ok.reshape(n_l, ok.shape[1], -1), axis=2)
        else:
            served = np.any(ok.reshape(n_l, -1), axis=1)[:, None]

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
