"""Figures of a sweep result (matplotlib, no pyplot state: works on any backend, Agg by default).

Kinds (``plot(ds, kind, ...)`` or ``ds.sweep.plot(kind, ...)``):

- ``winner-map``: the best device at every (batch, context) cell for one model and precision
  (each device with its best layout): the signature picture;
- ``variation``: max/min of a metric across devices over (batch, context);
- ``pareto``: two objectives of every feasible configuration, the non-dominated ones marked;
- ``roofline``: achieved FLOP/s against arithmetic intensity with each device's ceilings;
- ``regimes``: seed 002's Fig. 8 as a heat map of regime scores (best = 1).

Every device has one look (colour, marker, hatch) in every figure, from the catalog-wide palette
of :mod:`sweep.analysis.palette` (Okabe-Ito colours; markers and hatches beyond eight devices).
Every figure has a title, axis labels with units, log axes where values span decades and a
legend naming the devices; titles are wrapped to the figure's width and legends sit in the
figure (``loc="outside ..."``, which the constrained layout makes room for), so nothing is drawn
off the canvas (tests/test_plots.py checks the drawn extents).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib import colormaps
from matplotlib.colors import ListedColormap, LogNorm
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter, NullFormatter

from grids.errors import SpecError, suggest
from sweep.analysis import core as an
from sweep.analysis.basis import DEFAULT_BASIS, EXTENSIVE, normalised, parse_basis
from sweep.analysis.palette import NONE_COLOR, looks
from sweep.analysis.select import (
    apply_sel,
    as_dims,
    candidates,
    check_metric,
    masked,
    metric_direction,
    parse_objectives,
)

KINDS = ("winner-map", "variation", "pareto", "roofline", "regimes", "serving-front")


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


def save(fig: Figure, path: str | Path, dpi: int = 120, *, overwrite: bool = False) -> Path:
    """Write ``fig`` to ``path`` (png, pdf or svg from the extension), atomically; an existing
    file that is not an image written by sweep is refused unless ``overwrite``
    (:func:`sweep.results.images.save_figure`)."""
    from sweep.results.images import save_figure

    return save_figure(fig, path, dpi=dpi, overwrite=overwrite)


def _label(ds: xr.Dataset, name: str) -> str:
    v = ds[name] if name in ds.variables else None
    units = v.attrs.get("units", "") if v is not None else ""
    long = v.attrs.get("long_name", name) if v is not None else name
    u = f" [{units}]" if units and units != "1" else ""
    return f"{name}{u}" if len(long) > 40 else f"{long}{u}"


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


BATCH_LABEL = "batch [concurrent sequences]"
CONTEXT_LABEL = "context [prompt tokens]"


# ------------------------------------------------------------------------------ kinds
#: greys of cells without a winner, by reason (most frequent first)
NONE_GREYS = (NONE_COLOR, "#BBBBBB", "#999999", "#EEEEEE")
#: largest map whose cells carry their numbers as text
ANNOTATE_CELLS = 225


def winner_map(ds: xr.Dataset, model: str | None = None, precision: str | None = None,
               metric: str = "throughput", over: str = "hardware",
               best_over=("parallelism",), sel: dict | None = None,
               basis: str | None = DEFAULT_BASIS) -> Figure:
    """The winning ``over`` label of ``metric`` (on ``basis``) at every (batch, context) cell,
    with its margin over the runner-up written in the cell (small maps) and grey cells saying
    why nothing is feasible there (:func:`sweep.analysis.winners.margin`)."""
    from sweep.analysis.winners import margin

    check_metric(ds, metric)
    d = metric_direction(ds, metric)
    ds, m, p = _subset(ds, model, precision, sel)
    red = as_dims(ds, best_over, "best_over")
    b = None if basis is None else parse_basis(basis)
    if over not in ds.dims:
        ds = ds.expand_dims(over)
    mg = margin(ds, metric, over, red, b)
    notes = []
    for dd in list(mg.dims):
        if dd not in ("batch", "context"):
            notes.append(f"{dd}={mg[dd].values[0]}")
            mg = mg.isel({dd: 0})
    for dd in ("batch", "context"):
        if dd not in mg.dims:
            mg = mg.expand_dims(dd) if dd in mg.coords else mg.expand_dims({dd: [0]})
    mg = mg.sortby(["batch", "context"]).transpose("context", "batch")
    xs = np.asarray(mg["batch"].values, np.float64)
    ys = np.asarray(mg["context"].values, np.float64)
    winners = np.asarray(mg["winner"].values, dtype=object)
    all_labels = [str(x) for x in np.atleast_1d(ds[over].values)]
    lk = dict(zip(all_labels, looks(all_labels, over)))
    present, counts = np.unique(winners[winners != ""], return_counts=True)
    ranked = [str(x) for x in present[np.argsort(-counts, kind="stable")]]
    fig = Figure(figsize=(9.0, 6.2), layout="constrained")
    ax = fig.add_subplot()
    xe, ye = _edges(xs), _edges(ys)
    handles = []
    for lab in ranked:
        look = lk[lab]
        z = np.where(winners == lab, 1.0, np.nan)
        # pcolor (a PolyCollection) draws hatches; pcolormesh does not
        ax.pcolor(xe, ye, np.ma.masked_invalid(z), cmap=ListedColormap([look.colour]),
                  vmin=0, vmax=2, hatch=look.hatch or None, edgecolors="#FFFFFF99",
                  linewidth=0)
        handles.append(Patch(facecolor=look.colour, hatch=look.hatch or None,
                             edgecolor="#333333", label=lab))
    why = np.asarray(mg["why_none"].values, dtype=object)
    reasons, rcounts = np.unique(why[winners == ""], return_counts=True)
    for k, r in enumerate(str(x) for x in reasons[np.argsort(-rcounts, kind="stable")]):
        grey = NONE_GREYS[k % len(NONE_GREYS)]
        z = np.where((winners == "") & (why == r), 1.0, np.nan)
        ax.pcolormesh(xe, ye, np.ma.masked_invalid(z), cmap=ListedColormap([grey]), vmin=0,
                      vmax=2)
        handles.append(Patch(facecolor=grey, edgecolor="#333333",
                             label="\n".join(textwrap.wrap(f"none: {r}", 28))))
    marg = np.asarray(mg["margin"].values, np.float64)
    if marg.size <= ANNOTATE_CELLS:
        for (iy, ix), v in np.ndenumerate(marg):
            if np.isfinite(v):
                ax.text(float(xs[ix]), float(ys[iy]), f"{v:.2f}x", ha="center", va="center", fontsize=6.5,
                        bbox={"facecolor": "white", "alpha": 0.75, "pad": 0.6,
                              "edgecolor": "none"})
    _log_axes(ax, xs, ys, BATCH_LABEL, CONTEXT_LABEL)
    ax.set_xlim(xe[0], xe[-1])
    ax.set_ylim(ye[0], ye[-1])
    better = "lowest" if d == "min" else "highest"
    how = f"each at its best {'/'.join(red)}; " if red else ""
    extra = f" ({', '.join(notes)})" if notes else ""
    cells = "; numbers: margin over the runner-up" if marg.size <= ANNOTATE_CELLS else ""
    outside_legend(fig, handles, over)
    set_title(ax, fig, f"Winner: {over} with the {better} {metric} {_basis_text(b)}\n"
              f"{how}model {m or '-'}, precision {p or '-'}{extra}{cells}")
    return fig


def variation_map(ds: xr.Dataset, model: str | None = None, precision: str | None = None,
                  metric: str = "throughput", over: str = "hardware",
                  best_over=("parallelism",), sel: dict | None = None,
                  basis: str | None = DEFAULT_BASIS) -> Figure:
    """max/min of ``metric`` (on ``basis``) across ``over`` at every (batch, context) cell."""
    check_metric(ds, metric)
    ds, m, p = _subset(ds, model, precision, sel)
    red = as_dims(ds, best_over, "best_over")
    b = None if basis is None else parse_basis(basis)
    da = candidates(ds, metric, red, basis=b)
    da, notes = _fix_rest(da, (over, "batch", "context"))
    da, xs, ys = _grid(da.compute(), "batch", "context")
    a = np.moveaxis(np.asarray(da.transpose("context", "batch", over).values, np.float64), -1, 0)
    ratio, _, _, _ = an.variation(a, np.isfinite(a), axis=0)
    ok = np.isfinite(ratio) & (ratio > 0)
    fig = Figure(figsize=(8.0, 6.0), layout="constrained")
    ax = fig.add_subplot()
    xe, ye = _edges(xs), _edges(ys)
    if ok.any():
        lo, hi = float(ratio[ok].min()), float(ratio[ok].max())
        top = hi if hi > lo else lo * 1.01
        norm = LogNorm(vmin=lo, vmax=top)
        mesh = ax.pcolormesh(xe, ye, np.ma.masked_invalid(np.where(ok, ratio, np.nan)),
                             cmap="viridis", norm=norm)
        bar = fig.colorbar(mesh, ax=ax, label=f"max/min {metric} across {over} [x]")
        ratio_ticks(bar.ax.yaxis, lo, top)
        iy, ix = np.unravel_index(int(np.where(ok, ratio, -np.inf).argmax()), ratio.shape)
        peak_note = (f"largest {ratio[iy, ix]:.3g}x at batch {_fmt_tick(xs[ix])}, context "
                     f"{_fmt_tick(ys[iy])} (outlined)")
        ax.add_patch(Rectangle((xe[ix], ye[iy]), xe[ix + 1] - xe[ix], ye[iy + 1] - ye[iy],
                               fill=False, edgecolor="#D55E00", linewidth=2.5, zorder=4))
        if ratio.size <= 225:
            for (iy_, ix_), r in np.ndenumerate(ratio):
                if np.isfinite(r):
                    ax.text(float(xs[ix_]), float(ys[iy_]), f"{r:.3g}", ha="center", va="center",
                            fontsize=7, color="white" if norm(r) < 0.6 else "black")
    else:
        peak_note = "no cell has two feasible candidates"
    if (~ok).any():
        ax.pcolormesh(xe, ye, np.ma.masked_invalid(np.where(ok, np.nan, 1.0)),
                      cmap=ListedColormap([NONE_COLOR]), vmin=0, vmax=2)
    _log_axes(ax, xs, ys, BATCH_LABEL, CONTEXT_LABEL)
    ax.set_xlim(xe[0], xe[-1])
    ax.set_ylim(ye[0], ye[-1])
    how = f" (best {'/'.join(red)} each)" if red else ""
    extra = f", {', '.join(notes)}" if notes else ""
    set_title(ax, fig, f"max/min {metric} {_basis_text(b)} across {over}{how}; grey: < 2 "
              f"feasible\nmodel {m or '-'}, precision {p or '-'}{extra}; {peak_note}",
              fontsize=10)
    return fig


def pareto_plot(ds: xr.Dataset, objectives=("tpot", "throughput"), model: str | None = None,
                precision: str | None = None, color_by: str = "hardware",
                sel: dict | None = None, hardware=None,
                basis: str | None = DEFAULT_BASIS, best_over=("parallelism",)) -> Figure:
    """First two objectives (throughputs on ``basis``) of the feasible configurations of one
    model and precision; the non-dominated points (over all shown, for all objectives) are drawn
    large.

    ``best_over`` (default the layouts): each device is shown at its best layout at every
    workload point, the layout best in the first throughput objective on ``basis`` (the first
    objective when none is a throughput), as in the winner map; ``()`` shows every layout
    (tens of thousands of points on the default grid, most of them layouts nobody would run).
    """
    objs = parse_objectives(ds, objectives)
    ds, m, p = _subset(only_hardware(ds, hardware), model, precision, sel)
    names = [n for n, _ in objs]
    b = None if basis is None else parse_basis(basis)
    red = as_dims(ds, best_over, "best_over")
    (xn, xd), (yn, yd) = objs[0], objs[1]
    dims = list(masked(ds, xn).dims)

    def on_basis(name: str) -> np.ndarray:
        da = masked(ds, name) if b is None else normalised(ds, name, b)
        return np.asarray(da.broadcast_like(masked(ds, xn)).transpose(*dims).values,
                          np.float64)

    vals = {n: on_basis(n) for n, _ in objs}
    cat = _category(ds, color_by, dims).reshape([ds.sizes[x] for x in dims])
    how = "all feasible configurations"
    if "parallelism" in red:
        key, kd = next(((n, dd) for n, dd in objs if n in EXTENSIVE), objs[0])
        ax_l = dims.index("parallelism")
        idx = an.extreme_index(vals[key], np.isfinite(vals[key]), kd, axis=ax_l)
        take = np.expand_dims(np.clip(idx, 0, None), ax_l)
        vals = {n: np.where(idx >= 0, np.take_along_axis(v, take, ax_l).squeeze(ax_l), np.nan)
                for n, v in vals.items()}
        cat = np.take_along_axis(cat, take, ax_l).squeeze(ax_l)
        how = f"each {color_by if color_by != 'parallelism' else 'device'} at its best layout " \
              f"for {key}"
    x, y = vals[xn].ravel(), vals[yn].ravel()
    cat = cat.ravel()
    stacked = np.stack([an.oriented(vals[n].ravel(), dd) for n, dd in objs], axis=-1)
    ok = np.isfinite(stacked).all(axis=-1)
    fr = an.pareto_mask(stacked[None], ok[None])[0]
    fig = Figure(figsize=(9.0, 6.0), layout="constrained")
    ax = fig.add_subplot()
    labels = sorted({c for c, o in zip(cat, ok) if o})
    handles = []
    for lab, look in zip(labels, looks(labels, color_by)):
        sel_ = ok & (cat == lab)
        ax.scatter(x[sel_ & ~fr], y[sel_ & ~fr], s=10, c=look.colour, marker=look.marker,
                   alpha=0.45, linewidths=0)
        ax.scatter(x[sel_ & fr], y[sel_ & fr], s=46, c=look.colour, marker=look.marker,
                   edgecolors="black", linewidths=0.8, zorder=3)
        handles.append(ax.scatter([], [], s=46, c=look.colour, marker=look.marker,
                                  edgecolors="black", linewidths=0.8, label=lab))
    if len(objs) == 2 and (ok & fr).any():
        fx, fy = x[ok & fr], y[ok & fr]
        order = np.argsort(fx)
        ax.plot(fx[order], fy[order], color="#555555", lw=1, zorder=2,
                drawstyle="steps-post" if (xd == "min") == (yd == "max") else "steps-pre")
    if _spans_decades(x[ok]):
        ax.set_xscale("log")
    if _spans_decades(y[ok]):
        ax.set_yscale("log")
    ax.set_xlabel(f"{_basis_label(ds, xn, b)} ({'lower' if xd == 'min' else 'higher'} is "
                  f"better)")
    ax.set_ylabel(f"{_basis_label(ds, yn, b)} ({'lower' if yd == 'min' else 'higher'} is "
                  f"better)")
    others = f"; front over {', '.join(names)}" if len(names) > 2 else ""
    outside_legend(fig, handles, color_by)
    set_title(ax, fig, f"Pareto front {_basis_text(b)}: {yn} vs {xn} (large, outlined: "
              f"non-dominated{others})\nmodel {m or '-'}, precision {p or '-'}, {how}")
    ax.grid(True, which="major", alpha=0.3)
    return fig


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


def regimes_plot(ds: xr.Dataset, sel: dict | None = None,
                 basis: str | None = DEFAULT_BASIS) -> Figure:
    """Seed 002 Fig. 8, quantitatively: regime x device scores (best = 1)."""
    ds = apply_sel(ds, sel)
    r = ds.sweep.regimes(basis=basis)
    # a device that serves none of a regime's points has no score there (n/a), not 0.00
    score = np.asarray(r["score"].where(r["coverage"] > 0).values, np.float64)
    hw = [str(h) for h in r["hardware"].values]
    titles = [f"{t}\n({mt})" for t, mt in zip(r["title"].values, r["metric"].values)]
    fig = Figure(figsize=(max(7.0, 0.45 * len(hw) + 3.5), 5.5), layout="constrained")
    ax = fig.add_subplot()
    cmap = colormaps["viridis"].with_extremes(bad=NONE_COLOR)
    im = ax.imshow(np.ma.masked_invalid(score), cmap=cmap, vmin=0, vmax=1, aspect="auto")
    for (i, j), v in np.ndenumerate(score):
        ax.text(j, i, "n/a" if not np.isfinite(v) else f"{v:.2f}", ha="center", va="center",
                fontsize=7, color="black" if (not np.isfinite(v) or v > 0.55) else "white")
    ax.set_xticks(range(len(hw)), hw, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(titles)), titles, fontsize=8)
    ax.set_xlabel("hardware (device id)")
    ax.set_ylabel("operational regime (metric)")
    fig.colorbar(im, ax=ax, label="score relative to the best device [1]")
    missing = [str(k) for k, why in zip(r["regime"].values, r["reason"].values) if why]
    sub = (f"rows n/a (slice absent or nothing feasible; reasons: sweep regimes): "
           f"{', '.join(missing)}; " if missing else "")
    set_title(ax, fig, f"Operational regimes (seed 002 Fig. 8), best device = 1.0; throughputs "
              f"{r.attrs.get('basis', '')}\n{sub}n/a: the device serves none of the regime's "
              f"points; higher is better in every row", fontsize=10)
    return fig


def plot(ds: xr.Dataset, kind: str = "winner-map", **kwargs) -> Figure:
    """A Figure of ``kind`` (one of :data:`KINDS`); ``kwargs`` go to that kind's function."""
    funcs: dict[str, Callable[..., Figure]] = {
        "winner-map": winner_map, "variation": variation_map, "pareto": pareto_plot,
        "roofline": roofline_plot, "regimes": regimes_plot, "serving-front": serving_front_plot}
    if kind not in funcs:
        raise SpecError(f"unknown plot kind {kind!r}{suggest(str(kind), KINDS)}")
    return funcs[kind](ds, **kwargs)


