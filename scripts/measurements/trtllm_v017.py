"""TensorRT-LLM v0.17 performance overview: output tokens/s of the whole system at maximum load
(trtllm-bench, in-flight batching, all requests issued at once). One tidy row per raw row."""

from __future__ import annotations

import re
from pathlib import Path

from scripts.measurements.common import KV_NOT_STATED, Converted, head_padding_note, num, read_raw
from scripts.measurements.trtllm_pages import MOE_NOTE, trtllm_rows

KEY = "trtllm017"
FILE = "trtllm_v0.17_perf_overview_throughput.csv"
NAME = "TensorRT-LLM v0.17"
RAW_ROWS = 373
ROWS = trtllm_rows(
    KEY,
    FILE,
    "{source} (TensorRT-LLM v0.17 perf overview, throughput tables, {hardware}, {model} "
    "{precision}, TP{tp}, ISL/OSL {input_len}/{output_len})",
)

HARDWARE = {
    "NVIDIA H200 141GB HBM3": ("h200-sxm", ""),
    "NVIDIA H100 80GB HBM3": ("h100-sxm", "H100 80GB HBM3 = the SXM part"),
    "NVIDIA A100-SXM4-80GB": ("a100-sxm-80g", ""),
    "NVIDIA L40S": ("l40s", ""),
    "NVIDIA GH200 480GB": (
        "gh200",
        "GH200 480GB = 96 GB HBM3 + 480 GB LPDDR5X: the catalog's gh200 (96 GB HBM3)",
    ),
}
MODELS = {
    "LLaMA v3.1 8B": "llama-3.1-8b",
    "LLaMA v3.1 70B": "llama-3.1-70b",
    "LLaMA v3.1 405B": "llama-3.1-405b",
    "Mistral 7B": "mistral-7b",
    "Mixtral 8x7B": "mixtral-8x7b",
    "Mixtral 8x22B": "mixtral-8x22b",
}
MOE = {"mixtral-8x7b", "mixtral-8x22b"}
#: the catalog's mistral-7b is v0.1, whose 4096-token sliding window binds beyond this length
MISTRAL_WINDOW = 4096
REQUESTS_RE = re.compile(r"all ([0-9]+) requests")


def precision_of(r: dict[str, str]) -> tuple[str, str]:
    if r["precision"] == "FP8" and r["kv_cache_dtype"].startswith("FP8"):
        return "fp8-kv8", "FP8 weights/activations and, as the page says, an FP8 KV cache -> fp8-kv8"
    if r["precision"] == "FP16" and not r["kv_cache_dtype"]:
        return "fp16", f"FP16 -> fp16; {KV_NOT_STATED}"
    raise KeyError(f"unmapped precision {r['precision']!r}/{r['kv_cache_dtype']!r}")


def convert(path: Path) -> Converted:
    raw = read_raw(path)
    out = []
    for i, r in enumerate(raw, 1):
        hw, hw_note = HARDWARE[r["hardware"]]
        model = MODELS[r["model"]]
        prec, p_note = precision_of(r)
        tp, isl, osl = int(r["tp"]), int(r["input_len"]), int(r["output_len"])
        if int(r["n_devices"]) != tp or r["pp"] != "1":
            raise ValueError(f"{path.name} row {i}: devices != tp")
        skip = []
        notes = [hw_note, p_note, f"tp {tp}, pp 1 on {tp} GPU(s)", head_padding_note(model, tp)]
        if model == "mistral-7b":
            if isl + osl > MISTRAL_WINDOW:
                skip.append("model_version")
                notes.append(
                    "Mistral 7B version not printed; input+output > 4096 tokens, where the catalog "
                    "mistral-7b's (v0.1) sliding window binds and later versions have none"
                )
            else:
                notes.append(
                    "Mistral 7B version not printed; input+output <= 4096 tokens so the catalog "
                    "mistral-7b's sliding window never binds"
                )
        if model in MOE and tp > 1:
            notes.append(MOE_NOTE)
        n_req = REQUESTS_RE.search(r["batch_or_concurrency"]).group(1)
        notes += [
            f"maximum load: all {n_req} requests issued at once, in-flight batching; the engine chose "
            "the batch (not printed)",
            f"source note: {r['notes']}",
        ]
        point = ROWS.point(r, hardware=hw, tp=tp, pp=1, model=model, precision=prec, skip=skip, notes=notes)
        out.append(point.row(i, "throughput", num(r["value"]), load="max_load", context=isl, output_len=osl))
    return Converted.one_each(out, len(raw))
