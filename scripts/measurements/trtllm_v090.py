"""NVIDIA TensorRT-LLM v0.9.0 performance overview: per-GPU output tokens/s of static batches
("Peak Throughput") and batch-1 first-token latency ("Low Latency"). One tidy row per raw row."""

from __future__ import annotations

from pathlib import Path

from scripts.measurements.common import KV_NOT_STATED, Converted, head_padding_note, ms, num, read_raw
from scripts.measurements.trtllm_pages import trtllm_rows

KEY = "trtllm090"
FILE = "trtllm_perf_overview_v0.9.0.csv"
NAME = "TensorRT-LLM v0.9.0"
RAW_ROWS = 126
ROWS = trtllm_rows(
    KEY,
    FILE,
    "{source} (TensorRT-LLM v{trtllm_version} perf overview, table '{table}', {gpu} {precision})",
    hardware_raw="{gpu}",
    engine_version="{trtllm_version}",
)

HARDWARE = {
    "H200": ("h200-sxm", "source prints 'H200' only; mapped to the catalog's H200 SXM 141 GB"),
    "H100": ("h100-sxm", "source prints 'H100' only; mapped to the catalog's H100 SXM 80 GB"),
    "A100": (
        "a100-sxm-80g",
        "source prints 'A100' only (no form factor/memory); mapped to the catalog's A100 SXM 80 GB",
    ),
    "L40S": ("l40s", ""),
}
MODELS = {
    "GPT-J 6B": ("gpt-j-6b", ""),
    "Mistral 7B": (
        "mistral-7b",
        "version not printed; input+output <= 4096 tokens so the catalog "
        "mistral-7b's 4096-token sliding window never binds",
    ),
    "LLaMA 7B": ("llama-2-7b", "'LLaMA 7B' is Llama-2-7B (measurements README)"),
    "LLaMA 70B": ("llama-2-70b", "'LLaMA 70B' is Llama-2-70B (measurements README)"),
    "Falcon 180B": ("falcon-180b", ""),
    "Mixtral 8x7B": ("mixtral-8x7b", ""),
}
PRECISIONS = {
    "FP8": ("fp8", f"FP8 -> fp8 (W8A8 FP8); {KV_NOT_STATED}"),
    "FP16": ("fp16", f"FP16 -> fp16; {KV_NOT_STATED}"),
}


def convert(path: Path) -> Converted:
    raw = read_raw(path)
    out = []
    for i, r in enumerate(raw, 1):
        hw, hw_note = HARDWARE[r["gpu"]]
        model, m_note = MODELS[r["model"]]
        prec, p_note = PRECISIONS[r["precision"]]
        tp = int(r["tp"])
        notes = [
            hw_note,
            m_note,
            p_note,
            f"source states TP only (no PP/DP column): devices = tp = {tp}; layout assumes pp = 1",
            head_padding_note(model, tp),
        ]
        batch = int(r["batch_size"])
        if r["table"] == "Peak Throughput":
            metric, value, scope = "throughput", num(r["output_tokens_per_s_per_gpu"]), "per_device"
            out_len = r["output_len"]
            notes.append(
                "output tokens/s per GPU (compare with throughput_per_device); static batching "
                "at the printed batch"
            )
        else:
            metric, value, scope, out_len = "ttft", ms(r["first_token_latency_ms"]), "per_system", ""
            if batch != 1:
                raise ValueError(f"{path.name} row {i}: Low Latency row with batch {batch}")
            notes.append(
                "batch-1 first-token latency (printed in ms); output length not printed "
                "(does not affect TTFT)"
            )
        point = ROWS.point(r, hardware=hw, tp=tp, model=model, precision=prec, notes=notes)
        context = int(r["input_len"])
        out.append(
            point.row(
                i, metric, value, load="static", batch=batch, context=context, output_len=out_len, scope=scope
            )
        )
    return Converted.one_each(out, len(raw))
