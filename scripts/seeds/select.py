"""Small selection helpers over result Datasets (labels, nearest grid values, one cell, the best
point of a slice). The analyses themselves are the product's (``ds.sweep``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr


def labels(ds: xr.Dataset | xr.DataArray, dim: str) -> list:
    """The values of ``dim`` as plain Python scalars ([] when absent)."""
    if dim not in ds.coords:
        return []
    return [x.item() if hasattr(x, "item") else x for x in np.atleast_1d(ds[dim].values)]


def present(ds: xr.Dataset, dim: str, wanted) -> list:
    """The values of ``wanted`` that ``dim`` has, in the order of ``wanted``."""
    have = set(labels(ds, dim))
    return [w for w in wanted if w in have]


def near(ds: xr.Dataset, dim: str, target: float) -> Any:
    """The value of ``dim`` nearest ``target`` on a log scale (ties: the smaller)."""
    vals = np.asarray(labels(ds, dim), dtype=np.float64)
    i = int(np.argmin(np.abs(np.log(vals) - np.log(target)) + 1e-9 * vals))
    return labels(ds, dim)[i]


def cell(da: xr.DataArray, **sel) -> float:
    """One value of ``da`` (NaN when a label is missing)."""
    for k, v in sel.items():
        if k in da.dims and v not in labels(da, k):
            return float("nan")
    try:
        return float(da.sel(sel).values)
    except (KeyError, ValueError, TypeError):
        return float("nan")


def argbest(da: xr.DataArray, direction: str = "max") -> tuple[float, dict[str, Any]]:
    """The best finite value of ``da`` over all its dims and the labels where it is."""
    a = np.asarray(da.values, dtype=np.float64)
    ok = np.isfinite(a)
    if not ok.any():
        return float("nan"), {}
    flat = np.where(ok, a, -np.inf if direction == "max" else np.inf)
    i = int(flat.argmax() if direction == "max" else flat.argmin())
    idx = np.unravel_index(i, a.shape) if a.ndim else ()
    where = {d: labels(da, d)[j] for d, j in zip(da.dims, idx)}
    return float(a[idx] if idx else a), where


def layouts_with(ds: xr.Dataset, devices: int | None = None, max_devices: int | None = None,
                 single_replica: bool = False) -> list[str]:
    """Layouts of ``ds`` with exactly ``devices`` or at most ``max_devices`` devices;
    ``single_replica`` keeps dp = 1 (a batch is then that many sequences on the whole layout)."""
    out = []
    dp = np.atleast_1d(ds["dp"].values) if "dp" in ds.coords else None
    for i, (name, dev) in enumerate(zip(labels(ds, "parallelism"),
                                        np.atleast_1d(ds["devices"].values))):
        if devices is not None and int(dev) != devices:
            continue
        if max_devices is not None and int(dev) > max_devices:
            continue
        if single_replica and dp is not None and int(dp[i]) != 1:
            continue
        out.append(name)
    return out


def moe_models(ds: xr.Dataset) -> list[str]:
    """Models of ``ds`` with fewer active than total parameters."""
    return [m for m, t, a in zip(labels(ds, "model"), np.atleast_1d(ds["params_total"].values),
                                 np.atleast_1d(ds["params_active"].values)) if a < t]


def dense_models(ds: xr.Dataset) -> list[str]:
    moe = set(moe_models(ds))
    return [m for m in labels(ds, "model") if m not in moe]
