#!/usr/bin/env python3
"""Transcribe published LLM-inference measurements into one tidy CSV (``measurements.csv``).

Sources (see ``docs/measurements.md``):

* ``trtllm_perf_overview_v0.9.0.csv``: NVIDIA TensorRT-LLM v0.9.0 performance overview
  (per-GPU output tokens/s at a fixed batch; batch-1 first-token latency);
* ``trtllm_perf_overview_v1.0_throughput.csv``: TensorRT-LLM v1.0-era overview (total output
  tokens/s of the whole TP x PP group at maximum load, batch chosen by the engine);
* ``aws_neuron_llm_benchmarks.csv``: AWS Neuron SDK benchmark tables (Inferentia2, Trainium1,
  Trainium2): output tokens/s, TTFT and TPOT p50/p99;
* seed 004 (Brunetta et al., "Beyond Throughput: Performance and Energy Insights of LLM Inference
  Across AI Accelerators"): the numbers stated in the text of sections IV-A, IV-B, IV-C and V,
  written below as literal data with their section as ``source``.

The three CSVs are read from ``--inputs`` (default ``/work/shared/measurements``, or the
``MEASUREMENTS_INPUTS`` environment variable). The script refuses to write a partial table when
an input is missing: the committed ``measurements.csv`` is the shipped data, this script documents
how it was made. Usage::

    python sweep/data/measurements/build_measurements.py            # rebuild + print summary
    python sweep/data/measurements/build_measurements.py --check    # validate the shipped CSV only
    python sweep/data/measurements/build_measurements.py --check my.csv   # validate your own CSV

One output row per (source row, metric). Nothing is guessed: a parameter the source does not state
is left empty, and a row the model cannot evaluate has ``usable = no`` with the reason(s) in
``skip_reason`` (``; ``-separated, from the fixed list ``REASONS``).
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import os
import re
import sys
import tomllib
from decimal import Decimal
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
OUT_CSV = HERE / "measurements.csv"
SCHEMA = HERE / "schema.toml"
DEFAULT_INPUTS = Path(os.environ.get("MEASUREMENTS_INPUTS", "/work/shared/measurements"))

F_V090 = "trtllm_perf_overview_v0.9.0.csv"
F_V10 = "trtllm_perf_overview_v1.0_throughput.csv"
F_NEURON = "aws_neuron_llm_benchmarks.csv"
F_SEED004 = "seeds/004_792632eac187a014.txt"
EXPECTED_SOURCE_ROWS = {F_V090: 126, F_V10: 328, F_NEURON: 94}

LAYOUT_RE = re.compile(r"^tp[1-9]\d*(-pp[1-9]\d*)?(-ep[1-9]\d*)?(-dp[1-9]\d*)?$")
COLUMNS = (
    "id",
    "source_file",
    "source",
    "hardware",
    "hardware_raw",
    "devices",
    "tp",
    "pp",
    "ep",
    "dp",
    "layout",
    "model",
    "model_raw",
    "precision",
    "batch",
    "context",
    "output_len",
    "metric",
    "value",
    "unit",
    "scope",
    "statistic",
    "usable",
    "skip_reason",
    "mapping_note",
)

# ------------------------------------------------------------------------------------------------
# vocabularies

#: every skip reason used; a row's ``skip_reason`` joins the ones that apply with "; "
REASONS = {
    "hw": "hardware not in catalog",
    "model": "model not in catalog",
    "lengths": "prompt/response lengths not stated (MLSysChat1M distribution)",
    "relative": "relative claim, not an absolute measurement",
    "batch": "batch size not stated",
    "model_unstated": "model not stated",
    "devices": "device count not stated",
    "lnc": "device count ambiguous (logical NeuronCore config not stated)",
    "heads": "tp does not divide the model's attention heads (layout incompatible in the model)",
    "spec": "speculative decoding (draft model) not modelled",
    "precision": "precision ambiguous (source contradicts itself)",
    "dup": "duplicate of another row (same run listed twice by the source)",
    "p99": "tail percentile (p99): the model predicts typical values",
}


def load_schema() -> dict:
    with SCHEMA.open("rb") as fh:
        return tomllib.load(fh)


#: hardware ids of the project catalog (schema.toml is the one list; the TOML files of
#: grids/data/hardware/ are checked against it by --check when they exist)
CATALOG_HARDWARE = tuple(load_schema()["columns"]["hardware"]["allowed"])

# ------------------------------------------------------------------------------------------------
# helpers


def si_ms(text: str) -> str:
    """Milliseconds (as printed) -> seconds, exact decimal string."""
    return fmt_decimal(Decimal(text.strip()) / 1000)


def fmt_decimal(d: Decimal) -> str:
    s = format(d.normalize(), "f")
    return s


def num(text: str) -> str:
    """A published number, checked numeric, kept as printed (trailing zeros trimmed)."""
    return fmt_decimal(Decimal(text.strip()))


def layout_name(tp=None, pp=None, ep=None, dp=None) -> str:
    """Layout name as in grids/layouts.py: tp always, other degrees only when != 1."""
    parts = [f"tp{tp or 1}"]
    for key, val in (("pp", pp), ("ep", ep), ("dp", dp)):
        if val not in (None, "", 1):
            parts.append(f"{key}{val}")
    return "-".join(parts)


def model_catalog() -> tuple[set[str], dict[str, int]]:
    """Model ids of grids/data/models/catalog.toml and their attention-head counts."""
    mdir = REPO / "grids" / "data" / "models"
    ids: set[str] = set()
    heads: dict[str, int] = {}
    cat = mdir / "catalog.toml"
    if cat.is_file():
        with cat.open("rb") as fh:
            ids = set(tomllib.load(fh))
    for mid in ids:
        cfg_path = mdir / f"{mid}.json"
        if cfg_path.is_file():
            cfg = json.loads(cfg_path.read_text())
            txt = cfg.get("text_config", {})
            h = (
                cfg.get("num_attention_heads")
                or cfg.get("n_head")
                or txt.get("num_attention_heads")
            )
            if h:
                heads[mid] = int(h)
    return ids, heads


CATALOG_MODELS, MODEL_HEADS = model_catalog()


def reasons(*keys: str) -> str:
    return "; ".join(REASONS[k] for k in dict.fromkeys(keys) if k)


def row(**kw) -> dict[str, str]:
    unknown = set(kw) - set(COLUMNS)
    if unknown:
        raise KeyError(f"unknown columns {sorted(unknown)}")
    out = dict.fromkeys(COLUMNS, "")
    for k, v in kw.items():
        out[k] = "" if v is None else str(v)
    return out


def heads_problem(model: str, tp) -> bool:
    """True when tp does not divide the catalog model's attention heads (model layout rule)."""
    if not tp or model not in MODEL_HEADS:
        return False
    return MODEL_HEADS[model] % int(tp) != 0


# ------------------------------------------------------------------------------------------------
# TensorRT-LLM v0.9.0

V090_HW = {
    "H200": ("h200-sxm", "source prints 'H200' only; mapped to the catalog's H200 SXM 141 GB"),
    "H100": ("h100-sxm", "source prints 'H100' only; mapped to the catalog's H100 SXM 80 GB"),
    "A100": (
        "a100-sxm-80g",
        "source prints 'A100' only (no form factor/memory); mapped to the catalog's A100 SXM 80 GB",
    ),
    "L40S": ("L40S", ""),
}
V090_MODEL = {
    "GPT-J 6B": ("gpt-j-6b", ""),
    "Mistral 7B": (
        "mistral-7b",
        "version not printed; input+output <= 4096 tokens so the "
        "catalog mistral-7b's 4096-token sliding window never binds",
    ),
    "LLaMA 7B": ("llama-2-7b", "'LLaMA 7B' is Llama-2-7B (measurements README)"),
    "LLaMA 70B": ("llama-2-70b", "'LLaMA 70B' is Llama-2-70B (measurements README)"),
    "Falcon 180B": ("falcon-180b", ""),
    "Mixtral 8x7B": ("mixtral-8x7b", ""),
}
V090_PRECISION = {
    "FP8": (
        "fp8",
        "FP8 -> fp8 (W8A8 FP8); KV-cache precision not printed (fp8 scheme keeps KV "
        "at 16 bits; an fp8 KV cache would be fp8-kv8)",
    ),
    "FP16": ("fp16", "FP16 -> fp16"),
}


