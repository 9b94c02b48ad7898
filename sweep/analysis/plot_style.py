"""What every figure shares in look and text: the style of a category, titles wrapped to the
canvas, legends outside the axes, log axes with plain ticks and log-spaced cell edges, axis labels
with units and the throughput basis."""

from __future__ import annotations

import textwrap

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter


# ------------------------------------------------------------------------------ helpers
def style(i: int) -> tuple[str, str, str]:
    """(colour, hatch, marker) of the i-th category of a dim other than hardware (devices use
    :func:`sweep.analysis.palette.device_look`)."""
    from sweep.analysis.palette import style as look

    lk = look(i)
    return lk.colour, lk.hatch, lk.marker


#: characters of title text per inch of figure width at the title font sizes used here
TITLE_CHARS_PER_INCH = 11.5


def set_title(ax, fig: Figure, text: str, fontsize: float = 11) -> None:
    """Title of ``ax``, wrapped so that no line runs off the canvas: drawn once per try and
    re-wrapped narrower until its extent lies inside the figure, clear of the legends. Call it
    after the legend and colour bar are placed (the constrained layout shrinks the axes to make
    room for them)."""
    w = int(fig.get_figwidth() * TITLE_CHARS_PER_INCH * 11 / fontsize)
    while True:
        lines = [x for line in text.split("\n") for x in textwrap.wrap(line, w) or [""]]
        title = ax.set_title("\n".join(lines), fontsize=fontsize)
        fig.draw_without_rendering()
        box = title.get_window_extent()
        clear = not any(box.overlaps(leg.get_window_extent()) for leg in fig.legends)
        if (box.x0 >= 0 and box.x1 <= fig.bbox.width and clear) or w <= 20:
            return
        w = int(w * 0.9)


def ratio_ticks(axis, lo: float, hi: float) -> None:
    """Plain tick labels ("3.6x", not "3.6x10^0") on a log colour bar of ratios from ``lo`` to
    ``hi``; within a decade the minor ticks are labelled too (there may be no major tick)."""
    fmt = FuncFormatter(lambda v, _: f"{v:.3g}x")
    axis.set_major_formatter(fmt)
    axis.set_minor_formatter(fmt if hi < 10 * lo else NullFormatter())


def outside_legend(fig: Figure, handles, title: str, fontsize: float = 8):
    """A legend to the right of the axes, inside the figure (the constrained layout makes room),
    in as many columns as keep it within the figure's height."""
    rows = max(1, int(fig.get_figheight() * 72 / (fontsize * 1.9)) - 3)
    ncols = max(1, -(-len(handles) // rows))
    return fig.legend(handles=handles, title=title, loc="outside right upper", frameon=False,
                      fontsize=fontsize, ncols=ncols)


def _label(ds: xr.Dataset, name: str) -> str:
    v = ds[name] if name in ds.variables else None
    units = v.attrs.get("units", "") if v is not None else ""
    long = v.attrs.get("long_name", name) if v is not None else name
    u = f" [{units}]" if units and units != "1" else ""
    return f"{name}{u}" if len(long) > 40 else f"{long}{u}"


def _edges(v: np.ndarray) -> np.ndarray:
    """Cell edges for log-spaced centres (geometric midpoints)."""
    v = np.asarray(v, dtype=np.float64)
    if len(v) == 1:
        return np.array([v[0] / np.sqrt(2), v[0] * np.sqrt(2)])
    mid = np.sqrt(v[:-1] * v[1:])
    return np.concatenate([[v[0] ** 2 / mid[0]], mid, [v[-1] ** 2 / mid[-1]]])


def _fmt_tick(v: float) -> str:
    v = float(v)
    if v >= 1024 and v % 1024 == 0:
        return f"{v / 1024:g}K"
    return f"{v:g}"


def _log_axes(ax, xs: np.ndarray, ys: np.ndarray, xlabel: str, ylabel: str) -> None:
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(xs, [_fmt_tick(v) for v in xs])
    ax.set_yticks(ys, [_fmt_tick(v) for v in ys])
    ax.minorticks_off()
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def _spans_decades(v: np.ndarray) -> bool:
    v = np.asarray(v, dtype=np.float64)
    v = v[np.isfinite(v) & (v > 0)]
    return bool(v.size) and v.max() / v.min() >= 10


BATCH_LABEL = "batch [concurrent sequences]"
CONTEXT_LABEL = "context [prompt tokens]"


# ------------------------------------------------------------------------------ internals
def _basis_text(b) -> str:
    return f"({b.label})" if b is not None else "(grid values)"


def _basis_label(ds: xr.Dataset, name: str, b) -> str:
    if b is None or name not in ("throughput", "total_throughput"):
        return _label(ds, name)
    units = ds[name].attrs.get("units", "")
    return f"{name} {b.label} [{b.units(units)}]"
