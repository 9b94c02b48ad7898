"""AMD ROCm performance-results pages (five ``rocm/vllm`` container releases, 8x MI300X TP8) and an Oracle
cloud blog (MI300X x8, Llama-3.1-405B FP8). AMD: maximum-load throughput (convention not stated) and
static-batch latency. Oracle: a batch-latency sweep (average latency and output tokens/s of the same
run: two tidy rows per raw row) and two maximum-load output-throughput points."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from scripts.measurements.common import KV_NOT_STATED, Converted, fmt, num, read_raw
from scripts.measurements.row_builder import RowBuilder

KEY = "amdmi300x"
FILE = "amd_mi300x_published_vllm_results.csv"
NAME = "AMD / Oracle MI300X (vLLM)"
RAW_ROWS = 59

ROWS = RowBuilder(
    KEY,
    FILE,
    engine="vllm",
    printed={"hardware_raw": "{accelerator} ({system})", "engine_version": "{software}"},
)
PUBLISHERS = {"AMD": "AMD", "Oracle (OCI)": "Oracle"}
MODELS = {
    "Llama 3.1 70B (amd/Llama-3.1-70B-Instruct-FP8-KV)": "llama-3.1-70b",
    "Llama 3.1 405B (amd/Llama-3.1-405B-Instruct-FP8-KV)": "llama-3.1-405b",
    "Llama 3.1 405B FP8": "llama-3.1-405b",
}


def convert(path: Path) -> Converted:
    raw = read_raw(path)
    out = []
    for i, r in enumerate(raw, 1):
        if r["accelerator"] != "AMD Instinct MI300X" or r["n_gpus"] != "8" or r["precision"] != "FP8":
            raise ValueError(f"{path.name} row {i}: unexpected hardware or precision")
        hw, model, publisher = "mi300x", MODELS[r["model"]], PUBLISHERS[r["publisher"]]
        isl, osl = int(r["input_len"]), int(r["output_len"])
        if "FP8-KV" in r["model"]:
            prec = "fp8-kv8"
            notes = ["FP8-KV checkpoint (FP8 weights, activations and KV-cache scales) -> fp8-kv8"]
        else:
            prec = "fp8"
            notes = [f"FP8 -> fp8 (W8A8 FP8); checkpoint not named; {KV_NOT_STATED}"]
        if r["tp"]:
            notes.append(f"tp {r['tp']} on the 8 GPUs")
        else:
            notes.append(
                "one vLLM instance on all 8 GPUs ('single instance ... all eight GPUs'); the parallel "
                "degrees are not printed: layout assumes tensor parallelism over the 8 (pp = 1)"
            )
        if publisher != "AMD":
            notes.append(f"engine version not printed (script {r['software']})")
        point = ROWS.point(
            r,
            publisher=publisher,
            hardware=hw,
            devices=8,
            tp=r["tp"] or None,
            model=model,
            precision=prec,
            engine_version=None if publisher == "AMD" else "",
            context=isl,
            output_len=osl,
            notes=notes,
        )
        src = f"{r['source']} ({r['software']}, {r['scenario']}, {r['model']}, ISL/OSL {isl}/{osl}"
        if publisher == "AMD" and r["throughput_tokens_per_s"]:
            cap = int(r["max_num_seqs"])
            run = point.point(source=f"{src}, {r['num_prompts']} prompts)", load="max_load", batch_cap=cap)
            load_note = (
                f"client fed {r['num_prompts']} prompts at an infinite rate, max_num_seqs {cap}: maximum "
                "load, batch_cap = max_num_seqs"
            )
            convention_note = (
                "the page's 'Throughput (tokens/s)' does not say whether input tokens count, and the "
                "numbers do not settle it (metric left as throughput)"
            )
            value = num(r["throughput_tokens_per_s"])
            out.append(run.row(i, "throughput", value, skip="convention", notes=[load_note, convention_note]))
        elif publisher == "AMD":
            batch = int(r["batch_size"])
            run = point.point(source=f"{src}, batch {batch})", load="static", batch=batch)
            static_note = (
                "latency of one static batch, from receiving the input to the last output token (the "
                "page's definition); mean or median not stated"
            )
            out.append(run.row(i, "e2e_latency", num(r["latency_s"]), notes=static_note))
        elif r["latency_s"]:
            batch = int(r["batch_size"])
            lat, tps = Decimal(num(r["latency_s"])), Decimal(num(r["output_tokens_per_s"]))
            run = point.point(source=src + f", batch {batch})", load="static", batch=batch)
            latency_note = (
                "benchmark_latency.py: average latency of one static batch (the blog's 'Average "
                "latency in seconds')"
            )
            tps_note = (
                f"'Output throughput in TPS' = batch x output / latency = {batch} x {osl} / {fmt(lat)} = "
                f"{batch * osl / lat:.1f}: the latency row {ROWS.row_id(i, suffix='e2e')} is kept"
            )
            out.append(
                run.row(i, "e2e_latency", fmt(lat), suffix="e2e", statistic="mean", notes=[latency_note])
            )
            out.append(
                run.row(i, "throughput", fmt(tps), suffix="throughput", skip=["repeat"], notes=[tps_note])
            )
        else:
            offline_note = (
                "offline benchmark_throughput.py: all prompts at once (maximum load; number of prompts and "
                "max_num_seqs not printed); the blog's column is 'Output throughput in TPS'"
            )
            out.append(
                point.row(
                    i,
                    "throughput",
                    num(r["output_tokens_per_s"]),
                    source=src + ")",
                    load="max_load",
                    notes=offline_note,
                )
            )
    return Converted(
        out,
        len(raw),
        accounting=(
            f"{len(raw)} raw rows -> {len(out)} tidy rows: one per AMD row and per Oracle throughput point, "
            "two per Oracle latency-sweep row (average latency and output tokens/s of the same run)."
        ),
    )
