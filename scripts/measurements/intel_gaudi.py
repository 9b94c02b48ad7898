"""Intel Gaudi model-performance pages (Gaudi software 1.18.0, PyTorch 2.4.0), Gaudi 2 and Gaudi 3: LLM
throughput at a fixed batch (tokens/s, whether input tokens count is not stated) and a Gaudi 2
batch-1 "low latency" table (the latency is not defined). One tidy row per raw row; none usable."""

from __future__ import annotations

from pathlib import Path

from scripts.measurements.common import KV_NOT_STATED, Converted, head_padding_note, ms, num, read_raw
from scripts.measurements.row_builder import RowBuilder

KEY = "gaudi"
FILE = "intel_gaudi_model_performance_v1.18.csv"
NAME = "Intel Gaudi"
RAW_ROWS = 46
ROWS = RowBuilder(
    KEY,
    FILE,
    publisher="Intel",
    engine="gaudi",
    printed={
        "source": "{source} ({table}, {accelerator}, {model}, {n_hpu} HPU)",
        "hardware_raw": "{accelerator} ({system})",
        "engine_version": "{software}",
    },
)

HARDWARE = {"Intel Gaudi 3 (HL-325L)": "gaudi3", "Intel Gaudi 2 (HL-225H)": "gaudi2"}
MODELS = {
    "LLaMA 2 7b": "llama-2-7b",
    "LLaMA 2 70b": "llama-2-70b",
    "LLaMA 3.1 8B": "llama-3.1-8b",
    "LLaMA 3.1 -8B": "llama-3.1-8b",
    "LLaMA 3.1 70B": "llama-3.1-70b",
    "Mistral 7b": "mistral-7b",
}
MISTRAL_WINDOW = 4096


def convert(path: Path) -> Converted:
    raw = read_raw(path)
    out = []
    for i, r in enumerate(raw, 1):
        hw = HARDWARE[r["accelerator"]]
        model = MODELS[r["model"]]
        hpus = int(r["n_hpu"])
        if r["precision"] != "fp8":
            raise ValueError(f"{path.name} row {i}: unexpected precision {r['precision']!r}")
        skip = []
        notes = [
            f"fp8 -> fp8 (W8A8 FP8); {KV_NOT_STATED}",
            f"{hpus} HPU(s); parallel degrees not printed: layout assumes tensor parallelism over them "
            "(pp = 1)",
            head_padding_note(model, hpus),
            f"engine: the Intel Gaudi software stack ({r['software']}); whether optimum-habana or the "
            "vLLM fork served the model is not stated",
        ]
        isl = int(r["input_len"])
        osl = int(r["output_len"]) if r["output_len"] else None
        if model == "mistral-7b" and osl and isl + osl > MISTRAL_WINDOW:
            skip.append("model_version")
            notes.append(
                "Mistral 7B version not printed; input+output > 4096 tokens, where the catalog "
                "mistral-7b's (v0.1) sliding window binds and later versions have none"
            )
        if r["throughput_tokens_per_s"]:
            metric, value = "throughput", num(r["throughput_tokens_per_s"])
            skip.append("convention")
            notes.append(
                "the page's 'Throughput (tokens/sec)' does not say whether input tokens count, and the "
                "numbers do not settle it (metric left as throughput); static batch of the printed size"
            )
        else:
            metric, value = "ttft", ms(r["latency_ms"])
            skip.append("latency_definition")
            notes.append(
                f"table '{r['table']}': a batch-1 latency in ms at input {isl}, output length not printed; "
                "the page does not define it (metric left as ttft, its closest reading, not asserted)"
            )
        point = ROWS.point(r, hardware=hw, devices=hpus, model=model, precision="fp8", skip=skip, notes=notes)
        batch = int(r["batch_size"])
        out.append(point.row(i, metric, value, load="static", batch=batch, context=isl, output_len=osl))
    return Converted.one_each(out, len(raw))
