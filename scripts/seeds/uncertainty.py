"""Section 7: the catalog estimates and engine fits the claims rest on, seed 002's Table II
against the catalog, and the model's limits for these comparisons."""

from __future__ import annotations

import math

import xarray as xr

from grids.engines import resolve
from grids.hardware import load_device

from .claims import SEED2_T2
from .markdown import fx, qty, table
from .select import labels, present
from .spec import SEED004_ENGINE

DEVICES = ("cs-3", "sn40l", "groq-lpu", "gc200", "tpu-v7", "inferentia2", "gaudi3", "mtia-v2",
           "b200", "mi300x", "a100-sxm-80g", "h100-sxm", "gh200")
KEYS = ("peak_flops", "memory_tiers", "power.tdp")
ENGINE_PARAMS = ("bandwidth", "decode_compute.bf16", "iteration_overhead", "layer_overhead",
                 "request_overhead")


def _origin(text: str) -> str:
    """'fitted' (calibration overlay), 'estimate' or 'sourced', from an origin string."""
    if "(fitted)" in text or "calibration" in text:
        return "fitted"
    return "estimate" if "estimate" in text else "sourced"


def section(rep, cat: xr.Dataset, s4: xr.Dataset) -> None:
    ids = present(cat, "hardware", DEVICES)
    rows = []
    for h in ids:
        d = load_device(h)
        for k, s in d.sources.items():
            if s.estimate and k.startswith(KEYS):
                rows.append([f"`{h}`", f"`{k}`", qty(s.value, k), s.rule])
    rep.add("""
Every catalog number carries a source; some are estimates with a stated rule. The estimated
peak FLOP/s, memory and TDP of the devices the seeds compare:
""")
    rep.add(table(["device", "field", "value", "rule"], rows) if rows else
            "*(no estimated peak/memory/TDP fields among these devices)*")
    erows = []
    for h in ids:
        d = load_device(h)
        engines = ["native"] + ([SEED004_ENGINE[h]] if h in SEED004_ENGINE else [])
        for e in dict.fromkeys(engines):
            p = resolve(e, d)
            if not p.supported:
                continue
            via = f"{e} -> {p.delegate}" if p.delegate and p.delegate != e else e
            cells = [f"{_origin(p.origin.get(k, ''))}" for k in ENGINE_PARAMS]
            erows.append([f"`{h}`", via, f"{d.efficiency.flops_efficiency:.2f} / "
                          f"{d.efficiency.bandwidth_efficiency:.2f} "
                          f"({d.efficiency.origin.get('flops_efficiency', '')})", *cells])
    rep.add("""
Efficiencies: the device's achievable FLOP/s and bandwidth fractions (hardware catalog, mostly
class defaults) and the serving engine's factors and overheads (docs/engines.md), "fitted" where
`sweep calibrate` fitted them to published measurements of other publishers (calibration.toml),
"estimate" where they are rules no measurement has checked. The claims about CS-3, SN40L, Groq,
GC200, Gaudi 3 and the TPUs rest mostly on estimates:
""")
    rep.add(table(["device", "engine", "FLOP/s / bandwidth efficiency", *ENGINE_PARAMS], erows))
    t2 = []
    for h, fields in SEED2_T2.items():
        if h not in labels(cat, "hardware"):
            continue
        d = load_device(h)
        dram, sram = d.tier_of_kind("dram"), d.tier_of_kind("sram")
        catv = {"bf16 peak": d.peak_flops.get("bf16", d.peak_flops.get("fp16")),
                "fp8 peak": d.peak_flops.get("fp8"), "memory": d.device_capacity,
                "DRAM bw": dram.bandwidth if dram else None,
                "SRAM bw": sram.bandwidth if sram else None, "TDP": d.tdp}
        for f, sv in fields.items():
            cv = catv.get(f)
            r = (cv / sv) if cv else math.nan
            t2.append([f"`{h}`", f, qty(sv, f), qty(cv, f), fx(r),
                       "" if math.isfinite(r) and abs(r - 1) <= 0.05 else "differs"])
    rep.add("""
Seed 002 Table II against the catalog (SI units; the catalog keeps dense peaks, and CS-3's
"125 PFLOPS" is a sparse figure; Groq's TDP is 215 W in Table II and "~75 W" in the seed's
Fig. 6; where they disagree the catalog cites its own sources or states its estimate's rule,
table above):
""")
    rep.add(table(["device", "field", "seed 002", "catalog", "catalog / seed", "flag"], t2))
    rep.add("""
Limits of the model that matter here (docs/model.md, docs/validation.md): the serving engines'
costs are a handful of factors and fixed overheads; continuous batching is a steady state (a
closed loop of requests of one mean length, docs/model.md section 13), without preemption or
paged-KV fragmentation; a wafer's layers are pipelined across its regions, but between wafers and
on the other dataflow parts the tensor/pipeline/expert collectives are those of GPUs, with
estimated link parameters; power follows activity with coefficients that are not fitted and the
same for every class (section 9); expert routing is uniform (no measured skew); data parallelism
is exactly linear; and "device" means one package (a GPU, an RDU socket, an LPU chip, a wafer),
which is why every cross-device comparison above names its basis.
""")
