"""AMD ROCm performance-results pages (five ``rocm/vllm`` container releases, 8x MI300X TP8) and an Oracle
cloud blog (MI300X x8, Llama-3.1-405B FP8). AMD: maximum-load throughput (convention not stated) and
static-batch latency. Oracle: a batch-latency sweep (average latency and output tokens/s of the same
run: two tidy rows per raw row) and two maximum-load output-throughput points."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from scripts.measurements.common import (
    KV_NOT_STATED,
    Converted,
    catalog_reasons,
    fmt,
    layout_name,
    num,
    read_raw,
    rid,
    row,
    source_file,
)

KEY = "amdmi300x"
FILE = "amd_mi300x_published_vllm_results.csv"
NAME = "AMD / Oracle MI300X (vLLM)"
RAW_ROWS = 59

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
        skip = catalog_reasons(hw, model)
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
        common = dict(  # noqa: C408 (column names as keywords)
            publisher=publisher,
            source_file=source_file(FILE),
            hardware=hw,
            hardware_raw=f"{r['accelerator']} ({r['system']})",
            devices=8,
            tp=r["tp"] or None,
            parallelism=layout_name(8),
            model=model,
            model_raw=r["model"],
            precision=prec,
            engine="vllm",
            context=isl,
            output_len=osl,
            scope="per_system",
        )
        src = f"{r['source']} ({r['software']}, {r['scenario']}, {r['model']}, ISL/OSL {isl}/{osl}"
        if publisher == "AMD":
            common["engine_version"] = r["software"]
            if r["throughput_tokens_per_s"]:
                out.append(
                    row(
                        id=rid(KEY, i),
                        source=src + f", {r['num_prompts']} prompts)",
                        **common,
                        load="max_load",
                        batch="max",
                        batch_cap=int(r["max_num_seqs"]),
                        metric="throughput",
                        value=num(r["throughput_tokens_per_s"]),
                        unit="token/s",
                        statistic="max_load",
                        skip=[*skip, "convention"],
                        notes=[
                            *notes,
                            f"client fed {r['num_prompts']} prompts at an infinite rate, max_num_seqs "
                            f"{r['max_num_seqs']}: maximum load, batch_cap = max_num_seqs",
                            "the page's 'Throughput (tokens/s)' does not say whether input tokens count, and "
                            "the numbers do not settle it (metric left as throughput)",
                        ],
                    )
                )
            else:
                out.append(
                    row(
                        id=rid(KEY, i),
                        source=src + f", batch {r['batch_size']})",
                        **common,
                        load="static",
                        batch=int(r["batch_size"]),
                        metric="e2e_latency",
                        value=num(r["latency_s"]),
                        unit="s",
                        statistic="as_published",
                        skip=skip,
                        notes=[
                            *notes,
                            "latency of one static batch, from receiving the input to the last output "
                            "token (the page's definition); mean or median not stated",
                        ],
                    )
                )
            continue
        common["engine_version"] = ""
        notes.append(f"engine version not printed (script {r['software']})")
        if r["latency_s"]:
            batch = int(r["batch_size"])
            lat, tps = Decimal(num(r["latency_s"])), Decimal(num(r["output_tokens_per_s"]))
            src += f", batch {batch})"
            out.append(
                row(
                    id=rid(KEY, i, suffix="e2e"),
                    source=src,
                    **common,
                    load="static",
                    batch=batch,
                    metric="e2e_latency",
                    value=fmt(lat),
                    unit="s",
                    statistic="mean",
                    skip=skip,
                    notes=[
                        *notes,
                        "benchmark_latency.py: average latency of one static batch (the blog's 'Average "
                        "latency in seconds')",
                    ],
                )
            )
            out.append(
                row(
                    id=rid(KEY, i, suffix="throughput"),
                    source=src,
                    **common,
                    load="static",
                    batch=batch,
                    metric="throughput",
                    value=fmt(tps),
                    unit="token/s",
                    statistic="as_published",
                    skip=[*skip, "repeat"],
                    notes=[
                        *notes,
                        f"'Output throughput in TPS' = batch x output / latency = {batch} x {osl} / "
                        f"{fmt(lat)} = {batch * osl / lat:.1f}: the latency row "
                        f"{rid(KEY, i, suffix='e2e')} is kept",
                    ],
                )
            )
        else:
            out.append(
                row(
                    id=rid(KEY, i),
                    source=src + ")",
                    **common,
                    load="max_load",
                    batch="max",
                    metric="throughput",
                    value=num(r["output_tokens_per_s"]),
                    unit="token/s",
                    statistic="max_load",
                    skip=skip,
                    notes=[
                        *notes,
                        "offline benchmark_throughput.py: all prompts at once (maximum load; number of "
                        "prompts and max_num_seqs not printed); the blog's column is 'Output throughput "
                        "in TPS'",
                    ],
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
