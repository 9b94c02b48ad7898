"""The front kinds: ``pareto`` (two objectives of every feasible configuration, the non-dominated
ones marked) and ``serving-front`` (tokens/s per user against throughput per device, each
device's Pareto front over batch and layout)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from sweep.analysis import core as an
from sweep.analysis.basis import DEFAULT_BASIS, EXTENSIVE, normalised, parse_basis
from sweep.analysis.palette import looks
from sweep.analysis.plot_slices import _pick, _subset, only_hardware
from sweep.analysis.plot_style import (
    _basis_label,
    _basis_text,
    _spans_decades,
    outside_legend,
    set_title,
)
from sweep.analysis.select import as_dims, masked, parse_objectives


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


def _category(ds: xr.Dataset, dim: str, dims) -> np.ndarray:
    if dim in dims:
        lab = np.asarray([str(x) for x in ds[dim].values], dtype=object)
        shape = [1] * len(dims)
        shape[list(dims).index(dim)] = len(lab)
        full = [ds.sizes[d] for d in dims]
        return np.broadcast_to(lab.reshape(shape), full).ravel()
    val = str(ds[dim].values.item()) if dim in ds.coords else "all"
    return np.full(int(np.prod([ds.sizes[d] for d in dims])), val, dtype=object)
