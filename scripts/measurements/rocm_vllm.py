"""AMD's vLLM development-container notes (ROCm 6.3.1, vLLM 0.7.3), MI300X TP8, Llama-3.1 70B/405B in
FP8 with an FP8 KV cache: e2e latency of one static batch, and offline throughput at maximum load
(whose convention, input tokens counted or not, the page does not state). One tidy row per raw row."""

from __future__ import annotations

import re
from pathlib import Path

from scripts.measurements.common import Converted, num, read_raw
from scripts.measurements.row_builder import RowBuilder

KEY = "rocmvllm"
FILE = "rocm_vllm_mi300x_dev_docker.csv"
NAME = "ROCm vLLM MI300X (dev docker)"
RAW_ROWS = 40
ROWS = RowBuilder(
    KEY,
    FILE,
    publisher="AMD",
    engine="vllm",
    printed={
        "source": "{source} (ROCm vLLM dev-docker README, MI300X, {model}, {batch_or_concurrency}, "
        "ISL/OSL {input_len}/{output_len})"
    },
)

MODELS = {
    "amd/Llama-3.1-70B-Instruct-FP8-KV": ("llama-3.1-70b", ""),
    "amd/Llama-3.1-405B-Instruct-FP8-KV": ("llama-3.1-405b", ""),
    "Llama 3.1 405B (amd/Llama-3.1-70B-Instruct-FP8-KV)": (
        "llama-3.1-405b",
        "printed 'Llama 3.1 405B (amd/Llama-3.1-70B-Instruct-FP8-KV)': the Hugging Face id "
        "contradicts the label; read as 405B from the row label and the doc's command "
        "(amd/Llama-3.1-405B-Instruct-FP8-KV)",
    ),
}
SEQS_RE = re.compile(r"max_num_seqs=([0-9]+)")
PROMPTS_RE = re.compile(r"num_prompts=([0-9]+)")


def convert(path: Path) -> Converted:
    raw = read_raw(path)
    out = []
    for i, r in enumerate(raw, 1):
        if r["hardware"] != "AMD Instinct MI300X" or r["tp"] != "8" or r["kv_cache_dtype"] != "fp8":
            raise ValueError(f"{path.name} row {i}: unexpected hardware, layout or KV dtype")
        hw = "mi300x"
        model, m_note = MODELS[r["model"]]
        skip = []
        notes = [
            m_note,
            f"printed '{r['precision']}' with kv_cache_dtype fp8 -> fp8-kv8",
            "tp 8, pp 1 on the 8 GPUs of the node",
            f"source note: {r['notes']}",
        ]
        if r["metric"] == "e2e_latency_s":
            load, batch, cap = "static", int(r["batch_or_concurrency"]), None
            metric, statistic = "e2e_latency", "mean"
            notes.insert(
                0,
                "benchmark_latency.py: one static batch of the printed size, prefill plus all "
                "output tokens, mean of 5 iterations",
            )
        elif r["metric"] == "throughput_tokens_per_s_unspecified":
            load, batch = "max_load", None
            cap = int(SEQS_RE.search(r["batch_or_concurrency"]).group(1))
            metric, statistic = "throughput", "max_load"
            skip.append("convention")
            notes.insert(
                0,
                f"offline benchmark_throughput.py with "
                f"{PROMPTS_RE.search(r['batch_or_concurrency']).group(1)} prompts at once, "
                f"max_num_seqs {cap}; the page's 'Throughput (tokens/s)' does not say whether input "
                "tokens count, and the numbers do not settle it (metric left as throughput)",
            )
        else:
            raise KeyError(f"unmapped metric {r['metric']!r}")
        point = ROWS.point(
            r, hardware=hw, tp=8, pp=1, model=model, precision="fp8-kv8", skip=skip, notes=notes
        )
        isl, osl = int(r["input_len"]), int(r["output_len"])
        value = num(r["value"])
        out.append(
            point.row(
                i,
                metric,
                value,
                load=load,
                batch=batch,
                batch_cap=cap,
                context=isl,
                output_len=osl,
                statistic=statistic,
            )
        )
    return Converted.one_each(out, len(raw))
