"""Result blocks of vLLM's serving and throughput benchmarks (``vllm bench serve`` /
``benchmark_serving.py``, ``vllm bench throughput``), with which vLLM, SGLang and TensorRT-LLM
servers are all measured, as printed in public docs, blogs and pull requests: one raw row per printed
run (columns and rules: docs/measurements.md, "Benchmark result blocks"). Two transcriptions:

* :class:`GPUStack`: GPUStack's Performance Lab pages (github.com/gpustack/gpustack,
  docs/performance-lab/): each engine's runs on H100, H200 and A100 (vLLM 0.10.2-0.11.0 with the
  V1 engine, SGLang 0.5.3-0.5.5, TensorRT-LLM 1.0 and 1.2.0rc1), ShareGPT and fixed-length random prompts;
* :class:`VLLMProject`: runs of vLLM's V1 engine on NVIDIA printed in vllm-project pull requests,
  issues and the vLLM blog.

Before these the shipped measurements had no vLLM row of the V1 engine on NVIDIA (the APEX+ and
dstack rows are V0 releases, 0.6.x), so the default build ``vllm`` inherited the V0 rows' host costs
there (docs/validation.md, "Calibrating by build"). Each raw row becomes the tidy rows of what it
prints:

* serving runs: output and total tokens/s, mean/median/p99 TTFT, TPOT and ITL (as dstack's serving
  rows: medians, ITL and total tokens/s repeat a kept quantity; p99 is a tail; TTFT at an unlimited
  rate is queueing); all requests at an unlimited rate = maximum load, a fixed ``--max-concurrency``
  = a closed loop at that concurrency (``online``, the measured request throughput as the rate);
* offline throughput runs (all prompts submitted at once): total and output tokens/s of a static
  batch of ``num_prompts`` (or maximum load when ``--max-num-seqs`` is below it).
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

from scripts.measurements.common import Converted, fmt, num, read_raw, round_half_up
from scripts.measurements.row_builder import RowBuilder
from scripts.measurements.serving_block import serving_rows

#: printed model -> catalog id
MODELS = {
    "Qwen/Qwen3-8B": "qwen3-8b",
    "Qwen/Qwen3-8B-FP8": "qwen3-8b",
    "Qwen/Qwen3-14B": "qwen3-14b",
    "Qwen/Qwen3-14B-FP8": "qwen3-14b",
    "Qwen/Qwen3-14B-AWQ": "qwen3-14b",
    "Qwen/Qwen3-32B": "qwen3-32b",
    "Qwen/Qwen3-32B-FP8": "qwen3-32b",
    "Qwen/Qwen3-32B-AWQ": "qwen3-32b",
    "Qwen/Qwen3-30B-A3B": "qwen3-30b-a3b",
    "Qwen/Qwen3-235B-A22B-Instruct-2507": "qwen3-235b-a22b",
    "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8": "qwen3-235b-a22b",
    "deepseek-ai/DeepSeek-R1-0528": "deepseek-r1",
    "deepseek-ai/DeepSeek-R1": "deepseek-r1",
    "deepseek-ai/DeepSeek-V3": "deepseek-v3",
    "openai/gpt-oss-120b": "gpt-oss-120b",
    "openai/gpt-oss-20b": "gpt-oss-20b",
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "meta-llama/Meta-Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "meta-llama/Llama-3.1-8B": "llama-3.1-8b",
    "meta-llama/Llama-3.1-70B-Instruct": "llama-3.1-70b",
    "meta-llama/Meta-Llama-3.1-70B-Instruct": "llama-3.1-70b",
    "meta-llama/Llama-3.3-70B-Instruct": "llama-3.3-70b",
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": "llama-4-scout",
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8": "llama-4-maverick",
    "mistralai/Mistral-7B-Instruct-v0.3": "mistral-7b",
    "mistralai/Mixtral-8x7B-Instruct-v0.1": "mixtral-8x7b",
    "Qwen/Qwen2.5-7B-Instruct": "qwen2.5-7b",
    "Qwen/Qwen2.5-72B-Instruct": "qwen2.5-72b",
}
#: models printed without their Hugging Face id: (printed, catalog id, note)
SHORT_MODELS = {
    "Llama-3.1-8B (as printed)": ("llama-3.1-8b", "printed 'Llama-3.1-8B' without a checkpoint id"),
    "gpt-oss-20b (as printed)": ("gpt-oss-20b", "printed 'gpt-oss-20b' without a checkpoint id"),
    "gpt-oss-120b (openai/gpt-oss-120b)": ("gpt-oss-120b", "served as gpt-oss-120b from openai/gpt-oss-120b"),
}
#: (pattern over the printed GPU, catalog id, note)
GPUS = (
    (re.compile(r"GH200"), "gh200", ""),
    (re.compile(r"GB200"), "gb200", ""),
    (re.compile(r"B200"), "b200", ""),
    (re.compile(r"H200"), "h200-sxm", "printed H200: the SXM part (141 GB)"),
    (re.compile(r"H100.*(PCIe|PCIE)"), "h100-pcie", ""),
    (re.compile(r"H100.*NVL"), "h100-nvl", ""),
    (re.compile(r"H100"), "h100-sxm", "printed H100 (SXM or 80GB HBM3): the SXM part"),
    (re.compile(r"A100.*40\s*GB"), "a100-sxm-40g", ""),
    (re.compile(r"A100"), "a100-sxm-80g", "printed A100 (SXM / 80GB): the SXM 80 GB part"),
    (re.compile(r"L40S"), "l40s", ""),
)


def _hardware(gpu: str) -> tuple[str, str]:
    for pat, hw, note in GPUS:
        if pat.search(gpu):
            return hw, note
    return gpu.strip().lower(), ""


def _model(printed: str) -> tuple[str, str]:
    if printed in MODELS:
        return MODELS[printed], ""
    if printed in SHORT_MODELS:
        return SHORT_MODELS[printed]
    return printed.strip().lower(), ""


def _precision(model: str, prec: str, kv: str) -> tuple[str, str, list[str]]:
    """(scheme, note, skip keys) from the printed precision and KV cache dtype."""
    p, k = prec.lower(), kv.lower()
    if "mxfp4" in p or model.startswith("gpt-oss"):
        return (
            "",
            f"printed '{prec}': MXFP4 expert weights with 16-bit attention and activations is no "
            "catalog scheme",
            ["precision_mixed"],
        )
    if "awq" in p or "gptq" in p:
        base = "w4a16"
    else:
        base = "fp8" if "fp8" in p else "bf16"
    kv8 = "fp8" in k
    scheme = f"{base}-kv8" if kv8 else base
    note = f"printed '{prec}', KV cache '{kv or 'not stated'}' -> {scheme}"
    if not kv8 and not k.startswith(("auto", "bf16")) and k:
        note += " (KV in the model dtype)"
    return scheme, note, []


#: a length printed as a centre and a spread, e.g. "~20000 (+-15%)"
APPROX_RE = re.compile(r"^~\s*(\d+)\s*\(\+-\s*\d+%\)$")


def _lengths(r: dict[str, str]) -> tuple[int | None, int | None, str]:
    """(context, output, note): the random dataset's lengths, else the run's mean tokens per
    request from its totals."""
    done = r["completed"] or r["num_prompts"]
    if r["total_input_tokens"] and r["total_output_tokens"] and done:
        n = Decimal(done)
        isl = round_half_up(Decimal(r["total_input_tokens"]) / n)
        osl = round_half_up(Decimal(r["total_output_tokens"]) / n)
        return isl, osl, (
            f"context/output = mean tokens per request {r['total_input_tokens']} / {done} and "
            f"{r['total_output_tokens']} / {done}, rounded ({r['dataset']} prompts)"
        )
    if r["input_len"].isdigit() and r["output_len"].isdigit():
        return int(r["input_len"]), int(r["output_len"]), f"{r['dataset']} dataset, fixed lengths"
    about = [APPROX_RE.match(r[c]) for c in ("input_len", "output_len")]
    if all(about):
        isl, osl = (int(m.group(1)) for m in about if m)
        return isl, osl, (
            f"lengths printed as '{r['input_len']}' / '{r['output_len']}': spread evenly about "
            f"{isl} / {osl} tokens, whose means these are"
        )
    return None, None, f"lengths printed as '{r['input_len']}' / '{r['output_len']}'"


#: what identifies one printed run: a second raw row equal in all of these is the same block
#: printed again (e.g. in two sections of a page)
DUP_KEY = ("engine", "model", "gpu", "tp", "precision", "other_flags", "duration_s",
           "output_tokens_per_s", "mean_ttft_ms", "mean_tpot_ms")


def _nondefault(r: dict[str, str]) -> list[str]:
    """Engine options of the run that the build's defaults do not describe (a quantized
    checkpoint is a precision, not an engine option)."""
    flags = f"{r['other_flags']} {r['notes']}".lower()
    out = [
        f for f in ("--async-scheduling", "--enforce-eager", "speculative", "--gpu-memory-utilization")
        if f in flags
    ]
    option = r["other_flags"].split(";")[0]
    if option.startswith("option:") and "checkpoint" not in option and not out:
        out.append(option.removeprefix("option:").strip())
    return out


def _convert(path: Path, rows_builder: RowBuilder) -> Converted:
    raw = read_raw(path)
    out = []
    first: dict[tuple[str, ...], int] = {}
    for i, r in enumerate(raw, 1):
        hw, hw_note = _hardware(r["gpu"])
        model, m_note = _model(r["model"])
        prec, p_note, skip = _precision(model, r["precision"], r["kv_cache_dtype"])
        isl, osl, l_note = _lengths(r)
        if isl is None:
            skip.append("lengths")
        tp = int(r["tp"]) if r["tp"] else None
        pp = int(r["pp"]) if r["pp"] and r["pp"] != "1" else None
        dp = int(r["dp"]) if r["dp"] and r["dp"] != "1" else None
        odd = _nondefault(r)
        if odd:
            skip.append("options")
        printed = tuple(r[c] for c in DUP_KEY)
        dup_of = first.setdefault(printed, i)
        if dup_of != i:
            skip.append("dup")
        notes = [
            hw_note,
            m_note,
            p_note,
            l_note,
            _version_note(r),
            f"run options outside the build's defaults: {', '.join(odd)}" if odd else "",
            f"printed flags: {r['other_flags']}" if r["other_flags"] else "",
            f"source note: {r['notes']}" if r["notes"] else "",
            f"the same run as raw row {dup_of} (identical block printed twice)" if dup_of != i else "",
        ]
        point = rows_builder.point(
            r,
            engine=r["engine"],
            hardware=hw,
            devices=tp * (pp or 1) * (dp or 1) if tp else (int(r["n_gpus"]) if r["n_gpus"] else None),
            tp=tp,
            pp=pp,
            dp=dp,
            model=model,
            precision=prec or None,
            context=isl,
            output_len=osl,
            skip=skip,
            notes=notes,
        )
        source = f"{r['source_url']} ({r['benchmark']}; printed: \"{r['quote']}\")"
        if "throughput" in r["benchmark"] and "serve" not in r["benchmark"]:
            out += _offline(point, i, r, source)
        else:
            out += _serving(point, i, r, source)
    return Converted(
        out,
        len(raw),
        folded={"request throughput folded into the notes": sum(1 for r in raw if r["request_throughput"])},
        accounting=(
            f"{len(raw)} raw rows -> {len(out)} tidy rows: per serving run its output and total tokens/s "
            "and the mean/median/p99 TTFT, TPOT and ITL it prints; per offline run its total and output "
            "tokens/s; the request throughput is folded into the notes."
        ),
    )


def _serving(point: RowBuilder, i: int, r: dict[str, str], source: str) -> list[dict[str, str]]:
    rate_text = r["request_rate"].strip().lower()
    notes: list[str] = []
    burst: list[str] = []
    if r["max_concurrency"]:
        conc = int(r["max_concurrency"])
        if r["request_throughput"]:
            rate = Decimal(r["request_throughput"])
            how = "the measured request throughput"
        else:
            rate = Decimal(r["output_tokens_per_s"]) / Decimal(point.cols["output_len"] or 1)
            how = "output tokens/s over the output tokens per request"
        load, batch, cap, req = "online", conc, None, fmt(rate.quantize(Decimal("0.0001")))
        notes.append(
            f"closed loop at --max-concurrency {conc}: batch = {conc} in flight, request rate = {how} "
            f"({req} req/s)"
        )
    elif rate_text in ("inf", ""):
        load, batch, req = "max_load", None, None
        burst.append("burst")
        cap = int(r["max_num_seqs"]) if r["max_num_seqs"] else None
        notes.append(
            f"{r['num_prompts'] or r['completed']} prompts at an unlimited request rate (the "
            f"benchmark's default{'' if rate_text else ', not printed'}): maximum load, batch_cap = "
            f"{'max_num_seqs ' + r['max_num_seqs'] if cap else 'the build default max_num_seqs'}"
        )
    else:  # an open-loop rate needs the run's mean e2e (Little's law), which blocks do not print
        raise ValueError(f"raw row {i}: request rate {r['request_rate']!r} without --max-concurrency: "
                         "an open-loop run is not converted (no tidy row would say so)")
    if r["request_throughput"]:
        notes.append(f"measured request throughput {r['request_throughput']} req/s (folded into this note)")
    run = point.point(
        source=source, load=load, batch=batch, batch_cap=cap, request_rate=req, skip=burst, notes=notes
    )
    return serving_rows(run, i, r, load, own_rate=bool(r["max_concurrency"]))


def _offline(point: RowBuilder, i: int, r: dict[str, str], source: str) -> list[dict[str, str]]:
    n = int(r["num_prompts"])
    cap = int(r["max_num_seqs"]) if r["max_num_seqs"] else None
    if cap and cap < n:
        load, batch = "max_load", None
        note = f"{n} prompts submitted at once with --max-num-seqs {cap}: maximum load at that cap"
    else:
        load, batch = "static", n
        note = (
            f"all {n} prompts submitted at once: a static batch when the KV cache holds them all (the "
            "model checks the fit)"
        )
    burst = ["burst"]
    run = point.point(source=source, load=load, batch=batch, batch_cap=cap, skip=burst, notes=[note])
    rows = []
    if r["output_tokens_per_s"]:
        rows.append(run.row(i, "throughput", num(r["output_tokens_per_s"]), suffix="throughput"))
    if r["total_tokens_per_s"]:
        rows.append(
            run.row(
                i,
                "total_throughput",
                num(r["total_tokens_per_s"]),
                suffix="total_throughput",
                skip="repeat" if r["output_tokens_per_s"] else (),
                notes="the output tokens/s row is kept" if r["output_tokens_per_s"] else (),
            )
        )
    return rows


def _version_note(r: dict[str, str]) -> str:
    text = f"{r['engine']} {r['vllm_version']} ({r['version_evidence']})"
    if r["engine"] == "vllm":
        text += f"; V1 engine: {r['v1_evidence']}"
    return text


def _rows(key: str, file: str) -> RowBuilder:
    return RowBuilder(
        key,
        file,
        printed={
            "hardware_raw": "{gpu}",
            "model_raw": "{model}",
            "engine_version": "{vllm_version}",
            "publisher": "{publisher}",
        },
    )


class _Blocks:
    """A transcription of result blocks: what the build needs of a source (its key, input, name,
    raw row count and converter)."""

    KEY = FILE = NAME = ""
    RAW_ROWS = 0

    @classmethod
    def convert(cls, path: Path) -> Converted:
        return _convert(path, _rows(cls.KEY, cls.FILE))


class GPUStack(_Blocks):
    KEY = "gpustack"
    FILE = "gpustack_performance_lab.csv"
    NAME = "GPUStack Performance Lab"
    RAW_ROWS = 138


class VLLMProject(_Blocks):
    KEY = "vllmv1"
    FILE = "vllm_project_v1_nvidia.csv"
    NAME = "vLLM V1 on NVIDIA (vllm-project PRs, issues, blog)"
    RAW_ROWS = 13
