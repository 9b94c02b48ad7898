"""Text summaries: the report printed after ``sweep run`` and by ``sweep info``."""

from __future__ import annotations

import numpy as np
import xarray as xr


def headline_variation(ds: xr.Dataset, metric: str = "throughput", over: str = "hardware"
                       ) -> dict | None:
    """Largest max/min ratio of ``metric`` across ``over`` at any point (feasible points only),
    read slice by slice along ``model`` and ``batch`` so memory stays bounded on large files."""
    if over not in ds.dims or ds.sizes[over] < 2:
        return None
    best = None
    slicers = [d for d in ("model", "batch") if d in ds.dims and d != over]
    keys = list(np.ndindex(*(ds.sizes[d] for d in slicers)))
    for k in keys:
        sel = dict(zip(slicers, k))
        da = ds[metric].isel(sel)
        arr = np.asarray(da.transpose(over, ...).values, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            ok = np.isfinite(arr) & (arr > 0)
            count = ok.sum(axis=0)
            hi = np.where(ok, arr, -np.inf).max(axis=0)
            lo = np.where(ok, arr, np.inf).min(axis=0)
            ratio = np.where(count >= 2, hi / lo, np.nan)
        if not np.isfinite(ratio).any():
            continue
        flat = int(np.nanargmax(ratio))
        value = float(ratio.ravel()[flat])
        if best is None or value > best["ratio"]:
            idx = np.unravel_index(flat, ratio.shape)
            other = [d for d in da.transpose(over, ...).dims if d != over]
            where = {d: _scalar(da[d].values[i]) for d, i in zip(other, idx)}
            where = {**{d: _scalar(ds[d].values[i]) for d, i in sel.items()}, **where}
            col = arr[(slice(None), *idx)]
            okc = ok[(slice(None), *idx)]
            labels = ds[over].values
            best = {"ratio": value, "metric": metric, "over": over, "where": where,
                    "best": str(labels[np.where(okc, col, -np.inf).argmax()]),
                    "worst": str(labels[np.where(okc, col, np.inf).argmin()])}
    return best


def _scalar(v):
    return v.item() if hasattr(v, "item") else v


def run_summary(ds: xr.Dataset, stats, wall: float, output) -> str:
    dims = " x ".join(f"{d} {n}" for d, n in ds.sizes.items())
    feasible = stats.feasible / stats.points if stats.points else 0.0
    lines = [
        f"wrote {output}" if output else "result in memory",
        f"grid      : {dims}",
        f"points    : {stats.points:,} in {stats.chunks} chunk(s)",
        f"wall time : {wall:.2f} s (kernel+write {stats.seconds:.2f} s, "
        f"{stats.points_per_second:,.0f} points/s)",
        f"feasible  : {feasible:.1%} of points fit",
    ]
    hv = headline_variation(ds)
    if hv:
        where = ", ".join(f"{k}={v}" for k, v in hv["where"].items())
        lines.append(f"variation : throughput differs up to {hv['ratio']:.1f}x across hardware "
                     f"(best {hv['best']}, worst {hv['worst']}) at {where}")
    return "\n".join(lines)


def info_text(ds: xr.Dataset) -> str:
    lines = ["dims:"]
    lines += [f"  {d:12s} {n:6d}  {_preview(ds[d].values)}" for d, n in ds.sizes.items()]
    lines.append("metrics:")
    for name in ds.data_vars:
        v = ds[name]
        lines.append(f"  {name:22s} [{v.attrs.get('units', '?')}] {v.attrs.get('long_name', '')}")
    lines.append("provenance:")
    for k in ("package_version", "created_utc", "catalog_sha256", "output_len",
              "prefill_chunk_tokens"):
        if k in ds.attrs:
            lines.append(f"  {k}: {ds.attrs[k]}")
    if "grid_spec_toml" in ds.attrs:
        lines.append("  grid spec:")
        lines += [f"    {ln}" for ln in str(ds.attrs["grid_spec_toml"]).splitlines()]
    return "\n".join(lines)


def _preview(values) -> str:
    vals = [str(v) for v in np.asarray(values).ravel()]
    return ", ".join(vals) if len(vals) <= 6 else ", ".join([*vals[:3], "...", *vals[-2:]])
