"""TensorRT-LLM v1.0-era performance overview (PyTorch backend): total output tokens/s of the whole
TP x PP group at maximum load (the engine chose the batch). One tidy row per raw row."""

from __future__ import annotations

from pathlib import Path

from scripts.measurements.common import (
    KV_NOT_STATED,
    Converted,
    catalog_reasons,
    head_padding_note,
    layout_name,
    num,
    read_raw,
    rid,
    row,
    source_file,
)

KEY = "trtllm10"
FILE = "trtllm_perf_overview_v1.0_throughput.csv"
NAME = "TensorRT-LLM v1.0"
RAW_ROWS = 328

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


def convert(path: Path) -> Converted:
    raw = read_raw(path)
    out = []
    for i, r in enumerate(raw, 1):
        hw, model = HARDWARE[r["gpu"]], MODELS[r["model"]]
        prec, p_note = PRECISIONS[r["precision"]]
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
            notes.append(
                "MoE model: expert-parallel degree not printed; layout assumes experts tensor-split (ep = 1)"
            )
        notes += [
            head_padding_note(model, tp),
            "total output tokens/s of the whole group at maximum load; the engine chose the batch "
            "(not printed): compare with the model's best throughput over batches that fit",
        ]
        out.append(
            row(
                id=rid(KEY, i),
                publisher="NVIDIA",
                source_file=source_file(FILE),
                source=f"{r['source']} (TensorRT-LLM {r['trtllm_doc']}, throughput table, {r['gpu']} "
                f"{r['precision']}, {r['model']})",
                hardware=hw,
                hardware_raw=r["gpu"],
                devices=devices,
                tp=tp,
                pp=pp,
                parallelism=layout_name(tp, pp),
                model=model,
                model_raw=r["model"],
                precision=prec,
                engine="trtllm",
                engine_version=r["trtllm_doc"],
                load="max_load",
                batch="max",
                context=int(r["input_len"]),
                output_len=int(r["output_len"]),
                metric="throughput",
                value=num(r["total_output_tokens_per_s"]),
                unit="token/s",
                scope="per_system",
                statistic="max_load",
                skip=catalog_reasons(hw, model),
                notes=notes,
            )
        )
    return Converted(out, len(raw), accounting=f"{len(raw)} raw rows -> {len(out)} tidy rows (one each).")
