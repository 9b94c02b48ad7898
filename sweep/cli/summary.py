"""Text summaries: the report printed after ``sweep run`` and by ``sweep info``."""

from __future__ import annotations

import numpy as np
import xarray as xr

from grids.errors import SpecError
from sweep.analysis.basis import DEFAULT_BASIS
from sweep.analysis.kept import is_kept, kept_basis
from sweep.analysis.variation import max_variation
from sweep.results.provenance import parameters_text
from sweep.results.variables import KEPT_LAYOUT_DIM


def run_summary(ds: xr.Dataset | None, stats, wall: float, output) -> str:
    """The report printed after ``sweep run``. The headline comes from the run itself when it
    computed it from its chunks (``stats.summary``, :mod:`sweep.analysis.headline`), else it is
    computed from ``ds``."""
    sizes = getattr(stats, "sizes", None) or (dict(ds.sizes) if ds is not None else {})
    dims = " x ".join(f"{d} {n}" for d, n in sizes.items())
    feasible = stats.feasible / stats.points if stats.points else 0.0
    lines = [
        f"wrote {output}" if output else "result in memory",
        f"grid      : {dims}",
        f"points    : {stats.points:,} in {stats.chunks} chunk(s){_kept(ds, stats)}",
        f"wall time : {wall:.2f} s (kernel+write {stats.seconds:.2f} s, "
        f"{stats.points_per_second:,.0f} points/s)",
        f"feasible  : {feasible:.1%} of points fit",
    ]
    obs = getattr(stats, "summary", None)
    if obs is not None:
        lines += _headline(obs.finish(), obs.skipped, output)
    elif ds is not None:
        lines += headline_lines(ds)
    return "\n".join(lines)


def _kept(ds: xr.Dataset | None, stats) -> str:
    """What a result that keeps each point's best layout (spec key best_layout) stored."""
    sizes = getattr(stats, "sizes", None) or {}
    if ds is not None and is_kept(ds):
        n, basis = ds.sizes[KEPT_LAYOUT_DIM], kept_basis(ds)
    elif "parallelism" not in sizes and getattr(stats, "kept", None):
        n, basis = stats.kept
    else:
        return ""
    return f"; each point's best of {n} layouts kept (throughput, basis {basis})"


def headline_lines(ds: xr.Dataset, basis: str = DEFAULT_BASIS) -> list[str]:
    """The run's headline: how far apart the devices are, on a fair basis (each device at its
    best layout; docs/analysis.md, "Comparison bases"), computed from a result."""
    if ds.sizes.get("hardware", 0) < 2 or "throughput" not in ds.data_vars:
        return []
    try:
        hv = max_variation(ds, "throughput", "hardware", basis=basis)
    except SpecError as exc:  # a result without the variables of the basis
        return [f"variation : not computed on the {basis!r} basis ({exc})"]
    return _headline(hv)


def _headline(hv: dict | None, skipped: str = "", output=None) -> list[str]:
    if skipped:
        if "fewer than two" in skipped:
            return []
        return [f"variation : not computed during the run ({skipped}); "
                f"`sweep variation {output or 'OUT'}` computes it from the file"]
    if not hv:
        return ["variation : no workload point has two devices that fit"]
    where = ", ".join(f"{k}={v}" for k, v in hv["where"].items())
    lay = " (each at its best layout)" if "parallelism" in hv["best_over"] else ""
    return [f"variation : throughput {hv['basis']}{lay}: median {hv['median_ratio']:.2f}x "
            f"across hardware over {hv['points']:,} workload points, up to "
            f"{hv['ratio']:.3g}x{band_text(hv)}",
            f"            at {where}: best {hv['best']} {hv['best_layout']} "
            f"({hv['best_value']:.4g} {hv['units']}), worst {hv['worst']} {hv['worst_layout']} "
            f"({hv['worst_value']:.4g} {hv['units']})",
            *([f"            estimated power: {', '.join(hv['estimated_power'])} (its per-kW "
               "value carries that estimate's uncertainty; coordinates tdp_estimated, "
               "host_power_estimated)"] if hv.get("estimated_power") else []),
            "            (other bases: sweep variation OUT --basis device | system:8 | "
            "power:10kW | cost)"]


def band_text(hv: dict) -> str:
    """`` (band 1.2-3.4x)``: the ratio's uncertainty band (docs/analysis.md, "Uncertainty
    bands"), or '' without one (ideal engine, results without bands)."""
    lo, hi = hv.get("ratio_low", np.nan), hv.get("ratio_high", np.nan)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return ""
    return f" (uncertainty band {lo:.3g}-{hi:.3g}x)"


def run_record(ds: xr.Dataset | None, stats, wall: float, startup: float, output) -> dict:
    """What ``sweep run --json`` prints: the summary's facts as numbers. The headline comes from
    the run itself when it computed it from its chunks (``stats.summary``), else from ``ds``."""
    hv = None
    obs = getattr(stats, "summary", None)
    if obs is not None:
        hv = obs.finish()
    elif ds is not None and ds.sizes.get("hardware", 0) >= 2 and "throughput" in ds.data_vars:
        try:
            hv = max_variation(ds, "throughput", "hardware", basis=DEFAULT_BASIS)
        except SpecError:
            hv = None
    sizes = getattr(stats, "sizes", None) or (dict(ds.sizes) if ds is not None else {})
    return {"output": None if output is None else str(output), "dims": dict(sizes),
            "points": stats.points, "chunks": stats.chunks,
            "feasible_fraction": stats.feasible / stats.points if stats.points else 0.0,
            "wall_s": wall, "startup_s": startup, "kernel_write_s": stats.seconds,
            "points_per_s": stats.points_per_second, "variation": hv,
            "best_layout": (None if getattr(stats, "kept", None) is None else
                            {"layouts": stats.kept[0], "basis": stats.kept[1]})}


def info_record(ds: xr.Dataset) -> dict:
    """What ``sweep info --json`` prints: dims with their values, metrics with units, and the
    provenance attributes (the JSON ones parsed)."""
    import json

    attrs = {}
    for k, v in ds.attrs.items():
        attrs[k] = json.loads(v) if k.endswith("_json") else v
    return {"dims": {d: [x.item() if hasattr(x, "item") else x for x in ds[d].values]
                     for d in ds.dims},
            "metrics": {n: {"units": ds[n].attrs.get("units", ""),
                            "long_name": ds[n].attrs.get("long_name", ""),
                            "better": ds[n].attrs.get("better", "")} for n in ds.data_vars},
            "provenance": attrs}


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
    lines += parameters_text(ds.attrs)
    return "\n".join(lines)


def _preview(values) -> str:
    vals = [str(v) for v in np.asarray(values).ravel()]
    return ", ".join(vals) if len(vals) <= 6 else ", ".join([*vals[:3], "...", *vals[-2:]])
