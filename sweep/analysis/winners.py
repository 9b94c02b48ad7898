"""Winners and frontiers: the best label at every point, and where it changes along batch and
context."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from grids.errors import SpecError
from sweep.analysis import core as an
from sweep.analysis.basis import DEFAULT_BASIS, Basis, parse_basis
from sweep.analysis.select import (
    NO_WINNER,
    as_dims,
    candidates,
    default_best_over,
    index_labels,
    metric_direction,
    need_dim,
    winner_index,
)
from sweep.analysis.uncertainty import margin_band

DEFAULT_ALONG = ("batch", "context")


def _compared(ds: xr.Dataset, metric: str, over: str, best_over, basis):
    """(reduced dims, direction, basis, candidates): what :func:`winner` and :func:`margin`
    compare, the metric on the basis with ``best_over`` reduced."""
    need_dim(ds, over, "over")
    red = default_best_over(ds, best_over, over)
    if over in red:
        raise SpecError(f"over={over!r} cannot also be in best_over")
    d = metric_direction(ds, metric)
    b = None if basis is None else parse_basis(basis)
    return red, d, b, candidates(ds, metric, red, basis=b)


def winner(ds: xr.Dataset, metric: str, over: str = "hardware",
           best_over: Iterable[str] | str | None = None,
           basis: str | None = DEFAULT_BASIS) -> xr.DataArray:
    """The best ``over`` label at every other point (``""`` where none is feasible).

    Ties go to the label that sorts first. The metric is put on ``basis`` first (default per
    kW at the system boundary; None = raw grid values) and ``best_over`` dims are reduced to
    their best value (default: the layouts, each device at its best layout).
    """
    _, d, b, da = _compared(ds, metric, over, best_over, basis)
    out = index_labels(winner_index(da, over, d), da[over].values, "winner")
    out.attrs = {"long_name": f"{over} with the {'lowest' if d == 'min' else 'highest'} "
                              f"{metric}", "metric": metric, "over": over,
                 "no_winner": NO_WINNER, "basis": b.label if b else "grid values (no basis)"}
    return out


def frontier(ds: xr.Dataset, metric: str, over: str = "hardware",
             along: Iterable[str] | str = DEFAULT_ALONG,
             best_over: Iterable[str] | str | None = None,
             basis: str | None = DEFAULT_BASIS) -> pd.DataFrame:
    """Crossovers: where the winner of ``metric`` across ``over`` changes along ``along``.

    One row per pair of neighbouring coordinate values (in sorted order) along one of the
    ``along`` dims at which both neighbours have a winner and the winners differ. Columns:
    the other dims (fixed coords; the changing dim's own column is empty), ``dim``,
    ``value_before``, ``value_after``, ``winner_before``, ``winner_after``,
    ``best_before``, ``best_after`` (the winning metric values, on ``basis``; the default
    basis and layout reduction are those of :func:`winner`).
    """
    need_dim(ds, over, "over")
    red = default_best_over(ds, best_over, over)
    b = None if basis is None else parse_basis(basis)
    dims_along = as_dims(ds, along, "along")
    for dd in dims_along:
        if dd == over or dd in red:
            raise SpecError(f"along dim {dd!r} cannot be the over dim or in best_over")
    if over in red:
        raise SpecError(f"over={over!r} cannot also be in best_over")
    d = metric_direction(ds, metric)
    da = candidates(ds, metric, red, basis=b)
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
        data: dict[Hashable, Any] = {}
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
    fixed = [str(d) for d in other_all]  # xarray types dims as Hashable; ours are names
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
                   "best_over": list(red), "basis": b.label if b else "grid values (no basis)"}
    return table

def _all_integral(s: pd.Series) -> bool:
    try:
        v = pd.to_numeric(s, errors="raise").to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return bool(len(v)) and bool(np.all(np.isfinite(v) & (v == np.round(v))))


def margin(ds: xr.Dataset, metric: str, over: str = "hardware",
           best_over: Iterable[str] | str | None = None,
           basis: str | Basis | None = DEFAULT_BASIS) -> xr.Dataset:
    """The winner of :func:`winner`, its runner-up and by how much it wins, at every point.

    Returns ``winner`` and ``runner_up`` (labels, ``""`` where none), ``best`` and ``second``
    (their values on ``basis``), ``margin`` (best / second for higher-is-better metrics, second
    / best for lower-is-better ones: >= 1; NaN with fewer than two feasible candidates),
    ``n_feasible``, ``margin_band`` and ``tie`` (when ``ds`` carries uncertainty bands and
    ``over`` is hardware or engine: the band of the margin and 1 where the margin is within it,
    :mod:`sweep.analysis.uncertainty`) and ``why_none``: where nothing is feasible, why (the
    reason most candidates
    share, :func:`sweep.analysis.feasible.why_infeasible`; points that fit but do not count on
    the basis: :data:`sweep.analysis.feasible.OUTSIDE_BASIS`), ``""`` elsewhere.
    """
    from sweep.analysis.feasible import OUTSIDE_BASIS, why_infeasible

    red, d, b, da = _compared(ds, metric, over, best_over, basis)
    da = da.compute()
    labels = da[over].values
    first = winner_index(da, over, d)
    taken = xr.DataArray(np.arange(da.sizes[over]), dims=over) == first
    second_i = winner_index(da.where(~taken), over, d)

    rest = [x for x in da.dims if x != over]
    values = np.asarray(da.transpose(*rest, over).values, dtype=np.float64)

    def at(index: xr.DataArray) -> xr.DataArray:
        i = np.asarray(index.transpose(*rest).values)
        v = np.take_along_axis(values, np.clip(i, 0, None)[..., None], -1)[..., 0]
        return xr.DataArray(np.where(i >= 0, v, np.nan), dims=rest,
                            coords=dict(index.coords.items()))

    best, second = at(first), at(second_i)
    ratio = best / second if d == "max" else second / best
    out = xr.Dataset({
        "winner": index_labels(first, labels, "winner"),
        "runner_up": index_labels(second_i, labels, "runner_up"),
        "best": best.assign_attrs(units=da.attrs.get("units", "")),
        "second": second.assign_attrs(units=da.attrs.get("units", "")),
        "margin": ratio.where(second_i >= 0).assign_attrs(
            units="1", long_name=f"how many times better the winner's {metric} is than the "
                                 f"runner-up's"),
        "n_feasible": np.isfinite(da).sum(over).assign_attrs(
            units="1", long_name=f"{over} values with a feasible point"),
    })
    band = margin_band(ds, over, red, first, second_i)
    if band is not None:
        out["margin_band"] = band.assign_attrs(
            units="1", long_name="uncertainty band of the margin: the winner/runner-up ratio "
            "lies within [margin / band, margin x band] as often as a band holds measurements "
            "(docs/analysis.md, 'Uncertainty bands'); NaN without bands (ideal, other dims)")
        out["tie"] = (out["margin"] <= out["margin_band"]).astype(np.int8).assign_attrs(
            units="1", long_name="1 where the winner's margin is within the band: the "
            "runner-up may as well win")
    if {"fits", "infeasible_reason"} <= set(ds.data_vars):
        why = why_infeasible(ds, (over, *red))
        fits_somewhere = why == ""
        why = xr.where((first < 0) & fits_somewhere, OUTSIDE_BASIS, why)
        out["why_none"] = why.where(first < 0, "").astype(object)
    else:
        out["why_none"] = xr.where(first < 0, "nothing feasible", "").astype(object)
    out.attrs = {"metric": metric, "over": over, "best_over": " ".join(red),
                 "direction": d, "basis": b.label if b else "grid values (no basis)"}
    return out
