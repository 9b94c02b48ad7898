"""``AI-Hypercomputer/tpu-recipes`` READMEs: vLLM on TPU v6e (Trillium) and TPU v7 (Ironwood). Each raw row
is one printed number of a ``vllm bench serve`` / ``benchmark_serving.py`` run. The request throughput
is folded into the notes of its run (it is the arrival rate of a closed-loop client); every other raw
row is one tidy row."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

from scripts.measurements.common import (
    KV_NOT_STATED,
    Converted,
    fmt,
    layout_name,
    littles_law,
    littles_note,
    num,
    read_raw,
    round_half_up,
)
from scripts.measurements.row_builder import RowBuilder

KEY = "tpurecipes"
FILE = "tpu_recipes_vllm_tpu_v6e_v7.csv"
NAME = "tpu-recipes (TPU v6e, v7)"
RAW_ROWS = 92
ROWS = RowBuilder(KEY, FILE, publisher="Google", engine="vllm")

HARDWARE = {"TPU v6e (Trillium)": ("tpu-v6e", 1), "TPU v7 (Ironwood, tpu7x)": ("tpu-v7", 2)}
MODELS = {
    "meta-llama/Llama-3.3-70B-Instruct": "llama-3.3-70b",
    "meta-llama/Llama-3.1-8B": "llama-3.1-8b",
    "Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8": "qwen3-coder-480b-a35b",
    "Qwen/Qwen3-32B": "qwen3-32b",
    "Qwen/Qwen3.5-397B-A17B-FP8": "qwen3.5-397b-a17b",
    "Qwen/Qwen3.6-27B-FP8": "qwen3.6-27b",
}
LADDER_RE = re.compile(r"row '([^']+)'")
SEQS_RE = re.compile(r"--max-num-seqs[= ]([0-9]+)")
PROMPTS_RE = re.compile(r"([0-9]+) (?:prompts|successful requests)")


def _precision(r: dict[str, str]) -> tuple[str, str]:
    if r["kv_cache_dtype"] == "fp8" and r["precision"].startswith("fp8"):
        return "fp8-kv8", f"printed '{r['precision']}' with an fp8 KV cache -> fp8-kv8 (W8A8 FP8)"
    if not r["precision"] and not r["kv_cache_dtype"]:
        return "bf16", (
            "weight dtype not printed and no quantization flag: the checkpoint's bfloat16 (vLLM dtype "
            f"auto) -> bf16; {KV_NOT_STATED}"
        )
    raise KeyError(f"unmapped precision {r['precision']!r}/{r['kv_cache_dtype']!r}")


def _run_key(r: dict[str, str]) -> tuple[str, ...]:
    ladder = LADDER_RE.search(r["notes"])
    return (
        r["source"],
        r["batch_or_concurrency"],
        r["input_len"],
        r["output_len"],
        ladder.group(1) if ladder else "",
    )


def convert(path: Path) -> Converted:
    raw = read_raw(path)
    runs: dict[tuple[str, ...], list[tuple[int, dict[str, str]]]] = {}
    for i, r in enumerate(raw, 1):
        runs.setdefault(_run_key(r), []).append((i, r))
    out, folded = [], 0
    for members in runs.values():
        first = members[0][1]
        hw, cores = HARDWARE[first["hardware"]]
        model = MODELS[first["model"]]
        prec, p_note = _precision(first)
        chips = int(first["n_devices"])
        tp_cores = int(first["tp"])
        if tp_cores != chips * cores:
            raise ValueError(f"{path.name}: tp {tp_cores} is not {chips} chips x {cores} TensorCores")
        by = {(r["metric"], r["statistic"], r["scope"]): (i, r) for i, r in members}
        skip = []
        notes = [p_note]
        if cores > 1:
            notes.append(
                f"TP={tp_cores} printed over TensorCores = {chips} chip(s) of {cores} TensorCores: tp "
                f"{chips} over chips (the catalog's device is the chip)"
            )
        else:
            notes.append(f"tp {chips} on {chips} chip(s)")
        ep, dp = first["ep"], first["dp"]
        layout = layout_name(chips)
        if ep:
            skip.append("degrees")
            layout = ""
            notes.append(
                f"expert parallelism '{ep}'"
                + (f", data parallelism '{dp}'" if dp and dp != "1" else "")
                + ": sizes not printed"
            )
            if not dp or dp == "1":
                skip.append("layout")
        isl = int(first["input_len"]) if first["input_len"] else None
        osl = int(first["output_len"]) if first["output_len"] else None
        text = first["notes"]
        caps = SEQS_RE.findall(text)
        cap = int(caps[0]) if caps else None
        conc = int(first["batch_or_concurrency"]) if first["batch_or_concurrency"] else None
        prompts_m = PROMPTS_RE.search(text)
        prompts = int(prompts_m.group(1)) if prompts_m else None
        ladder = bool(LADDER_RE.search(text))
        rps_row = by.get(("requests_per_s", "aggregate", "per_system"))
        ttft_row = by.get(("ttft_s", "mean", "per_system"))
        tpot_row = by.get(("tpot_s", "mean", "per_system"))
        if "sharegpt" in text.lower():
            # all 1000 prompts sent at once (no rate or concurrency limit): maximum load
            load, batch, rate = "max_load", "max", None
            inp, gen = (
                int(x.replace(",", ""))
                for x in re.search(r"totals ([0-9,]+) input / ([0-9,]+) generated", text).groups()
            )
            n = prompts
            isl, osl = round_half_up(Decimal(inp) / n), round_half_up(Decimal(gen) / n)
            notes += [
                f"ShareGPT: context/output = mean tokens per request {inp} / {n} and {gen} / {n}, rounded",
                f"{n} prompts without a rate or concurrency limit: maximum load (the engine chose the batch)",
            ]
        elif conc and ((not ladder and prompts and prompts <= conc) or (cap and cap < conc)):
            load, batch, rate = "max_load", "max", None
            why = (
                f"all {prompts} prompts in flight at once"
                if prompts and prompts <= conc
                else f"the server's max-num-seqs {cap} is below the client's concurrency {conc}"
            )
            notes.append(f"{why}: maximum load, the engine chose the batch (batch_cap = max-num-seqs {cap})")
        else:
            load, rate = "online", None
            batch = None
            if rps_row:
                rate = Decimal(rps_row[1]["value"])
            notes.append(
                f"closed-loop client at max concurrency {conc}: request_rate = the measured request "
                "throughput"
            )
            if rate is not None and ttft_row and tpot_row and osl:
                ttft, tpot = Decimal(ttft_row[1]["value"]), Decimal(tpot_row[1]["value"])
                e2e = ttft + (osl - 1) * tpot
                batch = littles_law(rate, e2e)
                notes.append(
                    littles_note(
                        rate,
                        e2e,
                        1,
                        batch,
                        f"= mean ttft + ({osl} - 1) x mean tpot = {fmt(ttft)} "
                        f"+ {osl - 1} x {fmt(tpot)} (fixed output length)",
                    )
                )
            else:
                skip.append("no_e2e")
        if isl is None or osl is None:
            skip.append("lengths")
            notes.append("input/output lengths not printed")
        if rps_row:
            folded += 1
            notes.append(
                f"measured request throughput {rps_row[1]['value']} req/s (transcription row {rps_row[0]}, "
                "folded into this note)"
            )
        point = ROWS.point(
            hardware=hw,
            tp=chips,
            parallelism=layout,
            model=model,
            precision=prec,
            load=load,
            batch=batch,
            batch_cap=cap,
            request_rate=fmt(rate) if rate is not None else None,
            context=isl,
            output_len=osl,
            skip=skip,
            notes=notes,
        )
        for i, r in members:
            raw_metric, stat, scope = r["metric"], r["statistic"], r["scope"]
            if raw_metric == "requests_per_s":
                continue
            mskip, mnotes = [], []
            if raw_metric.startswith("throughput"):
                metric = "total_throughput" if "total" in raw_metric else "throughput"
                statistic = None
                if stat == "peak":
                    mskip.append("peak")
                    mnotes.append("peak output tokens/s over a short interval")
                elif metric == "total_throughput":
                    mskip.append("repeat")
                    mnotes.append("input+output tokens/s beside the output tokens/s of the same run (kept)")
                elif scope == "per_device" and ("throughput_output_tokens_per_s", stat, "per_system") in by:
                    j = by[("throughput_output_tokens_per_s", stat, "per_system")][0]
                    mskip.append("dup")
                    mnotes.append(f"per-chip value = row {ROWS.row_id(j)} / {chips} chips")
            else:
                metric, statistic = ("ttft" if raw_metric == "ttft_s" else "tpot"), stat
                if stat == "p99":
                    mskip.append("p99")
                elif raw_metric == "itl_s":
                    mskip.append("repeat")
                    mnotes.append(
                        "ITL (all inter-token gaps) beside TPOT of the same run (the mean TPOT is kept)"
                    )
                elif stat == "median":
                    mskip.append("repeat")
                    mnotes.append(
                        f"median beside the mean {metric.upper()} of the same run (the mean is kept)"
                    )
                if metric == "ttft" and load == "max_load":
                    mskip.append("queueing")
            mnotes.append(f"source note: {r['notes']}")
            out.append(
                point.row(
                    i,
                    metric,
                    num(r["value"]),
                    raw=r,
                    source=f"{r['source']} (tpu-recipes README, {r['hardware']}, {r['model']}, "
                    f"concurrency {r['batch_or_concurrency'] or 'not printed'})",
                    scope=scope,
                    statistic=statistic,
                    skip=mskip,
                    notes=mnotes,
                )
            )
    out.sort(key=lambda x: x["id"])
    return Converted(
        out,
        len(raw),
        folded={"request throughput folded into the notes": folded},
        accounting=(
            f"{len(raw)} raw rows -> {len(out)} tidy rows (one each); the {folded} request-throughput rows "
            "are not a table metric: each is folded into the notes of its run (the arrival rate of its "
            "closed-loop client)."
        ),
    )
