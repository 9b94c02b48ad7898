"""TensorRT-LLM v1.0-era performance overview (PyTorch backend): total output tokens/s of the whole
TP x PP group at maximum load (the engine chose the batch). One tidy row per raw row."""

from __future__ import annotations

from pathlib import Path

from scripts.measurements.common import KV_NOT_STATED, Converted, head_padding_note, num, read_raw
from scripts.measurements.trtllm_pages import FP4_KV8_MODELS, FP4_KV8_NOTE, trtllm_rows

KEY = "trtllm10"
FILE = "trtllm_perf_overview_v1.0_throughput.csv"
NAME = "TensorRT-LLM v1.0"
RAW_ROWS = 328
ROWS = trtllm_rows(
    KEY,
    FILE,
    "{source} (TensorRT-LLM {trtllm_doc}, throughput table, {gpu} {precision}, {model})",
    hardware_raw="{gpu}",
    engine_version="{trtllm_doc}",
)

HARDWARE = {
    "B200 180GB (DGX B200)": "b200",
    "GB200 192GB (GB200 NVL72)": "gb200",
    "H200 SXM 141GB (DGX H200)": "h200-sxm",
    "H100 SXM 80GB (DGX H100)": "h100-sxm",
    "RTX 6000 Pro Blackwell Server Edition": "rtx-pro-6000",
}
MODELS = {
    "Llama 4 Scout": "llama-4-scout",
    "Llama 4 Maverick": "llama-4-maverick",
    "Llama 3.3 70B": "llama-3.3-70b",
    "Llama 3.1 405B": "llama-3.1-405b",
    "Llama 3.1 8B": "llama-3.1-8b",
    "Qwen3-235B-A22B": "qwen3-235b-a22b",
    "Qwen3-30B-A3B": "qwen3-30b-a3b",
}
PRECISIONS = {
    "FP4": ("fp4", f"FP4 -> fp4 (W4A4 NVFP4); {KV_NOT_STATED}"),
    "FP8": ("fp8", f"FP8 -> fp8 (W8A8 FP8); {KV_NOT_STATED}"),
}
MOE = {"llama-4-scout", "llama-4-maverick", "qwen3-235b-a22b", "qwen3-30b-a3b"}
#: the page's "For MoE models" command adds --ep $ep_size (its value not printed) and an
#: llm_options.yml with enable_attention_dp: true; the rows keep the printed TP layout (see the note)
MOE_V10_NOTE = (
    "MoE model: the page ran MoE models with trtllm-bench --ep (size not printed) and "
    "enable_attention_dp: true (attention data-parallel); layout assumes the printed tensor "
    "parallelism with experts tensor-split (ep = 1): read as attention data-parallel with ep = tp "
    "(tp1-ep<tp>) these rows fit worse (docs/validation.md, 'After the decode attention kernel's "
    "KV read rate')")


def convert(path: Path) -> Converted:
    raw = read_raw(path)
    out = []
    for i, r in enumerate(raw, 1):
        hw, model = HARDWARE[r["gpu"]], MODELS[r["model"]]
        prec, p_note = PRECISIONS[r["precision"]]
        if prec == "fp4" and model in FP4_KV8_MODELS:
            prec, p_note = "fp4-kv8", FP4_KV8_NOTE
        tp = int(r["tp"])
        pp = int(r["pp"]) if r["pp"] else None
        notes = [p_note]
        if pp is None:
            devices = tp
            notes.append(
                f"source states TP only (no PP column for this GPU): devices = tp = {tp}; "
                f"layout assumes pp = 1"
            )
        else:
            devices = tp * pp
            notes.append(f"devices = tp x pp = {devices}")
        if r["n_gpus"] and int(r["n_gpus"]) != devices:
            raise ValueError(f"{path.name} row {i}: n_gpus {r['n_gpus']} != tp*pp {devices}")
        if model in MOE and devices > 1:
            notes.append(MOE_V10_NOTE)
        notes += [
            head_padding_note(model, tp),
            "total output tokens/s of the whole group at maximum load; the engine chose the batch "
            "(not printed): compare with the model's best throughput over batches that fit",
        ]
        point = ROWS.point(r, hardware=hw, tp=tp, pp=pp, model=model, precision=prec, notes=notes)
        isl, osl = int(r["input_len"]), int(r["output_len"])
        value = num(r["total_output_tokens_per_s"])
        out.append(point.row(i, "throughput", value, load="max_load", context=isl, output_len=osl))
    return Converted.one_each(out, len(raw))