def trtllm_v090(path: Path) -> list[dict[str, str]]:
    out = []
    with path.open(newline="") as fh:
        src = list(csv.DictReader(fh))
    for i, r in enumerate(src, 1):
        hw, hw_note = V090_HW[r["gpu"]]
        model, m_note = V090_MODEL[r["model"]]
        prec, p_note = V090_PRECISION[r["precision"]]
        tp = int(r["tp"])
        skip = []
        if hw not in CATALOG_HARDWARE:
            skip.append("hw")
        if model not in CATALOG_MODELS:
            skip.append("model")
        if heads_problem(model, tp):
            skip.append("heads")
        notes = [n for n in (hw_note, m_note, p_note) if n]
        notes.append(
            f"source states TP only (no PP/DP column): devices = tp = {tp}; layout assumes pp = 1"
        )
        peak = r["table"] == "Peak Throughput"
        if peak:
            metric, value, unit = "throughput", num(r["output_tokens_per_s_per_gpu"]), "tokens/s"
            scope, batch, out_len = "per_device", int(r["batch_size"]), r["output_len"]
            notes.append(
                "output tokens/s per GPU (compare with throughput_per_device); static "
                "batching at the printed batch"
            )
        else:
            metric, value, unit = "ttft", si_ms(r["first_token_latency_ms"]), "s"
            scope, batch, out_len = "per_system", int(r["batch_size"]), ""
            if batch != 1:
                raise ValueError(f"{path.name} row {i}: Low Latency row with batch {batch}")
            notes.append(
                "batch-1 first-token latency (printed in ms); output length not printed "
                "(does not affect TTFT)"
            )
        out.append(
            row(
                id=f"trtllm090-{i:03d}",
                source_file=f"measurements/{path.name}",
                source=f"{r['source']} (TensorRT-LLM v{r['trtllm_version']} perf overview, table "
                f"'{r['table']}', {r['gpu']} {r['precision']})",
                hardware=hw,
                hardware_raw=r["gpu"],
                devices=tp,
                tp=tp,
                layout=layout_name(tp),
                model=model,
                model_raw=r["model"],
                precision=prec,
                batch=batch,
                context=int(r["input_len"]),
                output_len=out_len,
                metric=metric,
                value=value,
                unit=unit,
                scope=scope,
                statistic="as_published",
                usable="no" if skip else "yes",
                skip_reason=reasons(*skip),
                mapping_note="; ".join(notes),
            )
        )
    return out


# ------------------------------------------------------------------------------------------------
# TensorRT-LLM v1.0 era

V10_HW = {
    "B200 180GB (DGX B200)": "b200",
    "GB200 192GB (GB200 NVL72)": "gb200",
    "H200 SXM 141GB (DGX H200)": "h200-sxm",
    "H100 SXM 80GB (DGX H100)": "h100-sxm",
    "RTX 6000 Pro Blackwell Server Edition": "RTX PRO 6000",
}
V10_MODEL = {
    "Llama 4 Scout": "llama-4-scout",
    "Llama 4 Maverick": "llama-4-maverick",
    "Llama 3.3 70B": "llama-3.3-70b",
    "Llama 3.1 405B": "llama-3.1-405b",
    "Llama 3.1 8B": "llama-3.1-8b",
    "Qwen3-235B-A22B": "qwen3-235b-a22b",
    "Qwen3-30B-A3B": "qwen3-30b-a3b",
}
V10_PRECISION = {
    "FP4": ("fp4", "FP4 -> fp4 (W4A4 NVFP4); KV-cache precision not printed"),
    "FP8": ("fp8", "FP8 -> fp8 (W8A8 FP8); KV-cache precision not printed"),
}
MOE_MODELS = {"llama-4-scout", "llama-4-maverick", "qwen3-235b-a22b", "qwen3-30b-a3b"}


def trtllm_v10(path: Path) -> list[dict[str, str]]:
    out = []
    with path.open(newline="") as fh:
        src = list(csv.DictReader(fh))
    for i, r in enumerate(src, 1):
        hw = V10_HW[r["gpu"]]
        model = V10_MODEL[r["model"]]
        prec, p_note = V10_PRECISION[r["precision"]]
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
        if model in MOE_MODELS and devices > 1:
            notes.append(
                "MoE model: expert-parallel degree not printed; layout assumes experts "
                "tensor-split (ep = 1)"
            )
        notes.append(
            "total output tokens/s of the whole group at maximum load; the engine chose "
            "the batch (not printed): compare with the model's best throughput over "
            "batches that fit"
        )
        skip = []
        if hw not in CATALOG_HARDWARE:
            skip.append("hw")
        if model not in CATALOG_MODELS:
            skip.append("model")
        if heads_problem(model, tp):
            skip.append("heads")
        out.append(
            row(
                id=f"trtllm10-{i:03d}",
                source_file=f"measurements/{path.name}",
                source=f"{r['source']} (TensorRT-LLM {r['trtllm_doc']}, throughput table, "
                f"{r['gpu']} {r['precision']}, {r['model']})",
                hardware=hw,
                hardware_raw=r["gpu"],
                devices=devices,
                tp=tp,
                pp=pp,
                layout=layout_name(tp, pp),
                model=model,
                model_raw=r["model"],
                precision=prec,
                batch="max",
                context=int(r["input_len"]),
                output_len=int(r["output_len"]),
                metric="throughput",
                value=num(r["total_output_tokens_per_s"]),
                unit="tokens/s",
                scope="per_system",
                statistic="max_load",
                usable="no" if skip else "yes",
                skip_reason=reasons(*skip),
                mapping_note="; ".join(notes),
            )
        )
    return out


# ------------------------------------------------------------------------------------------------
# AWS Neuron

NEURON_HW = {
    # instance type -> (hardware, NeuronCores per chip, note)
    "Inf2.48xlarge": ("inferentia2", 2, "Inferentia2 chip = 2 NeuronCores"),
    "trn1.32xlarge": ("trn1", 2, "Trainium1 chip = 2 NeuronCores"),
    "Trn2.48xlarge": ("trainium2", 8, "Trainium2 chip = 8 NeuronCores (physical)"),
}


