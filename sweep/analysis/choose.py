"""Choosing a layout per point: the best one on a comparison basis, or the one with the fewest
devices (``parallelism = "auto"`` gives the layouts to choose from, grids/auto_layouts.py)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from grids.errors import SpecError
from sweep.analysis.basis import LAYOUT_DIM, Basis, layout_devices, normalised, parse_basis
from sweep.analysis.feasible import masked
from sweep.analysis.kept import is_kept, kept_labels, need_every_layout
from sweep.analysis.select import index_labels, metric_direction, winner_index


def best_layout(ds: xr.Dataset, metric: str, basis: Basis | str | None = None,
                direction: str | None = None) -> xr.Dataset:
    """Every device at its best layout on ``basis``: ``value`` (the metric on the basis) and
    ``layout`` (the label of the layout that gives it, ``""`` where none is feasible), with the
    layout dim reduced. Ties go to the layout that sorts first."""
    basis = parse_basis(basis)
    vals = normalised(ds, metric, basis)
    d = metric_direction(ds, metric, direction)
    if LAYOUT_DIM not in vals.dims:
        if is_kept(ds):  # each point's layout is the one the run kept
            lay = kept_labels(ds).broadcast_like(vals).where(vals.notnull(), "")
        else:
            label = str(ds[LAYOUT_DIM].values) if LAYOUT_DIM in ds.coords else ""
            lay = xr.full_like(vals, label, dtype=object).where(vals.notnull(), "")
        return xr.Dataset({"value": vals, "layout": lay}, attrs={"basis": basis.label})
    idx = winner_index(vals, LAYOUT_DIM, d)
    best = vals.max(LAYOUT_DIM, keep_attrs=True) if d == "max" else vals.min(LAYOUT_DIM,
                                                                            keep_attrs=True)
    lay = index_labels(idx, vals[LAYOUT_DIM].values, "layout")
    lay.attrs = {"long_name": f"layout with the best {metric} ({basis.label})"}
    best.attrs["basis"] = basis.label
    return xr.Dataset({"value": best, "layout": lay}, attrs={"basis": basis.label,
                                                              "metric": metric})


def fewest_devices(ds: xr.Dataset, metric: str = "throughput",
                   direction: str | None = None) -> xr.Dataset:
    """Per point, the feasible layout with the fewest devices (``parallelism = "auto"`` gives
    the family it is chosen from, grids/auto_layouts.py): ``layout`` (its label, ``""`` where
    none fits), ``devices`` (NaN there) and ``value`` (``metric`` at it, grid values). Among
    layouts of equally few devices the best ``metric`` wins, then the label that sorts first."""
    if is_kept(ds):
        raise need_every_layout(ds, "fewest_devices")
    if LAYOUT_DIM not in ds.dims:
        raise SpecError("fewest_devices needs the parallelism dim (several layouts to choose "
                        "from); keep it, e.g. ds.sel(parallelism=[...])")
    vals = masked(ds, metric).astype(np.float64)
    dev = layout_devices(ds).broadcast_like(vals)
    ok = vals.notnull()
    fewest = dev.where(ok).min(LAYOUT_DIM)
    d = metric_direction(ds, metric, direction)
    score = vals.where(ok & (dev == fewest))
    idx = winner_index(score, LAYOUT_DIM, d)
    lay = index_labels(idx, vals[LAYOUT_DIM].values, "layout")
    value = score.max(LAYOUT_DIM) if d == "max" else score.min(LAYOUT_DIM)
    value.attrs = dict(ds[metric].attrs)
    lay.attrs = {"long_name": "feasible layout with the fewest devices"}
    fewest.attrs = {"units": "1", "long_name": "devices of that layout (one replica)"}
    return xr.Dataset({"layout": lay, "devices": fewest, "value": value},
                      attrs={"metric": metric})
