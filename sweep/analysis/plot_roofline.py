"""The ``roofline`` kind: each device's achieved FLOP/s against the arithmetic intensity of the
decode step, one point per batch size, under its peak-FLOP/s and DRAM-bandwidth roofs."""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from sweep.analysis import core as an
from sweep.analysis.palette import looks
from sweep.analysis.plot_slices import _fix_rest, _pick, _subset, only_hardware
from sweep.analysis.plot_style import outside_legend, set_title
from sweep.analysis.select import check_metric, masked


def roofline_plot(ds: xr.Dataset, model: str | None = None, precision: str | None = None,
                  context: int | None = None, parallelism: str | None = None,
                  sel: dict | None = None, hardware=None) -> Figure:
    """Decode roofline per device: achieved FLOP/s (mfu x peak) against arithmetic intensity,
    one point per batch size, with each device's compute and memory-bandwidth ceilings."""
    for need in ("arithmetic_intensity", "mfu"):
        check_metric(ds, need)
    ds, m, p = _subset(only_hardware(ds, hardware), model, precision, sel)
    if parallelism is None and "parallelism" in ds.dims:
        names = [str(x) for x in ds["parallelism"].values]
        parallelism = "tp1" if "tp1" in names else names[0]
    ds, lay = _pick(ds, "parallelism", parallelism)
    if context is None and "context" in ds.dims:
        i = an.nearest_log(ds["context"].values, 2048)
        context = ds["context"].values[max(i, 0)]
    ds, ctx = _pick(ds, "context", context)
    if "hardware" not in ds.dims:
        ds = ds.expand_dims("hardware")
    ai = masked(ds, "arithmetic_intensity")
    mfu = masked(ds, "mfu")
    keep = ("hardware", "batch")
    ai, notes = _fix_rest(ai, keep)
    mfu, _ = _fix_rest(mfu, keep)
    peak = _peak(ds)
    use_flops = peak is not None
    y = mfu * peak if use_flops else mfu
    fig = Figure(figsize=(9.0, 6.0), layout="constrained")
    ax = fig.add_subplot()
    hw = [str(h) for h in ds["hardware"].values]
    xs_all = np.asarray(ai.values, np.float64)
    xs_fin = xs_all[np.isfinite(xs_all) & (xs_all > 0)]
    xlo = xs_fin.min() / 4 if xs_fin.size else 0.1
    xhi = xs_fin.max() * 4 if xs_fin.size else 1e4
    if use_flops:  # show each roof's knee (peak / bandwidth), within reason
        knees = [p / b for p, b in (roof(ds, peak, i) for i in range(ds.sizes["hardware"]))
                 if np.isfinite(p / b) and p / b > 0]
        xhi = min(max([xhi, *(2 * k for k in knees)]), 1e4)
    xx = np.geomspace(xlo, xhi, 200)
    handles = []
    flat_only = []
    for i, (h, look) in enumerate(zip(hw, looks(hw))):
        a = np.atleast_1d(np.asarray(ai.isel(hardware=i).values, np.float64))
        b = np.atleast_1d(np.asarray(y.isel(hardware=i).values, np.float64))
        good = np.isfinite(a) & np.isfinite(b) & (a > 0) & (b > 0)
        if not good.any():
            continue
        handles.append(ax.plot(a[good], b[good], marker=look.marker, color=look.colour, lw=1.2,
                               ms=6, mec="black", mew=0.5, label=h, zorder=3)[0])
        if use_flops:
            pk, bw = roof(ds, peak, i)
            if not (np.isfinite(bw) and bw > 0):
                flat_only.append(h)
            ax.plot(xx, np.minimum(pk, xx * bw) if h not in flat_only else np.full_like(xx, pk),
                    color=look.colour, lw=1, ls="--", alpha=0.8, zorder=2, gid=f"roof:{h}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity of the decode step [FLOP/B]")
    ax.set_ylabel("achieved FLOP/s per device [FLOP/s]" if use_flops
                  else "model FLOP/s utilisation (mfu) [1]")
    extra = f", {', '.join(notes)}" if notes else ""
    flat = (f"; no DRAM, peak only: {', '.join(flat_only)}" if flat_only else "")
    if handles:
        outside_legend(fig, handles, "hardware")
    else:
        ax.text(0.5, 0.5, "no feasible point", transform=ax.transAxes, ha="center")
    ax.grid(True, which="major", alpha=0.3)
    set_title(ax, fig, f"Decode roofline (points: batch sizes; dashed: peak FLOP/s and "
              f"DRAM-bandwidth roofs{flat})\nmodel {m or '-'}, precision {p or '-'}, context "
              f"{ctx or '-'}, layout {lay or '-'}{extra}")
    return fig


def roof(ds: xr.Dataset, peak: xr.DataArray, i: int) -> tuple[float, float]:
    """(peak FLOP/s, DRAM bandwidth B/s) of the i-th device: the compute roof and the slope of
    the memory roof (the catalog's ``dram_bandwidth`` coordinate; NaN for SRAM-only devices)."""
    pk = float(peak.isel(hardware=i).values) if "hardware" in peak.dims else float(peak)
    bw = (float(ds["dram_bandwidth"].isel(hardware=i).values) if "dram_bandwidth" in ds.coords
          else np.nan)
    return pk, bw


def _peak(ds: xr.Dataset):
    """Dense peak FLOP/s of each device for the selected precision's compute dtype (the result's
    ``peak_flops`` coordinate, the same rule the kernels use); None if the result lacks it."""
    return ds["peak_flops"] if "peak_flops" in ds.coords else None