def neuron_model(raw: str, seq_total: int) -> tuple[str, str]:
    if raw == "Llama-3-8B":
        return "llama-3.1-8b", (
            "Llama-3-8B has the architecture of llama-3.1-8b except the context "
            "limit (8192) and rope scaling; mapped to llama-3.1-8b"
        )
    if raw == "Llama-3-70B":
        return "llama-3.1-70b", (
            "Llama-3-70B has the architecture of llama-3.1-70b except the "
            "context limit (8192) and rope scaling; mapped to llama-3.1-70b"
        )
    if raw == "Llama-2-7b":
        return "llama-2-7b", ""
    if raw == "Llama-2-70b":
        return "llama-2-70b", ""
    if raw == "Llama-3.3-70B-Instruct":
        return "llama-3.3-70b", "Instruct variant: same architecture"
    if raw == "Llama-3.1-405B-Instruct":
        return "llama-3.1-405b", "Instruct variant: same architecture"
    if raw == "Mistral-7B-Instruct-v0.2":
        if seq_total <= 4096:
            return "mistral-7b", (
                "Mistral-7B v0.2 has v0.1's dimensions but no sliding window "
                "(and rope_theta 1e6); input+output <= 4096 so the catalog "
                "mistral-7b's 4096 window never binds: mapped to mistral-7b"
            )
        return "mistral-7b-instruct-v0.2", (
            "Mistral-7B v0.2 has no sliding window; the catalog mistral-7b (v0.1) has a 4096 "
            "window that binds at this length (input+output > 4096), so it is not mapped"
        )
    if raw == "Llama-2-13b":
        return "llama-2-13b", ""
    if raw == "CodeLlama-13b-hf":
        return "codellama-13b", ""
    raise KeyError(f"unmapped Neuron model {raw!r}")


def neuron_precision(r: dict[str, str]) -> tuple[str, str, bool]:
    """(scheme, note, ambiguous)."""
    mdt, ac, ws = (
        r["model_data_type"],
        r["compilation_autocast_data_type"],
        r["weight_storage_data_type"],
    )
    if mdt == "FP16" and ac == "Matmult-BF16" and ws == "int8":
        return (
            "w8a16",
            (
                "model FP16, matmuls autocast to BF16, int8 weight storage -> w8a16 (8-bit "
                "weights, 16-bit compute)"
            ),
            False,
        )
    if mdt == "FP16" and ac == "Matmult-BF16" and ws == "bf16":
        return "bf16", "model FP16, matmuls autocast to BF16, bf16 weight storage -> bf16", False
    if mdt.startswith("BF16"):
        return "bf16", f"data type printed as '{mdt}' -> bf16", False
    if "fp8" in mdt:
        return "", f"data type printed as '{mdt}': bf16 or fp8 weights, not resolved", True
    raise KeyError(f"unmapped Neuron data types {mdt!r}/{ac!r}/{ws!r}")


def leading_int(text: str) -> tuple[int, str]:
    """'10000 (llmperf mean, stddev 0)' -> (10000, 'printed ...')."""
    head = text.split("(")[0].strip()
    note = f"printed as '{text}'" if head != text.strip() else ""
    return int(head), note


