"""Sections 4a and 4b: seed 004's dataflow systems against GPUs (Llama-3.1-8B, bf16).

4a: at batch <= 8 the dataflow systems lead by up to an order of magnitude, the gain comes from
decode rather than prefill, and it does not buy energy efficiency. 4b: at large batch the GPUs'
peak throughput passes them. Read from the seed 004 grid (each device with the engine seed 004
used, its workload lengths)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from grids.engines import resolve
from grids.hardware import load_device
from grids.models import load_model
from sweep.analysis.palette import device_look
from sweep.analysis.select import masked

from .claims import SEED4_B1, SEED4_CS3_B8, SEED4_ITL_GAIN, SEED4_SN40L_PEAK, SEED4_TTFT_LOWER
from .markdown import code, finite, fnum, fx, table, verdict_ratio, within
from .select import argbest, cell, labels, layouts_with, present

MODEL = "llama-3.1-8b"
PREC = "bf16"
GPUS = ("a100-sxm-80g", "h100-sxm")
#: SN40L layout of the seed 004 comparison (8 RDUs, scripts/seeds/seed004_rows.py)
SN_LAYOUT = "tp8"
#: the ``bound`` codes (docs/model.md section 10)
BOUND = {0: "compute", 1: "SRAM", 2: "DRAM", 3: "host link", 4: "interconnect", 5: "overhead"}


def _layout(h: str) -> str:
    return SN_LAYOUT if h == "sn40l" else "tp1"


def section_dataflow(rep, ds: xr.Dataset, fig_dir: Path) -> None:
    sub = ds.sel(model=MODEL, precision=PREC)
    ctx = labels(ds, "context")[0]
    tt = masked(sub, "total_throughput").sel(context=ctx)
    tpot = masked(sub, "tpot").sel(context=ctx)
    ttft = masked(sub, "ttft").sel(context=ctx)
    le16 = layouts_with(ds, max_devices=16, single_replica=True)
    hw = present(ds, "hardware", ["a100-sxm-80g", "h100-sxm", "cs-3", "sn40l"])
    rows = []
    ratios: dict[str, dict[int, float]] = {"cs-3": {}, "sn40l": {}}
    for b in [b for b in (1, 2, 4, 8) if b in labels(ds, "batch")]:
        a100 = cell(tt, hardware="a100-sxm-80g", batch=b, parallelism="tp1")
        row = [b] + [fnum(cell(tt, hardware=h, batch=b, parallelism=_layout(h))) for h in hw]
        sv, sw = argbest(tt.sel(hardware="sn40l", batch=b, parallelism=le16))
        row.append(f"{fnum(sv)} ({code(sw.get('parallelism'))})")
        for h in ("cs-3", "sn40l"):
            ratios[h][b] = cell(tt, hardware=h, batch=b, parallelism=_layout(h)) / a100
        row += [fx(ratios["cs-3"][b]), fx(ratios["sn40l"][b])]
        row.append(f"A100 {fnum(SEED4_B1['a100-sxm-80g'])}, CS-3 {fnum(SEED4_B1['cs-3'])} "
                   f"(16.8x), SN40L {fnum(SEED4_B1['sn40l'])} (9.41x)" if b == 1 else
                   f"CS-3 {fnum(SEED4_CS3_B8)}" if b == 8 else "")
        rows.append(row)
    rep.add("""
### 4a. Dataflow versus GPU at batch <= 8 (Llama-3.1-8B, bf16)

