"""Text summaries: the report printed after ``sweep run`` and by ``sweep info``."""

from __future__ import annotations

import numpy as np
import xarray as xr

from sweep.analysis.variation import max_variation


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
    hv = max_variation(ds, "throughput", "hardware") if ds.sizes.get("hardware", 0) > 1 else None
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
