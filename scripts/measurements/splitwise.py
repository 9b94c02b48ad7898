"""Splitwise (ISCA'24) profiling data, ``Mutinifni/splitwise-sim`` ``data/perf_model.csv``: TTFT,
TPOT and e2e latency of static batches, five repeats per point. Each point's repeats are aggregated
to their median (one tidy row per point and metric, statistic ``median``), so that one source does
not weigh five times."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

from scripts.measurements.common import KV_NOT_STATED, Converted, fmt, head_padding_note, read_raw
from scripts.measurements.row_builder import RowBuilder

KEY = "splitwise"
FILE = "splitwise_sim_perf_model.csv"
NAME = "Splitwise"
RAW_ROWS = 2280
REPEATS = 5
ROWS = RowBuilder(KEY, FILE, id_width=4, publisher="Microsoft")

HARDWARE = {
    "NVIDIA A100-80GB (DGX-A100)": ("a100-sxm-80g", "DGX-A100 80 GB = A100 SXM 80 GB"),
    "NVIDIA H100-80GB (DGX-H100)": ("h100-sxm", "DGX-H100 = H100 SXM 80 GB"),
}
MODELS = {"llama2-70b": "llama-2-70b", "bloom-176b": "bloom-176b"}
METRICS = {"ttft_s": "ttft", "tpot_s": "tpot", "e2e_latency_s": "e2e_latency"}
#: the engine of the profiles: Patel et al., "Splitwise", arXiv 2311.18677v2, section III
#: ("Unless stated otherwise, we run BLOOM-176B and Llama-70B on vLLM") and section V-B (the
#: simulator's performance model is built from section III's profiles on A100 and H100)
ENGINE = "vllm"
ENGINE_VERSION = "2023 (release not stated; the paper's first version is of 2023-11-30)"
#: the one-at-a-time sweeps vary one of (batch, prompt, output) around this point
BASE_OUTPUT = 128
#: e2e median / (ttft + (output - 1) x tpot) outside [1/LIMIT, LIMIT]: not consistent with the same run
LIMIT = Decimal("1.5")
REPEAT_RE = re.compile(r"repeat (\d+); file line (\d+)")


def convert(path: Path) -> Converted:
    raw = read_raw(path)
    groups: dict[tuple[str, ...], list[tuple[int, dict[str, str]]]] = {}
    for i, r in enumerate(raw, 1):
        if r["engine"] or r["statistic"] != "single_run":
            raise ValueError(f"{path.name} row {i}: unexpected engine/statistic")
        key = (
            r["hardware"],
            r["model"],
            r["tp"],
            r["batch_or_concurrency"],
            r["input_len"],
            r["output_len"],
            r["metric"],
        )
        groups.setdefault(key, []).append((i, r))
    medians: dict[tuple[str, ...], Decimal] = {}
    for key, members in groups.items():
        repeats = sorted(int(REPEAT_RE.search(r["notes"]).group(1)) for _, r in members)
        if repeats != list(range(1, REPEATS + 1)):
            raise ValueError(f"{path.name}: point {key} has repeats {repeats}")
        values = sorted(Decimal(r["value"]) for _, r in members)
        medians[key] = values[REPEATS // 2]
    out = []
    for key, members in groups.items():
        first, r = members[0]
        hw, hw_note = HARDWARE[r["hardware"]]
        model = MODELS[r["model"]]
        metric = METRICS[r["metric"]]
        tp, batch, ctx, olen = (
            int(r["tp"]),
            int(r["batch_or_concurrency"]),
            int(r["input_len"]),
            int(r["output_len"]),
        )
        if int(r["n_devices"]) != tp:
            raise ValueError(f"{path.name} row {first}: n_devices != tp")
        skip = []
        rows_txt = ", ".join(str(i) for i, _ in members)
        vals_txt = ", ".join(fmt(Decimal(m["value"])) for _, m in members)
        notes = [
            f"median of {len(members)} repeats (transcription rows {rows_txt}: {vals_txt} s)",
            hw_note,
            f"precision printed '{r['precision']}' -> fp16; {KV_NOT_STATED}",
            "engine vLLM: the paper profiles on vLLM ('Unless stated otherwise, we run BLOOM-176B "
            "and Llama-70B on vLLM', section III) and builds its performance model from those "
            "profiles (section V-B); its release is not stated (arXiv 2311.18677v1 is of "
            "2023-11-30), so the row runs as the vllm file's 2023 build, vllm@0.2",
            f"tp {tp} on {tp} GPUs; pp not stated: layout assumes pp = 1",
            head_padding_note(model, tp),
            "static batch: TTFT = prefill of the whole batch (no queueing), TPOT = one decode iteration",
        ]
        if metric == "e2e_latency":
            ttft = medians[(*key[:6], "ttft_s")]
            tpot = medians[(*key[:6], "tpot_s")]
            expect = ttft + (olen - 1) * tpot
            ratio = medians[key] / expect
            notes.append(f"e2e / (ttft + (output - 1) x tpot) of the medians = {ratio:.3f}")
            if olen != BASE_OUTPUT:
                skip.append("early_stop")
                notes.append(
                    "long-output sweep: the measurements README says generation probably stopped "
                    "early at end-of-sequence here (e2e varies between repeats): trust TTFT/TPOT"
                )
            elif not 1 / LIMIT <= ratio <= LIMIT:
                skip.append("e2e_inconsistent")
        out.append(
            ROWS.row(
                first,
                metric,
                fmt(medians[key]),
                raw=r,
                source=f"{r['source']} (Splitwise profiling data, {r['hardware']}, {r['model']} TP{tp}, "
                "file lines " + ", ".join(REPEAT_RE.search(m["notes"]).group(2) for _, m in members) + ")",
                hardware=hw,
                tp=tp,
                model=model,
                precision="fp16",
                engine=ENGINE,
                engine_version=ENGINE_VERSION,
                load="static",
                batch=batch,
                context=ctx,
                output_len=olen,
                statistic="median",
                skip=skip,
                notes=notes,
            )
        )
    return Converted(
        out,
        len(raw),
        folded={"repeats aggregated into a median": len(raw) - len(out)},
        accounting=(
            f"{len(raw)} raw rows = {len(out)} points x {REPEATS} repeats -> {len(out)} "
            f"tidy rows, each the median of its point's {REPEATS} repeats (statistic "
            "median, the repeats listed in mapping_note)."
        ),
    )
