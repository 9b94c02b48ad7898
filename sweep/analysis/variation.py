"""Variation across a dim: ``max / min`` of a metric at every other point, and its largest value
(the seeds' "up to 3.7x"), feasible points only."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import xarray as xr

from grids.errors import SpecError
from sweep.analysis import core as an
from sweep.analysis.basis import DEFAULT_BASIS, parse_basis
from sweep.analysis.choose import best_layout
from sweep.analysis.select import (
    apply_core,
    candidates,
    default_best_over,
    index_labels,
    label_order,
    metric_direction,
    need_dim,
    py_scalar,
)


def variation(ds: xr.Dataset, metric: str, over: str = "hardware",
              best_over: Iterable[str] | str | None = None,
              basis: str | None = DEFAULT_BASIS) -> xr.Dataset:
    """max / min of ``metric`` across ``over`` at every other point, feasible points only.

    Returns a Dataset with ``ratio`` (>= 1; NaN where fewer than two candidates are
    feasible), ``max``, ``min``, ``n_feasible`` and the labels ``best`` and ``worst`` (the
    best is the max for higher-is-better metrics and the min for lower-is-better ones;
    ``""`` where none). The metric is first put on ``basis`` (:mod:`sweep.analysis.basis`;
    default per kW at the system boundary; None = raw grid values) and ``best_over`` dims are
    reduced to their best value (default: the layouts, i.e. every device at its best layout).
    """
    need_dim(ds, over, "over")
    red = default_best_over(ds, best_over, over)
    if over in red:
        raise SpecError(f"over={over!r} cannot also be in best_over")
    b = None if basis is None else parse_basis(basis)
    da = candidates(ds, metric, red, basis=b)
    d = metric_direction(ds, metric, required=False)
    best_dir, worst_dir = ("min", "max") if d == "min" else ("max", "min")
    order = label_order(da[over].values)

    def f(a):
        ok = np.isfinite(a)
        ratio, hi, lo, count = an.variation(a, ok, axis=-1)
        ib = an.extreme_index(a, ok, best_dir, axis=-1, order=order)
        iw = an.extreme_index(a, ok, worst_dir, axis=-1, order=order)
        return ratio, hi, lo, count.astype(np.int64), ib, iw

    ratio, hi, lo, count, ib, iw = apply_core(
        f, da, core=[over], n_out=6,
        dtypes=(np.float64, np.float64, np.float64, np.int64, np.intp, np.intp))
    labels = da[over].values
    units = da.attrs.get("units", ds[metric].attrs.get("units", ""))
    out = xr.Dataset({
        "ratio": ratio.assign_attrs(units="1", long_name=f"max/min of {metric} across "
                                    f"{over} (feasible points)"),
        "max": hi.assign_attrs(units=units, long_name=f"largest {metric} across {over}"),
        "min": lo.assign_attrs(units=units, long_name=f"smallest {metric} across {over}"),
        "n_feasible": count.assign_attrs(units="1", long_name=f"feasible {over} values"),
        "best": index_labels(ib, labels, "best").assign_attrs(
            long_name=f"best {over} ({'lowest' if d == 'min' else 'highest'} {metric})"),
        "worst": index_labels(iw, labels, "worst").assign_attrs(
            long_name=f"worst {over}"),
    })
    out.attrs = {"metric": metric, "over": over, "direction": d, "best_over": " ".join(red),
                 "basis": b.label if b else "grid values (no basis)"}
    return out


#: memory for one slab of :func:`max_variation` [B] (float64 values of one slab of ``over``)
SLAB_BYTES = 128 << 20


def max_variation(ds: xr.Dataset, metric: str, over: str = "hardware",
                  best_over: Iterable[str] | str | None = None,
                  basis: str | None = DEFAULT_BASIS, *, slab_bytes: int = SLAB_BYTES
                  ) -> dict[str, Any] | None:
    """The largest finite ratio of :func:`variation`, where it occurs and the two labels.

    Returns ``{"ratio", "metric", "over", "best_over", "basis", "median_ratio", "points",
    "where": {dim: value}, "best", "worst", "best_value", "worst_value", "best_layout",
    "worst_layout", "units"}`` or None when no point has two feasible candidates
    (``median_ratio``: the median of the ratio over the ``points`` where it is defined;
    ``*_layout``: the layout each of the two runs on the basis, when the layouts were reduced).

    Memory-bounded: ``ds`` (in memory or opened lazily from a file) is read in slabs of the
    ``over`` dim of about ``slab_bytes`` each, keeping a running largest and smallest value (and
    their labels; ties go to the label that sorts first, as in :func:`variation`) at every other
    point. Reading whole slabs of the leading dim touches every storage chunk once.
    """
    need_dim(ds, over, "over")
    red = default_best_over(ds, best_over, over)
    if over in red:
        raise SpecError(f"over={over!r} cannot also be in best_over")
    b = None if basis is None else parse_basis(basis)
    d = metric_direction(ds, metric, required=False)
    labels = np.asarray(ds[over].values)
    n = len(labels)
    rank = np.empty(n, dtype=np.int64)
    rank[label_order(labels)] = np.arange(n)
    rest = [x for x in ds[metric].dims if x != over and x not in red]
    per_label = 8 * int(np.prod([ds.sizes[x] for x in ds[metric].dims if x != over]))
    step = max(1, int(slab_bytes) // max(per_label, 1))
    hi = lo = None
    for s0 in range(0, n, step):
        sl = slice(s0, min(n, s0 + step))
        a = candidates(ds.isel({over: sl}), metric, red, basis=b).transpose(over, *rest)
        vals = np.asarray(a.values, dtype=np.float64)
        ok = np.isfinite(vals)
        r = rank[sl].reshape((-1,) + (1,) * (vals.ndim - 1))
        for side, sign in (("hi", 1.0), ("lo", -1.0)):
            x = np.where(ok, sign * vals, -np.inf)
            top = x.max(axis=0)
            pick = np.where(ok & (x == top), r, n).min(axis=0)  # lowest rank among the ties
            if side == "hi":
                hi = _merge(hi, top, pick, ok.sum(axis=0))
            else:
                lo = _merge(lo, top, pick, None)
        coords = a.isel({over: 0}, drop=True).coords
        units = a.attrs.get("units", ds[metric].attrs.get("units", ""))
    count = hi[2]
    hv, lv = hi[0], -lo[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(hv == lv, 1.0, hv / lv)
    ratio = np.where((count >= 2) & (lv >= 0), ratio, np.nan)
    finite = np.isfinite(ratio)
    if not finite.any():
        return None
    median = float(np.median(ratio[finite]))
    flat = int(np.where(finite, ratio, -np.inf).argmax())
    idx = np.unravel_index(flat, ratio.shape) if ratio.ndim else ()
    where = {x: py_scalar(coords[x].values[i]) for x, i in zip(rest, idx)}
    by_rank = np.empty(n, dtype=object)
    by_rank[rank] = [str(v) for v in labels]
    hi_label, lo_label = by_rank[hi[1][idx]], by_rank[lo[1][idx]]
    h, lval = float(hv[idx]), float(lv[idx])
    best_label, worst_label = (lo_label, hi_label) if d == "min" else (hi_label, lo_label)
    layouts = {"best_layout": "", "worst_layout": ""}
    if "parallelism" in red:
        at = ds.sel({k: v for k, v in where.items() if k in ds.dims})
        for key, label in (("best_layout", best_label), ("worst_layout", worst_label)):
            one = at.sel({over: label})
            bl = best_layout(one, metric, b if b is not None else "replica", d)
            rest_red = [x for x in red if x != "parallelism" and x in bl["layout"].dims]
            lay = bl["layout"]
            if rest_red:  # the layout at the best value over the other reduced dims
                v = bl["value"]
                pick = (v == (v.max(rest_red) if d == "max" else v.min(rest_red)))
                lay = lay.where(pick, drop=True).stack(_r=rest_red).isel(_r=0)
            layouts[key] = str(lay.values)
    return {"ratio": float(ratio[idx]), "metric": metric, "over": over,
            "best_over": list(red), "basis": b.label if b else "grid values (no basis)",
            "median_ratio": median, "points": int(finite.sum()),
            "where": where, "best": best_label, "worst": worst_label,
            "best_value": lval if d == "min" else h, "worst_value": h if d == "min" else lval,
            **layouts, "units": units}


def _merge(run, top, pick, count):
    """Running (extreme value, rank of its label, feasible count) merged with one slab's."""
    if run is None:
        return top, pick, count
    v, p, c = run
    better = (top > v) | ((top == v) & (pick < p))
    return (np.where(better, top, v), np.where(better, pick, p),
            None if count is None else c + count)