def serving_front_plot(ds: xr.Dataset, model: str | None = None, precision: str | None = None,
                       context: int | None = None, per: str | None = None,
                       sel: dict | None = None, hardware=None) -> Figure:
    """Tokens/s per user (1 / TPOT) against throughput per device (kW, $): each device's Pareto
    front over batch and layout, one line per device (and engine), for one model, precision and
    context (default the context nearest 2048)."""
    from sweep.analysis.goodput import serving_front

    ds, m, p = _subset(only_hardware(ds, hardware), model, precision, sel)
    if context is None and "context" in ds.dims:
        i = an.nearest_log(ds["context"].values, 2048)
        context = ds["context"].values[max(i, 0)]
    ds, ctx = _pick(ds, "context", context)
    table = serving_front(ds, per or "device")
    groups = [c for c in ("hardware", "engine") if c in table.columns
              and table[c].nunique() > 1] or [c for c in ("hardware",) if c in table.columns]
    others = [c for c in table.columns if c not in (*groups, "batch", "parallelism", "per_user",
                                                    "per_unit", "tpot")]
    notes = []
    for c in others:  # one front per remaining dim value: keep the first
        first = table[c].iloc[0] if len(table) else None
        if table[c].nunique() > 1:
            notes.append(f"{c} = {first}")
            table = table[table[c] == first]
    fig = Figure(figsize=(9.0, 6.0), layout="constrained")
    ax = fig.add_subplot()
    parts = list(table.groupby(groups, sort=True)) if groups and len(table) else []
    keys = [k for k, _ in parts]
    first = [k[0] if isinstance(k, tuple) else k for k in keys]
    kinds = looks(first, groups[0]) if groups else []
    handles = []
    for j, (key, g) in enumerate(parts):
        g = g.sort_values("per_user")
        look = kinds[j]
        label = " / ".join(map(str, key if isinstance(key, tuple) else (key,)))
        handles.append(ax.plot(g["per_user"], g["per_unit"], marker=look.marker,
                               color=look.colour, lw=1.3, ms=5, mec="black", mew=0.4,
                               label=label, drawstyle="steps-post", zorder=3)[0])
    if not keys:
        ax.text(0.5, 0.5, "no feasible point", transform=ax.transAxes, ha="center")
    else:
        outside_legend(fig, handles, " / ".join(groups))
    if len(table) and _spans_decades(table["per_unit"].to_numpy()):
        ax.set_yscale("log")
    if len(table) and _spans_decades(table["per_user"].to_numpy()):
        ax.set_xscale("log")
    units = table.attrs.get("units_per_unit", "")
    ax.set_xlabel("tokens/s per user = 1 / TPOT [token/s] (higher is better)")
    ax.set_ylabel(f"throughput {table.attrs.get('basis', '')} [{units}] (higher is better)")
    extra = f", {', '.join(notes)}" if notes else ""
    set_title(ax, fig, f"Serving front: per-user speed vs throughput "
              f"({table.attrs.get('basis', '')}), best over batch and layout\nmodel {m or '-'}, "
              f"precision {p or '-'}, context {ctx or '-'}{extra}")
    ax.grid(True, which="major", alpha=0.3)
    return fig


# ------------------------------------------------------------------------------ internals
def _basis_text(b) -> str:
    return f"({b.label})" if b is not None else "(grid values)"


def _basis_label(ds: xr.Dataset, name: str, b) -> str:
    if b is None or name not in ("throughput", "total_throughput"):
        return _label(ds, name)
    units = ds[name].attrs.get("units", "")
    return f"{name} {b.label} [{b.units(units)}]"

def _category(ds: xr.Dataset, dim: str, dims) -> np.ndarray:
    if dim in dims:
        lab = np.asarray([str(x) for x in ds[dim].values], dtype=object)
        shape = [1] * len(dims)
        shape[list(dims).index(dim)] = len(lab)
        full = [ds.sizes[d] for d in dims]
        return np.broadcast_to(lab.reshape(shape), full).ravel()
    val = str(ds[dim].values.item()) if dim in ds.coords else "all"
    return np.full(int(np.prod([ds.sizes[d] for d in dims])), val, dtype=object)


def _peak(ds: xr.Dataset):
    """Dense peak FLOP/s of each device for the selected precision's compute dtype (the result's
    ``peak_flops`` coordinate, the same rule the kernels use); None if the result lacks it."""
    return ds["peak_flops"] if "peak_flops" in ds.coords else None
