"""Variation across a dim: ``max / min`` of a metric at every other point, and its largest value
(the seeds' "up to 3.7x"), feasible points only."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import xarray as xr

from grids.errors import SpecError
from sweep.analysis import core as an
from sweep.analysis.basis import DEFAULT_BASIS, parse_basis
from sweep.analysis.choose import best_layout
from sweep.analysis.kept import is_kept, kept_labels
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
from sweep.analysis.uncertainty import band_interval, ratio_band


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


class RunningExtremes:
    """The largest and the smallest finite value across the labels of one dim, kept at every
    point of the other dims (the *rest*) while the values arrive in pieces: slabs of labels
    (:func:`max_variation`), or regions of labels x rest as a run produces them
    (:mod:`sweep.analysis.headline`).

    For each side it keeps the extreme value, the rank of its label (ties go to the label that
    sorts first, as in :func:`variation`) and optionally an index *carried* with each value (the
    layout a device reaches it with); and the count of finite values. Merging pieces in any order
    gives the same arrays: max, min, count and the tie rule are exact and order-free. Memory:
    :attr:`nbytes`: 28 bytes per rest point, 36 with the carried indices."""

    def __init__(self, rest_shape: tuple[int, ...], n_labels: int, carry: bool = False) -> None:
        self.shape = tuple(int(x) for x in rest_shape)
        self.n = int(n_labels)
        self.carry = carry
        self.top = {side: np.full(self.shape, -np.inf) for side in ("hi", "lo")}
        self.pick = {side: np.full(self.shape, self.n, dtype=np.int32) for side in ("hi", "lo")}
        self.carried = ({side: np.full(self.shape, -1, dtype=np.int32) for side in ("hi", "lo")}
                        if carry else None)
        self.count = np.zeros(self.shape, dtype=np.int32)

    @property
    def nbytes(self) -> int:
        arrays = [*self.top.values(), *self.pick.values(), self.count,
                  *(self.carried.values() if self.carried else ())]
        return sum(a.nbytes for a in arrays)

    @staticmethod
    def piece(vals: np.ndarray, ranks: np.ndarray, n_labels: int,
              carried: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """The extremes of one piece: ``vals`` ``(k, *rest)`` of ``k`` labels whose ranks are
        ``ranks``, optionally with ``carried`` ``(k, *rest)`` int indices."""
        vals = np.asarray(vals, dtype=np.float64)
        ok = np.isfinite(vals)
        r = np.asarray(ranks, dtype=np.int32).reshape((-1,) + (1,) * (vals.ndim - 1))
        out = {"count": ok.sum(axis=0, dtype=np.int32)}
        for side, sign in (("hi", 1.0), ("lo", -1.0)):
            x = np.where(ok, sign * vals, -np.inf)
            top = x.max(axis=0)
            cand = np.where(ok & (x == top), r, np.int32(n_labels))
            pos = cand.argmin(axis=0)[None]  # the lowest rank among the ties
            out[f"top_{side}"] = top
            out[f"pick_{side}"] = np.take_along_axis(cand, pos, 0)[0]
            if carried is not None:
                out[f"carried_{side}"] = np.take_along_axis(
                    np.asarray(carried, dtype=np.int32), pos, 0)[0]
        return out

    def merge(self, piece: dict[str, np.ndarray], region: tuple[slice, ...] = ()) -> None:
        """Merge a :meth:`piece` computed over ``region`` of the rest (default: all of it)."""
        self.count[region] += piece["count"]
        for side in ("hi", "lo"):
            v, p = self.top[side][region], self.pick[side][region]
            top, pick = piece[f"top_{side}"], piece[f"pick_{side}"]
            better = (top > v) | ((top == v) & (pick < p))
            self.top[side][region] = np.where(better, top, v)
            self.pick[side][region] = np.where(better, pick, p)
            if self.carried is not None:
                c = self.carried[side][region]
                self.carried[side][region] = np.where(better, piece[f"carried_{side}"], c)

    def add(self, vals: np.ndarray, ranks: np.ndarray, region: tuple[slice, ...] = (),
            carried: np.ndarray | None = None) -> None:
        self.merge(self.piece(vals, ranks, self.n, carried), region)

    def extreme(self, direction: str) -> dict[str, Any] | None:
        """Where the ratio largest / smallest peaks: ``{"ratio", "median_ratio", "points",
        "index" (into the rest), "best_rank", "worst_rank", "best_value", "worst_value",
        "best_carried", "worst_carried"}`` (best = the largest value for ``"max"`` metrics);
        None when no point has two finite values. The median is exact: the median of the ratio
        over every rest point where it is defined."""
        hv, lv = self.top["hi"], -self.top["lo"]
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(hv == lv, 1.0, hv / lv)
        ratio = np.where((self.count >= 2) & (lv >= 0), ratio, np.nan)
        finite = np.isfinite(ratio)
        if not finite.any():
            return None
        flat = int(np.where(finite, ratio, -np.inf).argmax())
        idx = np.unravel_index(flat, ratio.shape) if ratio.ndim else ()
        sides = {"hi": (float(hv[idx]), int(self.pick["hi"][idx])),
                 "lo": (float(lv[idx]), int(self.pick["lo"][idx]))}
        best, worst = ("lo", "hi") if direction == "min" else ("hi", "lo")
        out = {"ratio": float(ratio[idx]), "median_ratio": float(np.median(ratio[finite])),
               "points": int(finite.sum()), "index": idx,
               "best_value": sides[best][0], "worst_value": sides[worst][0],
               "best_rank": sides[best][1], "worst_rank": sides[worst][1]}
        if self.carried is not None:
            out["best_carried"] = int(self.carried[best][idx])
            out["worst_carried"] = int(self.carried[worst][idx])
        return out


def label_ranks(labels: np.ndarray) -> np.ndarray:
    """The rank of each label in sorted order (:func:`label_order`)."""
    n = len(labels)
    rank = np.empty(n, dtype=np.int64)
    rank[label_order(np.asarray(labels))] = np.arange(n)
    return rank


def by_rank(labels: np.ndarray, rank: np.ndarray, r: int):
    """The label (its coordinate value) whose rank is ``r``."""
    return np.asarray(labels)[int(np.flatnonzero(rank == r)[0])]


def max_variation(ds: xr.Dataset, metric: str, over: str = "hardware",
                  best_over: Iterable[str] | str | None = None,
                  basis: str | None = DEFAULT_BASIS, *, slab_bytes: int = SLAB_BYTES
                  ) -> dict[str, Any] | None:
    """The largest finite ratio of :func:`variation`, where it occurs and the two labels.

    Returns ``{"ratio", "metric", "over", "best_over", "basis", "median_ratio", "points",
    "where": {dim: value}, "best", "worst", "best_value", "worst_value", "best_layout",
    "worst_layout", "units", "estimated_power", "band", "ratio_low", "ratio_high"}`` or None
    when no point has two feasible candidates (``median_ratio``: the median of the ratio over
    the ``points`` where it is
    defined; ``*_layout``: the layout each of the two runs on the basis, when the layouts were
    reduced; ``estimated_power``: which of the two rest on an estimated power, on a per-kW
    basis, :func:`estimated_power`; ``band``: the uncertainty band of the ratio and
    ``ratio_low``/``ratio_high`` the ratio divided and multiplied by it, NaN without bands,
    :mod:`sweep.analysis.uncertainty`).

    Memory-bounded: ``ds`` (in memory or opened lazily from a file) is read in slabs of the
    ``over`` dim of about ``slab_bytes`` each, keeping a running largest and smallest value (and
    their labels; ties go to the label that sorts first, as in :func:`variation`) at every other
    point (:class:`RunningExtremes`). Reading whole slabs of the leading dim touches every
    storage chunk once. A run computes the same figure from its chunks as it writes them
    (:mod:`sweep.analysis.headline`).
    """
    need_dim(ds, over, "over")
    red = default_best_over(ds, best_over, over)
    if over in red:
        raise SpecError(f"over={over!r} cannot also be in best_over")
    b = None if basis is None else parse_basis(basis)
    d = metric_direction(ds, metric, required=False)
    labels = np.asarray(ds[over].values)
    n = len(labels)
    rank = label_ranks(labels)
    rest = [x for x in ds[metric].dims if x != over and x not in red]
    per_label = 8 * int(np.prod([ds.sizes[x] for x in ds[metric].dims if x != over]))
    step = max(1, int(slab_bytes) // max(per_label, 1))
    acc = RunningExtremes(tuple(ds.sizes[x] for x in rest), n)
    for s0 in range(0, n, step):
        sl = slice(s0, min(n, s0 + step))
        a = candidates(ds.isel({over: sl}), metric, red, basis=b).transpose(over, *rest)
        acc.add(a.values, rank[sl])
        coords = a.isel({over: 0}, drop=True).coords
        units = a.attrs.get("units", ds[metric].attrs.get("units", ""))
    found = acc.extreme(d)
    if found is None:
        return None
    where = {str(x): py_scalar(coords[x].values[i]) for x, i in zip(rest, found["index"])}
    best, worst = (by_rank(labels, rank, found[k]) for k in ("best_rank", "worst_rank"))
    layouts = {"best_layout": "", "worst_layout": ""}
    if "parallelism" in red:
        at = ds.sel({k: v for k, v in where.items() if k in ds.dims})
        for key, label in (("best_layout", best), ("worst_layout", worst)):
            one = at.sel({over: label})
            bl = best_layout(one, metric, b if b is not None else "replica", d)
            rest_red = [x for x in red if x != "parallelism" and x in bl["layout"].dims]
            lay = bl["layout"]
            if rest_red:  # the layout at the best value over the other reduced dims
                v = bl["value"]
                pick = (v == (v.max(rest_red) if d == "max" else v.min(rest_red)))
                lay = lay.where(pick, drop=True).stack(_r=rest_red).isel(_r=0)
            layouts[key] = str(lay.values)
    elif is_kept(ds) and not red:  # the layouts the run kept at that point
        at = ds.sel({k: v for k, v in where.items() if k in ds.dims})
        for key, label in (("best_layout", best), ("worst_layout", worst)):
            layouts[key] = str(kept_labels(at.sel({over: label})).values)
    return describe(found, metric=metric, over=over, best_over=red,
                    basis=b.label if b else "grid values (no basis)", where=where,
                    best=best, worst=worst, units=units, **layouts,
                    estimated_power=estimated_power(ds, over, (best, worst), b),
                    band=ratio_band(ds, over, best, worst, where, red))


#: per-hardware coordinates flagging an estimated power (1 = estimate; docs/analysis.md)
POWER_FLAGS = {"accelerator": ("tdp_estimated",),
               "system": ("tdp_estimated", "host_power_estimated")}


def estimated_power(ds: xr.Dataset, over: str, labels, basis) -> list[str]:
    """Which of ``labels`` (hardware ids) have an estimated power at the boundary of a per-kW
    ``basis`` (the board power ``tdp``; at the system boundary also the host share): a per-kW
    answer about them carries the estimate's uncertainty. Empty for other bases, other dims or
    results without the flags (written before they existed)."""
    if basis is None or basis.kind != "power" or over != "hardware":
        return []
    flags = POWER_FLAGS[basis.boundary]
    if any(f not in ds.coords for f in flags):
        return []
    out = []
    for label in dict.fromkeys(str(x) for x in labels):
        if any(bool(np.asarray(ds[f].sel(hardware=label).values)) for f in flags):
            out.append(label)
    return out


def describe(found: dict[str, Any], *, metric: str, over: str, best_over, basis: str,
             where: dict[str, Any], best, worst, units: str, best_layout: str = "",
             worst_layout: str = "", estimated_power: list[str] | tuple = (),
             band: float = math.nan) -> dict[str, Any]:
    """The dict :func:`max_variation` returns, from :meth:`RunningExtremes.extreme` (a missing
    band is always the one ``math.nan`` object, so that two such dicts compare equal)."""
    band = float(band) if math.isfinite(band) else math.nan
    low, high = band_interval(found["ratio"], band)
    return {"ratio": found["ratio"], "metric": metric, "over": over,
            "best_over": list(best_over), "basis": basis,
            "median_ratio": found["median_ratio"], "points": found["points"],
            "where": where, "best": str(best), "worst": str(worst),
            "best_value": found["best_value"], "worst_value": found["worst_value"],
            "best_layout": best_layout, "worst_layout": worst_layout, "units": units,
            "estimated_power": list(estimated_power), "band": band,
            "ratio_low": low, "ratio_high": high}
