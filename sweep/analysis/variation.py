"""Variation across a dim: ``max / min`` of a metric at every other point, and its largest value
(the seeds' "up to 3.7x"), feasible points only."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import xarray as xr

from grids.errors import SpecError
from sweep.analysis import core as an
from sweep.analysis.select import (
    apply_core,
    as_dims,
    candidates,
    index_labels,
    label_order,
    metric_direction,
    need_dim,
    py_scalar,
)


def variation(ds: xr.Dataset, metric: str, over: str = "hardware",
              best_over: Iterable[str] | str = ()) -> xr.Dataset:
    """max / min of ``metric`` across ``over`` at every other point, feasible points only.

    Returns a Dataset with ``ratio`` (>= 1; NaN where fewer than two candidates are
    feasible), ``max``, ``min``, ``n_feasible`` and the labels ``best`` and ``worst`` (the
    best is the max for higher-is-better metrics and the min for lower-is-better ones;
    ``""`` where none). ``best_over`` dims are first reduced to their best value (e.g.
    ``best_over="parallelism"``: every device with its best layout).
    """
    need_dim(ds, over, "over")
    if over in as_dims(ds, best_over, "best_over"):
        raise SpecError(f"over={over!r} cannot also be in best_over")
    da = candidates(ds, metric, best_over)
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
    units = ds[metric].attrs.get("units", "")
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
    out.attrs = {"metric": metric, "over": over, "direction": d,
                 "best_over": " ".join(as_dims(ds, best_over, "best_over"))}
    return out


#: memory for one slab of :func:`max_variation` [B] (float64 values of one slab of ``over``)
SLAB_BYTES = 128 << 20


def max_variation(ds: xr.Dataset, metric: str, over: str = "hardware",
                  best_over: Iterable[str] | str = (), *, slab_bytes: int = SLAB_BYTES
                  ) -> dict[str, Any] | None:
    """The largest finite ratio of :func:`variation`, where it occurs and the two labels.

    Returns ``{"ratio", "metric", "over", "best_over", "where": {dim: value}, "best", "worst",
    "best_value", "worst_value", "units"}`` or None when no point has two feasible candidates.

    Memory-bounded: ``ds`` (in memory or opened lazily from a file) is read in slabs of the
    ``over`` dim of about ``slab_bytes`` each, keeping a running largest and smallest value (and
    their labels; ties go to the label that sorts first, as in :func:`variation`) at every other
    point. Reading whole slabs of the leading dim touches every storage chunk once.
    """
    need_dim(ds, over, "over")
    red = as_dims(ds, best_over, "best_over")
    if over in red:
        raise SpecError(f"over={over!r} cannot also be in best_over")
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
        a = candidates(ds.isel({over: sl}), metric, red).transpose(over, *rest)
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
    count = hi[2]
    hv, lv = hi[0], -lo[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(hv == lv, 1.0, hv / lv)
    ratio = np.where((count >= 2) & (lv >= 0), ratio, np.nan)
    finite = np.isfinite(ratio)
    if not finite.any():
        return None
    flat = int(np.where(finite, ratio, -np.inf).argmax())
    idx = np.unravel_index(flat, ratio.shape) if ratio.ndim else ()
    where = {x: py_scalar(coords[x].values[i]) for x, i in zip(rest, idx)}
    by_rank = np.empty(n, dtype=object)
    by_rank[rank] = [str(v) for v in labels]
    hi_label, lo_label = by_rank[hi[1][idx]], by_rank[lo[1][idx]]
    h, lval = float(hv[idx]), float(lv[idx])
    best_label, worst_label = (lo_label, hi_label) if d == "min" else (hi_label, lo_label)
    return {"ratio": float(ratio[idx]), "metric": metric, "over": over,
            "best_over": list(red), "where": where, "best": best_label, "worst": worst_label,
            "best_value": lval if d == "min" else h, "worst_value": h if d == "min" else lval,
            "units": ds[metric].attrs.get("units", "")}


def _merge(run, top, pick, count):
    """Running (extreme value, rank of its label, feasible count) merged with one slab's."""
    if run is None:
        return top, pick, count
    v, p, c = run
    better = (top > v) | ((top == v) & (pick < p))
    return (np.where(better, top, v), np.where(better, pick, p),
            None if count is None else c + count)
