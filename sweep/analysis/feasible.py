"""Feasibility of result points: a candidate counts only where its metric is finite and the
point fits (``fits == 1``, when the Dataset has ``fits``)."""

from __future__ import annotations

import numpy as np
import xarray as xr

__all__ = ["OUTSIDE_BASIS", "REASON_TEXT", "feasible", "masked", "reason_names", "why_infeasible"]


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


#: what each ``infeasible_reason`` flag means, in words a reader follows (keys: the result's
#: ``flag_meanings``, docs/model.md section 2)
REASON_TEXT = {
    "engine_unsupported": "the engine does not run on the device",
    "no_compute_dtype": "the device has no compute type for the precision",
    "tp_heads": "the tensor-parallel degree does not divide the heads",
    "ep_experts": "the expert-parallel degree does not divide the experts",
    "pp_layers": "more pipeline stages than layers",
    "no_host_tier": "offload needs a host memory tier the device lacks",
    "batch_cap": "the batch is above the engine's cap",
    "context_window": "beyond the model's context window",
    "memory": "does not fit in memory at any layout",
    "host_capacity": "the host memory is too small for the offloaded weights",
}
#: the reason given where points fit but none counts on the comparison basis
OUTSIDE_BASIS = "outside the basis (unpriced, or beyond the budget)"


def reason_names(ds: xr.Dataset) -> list[str]:
    """The meanings of the ``infeasible_reason`` flag values 0, 1, ... of this result."""
    attrs = ds["infeasible_reason"].attrs if "infeasible_reason" in ds.variables else {}
    names = str(attrs.get("flag_meanings", "")).split()
    values = [int(v) for v in np.atleast_1d(attrs.get("flag_values", range(len(names))))]
    out = [""] * (max(values, default=-1) + 1)
    for v, n in zip(values, names):
        out[v] = n
    return out


def why_infeasible(ds: xr.Dataset, dims) -> xr.DataArray:
    """Why nothing is feasible across ``dims`` at every other point, ``""`` where some candidate
    fits. Every point records the first check it failed, and the checks run in the order of the
    flag values (docs/model.md section 2), so the reason given is that of the candidate that
    passed the most checks: a cell where every layout that divides the heads runs beyond the
    context window says "beyond the model's context window", not "the tensor-parallel degree
    does not divide the heads". Needs ``fits`` and ``infeasible_reason``."""
    dims = [d for d in dims if d in ds["fits"].dims]
    fits = ds["fits"] == 1
    code = ds["infeasible_reason"].where(~fits, 0)
    top = code.max(dims) if dims else code
    fits_any = fits.any(dims) if dims else fits
    names = reason_names(ds)
    lut = np.array([REASON_TEXT.get(n, n.replace("_", " ")) for n in names] + ["unknown"],
                   dtype=object)
    c = np.asarray(top.values).astype(np.int64)
    labels = lut[np.where((c >= 0) & (c < len(names)), c, len(names))]
    out = xr.DataArray(labels, dims=top.dims, coords=top.coords).where(~fits_any, "")
    out.name = "why_none"
    return out
