"""TensorRT-LLM v0.14 online serving (Triton backend, BF16, 500 requests per point): request rates 2 to
32 req/s and unlimited. Each point prints the request throughput, mean TTFT, mean ITL, total and
output tokens/s. The request throughput is folded into the notes (it sets the saturation check);
the other four values are one tidy row each."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

from scripts.measurements.common import (
    KV_NOT_STATED,
    Converted,
    fmt,
    littles_law,
    littles_note,
    num,
    read_raw,
)
from scripts.measurements.trtllm_pages import trtllm_rows

KEY = "trtllm014"
FILE = "trtllm_v0.14_online_serving.csv"
NAME = "TensorRT-LLM v0.14 online serving"
RAW_ROWS = 360
ROWS = trtllm_rows(
    KEY,
    FILE,
    "{source} (TensorRT-LLM v0.14 perf overview, Online Serving Measurements, {hardware}, "
    "{model}, ISL/OSL {input_len}/{output_len}, {batch_or_concurrency})",
)

HARDWARE = {
    "NVIDIA H100 80GB HBM3": ("h100-sxm", "H100 80GB HBM3 = the SXM part (the PCIe card has HBM2e)"),
    "NVIDIA H200 131GB HBM3": (
        "h200-sxm",
        "printed 'H200 131GB HBM3'; mapped to the catalog's H200 SXM "
        "141 GB (131 GB is probably the usable memory or a typo)",
    ),
}
MODELS = {"LLaMA 3.1 70B": "llama-3.1-70b", "LLaMA 3.1 8B": "llama-3.1-8b"}
RATE_RE = re.compile(r"QPS=([0-9.]+|INF)")
#: requests per point ("All data in the table below was generated using version 0.14.0, with 500
#: requests"): at an unlimited rate no more than these are ever in flight
REQUESTS = 500
POINT = ("hardware", "model", "tp", "input_len", "output_len", "batch_or_concurrency")


def convert(path: Path) -> Converted:
    raw = read_raw(path)
    points: dict[tuple[str, ...], dict[str, tuple[int, dict[str, str]]]] = {}
    for i, r in enumerate(raw, 1):
        if r["precision"] != "BF16" or r["kv_cache_dtype"]:
            raise ValueError(f"{path.name} row {i}: unexpected precision")
        points.setdefault(tuple(r[k] for k in POINT), {})[r["metric"]] = (i, r)
    # the maximum request throughput of each configuration = its unlimited-rate point
    max_rps = {k[:5]: Decimal(v["requests_per_s"][1]["value"]) for k, v in points.items() if "INF" in k[5]}
    out, folded = [], 0
    for key, metrics in points.items():
        rate_txt = RATE_RE.search(key[5]).group(1)
        _, ref = metrics["ttft_s"]
        hw, hw_note = HARDWARE[ref["hardware"]]
        model = MODELS[ref["model"]]
        tp, isl, osl = int(ref["tp"]), int(ref["input_len"]), int(ref["output_len"])
        rps = Decimal(metrics["requests_per_s"][1]["value"])
        folded += 1
        ttft, itl = Decimal(metrics["ttft_s"][1]["value"]), Decimal(metrics["itl_s"][1]["value"])
        base_skip = []
        notes = [
            hw_note,
            f"BF16 -> bf16; {KV_NOT_STATED}",
            f"tp {tp}, pp 1 on {tp} GPU(s)",
            f"measured request throughput {fmt(rps)} req/s (transcription row "
            f"{metrics['requests_per_s'][0]}, folded into this note); maximum over the rates "
            f"{fmt(max_rps[key[:5]])} req/s",
        ]
        cap = None
        if rate_txt == "INF":
            load, batch, rate, cap = "max_load", "max", None, REQUESTS
            notes.append(
                f"unlimited request rate: all {REQUESTS} requests issued at once; the engine chose the "
                f"concurrency, at most the {REQUESTS} requests (batch_cap)"
            )
        else:
            load, rate = "online", Decimal(rate_txt)
            e2e = ttft + (osl - 1) * itl
            batch = littles_law(rate, e2e)
            notes.append(
                littles_note(
                    rate,
                    e2e,
                    1,
                    batch,
                    f"= ttft + ({osl} - 1) x itl = {fmt(ttft)} + "
                    f"{osl - 1} x {fmt(itl)} (mean TTFT and ITL of this point)",
                )
            )
            if rate > max_rps[key[:5]]:
                base_skip = [*base_skip, "saturated"]
        point = ROWS.point(
            hardware=hw,
            tp=tp,
            pp=int(ref["pp"]),
            model=model,
            precision="bf16",
            load=load,
            batch=batch,
            request_rate=fmt(rate) if rate is not None else None,
            batch_cap=cap,
            context=isl,
            output_len=osl,
            skip=base_skip,
            notes=notes,
        )
        for raw_metric, metric in {
            "ttft_s": "ttft",
            "itl_s": "tpot",
            "throughput_output_tokens_per_s": "throughput",
            "throughput_total_tokens_per_s": "total_throughput",
        }.items():
            i, r = metrics[raw_metric]
            skip, mnotes, statistic = [], [], "mean"
            if metric == "ttft":
                mnotes.append("mean TTFT; includes queueing")
                if load == "max_load":
                    skip.append("queueing")
            elif metric == "tpot":
                mnotes.append("mean inter-token latency (ITL)")
            else:
                statistic = None
                if metric == "total_throughput":
                    skip.append("repeat")
                    mnotes.append(
                        f"total = output tokens/s x ({isl} + {osl}) / {osl}: the output-token row "
                        f"{ROWS.row_id(metrics['throughput_output_tokens_per_s'][0])} is kept"
                    )
            mnotes.append(f"source note: {r['notes']}")
            out.append(
                point.row(
                    i,
                    metric,
                    num(r["value"]),
                    raw=r,
                    statistic=statistic,
                    skip=skip,
                    notes=mnotes,
                )
            )
    out.sort(key=lambda x: x["id"])
    return Converted(
        out,
        len(raw),
        folded={"request throughput folded into the notes": folded},
        accounting=(
            f"{len(raw)} raw rows = {len(points)} points x 5 values -> {len(out)} tidy rows "
            f"(TTFT, ITL as tpot, output and total tokens/s); the {folded} request-throughput "
            "rows are not a table metric: each is folded into the notes of its point's rows "
            "(it sets the saturation check)."
        ),
    )
