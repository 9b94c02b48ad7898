"""TensorRT-LLM v0.20 performance overview (PyTorch backend, trtllm-bench): output tokens/s of the whole
TP group at maximum load. Read from a fork of the NVIDIA repository that holds the v0.20 page. One
tidy row per raw row."""

from __future__ import annotations

from pathlib import Path

from scripts.measurements.common import KV_NOT_STATED, Converted, head_padding_note, num, read_raw
from scripts.measurements.trtllm_pages import FP4_KV8_MODELS, FP4_KV8_NOTE, MOE_NOTE, trtllm_rows

KEY = "trtllm020"
FILE = "trtllm_v0.20_perf_overview_throughput.csv"
NAME = "TensorRT-LLM v0.20"
RAW_ROWS = 180
ROWS = trtllm_rows(
    KEY,
    FILE,
    "{source} (TensorRT-LLM v0.20 perf overview, {hardware}, {model}, TP{tp}, "
    "ISL/OSL {input_len}/{output_len})",
)

HARDWARE = {
    "NVIDIA B200": ("b200", ""),
    "NVIDIA H200 141GB HBM3": ("h200-sxm", ""),
    "NVIDIA H100 80GB HBM3": ("h100-sxm", "H100 80GB HBM3 = the SXM part"),
}
#: quantised checkpoints map to the base model id + the precision
MODELS = {
    "nvidia/Llama-3.3-70B-Instruct-FP8": "llama-3.3-70b",
    "nvidia/Llama-3.3-70B-Instruct-FP4": "llama-3.3-70b",
    "nvidia/Llama-3.1-405B-Instruct-FP4": "llama-3.1-405b",
    "nvidia/Llama-3.1-8B-Instruct-FP8": "llama-3.1-8b",
    "nvidia/Llama-3.1-405B-Instruct-FP8": "llama-3.1-405b",
    "nvidia/Llama-4-Maverick-17B-128E-Instruct-FP8": "llama-4-maverick",
}
PRECISIONS = {
    "FP8": ("fp8", f"FP8 checkpoint -> fp8 (W8A8 FP8); {KV_NOT_STATED}"),
    "FP4": ("fp4", f"FP4 checkpoint -> fp4 (W4A4 NVFP4); {KV_NOT_STATED}"),
}
MOE = {"llama-4-maverick"}


def convert(path: Path) -> Converted:
    raw = read_raw(path)
    out = []
    for i, r in enumerate(raw, 1):
        hw, hw_note = HARDWARE[r["hardware"]]
        model = MODELS[r["model"]]
        prec, p_note = PRECISIONS[r["precision"]]
        if prec == "fp4" and model in FP4_KV8_MODELS:
            prec, p_note = "fp4-kv8", FP4_KV8_NOTE
        tp, isl, osl = int(r["tp"]), int(r["input_len"]), int(r["output_len"])
        if int(r["n_devices"]) != tp or r["pp"] != "1" or r["kv_cache_dtype"]:
            raise ValueError(f"{path.name} row {i}: unexpected layout or KV dtype")
        notes = [hw_note, p_note, f"tp {tp}, pp 1 on {tp} GPU(s)", head_padding_note(model, tp)]
        if model in MOE and tp > 1:
            notes.append(MOE_NOTE)
        notes += [
            f"{r['batch_or_concurrency']}: the engine chose the batch (not printed)",
            f"source note: {r['notes']}",
        ]
        point = ROWS.point(r, hardware=hw, tp=tp, pp=1, model=model, precision=prec, notes=notes)
        out.append(point.row(i, "throughput", num(r["value"]), load="max_load", context=isl, output_len=osl))
    return Converted.one_each(out, len(raw))
