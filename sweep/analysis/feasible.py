"""Feasibility of result points: a candidate counts only where its metric is finite and the
point fits (``fits == 1``, when the Dataset has ``fits``)."""

from __future__ import annotations

import numpy as np
import xarray as xr

__all__ = ["feasible", "masked"]


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
