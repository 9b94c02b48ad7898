"""Seed 004 (Brunetta et al., "Beyond Throughput: Performance and Energy Insights of LLM Inference
Across AI Accelerators"): the numbers stated in the text, transcribed in ``inputs/seed004.csv`` (one
row per value, with its section and a verbatim quote). One tidy row per transcribed value; none is
usable (the prompt/output lengths are a distribution whose mean the paper does not state)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from scripts.measurements.common import Converted, fmt, layout_name, num, read_raw
from scripts.measurements.row_builder import RowBuilder

KEY = "seed004"
FILE = "seed004.csv"
NAME = "seed 004"
RAW_ROWS = 57

PAPER = (
    'Brunetta et al., "Beyond Throughput: Performance and Energy Insights of LLM Inference Across '
    'AI Accelerators" (seed 004)'
)
COMMON = (
    "vLLM (GPUs), MLSysChat1M first 1,000 conversations with output length forced to the reference "
    "reply: lengths are a distribution whose mean is not stated; throughput counts input+output tokens"
)

#: name as printed -> (catalog ids, engine, engine version) (Table I: vLLM 0.9.0 on NVIDIA, 0.9.1 on AMD)
HARDWARE = {
    "NVIDIA A100": ("a100-sxm-80g", "vllm", "0.9.0"),  # Table I: 80 GB HBM2e, 400 W (DGX) = SXM 80 GB
    "NVIDIA H100": ("h100-sxm", "vllm", "0.9.0"),  # Table I: 80 GB HBM3, 700 W = SXM
    "AMD MI300X": ("mi300x", "vllm", "0.9.1"),
    "Cerebras CS3": ("cs-3", "cerebras", ""),
    "SambaNova SN40L": ("sn40l", "sambaflow", ""),
    "NVIDIA Hopper GPUs (H100, GH200)": ("h100-sxm;gh200", "vllm", "0.9.0"),
    "NVIDIA A100, NVIDIA H100, AMD MI300X nodes": ("a100-sxm-80g;h100-sxm;mi300x", "vllm", ""),
    "Cerebras CS3 vs NVIDIA A100": ("cs-3;a100-sxm-80g", "cerebras;vllm", ""),
    "SambaNova SN40L vs NVIDIA A100": ("sn40l;a100-sxm-80g", "sambaflow;vllm", ""),
    "dataflow accelerators vs GPUs": ("cs-3;sn40l;a100-sxm-80g", "cerebras;sambaflow;vllm", ""),
}
ENGINE_NOTES = {
    "cerebras": "early-prototype Cerebras inference engine behind an OpenAI-style API (Sec. III-C3)",
    "sambaflow": "SambaNova SambaStudio stack (Sec. III-C3)",
}
MODELS = {
    "": "",
    "Llama 3.1 8B": "llama-3.1-8b",
    "Llama 3.3 70B": "llama-3.3-70b",
    "Llama 3.1 8B, Qwen3 14B, Mistral Small 3.1 24B, Qwen3 32B (Fig. 3)": (
        "llama-3.1-8b;qwen3-14b;mistral-small-3.1-24b;qwen3-32b"
    ),
    "ten LLMs of Table II (Fig. 4; the ten are not listed)": "",
    "Qwen3 235B A22B": "qwen3-235b-a22b",
    "Mixtral 8x22B": "mixtral-8x22b",
    "Llama 4 Scout vs Llama 3 70B": "llama-4-scout;llama-3.3-70b",
    "Llama4 Scout": "llama-4-scout",
    "Mistral Small 24B": "mistral-small-3.1-24b",
}
PRECISIONS = {
    "bfloat16": ("bf16", "bf16 stated; KV dtype not stated"),
    "default": (
        "bf16",
        "precision not restated for this value: bf16 is the paper's default; KV dtype not stated",
    ),
    "not stated": ("", "precision not stated"),
    "FP8": ("fp8", "FP8 = W8A8 on FP8-capable GPUs; KV dtype not stated"),
    "FP8 (W8A8) vs bfloat16": ("fp8;bf16", "FP8 = W8A8; KV dtype not stated"),
}
LAYOUTS = {"": "", "TP2 vs TP1": "tp2;tp1", "TP4 vs TP1": "tp4;tp1", "TP4 vs EP4": "tp4;tp1-ep4"}
UNITS = {"tokens/s": "token/s", "tokens/J": "token/J", "W": "W", "ms": "s", "ratio": "1"}
#: hardware/model/precision may list several ids (relative claims): no catalog check of the cells
ROWS = RowBuilder(
    KEY,
    FILE,
    catalog_check=False,
    publisher="Brunetta et al.",
    printed={"source": PAPER + ', Sec. {section}: "{quote}"'},
)


def convert(path: Path) -> Converted:
    raw = read_raw(path)
    out = []
    for n, r in enumerate(raw, 1):
        if int(r["row"]) != n:
            raise ValueError(f"{path.name}: row numbers must run 1, 2, ... (row {n} is {r['row']!r})")
        hw, engine, version = HARDWARE[r["hardware"]]
        model = MODELS[r["model"]]
        prec, p_note = PRECISIONS[r["precision"]]
        value = Decimal(num(r["value"]))
        if r["unit"] == "ms":
            value /= 1000
        notes = [
            r["reading"] if r["kind"] == "absolute" else f"value = {r['reading']}",
            *(ENGINE_NOTES[e] for e in engine.split(";") if e in ENGINE_NOTES),
        ]
        if r["kind"] == "absolute":
            skip = ["lengths"]
            if not r["devices"]:
                skip.append("devices")
            if not r["batch"]:
                skip.append("batch")
            if not model:
                skip.append("model_unstated")
            notes.append(p_note)
            tp = int(r["tp"]) if r["tp"] else None
            dp = int(r["dp"]) if r["dp"] else None
            layout = layout_name(tp, None, None, dp) if tp else ""
        elif r["kind"] == "relative":
            skip, tp, dp, layout = ["relative"], None, None, LAYOUTS[r["layout"]]
        else:
            raise ValueError(f"{path.name} row {n}: kind {r['kind']!r}")
        if r["batch"] == "max":
            load = "max_load"
            notes.append(
                "vLLM processes the whole dataset as one batch workload with the maximum batch "
                "set to 128 x T (Sec. III-C, Fig. 4): batch_cap; the concurrency reached is not stated"
            )
        elif r["batch"]:
            load = "static"
        else:
            load = ""
        notes.append(COMMON)
        out.append(
            ROWS.row(
                n,
                r["metric"],
                fmt(value),
                raw=r,
                hardware=hw,
                devices=r["devices"],
                tp=tp,
                dp=dp,
                parallelism=layout,
                model=model,
                precision=prec,
                engine=engine,
                engine_version=version,
                load=load,
                batch=r["batch"],
                batch_cap=r["batch_cap"],
                unit=UNITS[r["unit"]],
                scope=r["scope"],
                statistic=r["statistic"],
                skip=skip,
                notes=notes,
            )
        )
    return Converted(
        out, len(raw), accounting=f"{len(raw)} transcribed values -> {len(out)} tidy rows (one each)."
    )
