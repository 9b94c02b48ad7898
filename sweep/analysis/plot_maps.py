"""The map kinds over (batch, context) and the regime heat map: ``winner-map`` (the best device at
every cell, with its margin and why grey cells have none), ``variation`` (max/min across devices)
and ``regimes`` (seed 002's Fig. 8 as regime x device scores)."""

from __future__ import annotations

import textwrap

import numpy as np
import xarray as xr
from matplotlib import colormaps
from matplotlib.colors import ListedColormap, LogNorm
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from sweep.analysis import core as an
from sweep.analysis.basis import DEFAULT_BASIS, parse_basis
from sweep.analysis.palette import NONE_COLOR, looks
from sweep.analysis.plot_slices import _fix_rest, _grid, _subset
from sweep.analysis.plot_style import (
    BATCH_LABEL,
    CONTEXT_LABEL,
    _basis_text,
    _edges,
    _fmt_tick,
    _log_axes,
    outside_legend,
    ratio_ticks,
    set_title,
)
from sweep.analysis.select import apply_sel, as_dims, candidates, check_metric, metric_direction

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
    with its margin over the runner-up written in the cell (small maps; ``~`` marks a margin
    within the uncertainty band of the two labels' ratio, a tie) and grey cells saying why
    nothing is feasible there (:func:`sweep.analysis.winners.margin`)."""
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
    # a margin within the uncertainty band of the two devices' ratio is a tie (marked ~)
    tie = (np.asarray(mg["tie"].values) == 1) if "tie" in mg else np.zeros(marg.shape, bool)
    if marg.size <= ANNOTATE_CELLS:
        for (iy, ix), v in np.ndenumerate(marg):
            if np.isfinite(v):
                text = f"~{v:.2f}x" if tie[iy, ix] else f"{v:.2f}x"
                ax.text(float(xs[ix]), float(ys[iy]), text, ha="center", va="center", fontsize=6.5,
                        bbox={"facecolor": "white", "alpha": 0.75, "pad": 0.6,
                              "edgecolor": "none"})
    _log_axes(ax, xs, ys, BATCH_LABEL, CONTEXT_LABEL)
    ax.set_xlim(xe[0], xe[-1])
    ax.set_ylim(ye[0], ye[-1])
    better = "lowest" if d == "min" else "highest"
    how = f"each at its best {'/'.join(red)}; " if red else ""
    extra = f" ({', '.join(notes)})" if notes else ""
    cells = "; numbers: margin over the runner-up" if marg.size <= ANNOTATE_CELLS else ""
    if cells and tie.any():
        cells += " (~: within the uncertainty band, a tie)"
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
