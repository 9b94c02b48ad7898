"""AWS Neuron SDK benchmark tables (Inferentia2, Trainium1, Trainium2): each raw row gives up to five
tidy rows (TTFT p50, TPOT p50, output tokens/s, TTFT p99, TPOT p99); the Trainium2 rows print no p99."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from scripts.measurements.common import KV_NOT_STATED, Converted, head_padding_note, ms, num, read_raw
from scripts.measurements.row_builder import RowBuilder

KEY = "neuron"
FILE = "aws_neuron_llm_benchmarks.csv"
NAME = "AWS Neuron"
RAW_ROWS = 94
ROWS = RowBuilder(
    KEY,
    FILE,
    publisher="AWS",
    engine="neuron",
    printed={
        "source": "{source} ({instance_type}, {model}, application type '{application_type}')",
        "hardware_raw": "{instance_type}",
        "engine_version": "{neuron_sdk_version}",
    },
)

#: instance type -> (hardware id, NeuronCores per chip, note)
HARDWARE = {
    "Inf2.48xlarge": ("inferentia2", 2, "Inferentia2 chip = 2 NeuronCores"),
    "trn1.32xlarge": ("trainium1", 2, "Trainium1 chip = 2 NeuronCores"),
    "Trn2.48xlarge": ("trainium2", 8, "Trainium2 chip = 8 NeuronCores (physical)"),
}


def model_of(raw: str, seq_total: int) -> tuple[str, str]:
    simple = {
        "Llama-3-8B": ("llama-3-8b", ""),
        "Llama-3-70B": ("llama-3-70b", ""),
        "Llama-2-7b": ("llama-2-7b", ""),
        "Llama-2-70b": ("llama-2-70b", ""),
        "Llama-2-13b": ("llama-2-13b", ""),
        "CodeLlama-13b-hf": ("codellama-13b", ""),
        "Llama-3.3-70B-Instruct": ("llama-3.3-70b", "Instruct variant: same architecture"),
        "Llama-3.1-405B-Instruct": ("llama-3.1-405b", "Instruct variant: same architecture"),
    }
    if raw in simple:
        return simple[raw]
    if raw == "Mistral-7B-Instruct-v0.2":
        if seq_total <= 4096:
            return "mistral-7b", (
                "Mistral-7B v0.2 has v0.1's dimensions but no sliding window (and "
                "rope_theta 1e6); input+output <= 4096 so the catalog mistral-7b's 4096 "
                "window never binds: mapped to mistral-7b"
            )
        return "mistral-7b-instruct-v0.2", (
            "Mistral-7B v0.2 has no sliding window; the catalog mistral-7b "
            "(v0.1) has a 4096 window that binds at this length "
            "(input+output > 4096), so it is not mapped"
        )
    raise KeyError(f"unmapped Neuron model {raw!r}")


def precision_of(r: dict[str, str]) -> tuple[str, str, bool]:
    """(scheme, note, ambiguous)."""
    mdt, ac, ws = r["model_data_type"], r["compilation_autocast_data_type"], r["weight_storage_data_type"]
    if mdt == "FP16" and ac == "Matmult-BF16" and ws == "int8":
        return (
            "w8a16",
            (
                "model FP16, matmuls autocast to BF16, int8 weight storage -> w8a16 (8-bit weights, "
                f"16-bit compute); {KV_NOT_STATED}"
            ),
            False,
        )
    if mdt == "FP16" and ac == "Matmult-BF16" and ws == "bf16":
        return (
            "bf16",
            f"model FP16, matmuls autocast to BF16, bf16 weight storage -> bf16; {KV_NOT_STATED}",
            False,
        )
    if mdt.startswith("BF16"):
        return "bf16", f"data type printed as '{mdt}' -> bf16; {KV_NOT_STATED}", False
    if "fp8" in mdt:
        return "", f"data type printed as '{mdt}': bf16 or fp8 weights, not resolved", True
    raise KeyError(f"unmapped Neuron data types {mdt!r}/{ac!r}/{ws!r}")


def leading_int(text: str) -> tuple[int, str]:
    """'10000 (llmperf mean, stddev 0)' -> (10000, "printed as '...'")."""
    head = text.split("(")[0].strip()
    return int(head), (f"printed as '{text}'" if head != text.strip() else "")


#: (id suffix, metric, source column, statistic)
METRICS = (
    ("ttft-p50", "ttft", "ttft_p50_ms", "p50"),
    ("tpot-p50", "tpot", "tpot_p50_ms", "p50"),
    ("throughput", "throughput", "output_tokens_per_s", "as_published"),
    ("ttft-p99", "ttft", "ttft_p99_ms", "p99"),
    ("tpot-p99", "tpot", "tpot_p99_ms", "p99"),
)
#: columns that identify a run (the duplicate check)
RUN_KEY = (
    "model",
    "instance_type",
    "neuron_sdk_version",
    "tp_degree_neuroncores",
    "batch_size",
    "sequence_length",
    "input_len",
    "output_len",
    "weight_storage_data_type",
    "output_tokens_per_s",
    "ttft_p50_ms",
    "ttft_p99_ms",
    "tpot_p50_ms",
    "tpot_p99_ms",
)
DUP_NOTE = "identical numbers also listed"


def convert(path: Path) -> Converted:
    raw = read_raw(path)
    out = []
    first_seen: dict[tuple[str, ...], int] = {}
    for i, r in enumerate(raw, 1):
        key = tuple(r[k] for k in RUN_KEY)
        dup_of = first_seen.get(key)
        if dup_of is None:
            first_seen[key] = i
        if (dup_of is None) == (DUP_NOTE in r["note"]):
            raise ValueError(f"{path.name} row {i}: duplicate flag and data disagree")
        hw, cores_per_chip, hw_note = HARDWARE[r["instance_type"]]
        cores = int(r["tp_degree_neuroncores"])
        if cores % cores_per_chip:
            raise ValueError(f"{path.name} row {i}: {cores} cores are not whole chips")
        devices = cores // cores_per_chip
        ctx, ctx_note = leading_int(r["input_len"])
        olen, o_note = leading_int(r["output_len"])
        model, m_note = model_of(r["model"], ctx + olen)
        prec, p_note, ambiguous = precision_of(r)
        skip = []
        notes = [
            f"tp_degree {cores} NeuronCores / {cores_per_chip} per chip ({hw_note}) = {devices} chips; "
            f"layout tp{devices} over chips",
            head_padding_note(model, devices, f" chips ({cores} cores)"),
        ]
        if hw == "trainium2":
            skip.append("lnc")
            notes.append(
                "devices follow the README's 8 physical cores per chip; NxD Inference on trn2 "
                "defaults to logical NeuronCores of 2 physical cores (LNC=2), under which "
                f"tp_degree {cores} would span {cores * 2 // cores_per_chip} chips (the whole "
                "trn2.48xlarge); LNC is not printed"
            )
        app = r["application_type"]
        if app.startswith("Fused speculative"):
            skip.append("spec")
        if ambiguous:
            skip.append("precision")
        notes += [m_note, p_note, ctx_note, o_note]
        if r["concurrency"]:
            notes.append(
                f"{r['framework']}, application type '{app}', concurrency {r['concurrency']}: one "
                "request at a time = a static batch of 1"
            )
        else:
            notes.append(
                f"{r['framework']} {r['neuron_sdk_version']}, application type '{app}': static "
                "batch of the printed size"
            )
        if r["note"]:
            notes.append(f"source note: {r['note']}")
        if dup_of is not None:
            skip.append("dup")
            notes.append(f"same numbers as source row {dup_of} (ids {ROWS.row_id(dup_of)}-*)")
        engine_note = (
            "engine: vLLM front end over NxD Inference"
            if "vLLM" in r["framework"]
            else "engine: Transformers NeuronX"
        )
        point = ROWS.point(
            r,
            hardware=hw,
            tp=devices,
            model=model,
            precision=prec,
            load="static",
            batch=int(r["batch_size"]),
            context=ctx,
            output_len=olen,
            skip=skip,
            notes=[*notes, engine_note],
        )
        for suffix, metric, col, stat in METRICS:
            text = r[col]
            if not text:
                continue  # not printed (Trn2 p99): no value to record
            mskip, mnotes = [], []
            if stat == "p99":
                mskip.append("p99")
                p50 = r[col.replace("p99", "p50")]
                if Decimal(text) < Decimal(p50):
                    mnotes.append(f"source p99 ({text} ms) is below its p50 ({p50} ms)")
            if metric == "throughput":
                value = num(text)
                mnotes.append(
                    "output tokens/s as published; the source does not define how it is "
                    "measured and it is not batch/tpot_p50 (see docs/measurements.md)"
                )
            else:
                value = ms(text)
            out.append(point.row(i, metric, value, suffix=suffix, statistic=stat, skip=mskip, notes=mnotes))
    return Converted(
        out,
        len(raw),
        accounting=(
            f"{len(raw)} raw rows -> {len(out)} tidy rows: TTFT p50, TPOT p50, output tokens/s, TTFT p99 and "
            "TPOT p99 per raw row (the 4 Trainium2 rows print no p99: 3 each)."
        ),
    )
