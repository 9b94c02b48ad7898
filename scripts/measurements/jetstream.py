"""``AI-Hypercomputer/jetstream-pytorch`` ``benchmarks/summary.md``: throughput of JetStream-PyTorch on TPU
v5e (ShareGPT workload, 1024/1024 token caps, decode-slot batch sizes). One tidy row per raw row; none
usable (lengths are caps of a distribution, the throughput convention is not stated)."""

from __future__ import annotations

from pathlib import Path

from scripts.measurements.common import Converted, layout_name, num, read_raw
from scripts.measurements.row_builder import RowBuilder

KEY = "jetstream"
FILE = "jetstream_pytorch_tpu_v5e_summary.csv"
NAME = "JetStream TPU v5e"
RAW_ROWS = 14
ROWS = RowBuilder(
    KEY,
    FILE,
    publisher="Google",
    engine="jetstream",
    printed={"source": "{source} (JetStream-PyTorch benchmark summary, {model}, {precision})"},
)

MODELS = {
    "Llama 3 - 8B": "llama-3-8b",
    "Llama 2 - 7B": "llama-2-7b",
    "Llama 2 - 13B": "llama-2-13b",
    "Gemma - 7B": "gemma-7b",
    "Gemma - 2B": "gemma-2b",
}


def convert(path: Path) -> Converted:
    raw = read_raw(path)
    out = []
    for i, r in enumerate(raw, 1):
        if r["hardware"] != "TPU v5e" or r["metric"] != "throughput_tokens_per_s_unspecified":
            raise ValueError(f"{path.name} row {i}: unexpected hardware or metric")
        hw, model = "tpu-v5e", MODELS[r["model"]]
        chips = int(r["n_devices"])
        skip = ["lengths", "convention", "batch"]
        notes = []
        if r["precision"] == "bfloat16":
            prec = "bf16"
            notes.append("bfloat16 -> bf16; KV dtype not stated (the scheme's default KV precision)")
        else:
            prec = ""
            skip.append("precision_mixed")
            notes.append(
                "int8: the run command passes one flag to --quantize_weights and --quantize_kv_cache "
                "(int8 weights and int8 KV cache, activation dtype not stated); no catalog scheme has "
                "8-bit weights with an 8-bit KV cache"
            )
        shard_on_batch = "--shard_on_batch" in r["notes"]
        if shard_on_batch and chips > 1:
            layout, tp, dp = layout_name(1, None, None, chips), None, chips
            notes.append(f"--shard_on_batch: data parallel over the {chips} chips (layout tp1-dp{chips})")
        else:
            layout, tp, dp = layout_name(chips), None, None
            notes.append(
                f"{chips} chip(s), model sharded over them (the README's default, 'model parallel'): "
                f"layout tp{chips}; tp not printed"
            )
        if "rolling-window" in r["notes"]:
            skip.append("window")
        if "regression" in r["notes"]:
            skip.append("anomalous")
        notes += [
            f"the table's batch size {r['batch_or_concurrency']} is JetStream's number of decode slots "
            "(batch_cap); the request rate of the serving benchmark is not stated",
            f"input/output {r['input_len']}/{r['output_len']} are caps on ShareGPT lengths (context and "
            "output_len left empty)",
            "'throughput (token/s)' does not say whether input tokens count (metric left as throughput)",
            f"source note: {r['notes']}",
        ]
        point = ROWS.point(r, hardware=hw, devices=chips, tp=tp, dp=dp, parallelism=layout, model=model)
        cap = int(r["batch_or_concurrency"])
        out.append(
            point.row(i, "throughput", num(r["value"]), precision=prec, batch_cap=cap, skip=skip, notes=notes)
        )
    return Converted.one_each(out, len(raw))
