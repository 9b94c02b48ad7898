"""Section 2: seed 002's six operational regimes (Fig. 8) scored by the model, per device and per
kW (system boundary), each device at its best automatic layout, with ``ds.sweep.regimes``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from sweep.analysis.regimes import REGIMES

from .claims import FIG8, FIG8_RATINGS, RATING_VALUE, REGIME_KEYS
from .markdown import code, fnum, table
from .select import labels, present

#: the throughput regimes on a comparison basis: the metric becomes ``throughput`` (extensive,
#: so the basis normalises it; ``throughput_per_device`` is already per device)
PER_KW = tuple(replace(r, metric="throughput") if r.metric == "throughput_per_device" else r
               for r in REGIMES)
BASES = {"device": (REGIMES, "device"), "power": (PER_KW, "power")}


def spearman(x, y) -> float:
    sx, sy = pd.Series(list(x), dtype=float), pd.Series(list(y), dtype=float)
    ok = sx.notna() & sy.notna()
    if ok.sum() < 3 or sx[ok].nunique() < 2 or sy[ok].nunique() < 2:
        return float("nan")
    return float(sx[ok].rank().corr(sy[ok].rank()))


def agreement(r: xr.Dataset, fig8: list[str]) -> tuple[dict, int, list[list]]:
    """Spearman rho per regime, the count of winners rated Excellent, and the table rows."""
    rhos, n_win, rows = {}, 0, []
    for k in REGIME_KEYS:
        if k not in labels(r, "regime"):
            continue
        i = REGIME_KEYS.index(k)
        scores = [float(r["score"].sel(regime=k, hardware=h)) for h in fig8]
        rho = spearman(scores, [RATING_VALUE[FIG8_RATINGS[h][i]] for h in fig8])
        rhos[k] = rho
        winner = str(r["winner"].sel(regime=k).values)
        top = [h for h in fig8 if FIG8_RATINGS[h][i] == "Excellent"]
        n_win += winner in top
        cov = r["coverage"].sel(regime=k)
        none = [h for h in fig8 if float(cov.sel(hardware=h)) == 0]
        rows.append([f"`{k}`", str(r["metric"].sel(regime=k).values), code(winner),
                     ", ".join(code(t) for t in top) or "-", "yes" if winner in top else "no",
                     fnum(rho, 2), int(r["n_points"].sel(regime=k)),
                     ", ".join(code(h) for h in none) or "-"])
    return rhos, n_win, rows


def section(rep, ds: xr.Dataset, fig_dir: Path) -> None:
    fig8 = present(ds, "hardware", FIG8)
    ds7 = ds.sel(hardware=fig8)
    res = {b: ds7.sweep.regimes(regs, basis=basis) for b, (regs, basis) in BASES.items()}
    rep.add("""
`ds.sweep.regimes()` scores every device in the six regimes of seed 002 section IV-A (slices,
metrics and choice dims in docs/analysis.md; each device at its best layout, precision and, in
the throughput regimes, batch; the best device scores 1.0, a device that cannot serve a workload
point with any automatic layout scores 0 there). Two bases: **per device** (the product's
regimes, tokens/s per device) and **per kW** (the throughput regimes on `throughput` with
`basis="power"`: tokens/s per kW at the system boundary). Scored among the seven Fig. 8 devices,
per device, with the seed's qualitative rating in parentheses ("serves x%": the share of the
regime's workload points the device can run):
""")
    r7 = res["device"]
    rows = []
    for h in fig8:
        row = [f"`{h}` ({FIG8[h]})"]
        for k in REGIME_KEYS:
            if k not in labels(r7, "regime"):
                row.append("n/a")
                continue
            s = float(r7["score"].sel(regime=k, hardware=h))
            cov = float(r7["coverage"].sel(regime=k, hardware=h))
            serves = f"; serves {cov * 100:.0f}%" if cov < 0.995 else ""
            row.append(f"{fnum(s, 2)} ({FIG8_RATINGS[h][REGIME_KEYS.index(k)]}{serves})")
        rows.append(row)
    rep.add(table(["device"] + [f"`{k}`" for k in REGIME_KEYS], rows))
    summary = {}
    for b, r in res.items():
        rhos, n_win, arows = agreement(r, fig8)
        rep.add(f"""