Seed 004 (section IV-C): "dataflow accelerators deliver up to an order-of-magnitude throughput
improvement relative to GPUs at small batch sizes (1-8)"; at batch 1 the A100 reaches 215
total tokens/s, CS-3 3,609 (16.8x) and SN40L 2,024 (9.41x). Model, total tokens/s (GPUs and CS-3
on one device, SN40L on 8 RDUs as in section 5, and at its best single-replica layout of at most
16 RDUs):
""")
    rep.add(table(["batch", *[f"`{h}` (`{_layout(h)}`)" for h in hw], "SN40L best <= 16",
                   "CS-3 / A100", "SN40L / A100", "seed 004"], rows))
    # decode versus prefill at batch 1
    a_itl = cell(tpot, hardware="a100-sxm-80g", batch=1, parallelism="tp1")
    a_ttft = cell(ttft, hardware="a100-sxm-80g", batch=1, parallelism="tp1")
    grows, gains = [], {}
    for h in ("cs-3", "sn40l"):
        itl = cell(tpot, hardware=h, batch=1, parallelism=_layout(h))
        tf = cell(ttft, hardware=h, batch=1, parallelism=_layout(h))
        gains[h] = (a_itl / itl, a_ttft / tf)
        grows.append([f"`{h}` (`{_layout(h)}`)", f"{itl * 1e3:.3g} ms", fx(a_itl / itl),
                      fx(SEED4_ITL_GAIN[h]), f"{tf * 1e3:.3g} ms", fx(a_ttft / tf),
                      fx(1 / (1 - SEED4_TTFT_LOWER[h]))])
    rep.add(f"""
