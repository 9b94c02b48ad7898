"""``dstackai/benchmarks``: Llama-3.1-405B FP8 on 8x H100 SXM5 and 8x/4x MI300X with vLLM.

Two transcriptions, two converters:

* offline (``benchmark_throughput.py``, ``num_prompts`` requests submitted at once = a static batch):
  each raw row gives input+output tokens/s (published) and output tokens/s (derived from the same
  run: batch x OSL / elapsed), two tidy rows;
* serving (``benchmark_serving.py`` on ShareGPT, 1000 prompts at 16, 32 or 1000 requests/s): each raw
  row gives output and total tokens/s and the mean, median and p99 of TTFT, TPOT and ITL, eleven
  tidy rows; the request throughput is folded into the notes (it sets the saturation check).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from scripts.measurements.common import (
    KV_NOT_STATED,
    Converted,
    fmt,
    num,
    read_raw,
    round_half_up,
)
from scripts.measurements.row_builder import RowBuilder
from scripts.measurements.serving_block import serving_rows

PUBLISHER = "dstack"
HARDWARE = {
    "NVIDIA H100 80GB HBM3 (SXM5)": "h100-sxm",
    "AMD Instinct MI300X": "mi300x",
}
PRECISIONS = {
    "meta-llama/Llama-3.1-405B-FP8": (
        "fp8-attn16",
        "Meta's FP8 checkpoint (FP8 weights and activations in the MLP layers, the attention "
        "projections 16-bit: docs/catalog.md 'Precisions') -> fp8-attn16; "
        f"{KV_NOT_STATED}",
    ),
    "amd/Llama-3.1-405B-Instruct-FP8-KV": (
        "fp8-kv8",
        "FP8-KV checkpoint (FP8 weights, activations and KV-cache scales) -> fp8-kv8",
    ),
}
MODEL = "llama-3.1-405b"
#: where the versions come from: the environment dumps (``collect_env``) of the comparison's README
ENV_SOURCE = (
    "github.com/dstackai/benchmarks@06c957a comparison/h100sxm5_vs_mi300x/README.md, section "
    "'Environment'"
)
#: (accelerator, checkpoint) -> (vLLM version its environment printed, the README section)
VERSIONS = {
    ("h100-sxm", "meta-llama/Llama-3.1-405B-FP8"): ("0.6.3.post2.dev308+gb489fc3c", "Nvidia 8xH100 SXM5"),
    ("mi300x", "meta-llama/Llama-3.1-405B-FP8"): (
        "0.6.3.dev109+gcb3b2b9b.d20241010",
        "AMD 8xMi300x for meta-llama/Llama-3.1-405B-FP8",
    ),
    ("mi300x", "amd/Llama-3.1-405B-Instruct-FP8-KV"): (
        "0.6.4.dev4+gc9fc1608",
        "AMD 8xMi300x for amd/Llama-3.1-405B-Instruct-FP8-KV",
    ),
}


def _layout(r: dict[str, str]) -> tuple[int, int, int, str, bool]:
    """(devices, tp, dp, note, derived) from the run label ('8xMi300x 2FP8-amd' = two replicas)."""
    gpus = int(r["n_gpus"])
    replicas = int(r["label"].split()[-1][0])
    if replicas == 2:
        return (
            gpus,
            gpus // 2,
            2,
            (
                f"label '{r['label']}': two replicas of tp {gpus // 2} on {gpus} GPUs (the "
                f"blog's 'two replicas on 4xMI300x'; the printed tp {r['tp']} is the whole "
                "node)"
            ),
            True,
        )
    if r["tp"]:
        return gpus, int(r["tp"]), 1, f"one replica, tp {r['tp']} on {gpus} GPUs", False
    return (
        gpus,
        0,
        1,
        (
            f"one replica on {gpus} GPUs; tp not printed: layout assumes tensor parallelism "
            f"over the {gpus} (pp = 1)"
        ),
        False,
    )


def _rows(key: str, file: str) -> RowBuilder:
    return RowBuilder(
        key,
        file,
        publisher=PUBLISHER,
        model=MODEL,
        engine="vllm",
        printed={"hardware_raw": "{accelerator} ({label})", "model_raw": "{model_checkpoint}"},
    )


def _point(rows: RowBuilder, r: dict[str, str]) -> tuple[RowBuilder, int, bool]:
    """The builder of the rows of raw row ``r`` (its columns and mapping notes), its replicas and
    whether its figures are derived from another row."""
    prec, p_note = PRECISIONS[r["model_checkpoint"]]
    devices, tp, dp, l_note, derived = _layout(r)
    hw = HARDWARE[r["accelerator"]]
    version, env = VERSIONS[(hw, r["model_checkpoint"])]
    v_note = (
        f"{r['framework']}; vLLM {version} as printed by the environment dump of the README's "
        f"section '{env}' ({ENV_SOURCE}), not by the data table"
    )
    if devices == 4:
        v_note += "; the 4-GPU runs have no section of their own: that of the same checkpoint on 8 GPUs"
    point = rows.point(
        r,
        hardware=hw,
        devices=devices,
        tp=tp or None,
        dp=dp if dp > 1 else None,
        precision=prec,
        engine_version=version,
        notes=[p_note, l_note, v_note],
    )
    return point, dp, derived


class Offline:
    KEY = "dstackoff"
    FILE = "dstack_llama405b_fp8_h100_vs_mi300x_offline.csv"
    NAME = "dstack offline"
    RAW_ROWS = 93
    ROWS = _rows(KEY, FILE)

    @classmethod
    def convert(cls, path: Path) -> Converted:
        raw = read_raw(path)
        out = []
        elapsed_seen: dict[tuple[str, str, str, str, str], int] = {}
        for i, r in enumerate(raw, 1):
            point, replicas, derived = _point(cls.ROWS, r)
            batch, isl, osl = int(r["num_prompts_batch"]), int(r["input_len"]), int(r["output_len"])
            if int(r["total_num_tokens"]) != batch * (isl + osl) * replicas:
                raise ValueError(f"{path.name} row {i}: total_num_tokens != batch x (ISL + OSL) x replicas")
            key = (
                r["model_checkpoint"],
                r["input_len"],
                r["output_len"],
                r["num_prompts_batch"],
                r["elapsed_s"],
            )
            skip: list[str] = []
            notes = [
                f"all {batch} prompts submitted at once (num_prompts, the README's batch): a static "
                "batch when the KV cache holds them all (the model checks the fit)"
            ]
            if point.cols["hardware"] == "mi300x":
                notes.append(
                    "run with --enforce-eager (no HIP graphs; README section 'Offline Throughput-Latency "
                    "Benchmark Results'), a per-step host cost the build's overheads do not describe"
                )
            if derived:
                skip.append("derived")
                notes.append(
                    f"elapsed time identical to row {point.row_id(elapsed_seen[key])} (one replica): the "
                    "two-replica figures are that run doubled"
                )
            else:
                elapsed_seen[key] = i
            run = point.point(
                source=f"{r['source']} (dstack throughput comparison, {r['label']}, ISL/OSL {isl}/{osl}, "
                f"{batch} prompts)",
                load="static",
                batch=batch,
                context=isl,
                output_len=osl,
                skip=skip,
                notes=notes,
            )
            total_id = point.row_id(i, suffix="total_throughput")
            out.append(
                run.row(
                    i,
                    "total_throughput",
                    fmt(Decimal(r["total_tokens_per_s"])),
                    suffix="total_throughput",
                    notes="total_tokens_per_s = (prompt + output tokens) / elapsed, as published",
                )
            )
            out.append(
                run.row(
                    i,
                    "throughput",
                    num(r["derived_output_tokens_per_s"]),
                    suffix="throughput",
                    skip="derived",
                    notes=f"output tokens/s = {batch} x {osl} / {r['elapsed_s']} s (not printed by the "
                    f"source): the total_throughput row {total_id} is kept",
                )
            )
        return Converted(
            out,
            len(raw),
            accounting=(
                f"{len(raw)} raw rows -> {len(out)} tidy rows: input+output tokens/s (published) and output "
                "tokens/s (derived from the same run, not usable) per raw row."
            ),
        )


MAX_LOAD_QPS = Decimal(1000)


class Serving:
    KEY = "dstacksrv"
    FILE = "dstack_llama405b_fp8_h100_vs_mi300x_serving.csv"
    NAME = "dstack serving"
    RAW_ROWS = 15
    ROWS = _rows(KEY, FILE)

    @classmethod
    def convert(cls, path: Path) -> Converted:
        raw = read_raw(path)
        max_rps = {
            r["label"]: Decimal(r["request_throughput"])
            for r in raw
            if Decimal(r["request_rate_qps"]) == MAX_LOAD_QPS
        }
        out = []
        for i, r in enumerate(raw, 1):
            point = _point(cls.ROWS, r)[0]
            skip: list[str] = []
            done = int(r["completed"])
            isl = round_half_up(Decimal(r["total_input_tokens"]) / done)
            osl = round_half_up(Decimal(r["total_output_tokens"]) / done)
            qps, rps = Decimal(r["request_rate_qps"]), Decimal(r["request_throughput"])
            notes = [
                f"ShareGPT prompts: context/output = mean tokens per request {r['total_input_tokens']} / "
                f"{done} and {r['total_output_tokens']} / {done}, rounded",
                f"measured request throughput {fmt(rps)} req/s (folded into this note); at 1000 req/s "
                f"{fmt(max_rps[r['label']])} req/s",
                f"server: num_scheduler_steps {r['num_scheduler_steps']}, chunked prefill "
                f"{r['enable_chunked_prefill']}, max_num_batched_tokens {r['max_num_batched_tokens']}, "
                f"max_num_seqs {r['max_num_seqs']}",
            ]
            if qps == MAX_LOAD_QPS:
                load, rate = "max_load", None
                notes.append(
                    f"{r['num_prompts']} prompts at {fmt(qps)} req/s arrive within a second: maximum load, "
                    "batch_cap = max_num_seqs"
                )
            else:
                load, rate = "online", qps
                if qps > max_rps[r["label"]]:
                    skip.append("saturated")
                    notes.append(
                        "request rate above the maximum request throughput: the queue, not the engine, "
                        "holds most requests, so Little's law gives no engine batch"
                    )
            run = point.point(
                source=f"{r['source']} (dstack QPS comparison, {r['label']}, {r['num_prompts']} ShareGPT "
                f"prompts at {qps} QPS)",
                load=load,
                batch_cap=int(r["max_num_seqs"]),
                request_rate=fmt(rate) if rate is not None else None,
                context=isl,
                output_len=osl,
                skip=skip,
                notes=notes,
            )
            out += serving_rows(run, i, r, load)
        return Converted(
            out,
            len(raw),
            folded={"request throughput folded into the notes": len(raw)},
            accounting=(
                f"{len(raw)} raw rows -> {len(out)} tidy rows: output and total tokens/s and "
                "mean/median/p99 of TTFT, TPOT and ITL per raw row (ITL mapped to tpot); the "
                "request throughput column is folded into the notes."
            ),
        )
