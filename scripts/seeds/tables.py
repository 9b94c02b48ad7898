"""Section 6: seed 002's Tables III (single stream) and IV (batch processing) for Llama-2-70B,
recomputed on the catalog grid: Table III at each device's lowest-TPOT layout and precision,
Table IV on the stated system's device budget (basis ``system:N``: the best use of N devices,
replicas included)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from .claims import SEED2_T3, SEED2_T4
from .markdown import code, finite, fnum, fx, table
from .select import argbest, labels, near, present

MODEL = "llama-2-70b"


def _lowest_tpot(sub: xr.Dataset, h: str) -> tuple[float, str, str]:
    """(TPOT, layout, precision) of the lowest TPOT of device ``h`` at batch 1."""
    bl = sub.sel(hardware=h).sweep.best_layout("tpot", basis="replica")
    v, w = argbest(bl["value"], "min")
    if not w:
        return np.nan, "", ""
    p = w.get("precision", labels(sub, "precision")[0] if "precision" in sub.coords else "")
    lay = str(bl["layout"].sel(precision=p).values) if "precision" in bl["layout"].dims \
        else str(bl["layout"].values)
    return v, lay, p


def section(rep, ds: xr.Dataset, fig_dir: Path) -> None:
    if MODEL not in labels(ds, "model"):
        raise KeyError(f"{MODEL} is not in the grid")
    ctx = near(ds, "context", 1024)
    sub = ds.sel(model=MODEL, context=ctx)
    b1 = sub.sel(batch=1)
    out_len = int(ds["output_len"]) if "output_len" in ds.coords else 0
    rows, t3 = [], {}
    for h in present(ds, "hardware", SEED2_T3):
        v, lay, p = _lowest_tpot(b1, h)
        seed = SEED2_T3[h]
        if lay:
            pt = b1.sel(hardware=h, precision=p, parallelism=lay)
            ttft, tpj, ndev = float(pt["ttft"]), float(pt["tokens_per_joule"]), int(pt["devices"])
        else:
            ttft = tpj = np.nan
            ndev = 0
        vb, lb, _ = _lowest_tpot(b1.sel(precision=["bf16"]), h)
        t3[h] = 1 / v if finite(v) else np.nan
        rows.append([f"`{h}`", f"{code(lay)} {p} ({ndev} dev)" if lay else "infeasible",
                     fnum(1 / v), f"{fnum(1 / vb)} ({code(lb)})" if lb else "n/a",
                     f"{ttft * 1e3:.0f} ms" if finite(ttft) else "n/a", fnum(tpj, 3),
                     fnum(seed[1]), f"{seed[0] * 1e3:.0f} ms" if seed[0] else "ND",
                     fnum(seed[3], 2), seed[4]])
    rep.add(f"""
Seed 002's tables of measured-looking numbers, recomputed for Llama-2-70B (prompt {ctx}, output
{out_len} tokens; each device with its vendor's stack). **Table III** (single stream): the
generation rate is `1 / TPOT` at batch 1 at the device's lowest-TPOT automatic layout and
precision (`ds.sweep.best_layout("tpot", basis="replica")`: any number of devices); tokens/J is
generated tokens per joule of the layout's accelerators:
""")
    rep.add(table(["device", "best layout", "model tok/s (1/TPOT)", "bf16 tok/s", "model TTFT",
                   "model tok/J", "seed tok/s", "seed TTFT", "seed tok/J", "seed note"], rows))
    cs = t3.get("cs-3", np.nan)
    rep.summary["tables"] = {"cs3_single_stream_tps": cs}
    rep.add(f"""
**Cerebras 86.5 versus 2,100 tok/s.** Table III gives CS-3 "2,100 (system)" while the text of
the same section says "Cerebras WSE-3 achieving the highest throughput at 86.5 tokens/second";
they cannot both hold. The model's single-stream rate for Llama-2-70B on CS-3 is {fnum(cs)}
tok/s with weights in the SRAM of several wafers: the order of the table's figure, not the
text's. The tokens/J column of the seed divides a generation rate by one device's TDP
(7,783 / 1,000 W = 7.8 for B200), although 7,783 and 2,908 are MLPerf multi-stream/server
figures (‡); and the text's "Groq 4.7x more efficient than the next" contradicts its own column
(B200 7.8 > Groq 0.86).
""")
    tp = sub
    rows, t4 = [], {}
    for h, (label, n, seed_v, seed_b, seed_cov) in SEED2_T4.items():
        if h not in labels(ds, "hardware"):
            continue
        one = tp.sel(hardware=h)
        bl = one.sweep.best_layout("throughput", basis=f"system:{n}")
        v, w = argbest(bl["value"])
        lay = str(bl["layout"].sel({k: w[k] for k in w}).values) if w else ""
        cov, reps = np.nan, 0
        if lay:
            pt = one.sel(batch=w["batch"], precision=w["precision"], parallelism=lay)
            cov = float(pt["latency_cov"])
            reps = n // int(pt["devices"])
        weights8 = float(ds["params_total"].sel(model=MODEL))  # bytes at 8-bit weights
        cap = float(ds["device_memory"].sel(hardware=h)) * n
        short = (f"{n} x {fnum(cap / n / 1e9)} GB = {fnum(cap / 1e9)} GB < "
                 f"{fnum(weights8 / 1e9)} GB of 8-bit weights")
        why = ("-" if cap >= weights8 and lay else
               "no feasible layout within the budget" if cap >= weights8 else
               f"does not fit: {short}")
        if lay:
            t4[h] = v / seed_v
        rows.append([label, n, fnum(v) if lay else "infeasible",
                     f"batch {w.get('batch', '-')}, {reps} x {code(lay)} {w.get('precision', '')}"
                     if lay else "-", fnum(cov, 2), fnum(seed_v), seed_b, seed_cov, why])
    rep.add("""
**Table IV** (batch processing, the stated system's maximum throughput): the best generated
tokens/s on that system's device budget (`basis="system:N"`: `floor(N / d)` replicas of a
d-device layout; best over batch and precision), and the per-token latency CoV there:
""")
    rep.add(table(["system", "devices", "model tok/s", "at (batch, replicas x layout)",
                   "model CoV", "seed tok/s", "seed batch", "seed CoV", "capacity check"], rows))
    hbm8 = {h: r for h, r in t4.items() if SEED2_T4[h][1] == 8}
    seed_order = sorted(hbm8, key=lambda h: -SEED2_T4[h][2])
    model_order = sorted(hbm8, key=lambda h: -hbm8[h] * SEED2_T4[h][2])
    rep.summary["tables"]["t4_model_over_seed"] = hbm8
    rep.add(f"""
Model / seed for the 8-device systems: {", ".join(f"`{h}` {fx(r, 2)}" for h, r in hbm8.items())
or "n/a"} (the seed gives neither prompt nor output length, and its batch sizes are † estimates;
the model takes the best batch of the grid). Ranked by throughput the seed has
{" > ".join(code(h) for h in seed_order)}; the model has {" > ".join(code(h) for h in model_order)}.
Table IV is also inconsistent with Table III: its 8-GPU B200 system peaks at 4,560 tok/s, below
the 7,783 tok/s Table III lists for B200. Three rows cannot be right as stated: Llama-2-70B's
weights need 69 GB at 8 bits, more than a single CS-3 holds (44 GB of SRAM), more than an
IPU-POD64 (64 x 0.9 GB = 57.6 GB) and far more than a Groq LPU-Quad (4 x 0.23 GB). The batch
sizes and CoVs marked † are estimates; the catalog takes its per-class latency jitter from these
CoVs, so the model's CoV column is not an independent check of them.
""")
