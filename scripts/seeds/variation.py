"""Section 1: seed 002's "up to 3.7x" re-examined on comparison bases (issue 14).

Across the four HBM accelerators of seed 002's Fig. 8, the seven Fig. 8 devices and the whole
catalog, ``max / min`` of generated tokens/s at every workload point (model x batch x prompt x
precision), each device at its best automatic layout on the basis, with the product's
``ds.sweep.max_variation`` / ``ds.sweep.variation`` / ``ds.sweep.best_layout`` /
``ds.sweep.goodput``. Also what the old single-device headline (one wafer against one 90 W chip)
becomes on each basis.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from sweep.analysis.basis import parse_basis
from sweep.analysis.plots import style

from .claims import FIG8, FIG8_HBM, OLD_HEADLINE, SEED_VARIATION
from .markdown import TOLERANCE, code, finite, fnum, fx, share, table
from .select import cell, labels, near, present

#: the comparison bases of the re-examination (sweep/analysis/basis.py)
BASES = ("device", "system:8", "power", "cost")
METRIC = "throughput"
#: latency targets of the goodput comparison [s]
TTFT_TARGET = 2.0
TPOT_TARGET = 0.050


def device_sets(ds: xr.Dataset) -> dict[str, list[str]]:
    return {"4 HBM accelerators of Fig. 8": present(ds, "hardware", FIG8_HBM),
            "7 accelerators of Fig. 8": present(ds, "hardware", FIG8),
            "whole catalog": labels(ds, "hardware")}


def where_text(w: dict[str, Any]) -> str:
    keys = ("model", "batch", "context", "precision")
    return ", ".join(f"{k} {w[k]}" for k in keys if k in w) or "n/a"


def stats(ds: xr.Dataset, hw: list[str], basis: str) -> dict[str, Any]:
    """max_variation plus the distribution of the ratio (share within 3.7x, p90)."""
    sub = ds.sel(hardware=hw)
    mv = sub.sweep.max_variation(METRIC, basis=basis) or {}
    ratio = np.asarray(sub.sweep.variation(METRIC, basis=basis)["ratio"].values, np.float64)
    r = ratio[np.isfinite(ratio)]
    out = {"ratio": mv.get("ratio", np.nan), "median": mv.get("median_ratio", np.nan),
           "points": mv.get("points", 0), "where": mv.get("where", {}),
           "best": mv.get("best", ""), "worst": mv.get("worst", ""),
           "best_layout": mv.get("best_layout", ""), "worst_layout": mv.get("worst_layout", ""),
           "best_value": mv.get("best_value", np.nan), "worst_value": mv.get("worst_value", np.nan),
           "units": mv.get("units", ""), "ratios": r,
           "p90": float(np.percentile(r, 90)) if r.size else np.nan,
           "share": float(np.mean(r <= SEED_VARIATION)) if r.size else np.nan}
    return out


def verdict(st: dict[str, Any]) -> str:
    """Plain verdict of "up to 3.7x" against one device set on one basis."""
    hi, med = st.get("ratio", np.nan), st.get("median", np.nan)
    if not finite(hi):
        return "not computable"
    bound = SEED_VARIATION * TOLERANCE
    if hi <= bound:
        return "agrees"
    if finite(med) and med <= bound:
        return "agrees as a typical spread, not as a bound"
    return "disagrees"


def _devices(layout: str) -> int:
    from grids.layouts import parse_layout

    try:
        return parse_layout(layout).devices
    except Exception:
        return 0


def _worst_at(ds: xr.Dataset, st: dict[str, Any], var: str = "ttft") -> float:
    """``var`` of the worst device at its layout where the spread peaks."""
    w = {k: v for k, v in st.get("where", {}).items() if k in ds.dims}
    try:
        return float(ds[var].sel(w).sel(hardware=st["worst"], parallelism=st["worst_layout"]))
    except (KeyError, ValueError, TypeError):
        return float("nan")


def _extreme(ds: xr.Dataset, b: str, st: dict[str, Any]) -> str:
    """Where the spread peaks on basis ``b``: the worst device, its layout, how many of the
    requests it holds at once and its TTFT."""
    batch = st.get("where", {}).get("batch")
    held = _worst_at(ds, st, "concurrency")
    holds = (f", holding {held:.0f} of the {batch} requests at once" if finite(held) and batch
             else "")
    return (f"{parse_basis(b).label}: {code(st.get('worst'))} on "
            f"{_devices(st.get('worst_layout', '')) or '?'} device(s) "
            f"({code(st.get('worst_layout'))}) at {where_text(st.get('where', {}))}{holds}, TTFT "
            f"{fnum(_worst_at(ds, st))} s")


def _stack(h: str) -> str:
    """The serving engine the catalog grid gives ``h`` (engine ``native``)."""
    from grids.engines import resolve
    from grids.hardware import load_device

    p = resolve("native", load_device(h))
    return p.delegate or p.engine


def section(rep, ds: xr.Dataset, fig_dir: Path) -> None:
    sets = device_sets(ds)
    hbm = sets["4 HBM accelerators of Fig. 8"]
    rep.add(f"""
