"""What a figure shows of a result: one value of a dim (:func:`_pick`; model and precision with
``sel``, :func:`_subset`), the listed devices (:func:`only_hardware`), every other dim at its
first value (:func:`_fix_rest`) and a map's (y, x) grid (:func:`_grid`)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from grids.errors import SpecError, suggest
from sweep.analysis.select import apply_sel


def _pick(ds: xr.Dataset, dim: str, value, default: str = "first") -> tuple[xr.Dataset, str]:
    """Select one value of ``dim`` (default the first) and return (subset, label)."""
    if dim not in ds.dims:
        if dim in ds.coords:
            if value is not None and str(ds[dim].values.item()) != str(value):
                raise SpecError(f"{dim} {value!r} is not in the result (it holds "
                                f"{ds[dim].values.item()!r})")
            return ds, str(ds[dim].values.item())
        if value is not None:
            raise SpecError(f"the result has no {dim} dim to select {value!r} from")
        return ds, ""
    labels = [str(x) for x in ds[dim].values]
    if value is None:
        i = 0
    else:
        if str(value) not in labels:
            raise SpecError(f"{dim} {value!r} is not in the result{suggest(str(value), labels)}")
        i = labels.index(str(value))
    return ds.isel({dim: i}), labels[i]


def _fix_rest(da: xr.DataArray, keep: tuple[str, ...]) -> tuple[xr.DataArray, list[str]]:
    """Fix every dim not in ``keep`` to its first value; return the notes 'dim=value'."""
    notes = []
    for d in list(da.dims):
        if d not in keep:
            notes.append(f"{d}={da[d].values[0]}")
            da = da.isel({d: 0})
    return da, notes


def _grid(da: xr.DataArray, x: str, y: str) -> tuple[xr.DataArray, np.ndarray, np.ndarray]:
    """``da`` as (y, x), with scalar coords of x / y promoted to length-1 dims, sorted."""
    for d in (x, y):
        if d not in da.dims:
            da = da.expand_dims(d) if d in da.coords else da.expand_dims({d: [0]})
    da = da.sortby([x, y]).transpose(y, x, ...)
    return da, np.asarray(da[x].values, dtype=np.float64), np.asarray(da[y].values,
                                                                      dtype=np.float64)


def only_hardware(ds: xr.Dataset, hardware) -> xr.Dataset:
    """Keep only the listed devices (a list or comma-separated ids; None keeps all)."""
    if hardware is None:
        return ds
    if isinstance(hardware, str):
        hardware = [h for h in hardware.replace(",", " ").split() if h]
    if "hardware" not in ds.dims:
        raise SpecError("the result has no hardware dim to choose devices from")
    labels = [str(x) for x in ds["hardware"].values]
    bad = [h for h in hardware if h not in labels]
    if bad:
        raise SpecError(f"hardware {bad[0]!r} is not in the result{suggest(bad[0], labels)}")
    if not hardware:
        raise SpecError("empty hardware list")
    return ds.isel(hardware=[labels.index(h) for h in hardware])


def _subset(ds: xr.Dataset, model, precision, sel) -> tuple[xr.Dataset, str, str]:
    ds = apply_sel(ds, sel)
    ds, m = _pick(ds, "model", model)
    ds, p = _pick(ds, "precision", precision)
    return ds, m, p