Agreement with the seed, **{'per device' if b == 'device' else 'per kW (system boundary)'}**:
the model's winner against the devices the seed rates Excellent, and the Spearman rank
correlation of the model's scores with the seed's ratings (Limited = 0 ... Excellent = 4) over
the seven devices; the last column lists devices that cannot serve any workload point of the
regime:
""")
        rep.add(table(["regime", "metric", "model winner", "seed 'Excellent'",
                       "winner rated Excellent?", "Spearman rho", "points", "cannot serve"],
                      arows))
        summary[b] = {"winners": {k: str(r["winner"].sel(regime=k).values)
                                  for k in labels(r, "regime")},
                      "spearman": {k: round(v, 2) for k, v in rhos.items()},
                      "spearman_mean": float(np.nanmean(list(rhos.values()))) if rhos
                      else float("nan"),
                      "winner_rated_excellent": f"{n_win}/{len(rhos)}", "n_win": n_win,
                      "n": len(rhos)}
    # the whole catalog
    rows = []
    for b, (regs, basis) in BASES.items():
        rall = ds.sweep.regimes(regs, basis=basis)
        for k in labels(rall, "regime"):
            sc = rall["score"].sel(regime=k)
            order = np.argsort(-np.nan_to_num(np.asarray(sc.values, np.float64), nan=-1))
            hw = labels(rall, "hardware")
            rows.append([f"`{k}`", b, ", ".join(f"`{hw[j]}` {fnum(float(sc.values[j]), 2)}"
                                                for j in order[:4])])
    rep.add("Whole catalog, top four per regime and basis (score, best = 1):")
    rep.add(table(["regime", "basis", "top four"], rows))
    rep.figure(ds7.sweep.plot("regimes", basis="device"), fig_dir / "seeds_regimes_fig8.png",
               "regime scores of the seven Fig. 8 devices, per device")
    d, p = summary["device"], summary["power"]
    best = max(d["spearman_mean"], p["spearman_mean"])
    win = max(d["n_win"], p["n_win"])
    verdict = ("agrees" if win >= 5 and best >= 0.7 else
               "partly agrees" if win >= 3 or best >= 0.4 else "disagrees")
    summary["verdict"] = verdict
    rep.summary["regimes"] = summary
    diffs = []
    for b, r in res.items():
        for k in REGIME_KEYS:
            if k not in labels(r, "regime"):
                continue
            w = str(r["winner"].sel(regime=k).values)
            if w in FIG8_RATINGS and FIG8_RATINGS[w][REGIME_KEYS.index(k)] != "Excellent":
                diffs.append(f"`{k}` {'per device' if b == 'device' else 'per kW'}: "
                             f"{code(w)} (seed: {FIG8_RATINGS[w][REGIME_KEYS.index(k)]})")
    low = [h for h in fig8 if float(r7["coverage"].sel(hardware=h).min()) < 0.995]
    wafer = ""
    if "cs-3" in fig8 and "high_throughput" in labels(r7, "regime"):
        sd = float(res["device"]["score"].sel(regime="high_throughput", hardware="cs-3"))
        sp = float(res["power"]["score"].sel(regime="high_throughput", hardware="cs-3"))
        wafer = (f" (CS-3 in the high-throughput regime: {fnum(sd, 2)} per device, "
                 f"{fnum(sp, 2)} per kW)")
    rep.add(f"""
**Verdict: {verdict}.** Per device the model's winner is rated Excellent by the seed in
{d['winner_rated_excellent']} regimes (mean rank correlation {fnum(d['spearman_mean'], 2)}); per
kW in {p['winner_rated_excellent']} ({fnum(p['spearman_mean'], 2)}). Winners the seed does not
rate Excellent: {'; '.join(diffs) or 'none'}. Per device a ~24 kW wafer counts as one
device{wafer}; per kW the ranking is the one a power budget sees. Devices that cannot serve
every workload point of some regime with their automatic layouts (score 0 there):
{', '.join(code(h) for h in low) or 'none'}. Multi-model serving is a capacity measure (memory
headroom), the same on both bases. The seed's ratings are qualitative, not derived from stated
numbers, and the model's engine factors are fitted only for TensorRT-LLM, vLLM, SGLang and
Neuron (published NVIDIA, AMD, TPU and AWS measurements; section 7).
""")