Seed 002 (abstract, sections IV-B and VIII) reports "performance variations of up to
{SEED_VARIATION}x between architectures depending on batch size and sequence length", without
saying which metric, devices, workloads or unit of comparison. Here the metric is generated
tokens/s, `max / min` across devices at every workload point of the catalog grid (model x batch
x prompt x precision; each device with its vendor's serving stack, engine `native`), feasible
points only, **each device at its best layout on the basis** among its automatic layouts
(`parallelism = "auto"`, up to {fnum(ds.sizes.get('parallelism', 0))} layouts in the union: a
CS-3 is not forced onto 128 wafers, a Groq part gets the hundreds of chips a model needs). The
bases (docs/analysis.md, "Comparison bases"; `ds.sweep.max_variation("throughput",
basis=...)`):

- `device`: tokens/s per accelerator (a layout's throughput / its devices);
- `system:8`: an equal budget of 8 devices (`floor(8 / d)` replicas of a d-device layout;
  larger layouts are out);
- `power`: tokens/s per kW at the system boundary (accelerators plus their host and system
  share, `system_power`), the product's default;
- `cost`: tokens per US dollar (cloud prices, grids/data/prices.toml; unpriced devices are out).

Device sets: the four HBM accelerators of Fig. 8 ({", ".join(code(h) for h in hbm)}), the seven
Fig. 8 devices and the whole catalog ({len(sets['whole catalog'])} devices). "Median" and "p90"
are over the workload points where at least two devices of the set are feasible (equally
weighted), "share <= 3.7x" is the fraction of those points within the seed's bound.
""")
    rows, results, verdicts = [], {}, {}
    for name, hw in sets.items():
        if len(hw) < 2:
            continue
        for b in BASES:
            st = stats(ds, hw, b)
            results[(name, b)] = st
            verdicts[(name, b)] = verdict(st)
            rows.append([name, f"`{b}` ({parse_basis(b).label})", fx(st["ratio"]),
                         where_text(st["where"]),
                         f"{code(st['best'])} ({code(st['best_layout'])}) / "
                         f"{code(st['worst'])} ({code(st['worst_layout'])})",
                         fx(st["median"]), fx(st["p90"]), share(st["share"]), st["points"],
                         verdicts[(name, b)]])
    rep.add(table(["devices", "basis", "max", "where (max)", "best (layout) / worst (layout) at "
                   "max", "median", "p90", "share <= 3.7x", "points", "verdict"], rows))

    _headline(rep, ds)
    _goodput(rep, ds, hbm)
    _figures(rep, ds, results, hbm, fig_dir)

    def at(name: str, b: str) -> dict[str, Any]:
        return results.get((name, b), {})

    plain = []
    for b in BASES:
        h, c = at("4 HBM accelerators of Fig. 8", b), at("whole catalog", b)
        plain.append(f"- **{parse_basis(b).label}**: across the four HBM accelerators "
                     f"**{verdicts.get(('4 HBM accelerators of Fig. 8', b), 'n/a')}** (max "
                     f"{fx(h.get('ratio'))}, {code(h.get('best'))} against "
                     f"{code(h.get('worst'))}, median {fx(h.get('median'))}); across the "
                     f"catalog **{verdicts.get(('whole catalog', b), 'n/a')}** (max "
                     f"{fx(c.get('ratio'))}, {code(c.get('best'))} "
                     f"({code(c.get('best_layout'))}) against {code(c.get('worst'))} "
                     f"({code(c.get('worst_layout'))}), median {fx(c.get('median'))}).")
    rep.add("**Verdict, per basis** (\"agrees\": the largest spread is within 1.5x of 3.7x):\n\n"
            + "\n".join(plain))
    cat = {b: at("whole catalog", b) for b in BASES}
    extremes = "; ".join(_extreme(ds, b, st) for b, st in cat.items() if st)
    hbm_ext = "; ".join(_extreme(ds, b, st) for b in BASES
                        if (st := at("4 HBM accelerators of Fig. 8", b)))
    held = [(_worst_at(ds, st, "concurrency"), st.get("where", {}).get("batch"))
            for st in [*cat.values(), *(at("4 HBM accelerators of Fig. 8", b) for b in BASES)]
            if st]
    n_short = sum(1 for c, b in held if finite(c) and b and c < b)
    waits = (f"{n_short} of these {len(held)} worst devices hold fewer requests than the batch, "
             "which is where their long TTFTs come from"
             if n_short else "none of these worst devices is short of slots")
    stacks = ", ".join(f"{code(h)} {_stack(h)}" for h in hbm)
    rep.add(f"""
Where the spreads come from. Among the four HBM accelerators each device runs its vendor's
serving stack ({stacks}; docs/engines.md), so their spread is as much the software's as the
chips'. The worst device at the largest spread is, per basis, among the four: {hbm_ext}; across
the catalog: {extremes}. The grid runs continuous batching (docs/model.md section 13): the batch
is the number of requests in flight per replica, a layout holds at most `max_concurrency` of them
(its KV cache, the engine's batch cap) and the others wait for a slot: {waits}. Maxima set by a
device that holds a handful of a thousand requests say that it cannot serve the workload, and
the medians are the informative figures. The seed states neither the metric nor the workloads
behind its number; its Fig. 8 is qualitative and its Tables III/IV mix vendor claims and estimates
(section 6).
""")
    rep.summary["variation"] = {
        f"{'hbm4' if n.startswith('4') else 'fig8' if n.startswith('7') else 'catalog'}"
        f"_{b}": {"max": st["ratio"], "median": st["median"], "best": st["best"],
                  "worst": st["worst"], "verdict": verdicts[(n, b)]}
        for (n, b), st in results.items()}


def _headline(rep, ds: xr.Dataset) -> None:
    """What the old single-device headline becomes on each basis."""
    w = dict(OLD_HEADLINE["where"])
    best, worst = OLD_HEADLINE["best"], OLD_HEADLINE["worst"]
    hw = labels(ds, "hardware")
    if not all(w[k] in labels(ds, k) for k in w) or best not in hw or worst not in hw:
        rep.add("*The old headline's point is not in this grid.*")
        return
    at = ds.sel(w)
    thr = at[METRIC].where(at["fits"] == 1)
    lay = OLD_HEADLINE["layout"]
    grid_ratio = cell(thr, hardware=best, parallelism=lay) / cell(thr, hardware=worst,
                                                                  parallelism=lay)
    rows = [["grid values, both on one device (`tp1`), the old headline's way",
             f"{fnum(cell(thr, hardware=best, parallelism=lay))} (`tp1`)",
             f"{fnum(cell(thr, hardware=worst, parallelism=lay))} (`tp1`)", fx(grid_ratio),
             "-"]]
    out = {"grid values, tp1": grid_ratio}
    for b in BASES:
        bl = at.sweep.best_layout(METRIC, basis=b)
        vb, vw = cell(bl["value"], hardware=best), cell(bl["value"], hardware=worst)
        lb = str(bl["layout"].sel(hardware=best).values)
        lw = str(bl["layout"].sel(hardware=worst).values)
        v = at.sweep.variation(METRIC, basis=b)
        top = (f"{fx(float(v['ratio']))}: {code(str(v['best'].values))} / "
               f"{code(str(v['worst'].values))}")
        units = bl["value"].attrs.get("units", "")
        rows.append([f"`{b}` ({parse_basis(b).label}) [{units}]",
                     f"{fnum(vb)} ({code(lb)})" if finite(vb) else "n/a (unpriced or none)",
                     f"{fnum(vw)} ({code(lw)})" if finite(vw) else "n/a (unpriced or none)",
                     fx(vb / vw) if finite(vb) and finite(vw) else "n/a", top])
        out[b] = vb / vw if finite(vb) and finite(vw) else np.nan
    rep.add(f"""
**The old headline on each basis.** The README's default grid printed "throughput differs up to
{OLD_HEADLINE['ratio']:,}x across hardware (best `{best}`, worst `{worst}`)" at
{where_text(w)}, both devices on one device (`tp1`): one ~24 kW wafer against one 90 W
inference chip. At the same workload point, each device at its best layout on the basis, with
the largest spread across the whole catalog at that point in the last column:
""")
    rep.add(table(["basis", f"`{best}`", f"`{worst}`", f"`{best}` / `{worst}`",
                   "catalog max / min at this point: best / worst"], rows))
    per = "; ".join(f"{parse_basis(b).label} {fx(out[b])}" for b in BASES if finite(out[b]))
    unpriced = [b for b in BASES if parse_basis(b).kind == "cost" and not finite(out[b])]
    rep.add(f"""
With today's catalog (the CS-3 served by Cerebras' engine, whose per-layer time comes from
Cerebras' published token rates) the same grid values give {fx(grid_ratio)}, not
{OLD_HEADLINE['ratio']:,}x. On the bases: {per or 'n/a'}{'; per dollar the pair is not '
'comparable (a device without a price is out)' if unpriced else ''}. Counting one wafer as one
device keeps the spread (per device, per 8-device budget); per kW at the system boundary, where
a ~24 kW wafer and a 90 W chip stand on the same footing, they are within {fx(out.get('power'))}
of each other.
""")
    rep.summary["headline"] = out


def _goodput(rep, ds: xr.Dataset, hbm: list[str]) -> None:
    """Tokens/s meeting latency targets (best batch and layout) per device and per kW."""
    if len(hbm) < 2:
        return
    ctx = near(ds, "context", 1024)
    sub = ds.sel(hardware=hbm, context=ctx)
    per = {p: sub.sweep.goodput(ttft=TTFT_TARGET, tpot=TPOT_TARGET, per=p)
           for p in ("device", "kW")}
    rows = []
    for m in labels(sub, "model"):
        for p in labels(sub, "precision"):
            row = [f"`{m}`", p]
            for key in ("device", "kW"):
                g = per[key]["goodput"].sel(model=m, precision=p)
                vals = {h: float(g.sel(hardware=h)) for h in hbm}
                ok = {h: v for h, v in vals.items() if finite(v) and v > 0}
                row.append(", ".join(f"{h} {fnum(v)}" for h, v in vals.items()))
                row.append(fx(max(ok.values()) / min(ok.values())) if len(ok) >= 2 else "n/a")
            rows.append(row)
    rep.add(f"""
**Under latency targets.** A capacity planner compares devices at the best batch and layout that
meet a TTFT of {TTFT_TARGET:g} s and a TPOT of {TPOT_TARGET * 1e3:g} ms (`ds.sweep.goodput`),
here for the four HBM accelerators at a prompt of {ctx} tokens (tokens/s per device and per kW
at the system boundary; the spread is max / min over the devices that meet the targets):
""")
    rep.add(table(["model", "precision", "tokens/s per device", "spread", "tokens/s per kW",
                   "spread"], rows))


def _figures(rep, ds: xr.Dataset, results: dict, hbm: list[str], fig_dir: Path) -> None:
    fig = Figure(figsize=(11.0, 4.8), layout="constrained")
    panels = [n for n in ("4 HBM accelerators of Fig. 8", "whole catalog")
              if any(k[0] == n for k in results)]
    axes = fig.subplots(1, max(1, len(panels)), squeeze=False)[0]
    for ax, name in zip(axes, panels):
        allr = [results[(name, b)]["ratios"] for b in BASES if (name, b) in results]
        hi = max((float(r.max()) for r in allr if r.size), default=10.0)
        bins = np.geomspace(1.0, max(hi, 10.0) * 1.05, 50)
        for i, b in enumerate(BASES):
            st = results.get((name, b))
            if st is None or not st["ratios"].size:
                continue
            colour, _, _ = style(i)
            ax.hist(st["ratios"], bins=bins, histtype="step", lw=2, color=colour,
                    label=f"{b}: median {fnum(st['median'])}x, max {fnum(st['ratio'])}x")
        ax.axvline(SEED_VARIATION, color="black", ls="--", lw=1.2, label="seed 002: 3.7x")
        ax.set_xscale("log")
        ax.set_xlabel("max/min tokens/s across devices at one workload point [x]")
        ax.set_ylabel("workload points [count]")
        ax.set_title(name, fontsize=10)
        ax.legend(fontsize=7, frameon=False)
    fig.suptitle("Cross-architecture spread of tokens/s on four comparison bases, each device "
                 "at its best automatic layout", fontsize=10)
    rep.figure(fig, fig_dir / "seeds_variation_bases.png",
               "distribution of the cross-device spread on four bases")
    m = "llama-3.3-70b" if "llama-3.3-70b" in labels(ds, "model") else labels(ds, "model")[-1]
    if len(hbm) >= 2:
        fig = ds.sel(hardware=hbm).sweep.plot("variation", model=m, precision="bf16",
                                               metric=METRIC, basis="power")
        rep.figure(fig, fig_dir / "seeds_variation_hbm4.png",
                   f"max/min tokens/s per kW across the four HBM accelerators, {m}")