Decode versus prefill at batch 1 (A100 `tp1` with vLLM: TPOT {a_itl * 1e3:.3g} ms, TTFT
{a_ttft * 1e3:.3g} ms). The seed's second takeaway: the gains come from the memory-bound decode
(ITL 18.8x / 13.1x lower than the A100's), hardly from prefill (TTFT only 35% / 20% lower):
""")
    rep.add(table(["device (layout)", "model ITL", "A100 / device ITL", "seed", "model TTFT",
                   "A100 / device TTFT", "seed"], grows))
    # energy at batch 1, at the boundary each was measured
    erows, tpj = [], {}
    for h in hw:
        lay = _layout(h)
        thr = cell(tt, hardware=h, batch=1, parallelism=lay)
        boundary = "system_power" if h in ("cs-3", "sn40l") else "power"
        w = cell(masked(sub, boundary).sel(context=ctx), hardware=h, batch=1, parallelism=lay)
        tpj[h] = thr / w
        erows.append([f"`{h}` (`{lay}`)", f"`{boundary}`", fnum(w), fnum(thr / w, 3)])
    rep.add("Energy at batch 1 (total tokens per joule at the boundary seed 004 measured: GPU "
            "board power, CS-3 chassis, SN40L rack; section 5 has the seed's values):")
    rep.add(table(["device (layout)", "boundary", "model power [W]", "model total tokens/J"],
                  erows))
    cs1, sn1 = ratios["cs-3"].get(1, np.nan), ratios["sn40l"].get(1, np.nan)
    sn_bound = BOUND.get(int(cell(sub["bound"].sel(context=ctx), hardware="sn40l", batch=1,
                                  parallelism=SN_LAYOUT)), "?")
    sn_why = ("its step on 8 RDUs is set by the model's all-reduces (bound: interconnect; "
              "section 5, note on SN40L)" if sn_bound == "interconnect" else
              f"its step on 8 RDUs is {sn_bound}-bound (section 5, note on SN40L)")
    order = all(ratios[h].get(b, 0) > 1 for h in ratios for b in ratios[h])
    decode_each = {h: finite(g[0]) and finite(g[1]) and g[0] >= 2 * g[1] for h, g in gains.items()}
    decode = all(decode_each.values())
    energy = all(tpj.get(d, np.inf) < min(tpj.get(g, 0) for g in GPUS)
                 for d in ("cs-3", "sn40l") if d in tpj)
    sizes = bool(within(cs1, 16.8)) and bool(within(sn1, 9.41))
    verdict = ("agrees" if order and decode and energy and sizes else
               "direction agrees, magnitude partly" if order else "disagrees")
    rep.summary["seed004"] = {"cs3_over_a100_b1": cs1, "sn40l_over_a100_b1": sn1,
                              "dataflow_ahead_b1_8": order, "gain_from_decode": decode,
                              "dataflow_less_energy_efficient": energy,
                              "dataflow_verdict": verdict,
                              "cs3_itl_gain": gains.get("cs-3", (np.nan,))[0],
                              "sn40l_itl_gain": gains.get("sn40l", (np.nan,))[0]}
    rep.add(f"""
**Verdict: {verdict}.** Direction: the dataflow systems are ahead of the A100 at every batch
1-8 in the model ({'yes' if order else 'no'}). Magnitude at batch 1: CS-3 / A100 {fx(cs1)}
against 16.8x ({verdict_ratio(cs1, 16.8)}); SN40L / A100 {fx(sn1)} against 9.41x
({verdict_ratio(sn1, 9.41)}). Gains from decode rather than prefill (the ITL gain at least twice
the TTFT gain): {"; ".join(f"{h} {'yes' if ok else 'no'} ({fx(gains[h][0])} against "
                             f"{fx(gains[h][1])})" for h, ok in decode_each.items())}. Dataflow less
energy-efficient than both GPUs at batch 1: {'yes' if energy else 'no'}. The SN40L at batch 1:
{sn_why}; CS-3's TTFT gain carries the
engine's fixed per-request cost, itself set from this seed's TTFT (section 5, column
"independent").
""")
    _figure(rep, ds, tt, fig_dir)
    roof = present(ds, "hardware", ["a100-sxm-80g", "h100-sxm", "cs-3"])
    if roof:
        fig = ds.sel(hardware=roof).sweep.plot("roofline", model=MODEL, precision=PREC,
                                               context=ctx, parallelism="tp1")
        rep.figure(fig, fig_dir / "seeds_roofline_8b.png",
                   "decode roofline of Llama-3.1-8B, one device each")


def _figure(rep, ds: xr.Dataset, tt: xr.DataArray, fig_dir: Path) -> None:
    fig = Figure(figsize=(8.5, 5.5), layout="constrained")
    ax = fig.add_subplot()
    bs = [b for b in labels(ds, "batch") if b <= 128]
    for h in present(ds, "hardware", ["a100-sxm-80g", "h100-sxm", "mi300x", "cs-3", "sn40l"]):
        y = [cell(tt, hardware=h, batch=b, parallelism=_layout(h)) for b in bs]
        look = device_look(h)
        colour, marker = look.colour, look.marker
        eng = str(ds["engine"].sel(hardware=h).values) if "engine" in ds.coords else ""
        ax.plot(bs, y, marker=marker, color=colour, label=f"{h} ({_layout(h)}, {eng}), model")
    pts = [("A100", 1, SEED4_B1["a100-sxm-80g"]), ("CS-3", 1, SEED4_B1["cs-3"]),
           ("SN40L", 1, SEED4_B1["sn40l"]), ("CS-3", 8, SEED4_CS3_B8),
           ("SN40L peak", 8, SEED4_SN40L_PEAK)]
    for name, b, v in pts:
        ax.scatter([b], [v], s=90, marker="X", color="black", zorder=5)
        ax.annotate(f"seed 004 {name} {v:,.0f}", (b, v), textcoords="offset points",
                    xytext=(6, -10), fontsize=7)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("batch [concurrent sequences]")
    ax.set_ylabel("total (input + output) throughput [token/s]")
    ctx = labels(ds, "context")[0]
    ax.set_title(f"{MODEL} {PREC}, prompt {ctx} + output {int(ds['output_len'])} tokens: model "
                 "lines, seed 004 measurements (X)", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    rep.figure(fig, fig_dir / "seeds_dataflow_vs_gpu.png", "dataflow vs GPU total throughput")


def section_peak(rep, ds: xr.Dataset, fig_dir: Path) -> None:
    sub = ds.sel(model=MODEL, precision=PREC)
    ctx = labels(ds, "context")[0]
    tt = masked(sub, "total_throughput").sel(context=ctx)
    rows, res, caps = [], {}, {}
    for h in present(ds, "hardware", ["a100-sxm-80g", "h100-sxm", "gh200", "mi300x", "cs-3",
                                      "sn40l"]):
        eng = str(ds["engine"].sel(hardware=h).values)
        caps[h] = (eng, resolve(eng, load_device(h)).max_batch)
        d = tt.sel(hardware=h, parallelism=_layout(h))
        b8 = cell(d, batch=8)
        v128, w128 = argbest(d.sel(batch=[b for b in labels(ds, "batch") if b <= 128]))
        res[h] = (b8, v128)
        rows.append([f"`{h}` (`{_layout(h)}`)", str(ds["engine"].sel(hardware=h).values),
                     fnum(b8), f"{fnum(v128)} (batch {w128.get('batch', '-')})"])
    caps_text = ", ".join(f"`{e}` {c:,.0f}" for e, c in dict(caps.values()).items())
    rep.add(f"""
### 4b. Peak throughput at large batch

Seed 004: "Cerebras at a batch size of 8 produces a competitive throughput (12,327 tokens/s)
that outperforms both the NVIDIA A100 and the AMD MI300x, but is still lower than the NVIDIA
H100 at batch size 128. The SambaNova SN40L instead peaks at 3,907 tokens/s." The engines' batch
caps (`max_batch`, docs/engines.md): {caps_text}; seed 004 ran the dataflow systems from
pre-compiled artifacts of batch 1-8 (section IV-C) and the SN40L up to batch 32 (section III-C3),
vLLM up to 128 here. Model, total tokens/s, Llama-3.1-8B bf16, prompt {ctx} +
{int(ds['output_len'])}, the last column at each device's best batch up to 128 within its cap:
""")
    rep.add(table(["device (layout)", "engine", "batch 8", "best batch <= 128"], rows))
    h128 = res.get("h100-sxm", (np.nan,) * 2)[1]
    cs8 = res.get("cs-3", (np.nan,) * 2)[0]
    others = [res[h][1] for h in ("a100-sxm-80g", "mi300x") if h in res]
    cs1 = cell(tt.sel(hardware="cs-3", parallelism="tp1"), batch=1) if "cs-3" in res else np.nan
    tp_cs = masked(sub, "tpot").sel(context=ctx, hardware="cs-3", parallelism="tp1") \
        if "cs-3" in res else None
    cs_eng = resolve("cerebras", load_device("cs-3"))
    cs_bound = BOUND.get(int(cell(sub["bound"].sel(context=ctx), hardware="cs-3", batch=8,
                                  parallelism="tp1")), "?") if "cs-3" in res else "?"
    sn = res.get("sn40l", (np.nan,) * 2)[1]
    ok = finite(h128) and finite(cs8) and h128 > cs8 and all(cs8 > o for o in others)
    rep.summary.setdefault("seed004", {}).update(h100_best_le128=h128, cs3_b8=cs8,
                                                 peak_verdict="agrees" if ok else "disagrees")
    rep.add(f"""
**Verdict: {'agrees' if ok else 'disagrees'}.** In the model CS-3 at batch 8 gives
{fnum(cs8)} total tokens/s (measured 12,327: {verdict_ratio(cs8, SEED4_CS3_B8)}) against the
H100's best up to batch 128, {fnum(h128)}; the seed's order is H100 (batch 128) > CS-3 (batch 8)
> A100, MI300X. The model's CS-3 decode step is fixed costs ({cs_bound}-bound: the layer pipeline
on the wafer plus the `cerebras` engine's {cs_eng.layer_overhead * 1e6:.0f} us per layer x
{load_model(MODEL).n_layers} layers and {cs_eng.iteration_overhead * 1e3:g} ms per iteration):
TPOT {fnum(cell(tp_cs, batch=1) * 1e3, 3)} ms at batch 1, {fnum(cell(tp_cs, batch=8) * 1e3, 3)} ms
at batch 8, so its batch-8 throughput is {fx(cs8 / cs1)} its batch-1 figure, where the measured
one is {fx(SEED4_CS3_B8 / SEED4_B1['cs-3'])}: the prototype engine's step grows with batch in a
way the model does not contain (section 5, row 10). The SN40L's best up to batch 128 in the
model, {fnum(sn)} total tokens/s, is {fx(sn / SEED4_SN40L_PEAK)} the measured peak of
{fnum(SEED4_SN40L_PEAK)} (section 5, row 11, compares batch 1-8).
""")
