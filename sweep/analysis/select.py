"""The xarray selection layer of the analysis: metric names, directions, dims, feasibility.

Maps dims and coordinates onto the array cores of :mod:`sweep.analysis.core`. Feasibility: a
candidate counts only where its metric is finite and ``fits == 1`` (when the Dataset has
``fits``). Directions (higher or lower is better) come from the variable registry
(``sweep.results.variables.DIRECTION``) or a metric's ``better`` attribute, never from the caller.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import xarray as xr

from grids.errors import SpecError, suggest
from sweep.analysis import core as an
from sweep.analysis.basis import normalised
from sweep.analysis.feasible import masked
from sweep.results.variables import DIRECTION

#: label of "no feasible candidate" in winner / best / worst arrays
NO_WINNER = ""


# ------------------------------------------------------------------------------ validation
def check_metric(ds: xr.Dataset, name: str) -> str:
    """``name`` if it is a metric (data variable) of ``ds``; otherwise a SpecError with hints."""
    if not isinstance(name, str) or name not in ds.data_vars:
        raise SpecError(f"unknown metric {name!r}{suggest(str(name), [str(v) for v in ds.data_vars])}")
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


def default_best_over(ds: xr.Dataset, best_over, over: str | Iterable[str]) -> tuple[str, ...]:
    """``best_over`` as dims; None = the layouts (each candidate at its best layout), unless the
    layouts are what is compared or are not a dim."""
    over = (over,) if isinstance(over, str) else tuple(over)
    if best_over is None:
        return tuple(d for d in ("parallelism",) if d in ds.dims and d not in over)
    return as_dims(ds, best_over, "best_over")


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


def candidates(ds: xr.Dataset, metric: str, best_over: Iterable[str] | str | None = (),
               direction: str | None = None, basis=None) -> xr.DataArray:
    """The feasible metric, reduced to its best value over ``best_over`` (e.g. layouts).

    ``basis`` (a :class:`sweep.analysis.basis.Basis` or its text form): first put the metric on
    that comparison basis (throughputs per device, per kW, per dollar or scaled to a budget;
    layouts beyond a budget removed); None = the raw grid values."""
    check_metric(ds, metric)
    dims = as_dims(ds, best_over, "best_over")
    da = masked(ds, metric) if basis is None else normalised(ds, metric, basis)
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


def apply_core(func, *args, core: Sequence[str], n_out: int = 1, dtypes=(np.float64,), **kw):
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

    return apply_core(f, da, core=[over], dtypes=(np.intp,))


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
    for name, given in items:
        check_metric(ds, name)
        if any(name == n for n, _ in out):
            raise SpecError(f"objective {name!r} given twice")
        out.append((name, metric_direction(ds, name, given)))
    if len(out) < 2:
        raise SpecError(f"a Pareto front needs two or more objectives, got {len(out)} "
                        f"(e.g. tpot:min throughput:max tokens_per_joule:max)")
    return out


def apply_sel(ds: xr.Dataset, sel: dict | None) -> xr.Dataset:
    """Select ``{dim: value}`` pairs (values matched as text too: ``'8'`` selects batch 8). A
    list of values keeps the dim with those values, in the order given."""
    for dim, value in (sel or {}).items():
        if dim not in ds.coords:
            raise SpecError(f"cannot select {dim}={value!r}: no such dim"
                            f"{suggest(str(dim), [str(d) for d in ds.dims])}")
        many = isinstance(value, (list, tuple))
        wanted = [str(v) for v in value] if many else [str(value)]
        if dim not in ds.dims:
            if str(ds[dim].values.item()) not in wanted:
                raise SpecError(f"{dim}={value!r} is not in the result (it holds "
                                f"{ds[dim].values.item()!r})")
            continue
        labels = [str(x) for x in ds[dim].values]
        for w in wanted:
            if w not in labels:
                raise SpecError(f"{dim}={w!r} is not in the result{suggest(w, labels)}")
        if len(set(wanted)) != len(wanted):
            raise SpecError(f"{dim}: a value is given twice in {value!r}")
        idx = [labels.index(w) for w in wanted]
        ds = ds.isel({dim: idx if many else idx[0]})
    return ds


def py_scalar(x):
    """A coordinate value as a plain Python scalar."""
    return x.item() if hasattr(x, "item") else x
