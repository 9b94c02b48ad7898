"""The ``ds.sweep`` xarray accessor: variation, winners, frontiers, Pareto fronts, regimes.

Registered on ``import sweep``. Works on any result Dataset, in memory or opened from disk,
NumPy- or Dask-backed, whatever subset of dims it has (any dim may have size 1 or have been
selected away; ``output_len`` may or may not be a dim). The array work is in
:mod:`sweep.analysis`; this module maps dims and coordinates onto it.

Feasibility: a candidate counts only where its metric is finite and ``fits == 1`` (when the
Dataset has ``fits``). Directions (higher or lower is better) come from the registry
``sweep.variables.DIRECTION`` (or a metric's ``better`` attribute), never from the caller.
See ``docs/analysis.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from grids.errors import SpecError, suggest
from sweep import analysis as an
from sweep.variables import DIRECTION

#: label of "no feasible candidate" in winner / best / worst arrays
NO_WINNER = ""
DEFAULT_PARETO_OVER = ("hardware", "parallelism")
DEFAULT_ALONG = ("batch", "context")


# ------------------------------------------------------------------------------ validation
def check_metric(ds: xr.Dataset, name: str) -> str:
    """``name`` if it is a metric (data variable) of ``ds``; otherwise a SpecError with hints."""
    if not isinstance(name, str) or name not in ds.data_vars:
        raise SpecError(f"unknown metric {name!r}{suggest(str(name), list(ds.data_vars))}")
    return name


def metric_direction(ds: xr.Dataset, name: str, direction: str | None = None,
                     required: bool = True) -> str:
    """``"max"`` or ``"min"``: ``direction`` if given, else the registry's, else the metric's
    ``better`` attribute. Metrics without a direction raise (``required``) or give ``"none"``."""
    check_metric(ds, name)
    if direction is not None:
        if direction not in an.DIRECTIONS:
            raise SpecError(f"direction of {name!r} must be 'max' or 'min', got {direction!r}")
        return direction
    d = DIRECTION.get(name) or (ds[name].attrs.get("better") if name in ds.variables else None)
    if d in an.DIRECTIONS:
        return str(d)
    if required:
        raise SpecError(f"metric {name!r} has no better direction (neither higher nor lower is "
                        f"better); choose a metric with one, e.g. throughput (max) or tpot (min)")
    return "none"


def as_dims(ds: xr.Dataset, dims: str | Iterable[str] | None, role: str,
            allow_scalar: bool = True) -> tuple[str, ...]:
    """Dims of ``ds`` named by ``dims``; names that are scalar coords (a dim selected away) are
    dropped when ``allow_scalar``; unknown names raise SpecError."""
    if dims is None:
        return ()
    if isinstance(dims, str):
        dims = (dims,)
    out: list[str] = []
    for d in dims:
        if d in ds.dims:
            if d not in out:
                out.append(d)
        elif allow_scalar and d in ds.coords and ds[d].ndim == 0:
            continue
        else:
            raise SpecError(f"{role}: {d!r} is not a dim of this result"
                            f"{suggest(str(d), [str(x) for x in ds.dims])}")
    return tuple(out)


def need_dim(ds: xr.Dataset, dim: str, role: str) -> str:
    if not isinstance(dim, str) or dim not in ds.dims:
        extra = (" (it was selected to a single value; keep it as a dim, e.g. "
                 f"ds.sel({dim}=[...]))" if isinstance(dim, str) and dim in ds.coords else "")
        raise SpecError(f"{role}: {dim!r} is not a dim of this result{extra}"
                        f"{suggest(str(dim), [str(x) for x in ds.dims])}")
    return dim


def feasible(ds: xr.Dataset, metric: str) -> xr.DataArray:
    """True where ``metric`` is finite and the point fits."""
    da = ds[metric]
    ok = da.notnull() & np.isfinite(da) if da.dtype.kind == "f" else da.notnull()
    if "fits" in ds.data_vars and metric != "fits":
        ok = ok & (ds["fits"] == 1)
    return ok


def masked(ds: xr.Dataset, metric: str) -> xr.DataArray:
    """``metric`` as float with NaN wherever the point is infeasible."""
    da = ds[metric]
    if da.dtype.kind != "f":
        da = da.astype(np.float64)
    out = da.where(feasible(ds, metric))
    out.attrs = dict(ds[metric].attrs)
    out.name = metric
    return out


def candidates(ds: xr.Dataset, metric: str, best_over: Iterable[str] | str | None = (),
               direction: str | None = None) -> xr.DataArray:
    """The feasible metric, reduced to its best value over ``best_over`` (e.g. layouts)."""
    check_metric(ds, metric)
    dims = as_dims(ds, best_over, "best_over")
    da = masked(ds, metric)
    if dims:
        d = metric_direction(ds, metric, direction)
        da = (da.max(dims, keep_attrs=True) if d == "max" else da.min(dims, keep_attrs=True))
    return da


def label_order(labels: np.ndarray) -> np.ndarray:
    """A permutation putting the labels in sorted order (numbers by value, others as text)."""
    labels = np.asarray(labels)
    try:
        if labels.dtype.kind in "iufb":
            return np.argsort(labels, kind="stable")
    except TypeError:  # pragma: no cover
        pass
    return np.argsort(np.array([str(x) for x in labels.ravel()]), kind="stable")


def whole_core(da: xr.DataArray, core: Iterable[str]) -> xr.DataArray:
    """``da`` with its core dims in one chunk each (Dask-backed arrays only)."""
    core = [d for d in core if d in da.dims]
    if da.chunks is not None and core:
        return da.chunk(dict.fromkeys(core, -1))
    return da


def _ufunc(func, *args, core: Sequence[str], n_out: int = 1, dtypes=(np.float64,), **kw):
    args = tuple(whole_core(a, core) for a in args)
    return xr.apply_ufunc(
        func, *args, input_core_dims=[list(core)] * len(args),
        output_core_dims=[[]] * n_out, dask="parallelized", output_dtypes=list(dtypes),
        dask_gufunc_kwargs={"allow_rechunk": True}, kwargs=kw, keep_attrs=False)


def winner_index(da: xr.DataArray, over: str, direction: str) -> xr.DataArray:
    """Index along ``over`` of the best feasible candidate (-1: none); ties go to the first
    label in sorted order, so the answer does not depend on the order of the coordinate."""
    order = label_order(da[over].values)

    def f(a):
        return an.extreme_index(a, np.isfinite(a), direction, axis=-1, order=order)

    return _ufunc(f, da, core=[over], dtypes=(np.intp,))


def index_labels(index: xr.DataArray, labels: np.ndarray, name: str) -> xr.DataArray:
    out = xr.apply_ufunc(an.take_labels, index, kwargs={"labels": np.asarray(labels)},
                         dask="parallelized", output_dtypes=[object], keep_attrs=False)
    out.name = name
    return out


def parse_objectives(ds: xr.Dataset, objectives) -> list[tuple[str, str]]:
    """``[(metric, direction), ...]`` from a dict ``{name: "min"|"max"|None}``, a list of names
    (optionally ``name:min``) using the registry directions, or a comma-separated string."""
    if isinstance(objectives, str):
        objectives = [x for x in objectives.replace(",", " ").split() if x]
    items: list[tuple[str, str | None]] = []
    if isinstance(objectives, Mapping):
        items = [(str(k), v) for k, v in objectives.items()]
    else:
        for o in objectives or ():
            if isinstance(o, (tuple, list)) and len(o) == 2:
                items.append((str(o[0]), o[1]))
            else:
                name, _, d = str(o).partition(":")
                items.append((name.strip(), d.strip() or None))
    out: list[tuple[str, str]] = []
    for name, d in items:
        check_metric(ds, name)
        if any(name == n for n, _ in out):
            raise SpecError(f"objective {name!r} given twice")
        out.append((name, metric_direction(ds, name, d)))
    if len(out) < 2:
        raise SpecError(f"a Pareto front needs two or more objectives, got {len(out)} "
                        f"(e.g. tpot:min throughput:max tokens_per_joule:max)")
    return out


# ------------------------------------------------------------------------------ accessor
@xr.register_dataset_accessor("sweep")
class SweepAccessor:
    """Analysis of a sweep result: ``ds.sweep.variation("throughput")`` etc."""

    def __init__(self, ds: xr.Dataset) -> None:
        self._ds = ds

    # ---- best value over deployment choices
    def best(self, metric: str, over: Iterable[str] | str = ("parallelism",),
             direction: str | None = None) -> xr.DataArray:
        """Best feasible value of ``metric`` over the dims ``over`` (NaN where none fits)."""
        return candidates(self._ds, metric, over, direction)

    # ---- variation
    def variation(self, metric: str, over: str = "hardware",
                  best_over: Iterable[str] | str = ()) -> xr.Dataset:
        """max / min of ``metric`` across ``over`` at every other point, feasible points only.

        Returns a Dataset with ``ratio`` (>= 1; NaN where fewer than two candidates are
        feasible), ``max``, ``min``, ``n_feasible`` and the labels ``best`` and ``worst`` (the
        best is the max for higher-is-better metrics and the min for lower-is-better ones;
        ``""`` where none). ``best_over`` dims are first reduced to their best value (e.g.
        ``best_over="parallelism"``: every device with its best layout).
        """
        ds = self._ds
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

        ratio, hi, lo, count, ib, iw = _ufunc(
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

    def max_variation(self, metric: str, over: str = "hardware",
                      best_over: Iterable[str] | str = ()) -> dict[str, Any] | None:
        """The largest finite ratio of :meth:`variation`, where it occurs and the two labels.

        Returns ``{"ratio", "metric", "over", "where": {dim: value}, "best", "worst",
        "best_value", "worst_value", "units"}`` or None when no point has two feasible
        candidates.
        """
        v = self.variation(metric, over, best_over).compute()
        ratio = np.asarray(v["ratio"].values, dtype=np.float64)
        finite = np.isfinite(ratio)
        if not finite.any():
            return None
        flat = int(np.where(finite, ratio, -np.inf).argmax())
        idx = np.unravel_index(flat, ratio.shape) if ratio.ndim else ()
        sel = dict(zip(v["ratio"].dims, idx))
        where = {d: _py(v[d].values[i]) for d, i in sel.items()}
        pt = v.isel(sel)
        d = v.attrs["direction"]
        hi, lo = float(pt["max"]), float(pt["min"])
        return {"ratio": float(ratio[idx]) if idx else float(ratio), "metric": metric,
                "over": over, "where": where, "best": str(pt["best"].values.item()),
                "worst": str(pt["worst"].values.item()),
                "best_value": lo if d == "min" else hi, "worst_value": hi if d == "min" else lo,
                "units": self._ds[metric].attrs.get("units", "")}

    # ---- winners and frontiers
    def winner(self, metric: str, over: str = "hardware",
               best_over: Iterable[str] | str = ()) -> xr.DataArray:
        """The best ``over`` label at every other point (``""`` where none is feasible).

        Ties go to the label that sorts first. ``best_over`` dims are reduced to their best
        value first (e.g. ``best_over="parallelism"``: each device with its best layout).
        """
        ds = self._ds
        need_dim(ds, over, "over")
        if over in as_dims(ds, best_over, "best_over"):
            raise SpecError(f"over={over!r} cannot also be in best_over")
        d = metric_direction(ds, metric)
        da = candidates(ds, metric, best_over)
        out = index_labels(winner_index(da, over, d), da[over].values, "winner")
        out.attrs = {"long_name": f"{over} with the {'lowest' if d == 'min' else 'highest'} "
                                  f"{metric}", "metric": metric, "over": over,
                     "no_winner": NO_WINNER}
        return out

    def frontier(self, metric: str, over: str = "hardware",
                 along: Iterable[str] | str = DEFAULT_ALONG,
                 best_over: Iterable[str] | str = ()) -> pd.DataFrame:
        """Crossovers: where the winner of ``metric`` across ``over`` changes along ``along``.

        One row per pair of neighbouring coordinate values (in sorted order) along one of the
        ``along`` dims at which both neighbours have a winner and the winners differ. Columns:
        the other dims (fixed coords; the changing dim's own column is empty), ``dim``,
        ``value_before``, ``value_after``, ``winner_before``, ``winner_after``,
        ``best_before``, ``best_after`` (the winning metric values).
        """
        ds = self._ds
        need_dim(ds, over, "over")
        red = as_dims(ds, best_over, "best_over")
        dims_along = as_dims(ds, along, "along")
        for dd in dims_along:
            if dd == over or dd in red:
                raise SpecError(f"along dim {dd!r} cannot be the over dim or in best_over")
        if over in red:
            raise SpecError(f"over={over!r} cannot also be in best_over")
        d = metric_direction(ds, metric)
        da = candidates(ds, metric, red)
        if dims_along:
            da = da.sortby(list(dims_along))
        da = da.compute()
        idx = winner_index(da, over, d)
        labels = da[over].values
        best = (da.max(over) if d == "max" else da.min(over))
        other_all = list(idx.dims)
        frames = []
        for dd in dims_along:
            if idx.sizes[dd] < 2:
                continue
            t = idx.transpose(*[x for x in other_all if x != dd], dd)
            codes = np.asarray(t.values)
            bv = np.asarray(best.transpose(*t.dims).values, dtype=np.float64)
            pos = np.nonzero(an.change_points(codes, axis=-1))
            data: dict[str, Any] = {}
            for i, od in enumerate(t.dims[:-1]):
                data[od] = idx[od].values[pos[i]]
            after = (*pos[:-1], pos[-1] + 1)
            coord = idx[dd].values
            data["dim"] = np.full(len(pos[-1]), dd, dtype=object)
            data["value_before"] = coord[pos[-1]]
            data["value_after"] = coord[pos[-1] + 1]
            data["winner_before"] = an.take_labels(codes[pos], labels)
            data["winner_after"] = an.take_labels(codes[after], labels)
            data["best_before"] = bv[pos]
            data["best_after"] = bv[after]
            frames.append(pd.DataFrame(data))
        fixed = list(other_all)
        cols = [*fixed, "dim", "value_before", "value_after", "winner_before", "winner_after",
                "best_before", "best_after"]
        if not frames:
            return pd.DataFrame({c: pd.Series(dtype=object) for c in cols})
        table = pd.concat(frames, ignore_index=True).reindex(columns=cols)
        for c in [*fixed, "value_before", "value_after"]:
            integral = (np.asarray(idx[c].values).dtype.kind in "iu" if c in fixed
                        else _all_integral(table[c]))
            if integral:
                table[c] = table[c].astype("Int64")
        table = table.sort_values(["dim", *fixed, "value_before"], kind="stable",
                                  na_position="first").reset_index(drop=True)
        table.attrs = {"metric": metric, "over": over, "along": list(dims_along),
                       "best_over": list(red)}
        return table

    # ---- Pareto
    def pareto(self, objectives, over: Iterable[str] | str = DEFAULT_PARETO_OVER
               ) -> xr.DataArray:
        """Boolean mask of the non-dominated points for two or more objectives.

        ``objectives``: ``{"tpot": "min", "throughput": "max"}`` or a list of metric names
        using the registry directions (``"name:min"`` overrides). ``over``: the dims across
        which candidates compete; the front is computed independently at every combination of
        the other dims. Infeasible points (``fits == 0`` or any objective NaN) are never on the
        front and never dominate; equal points are both non-dominated.
        """
        ds = self._ds
        objs = parse_objectives(ds, objectives)
        core = as_dims(ds, over, "over")
        arrays = [ds[n] for n, _ in objs]
        has_fits = "fits" in ds.data_vars
        if has_fits:
            arrays.append(ds["fits"])
        arrays = list(xr.broadcast(*arrays))
        dirs = [d for _, d in objs]
        k = len(objs)
        ncore = len(core)

        def f(*arrs):
            shape = arrs[0].shape
            n = int(np.prod(shape[len(shape) - ncore:])) if ncore else 1
            x = np.stack([an.oriented(a, dd).reshape(-1, n) for a, dd in zip(arrs[:k], dirs)],
                         axis=-1)
            valid = np.isfinite(x).all(axis=-1)
            if has_fits:
                valid &= np.asarray(arrs[k]).reshape(-1, n) == 1
            return an.pareto_mask(x, valid).reshape(shape)

        arrays = [whole_core(a, core) for a in arrays]
        mask = xr.apply_ufunc(f, *arrays, input_core_dims=[list(core)] * len(arrays),
                              output_core_dims=[list(core)], dask="parallelized",
                              output_dtypes=[bool], dask_gufunc_kwargs={"allow_rechunk": True},
                              keep_attrs=False)
        mask = mask.transpose(*arrays[0].dims)
        mask.name = "pareto"
        mask.attrs = {"long_name": "non-dominated (Pareto-optimal) point",
                      "objectives": " ".join(f"{n}:{dd}" for n, dd in objs),
                      "over": " ".join(core)}
        return mask

    # ---- seed 002 section IV / V
    def regimes(self, regimes=None) -> xr.Dataset:
        """Seed 002's six operational regimes scored per accelerator (best = 1.0); see
        :mod:`sweep.regimes` and docs/analysis.md for the definitions."""
        from sweep.regimes import regime_scores

        return regime_scores(self._ds, regimes)

    def strategies(self) -> xr.Dataset:
        """Per layout: parameter-to-compute ratio, throughput, latency CoV, and EP vs TP ratios
        (see :func:`sweep.regimes.strategy_table`)."""
        from sweep.regimes import strategy_table

        return strategy_table(self._ds)

    # ---- plots
    def plot(self, kind: str = "winner-map", **kwargs):
        """A matplotlib Figure of ``kind`` (see :mod:`sweep.plots`)."""
        from sweep.plots import plot

        return plot(self._ds, kind, **kwargs)


def _py(x):
    """A coordinate value as a plain Python scalar."""
    return x.item() if hasattr(x, "item") else x


def _all_integral(s: pd.Series) -> bool:
    try:
        v = pd.to_numeric(s, errors="raise").to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return bool(len(v)) and bool(np.all(np.isfinite(v) & (v == np.round(v))))
