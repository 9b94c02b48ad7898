"""Figures of a sweep result (matplotlib, no pyplot state: works on any backend, Agg by default).

Kinds (``plot(ds, kind, ...)`` or ``ds.sweep.plot(kind, ...)``):

- ``winner-map``: the best device at every (batch, context) cell for one model and precision
  (each device with its best layout): the signature picture;
- ``variation``: max/min of a metric across devices over (batch, context);
- ``pareto``: two objectives of every feasible configuration, the non-dominated ones marked;
- ``roofline``: achieved FLOP/s against arithmetic intensity with each device's ceilings;
- ``regimes``: seed 002's Fig. 8 as a heat map of regime scores (best = 1).

Colours are the Okabe-Ito colour-blind-safe palette; beyond eight categories, hatches (maps) or
marker shapes (scatter plots) keep them distinguishable. Every figure has a title, axis labels
with units, log axes where values span decades and a legend naming the devices.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib import colormaps
from matplotlib.colors import ListedColormap, LogNorm
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from grids.errors import SpecError, suggest
from sweep.analysis import core as an
from sweep.analysis.basis import DEFAULT_BASIS, normalised, parse_basis
from sweep.analysis.select import (
    apply_sel,
    as_dims,
    candidates,
    check_metric,
    masked,
    metric_direction,
    parse_objectives,
    winner_index,
)

#: Okabe & Ito (2008) colour-blind-safe palette (black last)
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",
             "#000000")
HATCHES = ("", "//", "..", "xx", "\\\\", "oo", "++", "--")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
NONE_COLOR = "#DDDDDD"
KINDS = ("winner-map", "variation", "pareto", "roofline", "regimes", "serving-front")


# ------------------------------------------------------------------------------ helpers
def style(i: int) -> tuple[str, str, str]:
    """(colour, hatch, marker) of the i-th category."""
    return OKABE_ITO[i % 8], HATCHES[(i // 8) % len(HATCHES)], MARKERS[(i // 8) % len(MARKERS)]


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
def winner_map(ds: xr.Dataset, model: str | None = None, precision: str | None = None,
               metric: str = "throughput", over: str = "hardware",
               best_over=("parallelism",), sel: dict | None = None,
               basis: str | None = DEFAULT_BASIS) -> Figure:
    """The winning ``over`` label of ``metric`` (on ``basis``) at every (batch, context)
    cell."""
    check_metric(ds, metric)
    d = metric_direction(ds, metric)
    ds, m, p = _subset(ds, model, precision, sel)
    red = as_dims(ds, best_over, "best_over")
    b = None if basis is None else parse_basis(basis)
    da = candidates(ds, metric, red, basis=b)
    da, notes = _fix_rest(da, (over, "batch", "context"))
    da, xs, ys = _grid(da.compute(), "batch", "context")
    codes = np.asarray(winner_index(da, over, d).values)
    labels = [str(x) for x in np.atleast_1d(da[over].values)]
    present, counts = np.unique(codes[codes >= 0], return_counts=True)
    ranked = present[np.argsort(-counts, kind="stable")]
    pos = {int(c): i for i, c in enumerate(ranked)}
    fig = Figure(figsize=(8.5, 6.0), layout="constrained")
    ax = fig.add_subplot()
    xe, ye = _edges(xs), _edges(ys)
    handles = []
    for c, i in pos.items():
        colour, hatch, _ = style(i)
        z = np.where(codes == c, 1.0, np.nan)
        ax.pcolormesh(xe, ye, np.ma.masked_invalid(z), cmap=ListedColormap([colour]),
                      vmin=0, vmax=2, hatch=hatch or None, edgecolors="face", linewidth=0)
        handles.append(Patch(facecolor=colour, hatch=hatch or None, edgecolor="#333333",
                             label=labels[c]))
    none = codes < 0
    if none.any():
        ax.pcolormesh(xe, ye, np.ma.masked_invalid(np.where(none, 1.0, np.nan)),
                      cmap=ListedColormap([NONE_COLOR]), vmin=0, vmax=2)
        handles.append(Patch(facecolor=NONE_COLOR, edgecolor="#333333",
                             label=f"no feasible {over}"))
    _log_axes(ax, xs, ys, BATCH_LABEL, CONTEXT_LABEL)
    ax.set_xlim(xe[0], xe[-1])
    ax.set_ylim(ye[0], ye[-1])
    better = "lowest" if d == "min" else "highest"
    how = f"each at its best {'/'.join(red)}; " if red else ""
    extra = f" ({', '.join(notes)})" if notes else ""
    ax.set_title(f"Winner: {over} with the {better} {metric} {_basis_text(b)}\n"
                 f"{how}model {m or '-'}, precision {p or '-'}{extra}",
                 fontsize=11)
    ax.legend(handles=handles, title=over, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              frameon=False)
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
        norm = LogNorm(vmin=lo, vmax=hi if hi > lo else lo * 1.01)
        mesh = ax.pcolormesh(xe, ye, np.ma.masked_invalid(np.where(ok, ratio, np.nan)),
                             cmap="viridis", norm=norm)
        fig.colorbar(mesh, ax=ax, label=f"max/min {metric} across {over} [x]")
        iy, ix = np.unravel_index(int(np.where(ok, ratio, -np.inf).argmax()), ratio.shape)
        peak_note = (f"largest {ratio[iy, ix]:.3g}x at batch {_fmt_tick(xs[ix])}, context "
                     f"{_fmt_tick(ys[iy])} (outlined)")
        ax.add_patch(Rectangle((xe[ix], ye[iy]), xe[ix + 1] - xe[ix], ye[iy + 1] - ye[iy],
                               fill=False, edgecolor="#D55E00", linewidth=2.5, zorder=4))
        if ratio.size <= 225:
            for (iy_, ix_), r in np.ndenumerate(ratio):
                if np.isfinite(r):
                    ax.text(xs[ix_], ys[iy_], f"{r:.3g}", ha="center", va="center",
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
    ax.set_title(f"max/min {metric} {_basis_text(b)} across {over}{how}; grey: < 2 feasible\n"
                 f"model {m or '-'}, precision {p or '-'}{extra}; {peak_note}", fontsize=10)
    return fig


def pareto_plot(ds: xr.Dataset, objectives=("tpot", "throughput"), model: str | None = None,
                precision: str | None = None, color_by: str = "hardware",
                sel: dict | None = None, hardware=None,
                basis: str | None = DEFAULT_BASIS) -> Figure:
    """First two objectives (throughputs on ``basis``) of every feasible configuration of one
    model and precision; the non-dominated points (over all of them, for all objectives) are
    drawn large."""
    objs = parse_objectives(ds, objectives)
    ds, m, p = _subset(only_hardware(ds, hardware), model, precision, sel)
    names = [n for n, _ in objs]
    b = None if basis is None else parse_basis(basis)
    front = ds.sweep.pareto(dict(objs), over=list(ds.dims), basis=b)
    (xn, xd), (yn, yd) = objs[0], objs[1]

    def on_basis(name: str) -> xr.DataArray:
        return (masked(ds, name) if b is None else normalised(ds, name, b)).transpose(
            *masked(ds, xn).dims)

    x = np.asarray(on_basis(xn).values, np.float64).ravel()
    y = np.asarray(on_basis(yn).values, np.float64).ravel()
    fr = np.asarray(front.transpose(*masked(ds, xn).dims).values).ravel()
    ok = np.isfinite(x) & np.isfinite(y)
    for n in names[2:]:
        ok &= np.isfinite(np.asarray(masked(ds, n).transpose(*masked(ds, xn).dims).values,
                                     np.float64).ravel())
    if "fits" in ds:
        ok &= np.asarray(ds["fits"].transpose(*masked(ds, xn).dims).values).ravel() == 1
    cat = _category(ds, color_by, masked(ds, xn).dims)
    fig = Figure(figsize=(9.0, 6.0), layout="constrained")
    ax = fig.add_subplot()
    labels = sorted({c for c, o in zip(cat, ok) if o})
    handles = []
    for i, lab in enumerate(labels):
        colour, _, marker = style(i)
        sel_ = ok & (cat == lab)
        ax.scatter(x[sel_ & ~fr], y[sel_ & ~fr], s=8, c=colour, marker=marker, alpha=0.35,
                   linewidths=0)
        ax.scatter(x[sel_ & fr], y[sel_ & fr], s=46, c=colour, marker=marker,
                   edgecolors="black", linewidths=0.8, zorder=3)
        handles.append(ax.scatter([], [], s=46, c=colour, marker=marker, edgecolors="black",
                                  linewidths=0.8, label=lab))
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
    ax.set_title(f"Pareto front {_basis_text(b)}: {yn} vs {xn} (large, outlined: "
                 f"non-dominated{others})\n"
                 f"model {m or '-'}, precision {p or '-'}, all feasible configurations",
                 fontsize=11)
    ax.legend(handles=handles, title=color_by, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              frameon=False, fontsize=8, ncols=1 if len(handles) <= 16 else 2)
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
    xx = np.geomspace(xlo, xhi, 200)
    handles = []
    j = 0
    for i, h in enumerate(hw):
        a = np.atleast_1d(np.asarray(ai.isel(hardware=i).values, np.float64))
        b = np.atleast_1d(np.asarray(y.isel(hardware=i).values, np.float64))
        good = np.isfinite(a) & np.isfinite(b) & (a > 0) & (b > 0)
        if not good.any():
            continue
        colour, _, marker = style(j)
        j += 1
        ax.plot(a[good], b[good], marker=marker, color=colour, lw=1.2, ms=6,
                mec="black", mew=0.5, label=h, zorder=3)
        if use_flops:
            pk = float(peak.isel(hardware=i).values) if "hardware" in peak.dims else float(peak)
            bw = (float(ds["hbm_bandwidth"].isel(hardware=i).values)
                  if "hbm_bandwidth" in ds.coords else np.nan)
            ceil = np.full_like(xx, pk) if not np.isfinite(bw) else np.minimum(pk, xx * bw)
            ax.plot(xx, ceil, color=colour, lw=1, ls="--", alpha=0.8, zorder=2)
        handles.append(h)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity of the decode step [FLOP/B]")
    ax.set_ylabel("achieved FLOP/s per device [FLOP/s]" if use_flops
                  else "model FLOP/s utilisation (mfu) [1]")
    extra = f", {', '.join(notes)}" if notes else ""
    ax.set_title(f"Decode roofline (points: batch sizes; dashed: peak and DRAM-bandwidth "
                 f"ceilings)\nmodel {m or '-'}, precision {p or '-'}, context {ctx or '-'}, "
                 f"layout {lay or '-'}{extra}", fontsize=11)
    if handles:
        ax.legend(title="hardware", loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  frameon=False, fontsize=8)
    else:
        ax.text(0.5, 0.5, "no feasible point", transform=ax.transAxes, ha="center")
    ax.grid(True, which="major", alpha=0.3)
    return fig


def regimes_plot(ds: xr.Dataset, sel: dict | None = None,
                 basis: str | None = DEFAULT_BASIS) -> Figure:
    """Seed 002 Fig. 8, quantitatively: regime x device scores (best = 1)."""
    ds = apply_sel(ds, sel)
    r = ds.sweep.regimes(basis=basis)
    score = np.asarray(r["score"].values, np.float64)
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
    sub = (f"n/a (slice absent or nothing feasible; reasons: sweep regimes): "
           f"{', '.join(missing)}" if missing else "higher is better in every row")
    ax.set_title(f"Operational regimes (seed 002 Fig. 8), best device = 1.0; throughputs "
                 f"{r.attrs.get('basis', '')}\n"
                 + "\n".join(textwrap.wrap(sub, 90)), fontsize=10)
    return fig


def plot(ds: xr.Dataset, kind: str = "winner-map", **kwargs) -> Figure:
    """A Figure of ``kind`` (one of :data:`KINDS`); ``kwargs`` go to that kind's function."""
    funcs = {"winner-map": winner_map, "variation": variation_map, "pareto": pareto_plot,
             "roofline": roofline_plot, "regimes": regimes_plot,
             "serving-front": serving_front_plot}
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
    for j, (key, g) in enumerate(parts):
        g = g.sort_values("per_user")
        colour, _, marker = style(j)
        label = " / ".join(map(str, key if isinstance(key, tuple) else (key,)))
        ax.plot(g["per_user"], g["per_unit"], marker=marker, color=colour, lw=1.3, ms=5,
                mec="black", mew=0.4, label=label, drawstyle="steps-post", zorder=3)
    if not keys:
        ax.text(0.5, 0.5, "no feasible point", transform=ax.transAxes, ha="center")
    else:
        ax.legend(title=" / ".join(groups), loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  frameon=False, fontsize=8)
    if len(table) and _spans_decades(table["per_unit"].to_numpy()):
        ax.set_yscale("log")
    if len(table) and _spans_decades(table["per_user"].to_numpy()):
        ax.set_xscale("log")
    units = table.attrs.get("units_per_unit", "")
    ax.set_xlabel("tokens/s per user = 1 / TPOT [token/s] (higher is better)")
    ax.set_ylabel(f"throughput {table.attrs.get('basis', '')} [{units}] (higher is better)")
    extra = f", {', '.join(notes)}" if notes else ""
    ax.set_title(f"Serving front: per-user speed vs throughput ({table.attrs.get('basis', '')}),"
                 f" best over batch and layout\nmodel {m or '-'}, precision {p or '-'}, "
                 f"context {ctx or '-'}{extra}", fontsize=11)
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
