"""``microsoft/apex_plus`` serving runs on one 8x H100-SXM-80GB node: Poisson trace replay at 0.25 or
0.5 requests/s, mean TTFT, TPOT and e2e latency per run (one result file = one data-parallel replica
or the whole server). One tidy row per raw row; the batch is the replica's mean concurrency by
Little's law from the run's own mean e2e latency."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

from scripts.measurements.common import (
    Converted,
    fmt,
    head_padding_note,
    layout_name,
    littles_law,
    littles_note,
    mean_tokens,
    read_raw,
)
from scripts.measurements.row_builder import RowBuilder

KEY = "apexplus"
FILE = "apex_plus_h100_serving.csv"
NAME = "APEX+"
RAW_ROWS = 291
ROWS = RowBuilder(
    KEY,
    FILE,
    publisher="Microsoft",
    printed={"source": "{source} (APEX+ serving validation, {batch_or_concurrency})", "engine": "{engine}"},
)

HARDWARE = {"NVIDIA H100-SXM-80GB (8-GPU node)": "h100-sxm"}
MODELS = {
    "meta-llama/Meta-Llama-3.1-70B": "llama-3.1-70b",
    "meta-llama/Llama-3.1-70B-Instruct": "llama-3.1-70b",
    "alpindale/Mistral-Large-Instruct-2407-FP8": "mistral-large-2407",
    "mistralai/Mistral-Large-Instruct-2407": "mistral-large-2407",
    "mistralai/Mixtral-8x22B-Instruct-v0.1": "mixtral-8x22b",
}
#: (precision as printed, kv_cache_dtype) -> (scheme, note)
PRECISIONS = {
    ("auto (no --dtype/--quantization flag; checkpoint default)", "auto"): (
        "bf16",
        "no --dtype/--quantization flag: the checkpoint's bfloat16 (config.json torch_dtype); "
        "kv_cache_dtype auto = the model dtype -> bf16",
    ),
    ("auto (no quantization flag; checkpoint default)", "auto"): (
        "bf16",
        "no quantization flag: the checkpoint's bfloat16 (config.json torch_dtype); KV cache in the "
        "model dtype -> bf16",
    ),
    ("fp8 (pre-quantized FP8 checkpoint)", "fp8"): (
        "fp8-kv8",
        "pre-quantized FP8 checkpoint (W8A8 FP8) with kv_cache_dtype fp8 -> fp8-kv8",
    ),
    ("fp8 (vLLM --quantization fp8, online quantization of the bf16 checkpoint)", "fp8"): (
        "fp8-kv8",
        "vLLM --quantization fp8 (dynamic W8A8 FP8) with kv_cache_dtype fp8 -> fp8-kv8",
    ),
}
METRICS = {"ttft_s": "ttft", "tpot_s": "tpot", "e2e_latency_s": "e2e_latency"}
METRIC_NOTES = {
    "ttft": "mean TTFT over the replica's requests (vLLM's metric includes queueing; at these low rates "
    "the queue is short)",
    "tpot": "token-weighted mean inter-token time (denominator includes first tokens, so slightly below "
    "the per-request TPOT)",
    "e2e_latency": "mean e2e latency over the replica's requests",
}
RATE_RE = re.compile(r"Poisson arrivals ([0-9.]+) req/s")
SPLIT_RE = re.compile(r"round-robin 1/([0-9]+) split")


def convert(path: Path) -> Converted:
    raw = read_raw(path)
    runs: dict[str, list[tuple[int, dict[str, str]]]] = {}
    for i, r in enumerate(raw, 1):
        runs.setdefault(r["source"], []).append((i, r))
    out = []
    for _src, members in runs.items():
        by_metric = {METRICS[r["metric"]]: (i, r) for i, r in members}
        if len(by_metric) != len(members) or "e2e_latency" not in by_metric:
            raise ValueError(f"{path.name}: run {_src} has metrics {[r['metric'] for _, r in members]}")
        e2e_i, e2e_r = by_metric["e2e_latency"]
        for i, r in members:
            hw = HARDWARE[r["hardware"]]
            model = MODELS[r["model"]]
            prec, p_note = PRECISIONS[(r["precision"], r["kv_cache_dtype"])]
            metric = METRICS[r["metric"]]
            tp = int(r["tp"])
            dp = int(r["dp"]) if r["dp"] else 1
            ep = int(r["ep"]) if r["ep"] else None
            split = SPLIT_RE.search(r["batch_or_concurrency"])
            if (int(split.group(1)) if split else 1) != dp or int(r["n_devices"]) != tp:
                raise ValueError(f"{path.name} row {i}: replica split and dp disagree")
            rate = Decimal(RATE_RE.search(r["batch_or_concurrency"]).group(1))
            e2e = Decimal(e2e_r["value"])
            batch = littles_law(rate, e2e, dp)
            skip = []
            notes = [
                p_note,
                METRIC_NOTES[metric],
                f"input/output = mean tokens per request {r['input_len']} / {r['output_len']}, rounded",
                littles_note(rate, e2e, dp, batch, f"from row {ROWS.row_id(e2e_i)} (this run's mean e2e)"),
                f"request_rate = the trace's {fmt(rate)} req/s for the whole deployment",
            ]
            if ep:
                skip.append("layout")
                layout = ""
                notes.append(
                    f"SGLang --enable-ep-moe --ep {ep} with tp {tp} on the same {tp} GPUs: attention "
                    "tensor-parallel, experts expert-parallel"
                )
            else:
                layout = layout_name(tp, 1, None, dp)
                notes.append(
                    f"{dp} data-parallel replica(s) of tp {tp} on the node ({tp * dp} GPUs); values "
                    "are this replica's (n_devices printed per replica)"
                    if dp > 1
                    else f"one server of tp {tp} ({tp} GPUs)"
                )
            notes += [head_padding_note(model, tp), f"source note: {r['notes']}"]
            out.append(
                ROWS.row(
                    i,
                    metric,
                    fmt(Decimal(r["value"])),
                    raw=r,
                    hardware=hw,
                    devices=tp * dp,
                    tp=tp,
                    pp=r["pp"] or None,
                    ep=ep,
                    dp=dp if r["dp"] else None,
                    parallelism=layout,
                    model=model,
                    precision=prec,
                    load="online",
                    batch=batch,
                    request_rate=fmt(rate),
                    context=mean_tokens(r["input_len"]),
                    output_len=mean_tokens(r["output_len"]),
                    statistic="mean",
                    skip=skip,
                    notes=notes,
                )
            )
    out.sort(key=lambda x: x["id"])
    return Converted(
        out,
        len(raw),
        accounting=(
            f"{len(raw)} raw rows -> {len(out)} tidy rows (one each; the batch of every row of a run comes "
            "from that run's e2e row)."
        ),
    )