NEURON_METRICS = (
    # (id suffix, metric, source column, statistic)
    ("ttft-p50", "ttft", "ttft_p50_ms", "p50"),
    ("tpot-p50", "tpot", "tpot_p50_ms", "p50"),
    ("throughput", "throughput", "output_tokens_per_s", "as_published"),
    ("ttft-p99", "ttft", "ttft_p99_ms", "p99"),
    ("tpot-p99", "tpot", "tpot_p99_ms", "p99"),
)
NEURON_KEY = (
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


def neuron(path: Path) -> list[dict[str, str]]:
    out = []
    with path.open(newline="") as fh:
        src = list(csv.DictReader(fh))
    first_seen: dict[tuple[str, ...], int] = {}
    for i, r in enumerate(src, 1):
        key = tuple(r[k] for k in NEURON_KEY)
        dup_of = first_seen.get(key)
        if dup_of is None:
            first_seen[key] = i
        elif "identical numbers also listed" not in r["note"]:
            raise ValueError(f"{path.name} row {i}: undeclared duplicate of row {dup_of}")
        if "identical numbers also listed" in r["note"] and dup_of is None:
            raise ValueError(f"{path.name} row {i}: declared duplicate without a first copy")

        hw, cores_per_chip, hw_note = NEURON_HW[r["instance_type"]]
        cores = int(r["tp_degree_neuroncores"])
        if cores % cores_per_chip:
            raise ValueError(f"{path.name} row {i}: {cores} cores not whole chips")
        devices = cores // cores_per_chip
        ctx, ctx_note = leading_int(r["input_len"])
        olen, o_note = leading_int(r["output_len"])
        model, m_note = neuron_model(r["model"], ctx + olen)
        prec, p_note, p_ambiguous = neuron_precision(r)
        batch = int(r["batch_size"])

        base_skip = []
        if hw not in CATALOG_HARDWARE:
            base_skip.append("hw")
        if model not in CATALOG_MODELS:
            base_skip.append("model")
        if heads_problem(model, devices):
            base_skip.append("heads")
        notes = [
            f"tp_degree {cores} NeuronCores / {cores_per_chip} per chip ({hw_note}) = "
            f"{devices} chips; layout tp{devices} over chips"
        ]
        if hw == "trainium2":
            base_skip.append("lnc")
            notes.append(
                "devices follow the README's 8 physical cores per chip; NxD Inference on "
                "trn2 defaults to logical NeuronCores of 2 physical cores (LNC=2), under "
                f"which tp_degree {cores} would span {cores * 2 // cores_per_chip} chips "
                "(the whole trn2.48xlarge); LNC is not printed"
            )
        if heads_problem(model, devices):
            notes.append(
                f"{MODEL_HEADS[model]} attention heads over tp {devices} chips "
                f"({cores} cores): the source must pad or replicate heads"
            )
        if r["application_type"].startswith("Fused speculative"):
            base_skip.append("spec")
        if p_ambiguous:
            base_skip.append("precision")
        notes += [n for n in (m_note, p_note, ctx_note, o_note) if n]
        app = r["application_type"]
        notes.append(
            f"{r['framework']}"
            + (f" {r['neuron_sdk_version']}" if r["neuron_sdk_version"] else "")
            + f", application type '{app}'"
            + (f", concurrency {r['concurrency']}" if r["concurrency"] else "")
        )
        if r["note"]:
            notes.append(f"source note: {r['note']}")
        if dup_of is not None:
            base_skip.append("dup")
            notes.append(f"same numbers as source row {dup_of} (ids neuron-{dup_of:03d}-*)")

        for suffix, metric, col, stat in NEURON_METRICS:
            raw = r[col]
            if not raw:
                continue  # not printed (Trn2 p99): no value to record
            skip = list(base_skip)
            mnotes = list(notes)
            if stat == "p99":
                skip.append("p99")
                p50 = r[col.replace("p99", "p50")]
                if Decimal(raw) < Decimal(p50):
                    mnotes.append(f"source p99 ({raw} ms) is below its p50 ({p50} ms)")
            if metric == "throughput":
                value, unit = num(raw), "tokens/s"
                mnotes.append(
                    "output tokens/s as published; the source does not define it and it "
                    "is not batch/tpot_p50 (see docs/measurements.md)"
                )
            else:
                value, unit = si_ms(raw), "s"
            out.append(
                row(
                    id=f"neuron-{i:03d}-{suffix}",
                    source_file=f"measurements/{path.name}",
                    source=f"{r['source']} ({r['instance_type']}, {r['model']}, application type "
                    f"'{app}')",
                    hardware=hw,
                    hardware_raw=r["instance_type"],
                    devices=devices,
                    tp=devices,
                    layout=layout_name(devices),
                    model=model,
                    model_raw=r["model"],
                    precision=prec,
                    batch=batch,
                    context=ctx,
                    output_len=olen,
                    metric=metric,
                    value=value,
                    unit=unit,
                    scope="per_system",
                    statistic=stat,
                    usable="no" if skip else "yes",
                    skip_reason=reasons(*skip),
                    mapping_note="; ".join(mnotes),
                )
            )
    return out


# ------------------------------------------------------------------------------------------------
# seed 004: numbers stated in the text (literal data)

S4 = (
    'Brunetta et al., "Beyond Throughput: Performance and Energy Insights of LLM Inference Across '
    'AI Accelerators" (seed 004)'
)
S4_COMMON = (
    "vLLM (GPUs), MLSysChat1M first 1,000 conversations with output length forced to the "
    "reference reply: lengths are a distribution whose mean is not stated; throughput "
    "counts input+output tokens"
)
A100 = ("a100-sxm-80g", "NVIDIA A100")  # Table I: 80 GB HBM2e, 400 W (DGX) = SXM 80 GB
H100 = ("h100-sxm", "NVIDIA H100")  # Table I: 80 GB HBM3, 700 W = SXM
MI300X = ("mi300x", "AMD MI300X")
CS3 = ("cs-3", "Cerebras CS3")
SN40L = ("sn40l", "SambaNova SN40L")
L8B = ("llama-3.1-8b", "Llama 3.1 8B")
L70B = ("llama-3.3-70b", "Llama 3.3 70B")
SN40L_DEVICES = "SN40L node has 16 RDUs (Table I); how many served the model is not stated"

#: absolute values stated in the text. Keys: hw, model, metric, value (SI), and optional
#: devices/tp/dp/layout/batch/precision/scope/statistic/skip/note; "quote" = verbatim text.
SEED004_ABSOLUTE = [
    {
        "sec": "IV-C, text on Fig. 7",
        "hw": A100,
        "model": L8B,
        "devices": 1,
        "tp": 1,
        "batch": 1,
        "metric": "total_throughput",
        "value": "215",
        "quote": "at batch size 1, where the NVIDIA A100 reaches 215 tokens/s",
        "note": "single GPU read from the contrast with '4 NVIDIA A100s' for 70B",
    },
    {
        "sec": "IV-C, text on Fig. 7",
        "hw": CS3,
        "model": L8B,
        "devices": 1,
        "tp": 1,
        "batch": 1,
        "metric": "total_throughput",
        "value": "3609",
        "quote": "compared to 3609 tokens/s (16.8x) on the Cerebras CS3",
        "note": "one CS-3 system (Table I: 1 / node); early-prototype Cerebras inference engine "
        "via API; 16.8x = 3609/215",
    },
    {
        "sec": "IV-C, text on Fig. 7",
        "hw": SN40L,
        "model": L8B,
        "batch": 1,
        "skip": ("devices",),
        "metric": "total_throughput",
        "value": "2024",
        "quote": "and 2024 tokens/s (9.41x) on the SambaNova SN40L",
        "note": f"SambaStudio; {SN40L_DEVICES}; 9.41x = 2024/215",
    },
    {
        "sec": "IV-C, text on Fig. 7",
        "hw": SN40L,
        "model": L70B,
        "batch": 1,
        "skip": ("devices",),
        "metric": "total_throughput",
        "value": "353",
        "quote": "SamabaNova SN40L also outpaces GPUs with Llama 3.3 70B, achieving 353tokens/s at "
        "batch size 1",
        "note": f"{SN40L_DEVICES}; 4.01x = 353/88",
    },
    {
        "sec": "IV-C, text on Fig. 7",
        "hw": A100,
        "model": L70B,
        "devices": 4,
        "tp": 4,
        "batch": 1,
        "metric": "total_throughput",
        "value": "88",
        "quote": "compared to 88 tokens/s (4.01x) obtained with 4 NVIDIA A100s working with tensor "
        "parallelism",
        "note": "batch 1 from the same sentence as the SN40L figure",
    },
    {
        "sec": "IV-C, text on Fig. 8",
        "hw": SN40L,
        "model": L70B,
        "skip": ("batch", "devices"),
        "metric": "ttft",
        "value": "0.099",
        "quote": "the SambaNova SN40L achieves slower TTFT compared to 4 NVIDIA A100 (99 ms "
        "compared to 91 ms)",
        "note": f"printed 99 ms; batch not stated in the sentence (Fig. 8 is at batch 1); "
        f"{SN40L_DEVICES}",
    },
    {
        "sec": "IV-C, text on Fig. 8",
        "hw": A100,
        "model": L70B,
        "devices": 4,
        "tp": 4,
        "skip": ("batch",),
        "metric": "ttft",
        "value": "0.091",
        "quote": "the SambaNova SN40L achieves slower TTFT compared to 4 NVIDIA A100 (99 ms "
        "compared to 91 ms)",
        "note": "printed 91 ms; batch not stated in the sentence (Fig. 8 is at batch 1)",
    },
    {
        "sec": "IV-C, text on Fig. 8",
        "hw": SN40L,
        "model": L70B,
        "skip": ("batch", "devices"),
        "metric": "tpot",
        "value": "0.0056",
        "statistic": "mean",
        "quote": "while having a 5.18x shorter ITL (5.6 ms compared to 29 ms)",
        "note": f"ITL = average time between two tokens (Sec. III-D); printed 5.6 ms; 5.18x = "
        f"29/5.6; batch not stated in the sentence; {SN40L_DEVICES}",
    },
    {
        "sec": "IV-C, text on Fig. 8",
        "hw": A100,
        "model": L70B,
        "devices": 4,
        "tp": 4,
        "skip": ("batch",),
        "metric": "tpot",
        "value": "0.029",
        "statistic": "mean",
        "quote": "while having a 5.18x shorter ITL (5.6 ms compared to 29 ms)",
        "note": "ITL = average time between two tokens (Sec. III-D); printed 29 ms; batch not "
        "stated in the sentence",
    },
    {
        "sec": "IV-C, peak-throughput paragraph",
        "hw": CS3,
        "model": L8B,
        "devices": 1,
        "tp": 1,
        "batch": 8,
        "metric": "total_throughput",
        "value": "12327",
        "quote": "Cerebras at a batch size of 8 produces a competitive throughput (12327 tokens/s)",
        "note": "one CS-3 system",
    },
    {
        "sec": "IV-C, peak-throughput paragraph",
        "hw": SN40L,
        "model": L8B,
        "skip": ("batch", "devices"),
        "metric": "total_throughput",
        "value": "3907",
        "statistic": "max_load",
        "quote": "The SambaNova SN40L instead peaks at 3907 tokens/s",
        "note": f"peak over the batch sizes tried (pre-compiled artifacts up to batch 8 per the "
        f"text; Sec. III-C3 says 1-32); batch of the peak not stated; {SN40L_DEVICES}",
    },
    {
        "sec": "IV-B, text on Fig. 4",
        "hw": MI300X,
        "model": L70B,
        "devices": 1,
        "tp": 1,
        "batch": 128,
        "metric": "total_throughput",
        "value": "2017",
        "quote": "with Llama 3.3 70B, the MI300X achieves around 2017 tokens/s with a tensor "
        "parallel size of 1",
        "note": "'around'; per TP1 instance (Fig. 4 normalises by D); batch = vLLM maximum batch "
        "128 x T (Sec. III-C2), actual concurrency not stated; precision: bf16 is the "
        "paper's default and Fig. 4 is bf16, the sentence does not restate it",
    },
    {
        "sec": "IV-B, text on Fig. 4",
        "hw": H100,
        "model": L70B,
        "devices": 4,
        "tp": 4,
        "batch": 512,
        "metric": "total_throughput",
        "value": "7634",
        "quote": "while the NVIDIA H100 achieves strong performance (7634 tokens/s) with a tensor "
        "parallel size of 4",
        "note": "one TP4 instance on the 4-GPU node (D = 1); batch = vLLM maximum batch 128 x T; "
        "precision: bf16 is the paper's default and Fig. 4 is bf16, the sentence does not "
        "restate it",
    },
    {
        "sec": "IV-B, text on Fig. 4",
        "hw": MI300X,
        "model": L70B,
        "devices": 4,
        "tp": 1,
        "dp": 4,
        "batch": 128,
        "metric": "total_throughput",
        "value": "8068",
        "quote": "In a 4-GPU setup, the MI300X reaches 8068 tokens/s with pure data parallelism",
        "note": "8068 = 4 x 2017 exactly: probably the TP1 figure scaled by D = 4 rather than a "
        "separate run; batch = vLLM maximum batch 128 per replica; precision as the TP1 "
        "row",
    },
    {
        "sec": "IV-C, energy paragraph",
        "hw": CS3,
        "model": L8B,
        "devices": 1,
        "tp": 1,
        "skip": ("batch",),
        "metric": "total_tokens_per_joule",
        "value": "0.15",
        "quote": "The Cerebras CS-3 system consumes about 24,200 W and achieves 0.15 tokens/J",
        "note": "input+output tokens per joule; chassis-level power; batch not stated "
        "(3609 tokens/s / 24,200 W = 0.149, i.e. consistent with batch 1)",
    },
    {
        "sec": "IV-C, energy paragraph",
        "hw": SN40L,
        "model": L8B,
        "skip": ("batch", "devices"),
        "metric": "total_tokens_per_joule",
        "value": "0.38",
        "quote": "the SambaNova SN40L consumes on average 5,230 W and achieves 0.38 tokens/J",
        "note": f"input+output tokens per joule; batch not stated (2024 tokens/s / 5,230 W = "
        f"0.387, i.e. consistent with batch 1); {SN40L_DEVICES}",
    },
    {
        "sec": "IV-C, energy paragraph",
        "hw": A100,
        "model": L8B,
        "devices": 1,
        "tp": 1,
        "skip": ("batch",),
        "metric": "total_tokens_per_joule",
        "value": "0.73",
        "quote": "For comparison, the NVIDIA A100 achieves 0.73 tokens/s",
        "note": "printed 'tokens/s', evidently tokens/J (energy paragraph); input+output tokens "
        "per joule; batch not stated; single GPU read from context",
    },
    {
        "sec": "IV-C, energy paragraph",
        "hw": H100,
        "model": L8B,
        "devices": 1,
        "tp": 1,
        "skip": ("batch",),
        "metric": "total_tokens_per_joule",
        "value": "0.91",
        "quote": "and the NVIDIA H100 achieves 0.91 tokens/s",
        "note": "printed 'tokens/s', evidently tokens/J; input+output tokens per joule; batch not "
        "stated; single GPU read from context",
    },
    {
        "sec": "IV-C, energy paragraph",
        "hw": SN40L,
        "model": L70B,
        "batch": 1,
        "skip": ("devices",),
        "metric": "total_tokens_per_joule",
        "value": "0.067",
        "quote": "the SambaNova SN40L significantly narrows the gap with the NVIDIA A100, reaching "
        "0.067 tokens/J at batch size 1",
        "note": f"input+output tokens per joule; 353 tokens/s / 0.067 = 5,269 W; {SN40L_DEVICES}",
    },
    {
        "sec": "IV-C, energy paragraph",
        "hw": A100,
        "model": L70B,
        "devices": 4,
        "tp": 4,
        "batch": 1,
        "metric": "total_tokens_per_joule",
        "value": "0.074",
        "quote": "compared with 0.074 tokens/J obtained using four NVIDIA A100 GPUs",
        "note": "input+output tokens per joule; batch 1 from the same sentence; tensor parallel "
        "per the 88 tokens/s comparison",
    },
    {
        "sec": "IV-A, single-GPU results",
        "hw": A100,
        "model": ("", ""),
        "devices": 1,
        "tp": 1,
        "precision": "",
        "skip": ("model_unstated", "batch"),
        "metric": "power",
        "value": "337",
        "scope": "per_device",
        "statistic": "mean",
        "quote": "Although it consumes more power (478 W compared to 337 W), the H100 delivers "
        "substantially higher performance",
        "note": "average GPU power over the single-GPU experiments (Figs. 1-3: Llama 3.1 8B, Qwen3 "
        "14B/32B, Mistral Small 24B, batch 16-128, bf16/FP8); which runs are averaged is "
        "not stated",
    },
    {
        "sec": "IV-A, single-GPU results",
        "hw": H100,
        "model": ("", ""),
        "devices": 1,
        "tp": 1,
        "precision": "",
        "skip": ("model_unstated", "batch"),
        "metric": "power",
        "value": "478",
        "scope": "per_device",
        "statistic": "mean",
        "quote": "Although it consumes more power (478 W compared to 337 W)",
        "note": "average GPU power over the single-GPU experiments; which runs are averaged is not "
        "stated",
    },
    {
        "sec": "IV-A, single-GPU results",
        "hw": MI300X,
        "model": ("", ""),
        "devices": 1,
        "tp": 1,
        "precision": "",
        "skip": ("model_unstated", "batch"),
        "metric": "power",
        "value": "625",
        "scope": "per_device",
        "statistic": "mean",
        "quote": "its overall energy efficiency is lower, primarily due to its higher power "
        "consumption (625 W)",
        "note": "average GPU power over the single-GPU experiments; which runs are averaged is not "
        "stated",
    },
    {
        "sec": "IV-C, energy paragraph",
        "hw": CS3,
        "model": L8B,
        "devices": 1,
        "tp": 1,
        "skip": ("batch",),
        "metric": "power",
        "value": "24200",
        "statistic": "mean",
        "quote": "The Cerebras CS-3 system consumes about 24,200 W",
        "note": "'about'; chassis-level reading (whole CS-3 system); batch not stated",
    },
    {
        "sec": "IV-C, energy paragraph",
        "hw": SN40L,
        "model": L8B,
        "skip": ("batch", "devices"),
        "metric": "power",
        "value": "5230",
        "statistic": "mean",
        "quote": "the SambaNova SN40L consumes on average 5,230 W",
        "note": "IV-C says RDU-level power measurements, Sec. III-C3 says PDU measurements for the "
        f"entire rack; batch not stated; {SN40L_DEVICES}",
    },
]

HOPPER = ("h100-sxm;gh200", "NVIDIA Hopper GPUs (H100, GH200)")
FIG3_MODELS = (
    "llama-3.1-8b;qwen3-14b;mistral-small-3.1-24b;qwen3-32b",
    "Llama 3.1 8B, Qwen3 14B, Mistral Small 3.1 24B, Qwen3 32B (Fig. 3)",
)
NODES = ("a100-sxm-80g;h100-sxm;mi300x", "NVIDIA A100, NVIDIA H100, AMD MI300X nodes")
TEN = ("", "ten LLMs of Table II (Fig. 4; the ten are not listed)")

#: relative claims: value is the stated ratio (a "+20%" gain is recorded as 1.20); ``ratio``
#: says numerator / denominator; ranges give two rows (low, high).
SEED004_RELATIVE = [
    {
        "sec": "IV-A, text on Fig. 3",
        "hw": HOPPER,
        "model": FIG3_MODELS,
        "precision": "fp8;bf16",
        "metric": "total_throughput",
        "values": ("1.20", "1.38"),
        "ratio": "W8A8 fp8 / bf16 throughput, same GPU, model and batch (batch 16-128)",
        "quote": "on NVIDIA Hopper GPUs, W8A8 delivers substantial gains, with throughput "
        "increasing by 20-38%",
    },
    {
        "sec": "IV-A, text on Fig. 3",
        "hw": HOPPER,
        "model": FIG3_MODELS,
        "precision": "fp8;bf16",
        "metric": "total_tokens_per_joule",
        "values": ("1.34", "1.46"),
        "ratio": "W8A8 fp8 / bf16 tokens per joule",
        "quote": "and energy efficiency by 34-46%",
    },
    {
        "sec": "IV-A, text on Fig. 3",
        "hw": MI300X,
        "model": L8B,
        "precision": "fp8;bf16",
        "metric": "total_throughput",
        "values": ("1.00",),
        "ratio": "W8A8 fp8 / bf16 throughput",
        "quote": "throughput shows no gain on Llama 8B",
    },
    {
        "sec": "IV-A, text on Fig. 3",
        "hw": MI300X,
        "model": ("mistral-small-3.1-24b", "Mistral Small 24B"),
        "precision": "fp8;bf16",
        "metric": "total_throughput",
        "values": ("1.20",),
        "ratio": "W8A8 fp8 / bf16 throughput, maximum ('up to')",
        "quote": "but reaches up to 20% on Mistral Small 24B",
    },
    {
        "sec": "IV-A, text on Fig. 3",
        "hw": MI300X,
        "model": FIG3_MODELS,
        "precision": "fp8;bf16",
        "metric": "total_tokens_per_joule",
        "values": ("1.16", "1.35"),
        "ratio": "W8A8 fp8 / bf16 tokens per joule",
        "quote": "Energy-efficiency gains ... ranging from 16-35%",
    },
    {
        "sec": "IV-A, takeaway box",
        "hw": HOPPER,
        "model": FIG3_MODELS,
        "precision": "fp8;bf16",
        "metric": "total_throughput",
        "values": ("1.44",),
        "ratio": "W8A8 fp8 / bf16 throughput, maximum ('up to'); the text above says 20-38%",
        "quote": "NVIDIA Hopper GPUs gain the most from FP8 quantization (up to 44% throughput and "
        "47% energy efficiency)",
    },
    {
        "sec": "IV-A, takeaway box",
        "hw": HOPPER,
        "model": FIG3_MODELS,
        "precision": "fp8;bf16",
        "metric": "total_tokens_per_joule",
        "values": ("1.47",),
        "ratio": "W8A8 fp8 / bf16 tokens per joule, maximum ('up to'); the text above says 34-46%",
        "quote": "(up to 44% throughput and 47% energy efficiency)",
    },
    {
        "sec": "IV-B, text on Fig. 4",
        "hw": NODES,
        "model": TEN,
        "precision": "bf16",
        "layout": "tp2;tp1",
        "metric": "total_throughput",
        "values": ("1.12", "1.34"),
        "ratio": "TP2 instance / TP1 instance throughput; scaling efficiency at most 67% = 1.34/2",
        "quote": "Configurations with tensor parallel size 2 achieve throughput improvements from "
        "12% to 34% compared to single-GPU baselines",
    },
    {
        "sec": "IV-B, text on Fig. 4",
        "hw": NODES,
        "model": TEN,
        "precision": "bf16",
        "layout": "tp4;tp1",
        "metric": "total_throughput",
        "values": ("1.32", "2.40"),
        "ratio": "TP4 instance / TP1 instance throughput; scaling efficiency at most 60% = 2.40/4",
        "quote": "while tensor parallel size 4 yields gains of 32% to 140%",
    },
    {
        "sec": "IV-B, text on Fig. 5",
        "hw": H100,
        "model": ("llama-4-scout;llama-3.3-70b", "Llama 4 Scout vs Llama 3 70B"),
        "precision": "fp8",
        "scope": "per_device",
        "metric": "total_throughput",
        "values": ("1.17",),
        "ratio": "Llama 4 Scout / Llama 3.3 70B throughput per GPU, best parallel configuration "
        "each ('Llama 3 70B' read as Table II's Llama 3.3 70B)",
        "quote": "Llama 4 Scout, despite its 109B total parameters, delivers 17% higher throughput "
        "and 52% better energy efficiency than the smaller Llama 3 70B on NVIDIA H100",
    },
    {
        "sec": "IV-B, text on Fig. 5",
        "hw": H100,
        "model": ("llama-4-scout;llama-3.3-70b", "Llama 4 Scout vs Llama 3 70B"),
        "precision": "fp8",
        "metric": "total_tokens_per_joule",
        "values": ("1.52",),
        "ratio": "Llama 4 Scout / Llama 3.3 70B tokens per joule, best parallel configuration each",
        "quote": "and 52% better energy efficiency than the smaller Llama 3 70B on NVIDIA H100",
    },
]
_TPEP = "Tensor Parallelism TP4 / Expert Parallelism EP4 (single instance, 4 GPUs, FP8)"
for _hw, _m, _metric, _v, _q in (
    (
        MI300X,
        ("qwen3-235b-a22b", "Qwen3 235B A22B"),
        "total_throughput",
        "1.16",
        "Qwen3 (128 experts) shows only modest gains under Tensor Parallelism (16% on MI300x and "
        "4% on H100 for throughput, with 18% and 2% efficiency improvements)",
    ),
    (
        H100,
        ("qwen3-235b-a22b", "Qwen3 235B A22B"),
        "total_throughput",
        "1.04",
        "(16% on MI300x and 4% on H100 for throughput",
    ),
    (
        MI300X,
        ("qwen3-235b-a22b", "Qwen3 235B A22B"),
        "total_tokens_per_joule",
        "1.18",
        "with 18% and 2% efficiency improvements",
    ),
    (
        H100,
        ("qwen3-235b-a22b", "Qwen3 235B A22B"),
        "total_tokens_per_joule",
        "1.02",
        "with 18% and 2% efficiency improvements",
    ),
    (
        MI300X,
        ("llama-4-scout", "Llama4 Scout"),
        "total_throughput",
        "1.06",
        "Llama4 Scout (16 experts) benefits more substantially, reaching up to 6% higher "
        "throughput on MI300x and 34% on H100",
    ),
    (
        H100,
        ("llama-4-scout", "Llama4 Scout"),
        "total_throughput",
        "1.34",
        "reaching up to 6% higher throughput on MI300x and 34% on H100",
    ),
    (
        H100,
        ("mixtral-8x22b", "Mixtral 8x22B"),
        "total_throughput",
        "1.61",
        "Tensor Parallelism outperforming Expert Parallelism by 61% on H100 and up to 2.7x on "
        "MI300x in throughput",
    ),
    (
        MI300X,
        ("mixtral-8x22b", "Mixtral 8x22B"),
        "total_throughput",
        "2.7",
        "and up to 2.7x on MI300x in throughput",
    ),
    (
        MI300X,
        ("mixtral-8x22b", "Mixtral 8x22B"),
        "total_tokens_per_joule",
        "2.0",
        "alongside roughly two-fold efficiency gains on MI300x and 60% on H100",
    ),
    (
        H100,
        ("mixtral-8x22b", "Mixtral 8x22B"),
        "total_tokens_per_joule",
        "1.60",
        "alongside roughly two-fold efficiency gains on MI300x and 60% on H100",
    ),
):
    SEED004_RELATIVE.append(
        {
            "sec": "IV-B, text on Fig. 6",
            "hw": _hw,
            "model": _m,
            "precision": "fp8",
            "layout": "tp4;tp1-ep4",
            "metric": _metric,
            "values": (_v,),
            "ratio": f"{_TPEP}; batch sizes not stated ('multiple')",
            "quote": _q,
        }
    )
SEED004_RELATIVE += [
    {
        "sec": "IV-C, text on Fig. 8",
        "hw": ("cs-3;a100-sxm-80g", "Cerebras CS3 vs NVIDIA A100"),
        "model": L8B,
        "precision": "bf16",
        "batch": 1,
        "metric": "tpot",
        "values": ("18.8",),
        "ratio": "A100 ITL / CS-3 ITL (ITL 18.8x lower on CS-3)",
        "quote": "the Cerebras CS3 achieves an 18.8x lower ITL compared to the NVIDIA A100",
    },
    {
        "sec": "IV-C, text on Fig. 8",
        "hw": ("sn40l;a100-sxm-80g", "SambaNova SN40L vs NVIDIA A100"),
        "model": L8B,
        "precision": "bf16",
        "batch": 1,
        "metric": "tpot",
        "values": ("13.1",),
        "ratio": "A100 ITL / SN40L ITL",
        "quote": "while SambaNova shows a 13.1x improvement",
    },
    {
        "sec": "IV-C, text on Fig. 8",
        "hw": ("cs-3;a100-sxm-80g", "Cerebras CS3 vs NVIDIA A100"),
        "model": L8B,
        "precision": "bf16",
        "batch": 1,
        "metric": "ttft",
        "values": ("1.35",),
        "ratio": "A100 TTFT / CS-3 TTFT, reading '35% improvement' as 1.35; the text could also "
        "mean CS-3 TTFT 35% lower (ratio 1/0.65 = 1.54)",
        "quote": "However, the improvement in TTFT is only 35% for Cerebras and 20% for SambaNova",
    },
    {
        "sec": "IV-C, text on Fig. 8",
        "hw": ("sn40l;a100-sxm-80g", "SambaNova SN40L vs NVIDIA A100"),
        "model": L8B,
        "precision": "bf16",
        "batch": 1,
        "metric": "ttft",
        "values": ("1.20",),
        "ratio": "A100 TTFT / SN40L TTFT, reading '20% improvement' as 1.20; the text could also "
        "mean SN40L TTFT 20% lower (ratio 1/0.8 = 1.25)",
        "quote": "the improvement in TTFT is only 35% for Cerebras and 20% for SambaNova",
    },
    {
        "sec": "V (Discussion)",
        "hw": ("cs-3;sn40l;a100-sxm-80g", "dataflow accelerators vs GPUs"),
        "model": L8B,
        "precision": "bf16",
        "metric": "tpot",
        "values": ("16.8",),
        "ratio": "GPU ITL / dataflow ITL, maximum ('up to'); conflicts with IV-C's 18.8x (16.8x is "
        "IV-C's batch-1 throughput ratio CS-3/A100)",
        "quote": "Dataflow accelerators mitigate this limitation by improving data locality "
        "through on-chip SRAM, reducing ITL by up to 16.8x",
    },
    {
        "sec": "IV-C, energy paragraph",
        "hw": CS3,
        "model": L8B,
        "precision": "bf16",
        "unit": "W",
        "metric": "power",
        "values": ("4500",),
        "ratio": "CS-3 power during inference minus idle power (a difference in W, not a ratio)",
        "quote": "the idle power consumption of the Cerebras CS-3 is only about 4,500 W lower than "
        "during inference",
    },
]


def seed004() -> list[dict[str, str]]:
    out = []
    n = 0
    for d in SEED004_ABSOLUTE:
        n += 1
        hw, hw_raw = d["hw"]
        model, model_raw = d["model"]
        skip = ["lengths", *d.get("skip", ())]
        unit = {
            "total_throughput": "tokens/s",
            "ttft": "s",
            "tpot": "s",
            "power": "W",
            "total_tokens_per_joule": "tokens/J",
        }[d["metric"]]
        tp, dp = d.get("tp"), d.get("dp")
        layout = layout_name(tp, None, None, dp) if tp else ""
        prec = d.get("precision", "bf16")
        notes = [d["note"]]
        if "precision" not in d and "precision:" not in d["note"]:
            if d["sec"].startswith("IV-C") and model == "llama-3.1-8b":
                notes.append(
                    "bf16 stated (IV-C: 'All the experiments are done using Llama 3.1 8B "
                    "with bfloat16 precision')"
                )
            else:
                notes.append("precision not restated for this value: bf16 is the paper's default")
        notes.append(S4_COMMON)
        out.append(
            row(
                id=f"seed004-{n:03d}",
                source_file=F_SEED004,
                source=f'{S4}, Sec. {d["sec"]}: "{d["quote"]}"',
                hardware=hw,
                hardware_raw=hw_raw,
                devices=d.get("devices"),
                tp=tp,
                dp=dp,
                layout=layout,
                model=model,
                model_raw=model_raw,
                precision=prec,
                batch=d.get("batch"),
                metric=d["metric"],
                value=d["value"],
                unit=unit,
                scope=d.get("scope", "per_system"),
                statistic=d.get("statistic", "as_published"),
                usable="no",
                skip_reason=reasons(*skip),
                mapping_note="; ".join(notes),
            )
        )
    for d in SEED004_RELATIVE:
        hw, hw_raw = d["hw"]
        model, model_raw = d["model"]
        vals = d["values"]
        for k, v in enumerate(vals):
            n += 1
            which = ""
            if len(vals) == 2:
                which = ("lower" if k == 0 else "upper") + " end of the stated range; "
            out.append(
                row(
                    id=f"seed004-{n:03d}",
                    source_file=F_SEED004,
                    source=f'{S4}, Sec. {d["sec"]}: "{d["quote"]}"',
                    hardware=hw,
                    hardware_raw=hw_raw,
                    layout=d.get("layout", ""),
                    model=model,
                    model_raw=model_raw,
                    precision=d["precision"],
                    batch=d.get("batch"),
                    metric=d["metric"],
                    value=v,
                    unit=d.get("unit", "ratio"),
                    scope=d.get("scope", "per_system"),
                    statistic="as_published",
                    usable="no",
                    skip_reason=reasons("relative"),
                    mapping_note=f"{which}value = {d['ratio']}; {S4_COMMON}",
                )
            )
    return out


# ------------------------------------------------------------------------------------------------
# schema validation and summary


def validate(rows: list[dict[str, str]], schema: dict) -> list[str]:
    """Every problem with ``rows`` against ``schema.toml`` (empty list when valid)."""
    cols = schema["columns"]
    problems = []
    if tuple(cols) != COLUMNS:
        problems.append(f"schema column order {tuple(cols)} != script {COLUMNS}")
    seen = set()
    for r in rows:
        rid = r.get("id", "?")
        if list(r) != list(COLUMNS):
            problems.append(f"{rid}: columns {list(r)} != {list(COLUMNS)}")
            continue
        if rid in seen:
            problems.append(f"{rid}: duplicate id")
        seen.add(rid)
        is_rel = REASONS["relative"] in r["skip_reason"]
        for name, spec in cols.items():
            val = r[name]
            if val == "":
                if spec.get("required", False):
                    problems.append(f"{rid}: {name} is required")
                continue
            if "separator" in spec:
                items = val.split(spec["separator"])
            elif is_rel and spec.get("list_in_relative", False):
                items = val.split(";")
            else:
                items = [val]
            for item in items:
                typ = spec["type"]
                if typ == "integer":
                    if not item.isdigit() or int(item) < 1:
                        problems.append(f"{rid}: {name}={item!r} is not a positive integer")
                elif typ == "integer_or_max":
                    if item != "max" and (not item.isdigit() or int(item) < 1):
                        problems.append(
                            f"{rid}: {name}={item!r} is not a positive integer or 'max'"
                        )
                elif typ == "layout":
                    if not LAYOUT_RE.match(item):
                        problems.append(f"{rid}: {name}={item!r} is not a layout name")
                elif typ == "number":
                    try:
                        if Decimal(item) <= 0:
                            problems.append(f"{rid}: {name}={item!r} is not positive")
                    except ArithmeticError:
                        problems.append(f"{rid}: {name}={item!r} is not a number")
                if (
                    "allowed" in spec
                    and item not in spec["allowed"]
                    and not (spec.get("raw_allowed", False))
                ):
                    problems.append(f"{rid}: {name}={item!r} not in {spec['allowed']}")
        # cross-field rules
        unit_of = schema["metric_units"]
        if not is_rel and r["unit"] != unit_of[r["metric"]]:
            problems.append(f"{rid}: unit {r['unit']!r} does not match metric {r['metric']!r}")
        if r["usable"] == "yes" and r["skip_reason"]:
            problems.append(f"{rid}: usable row has a skip_reason")
        if r["usable"] == "no" and not r["skip_reason"]:
            problems.append(f"{rid}: unusable row has no skip_reason")
        for part in filter(None, r["skip_reason"].split("; ")):
            if part not in REASONS.values():
                problems.append(f"{rid}: unknown skip reason {part!r}")
        if r["usable"] == "yes":
            for need in ("hardware", "model", "precision", "layout", "batch", "context", "devices"):
                if not r[need]:
                    problems.append(f"{rid}: usable row without {need}")
            if r["metric"] != "ttft" and not r["output_len"]:
                problems.append(f"{rid}: usable {r['metric']} row without output_len")
            if r["hardware"] not in CATALOG_HARDWARE:
                problems.append(f"{rid}: usable row on non-catalog hardware {r['hardware']!r}")
            if CATALOG_MODELS and r["model"] not in CATALOG_MODELS:
                problems.append(f"{rid}: usable row on non-catalog model {r['model']!r}")
        if r["devices"] and r["tp"]:
            deg = 1
            for k in ("tp", "pp", "ep", "dp"):
                deg *= int(r[k] or 1)
            if deg != int(r["devices"]):
                problems.append(f"{rid}: devices {r['devices']} != tp*pp*ep*dp {deg}")
    return problems


def catalog_warnings(schema: dict) -> list[str]:
    """Differences between schema.toml's id lists and the project catalogs (when present)."""
    out = []
    hw_dir = REPO / "grids" / "data" / "hardware"
    hw_files = {p.stem for p in hw_dir.glob("*.toml")} if hw_dir.is_dir() else set()
    if hw_files:
        missing = sorted(set(CATALOG_HARDWARE) - hw_files)
        if missing:
            out.append(
                f"hardware ids in schema.toml without grids/data/hardware/<id>.toml: {missing}"
            )
    else:
        out.append("grids/data/hardware/ has no device files yet: hardware ids not cross-checked")
    schema_models = set(schema["columns"]["model"]["allowed"])
    if CATALOG_MODELS and schema_models != CATALOG_MODELS:
        out.append(
            f"schema.toml model ids differ from catalog.toml: only in schema "
            f"{sorted(schema_models - CATALOG_MODELS)}, only in catalog "
            f"{sorted(CATALOG_MODELS - schema_models)}"
        )
    return out


SOURCE_NAMES = {
    "trtllm090": "TensorRT-LLM v0.9.0",
    "trtllm10": "TensorRT-LLM v1.0",
    "neuron": "AWS Neuron",
    "seed004": "seed 004",
}


def source_of(rid: str) -> str:
    prefix = rid.split("-")[0]
    return SOURCE_NAMES.get(prefix, prefix)


def summary(rows: list[dict[str, str]]) -> str:
    """Markdown tables of row counts (pasted into docs/measurements.md)."""
    lines = []
    by_src = collections.defaultdict(collections.Counter)
    reason_count = collections.defaultdict(collections.Counter)
    metric_count = collections.defaultdict(collections.Counter)
    for r in rows:
        s = source_of(r["id"])
        by_src[s][r["usable"]] += 1
        if r["usable"] == "yes":
            metric_count[s][r["metric"]] += 1
        for part in filter(None, r["skip_reason"].split("; ")):
            reason_count[s][part] += 1
    order = [s for s in SOURCE_NAMES.values() if s in by_src]
    order += sorted(set(by_src) - set(order))
    lines += [
        "| source | rows | usable | skipped | usable rows by metric |",
        "|---|---:|---:|---:|---|",
    ]
    tot = collections.Counter()
    for s in order:
        c = by_src[s]
        tot.update(c)
        mc = ", ".join(f"{m} {n}" for m, n in sorted(metric_count[s].items())) or "-"
        lines.append(f"| {s} | {c['yes'] + c['no']} | {c['yes']} | {c['no']} | {mc} |")
    lines.append(f"| **total** | {tot['yes'] + tot['no']} | {tot['yes']} | {tot['no']} | |")
    lines += [
        "",
        "Skipped rows by reason (a row with several reasons counts under each):",
        "",
        "| reason | " + " | ".join(order) + " | total |",
        "|---|" + "---:|" * (len(order) + 1),
    ]
    for reason in REASONS.values():
        counts = [reason_count[s][reason] for s in order]
        if sum(counts):
            lines.append(
                f"| {reason} | " + " | ".join(str(c) for c in counts) + f" | {sum(counts)} |"
            )
    combo = collections.Counter(r["skip_reason"] for r in rows if r["usable"] == "no")
    lines += [
        "",
        "Skipped rows by full reason combination:",
        "",
        "| skip_reason | rows |",
        "|---|---:|",
    ]
    for reason, c in combo.most_common():
        lines.append(f"| {reason} | {c} |")
    return "\n".join(lines)


def neuron_consistency(path: Path) -> str:
    """How the Neuron output tokens/s relates to batch / tpot_p50 (printed for the docs)."""
    with path.open(newline="") as fh:
        src = list(csv.DictReader(fh))
    ratios = [
        float(r["output_tokens_per_s"]) * float(r["tpot_p50_ms"]) / 1000 / int(r["batch_size"])
        for r in src
    ]
    return (
        f"Neuron output_tokens_per_s / (batch / tpot_p50): min {min(ratios):.2f}, "
        f"max {max(ratios):.2f} over {len(ratios)} source rows"
    )


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--inputs",
        type=Path,
        default=DEFAULT_INPUTS,
        help="directory holding the three source CSVs (default: %(default)s)",
    )
    ap.add_argument("--out", type=Path, default=OUT_CSV, help="output CSV (default: %(default)s)")
    ap.add_argument(
        "--check",
        nargs="?",
        type=Path,
        const=OUT_CSV,
        metavar="CSV",
        help="only validate CSV (default: the shipped measurements.csv) against schema.toml "
        "and print its summary; use it on your own file in the same schema",
    )
    args = ap.parse_args(argv)
    schema = load_schema()

    if args.check:
        rows = read_csv(args.check)
    else:
        missing = [f for f in EXPECTED_SOURCE_ROWS if not (args.inputs / f).is_file()]
        if missing:
            print(
                f"error: missing inputs in {args.inputs}: {', '.join(missing)}. The shipped "
                f"{args.out.name} is left unchanged; pass --inputs DIR, or --check to validate "
                f"the shipped file.",
                file=sys.stderr,
            )
            return 2
        parts = {
            F_V090: trtllm_v090(args.inputs / F_V090),
            F_V10: trtllm_v10(args.inputs / F_V10),
            F_NEURON: neuron(args.inputs / F_NEURON),
        }
        for f, expected in EXPECTED_SOURCE_ROWS.items():
            n_src = len(read_csv(args.inputs / f))
            if n_src != expected:
                print(f"warning: {f} has {n_src} rows, README says {expected}", file=sys.stderr)
        rows = [r for f in (F_V090, F_V10, F_NEURON) for r in parts[f]] + seed004()

    for w in catalog_warnings(schema):
        print(f"note: {w}", file=sys.stderr)
    problems = validate(rows, schema)
    if problems:
        print(f"{len(problems)} schema problems:", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    if not args.check:
        tmp = args.out.with_suffix(".csv.tmp")
        with tmp.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        tmp.replace(args.out)
        print(f"wrote {len(rows)} rows to {args.out}")
        print(neuron_consistency(args.inputs / F_NEURON))
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
