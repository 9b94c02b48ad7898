"""The result block of vLLM's serving benchmark (``benchmark_serving.py``, ``vllm bench serve``):
which of its printed quantities a tidy row keeps, for every transcription of such blocks (dstack's
serving rows, the staged sources of :mod:`.bench_serve`)."""

from __future__ import annotations

from collections.abc import Mapping

from scripts.measurements.common import ms, num
from scripts.measurements.row_builder import RowBuilder

#: the result block of vLLM's serving benchmark (`benchmark_serving.py`, `vllm bench serve`):
#: (id suffix, raw column, metric, statistic) of each printed quantity
SERVING_METRICS = (
    ("throughput", "output_tokens_per_s", "throughput", None),
    ("total_throughput", "total_tokens_per_s", "total_throughput", None),
    ("ttft-mean", "mean_ttft_ms", "ttft", "mean"),
    ("ttft-median", "median_ttft_ms", "ttft", "median"),
    ("ttft-p99", "p99_ttft_ms", "ttft", "p99"),
    ("tpot-mean", "mean_tpot_ms", "tpot", "mean"),
    ("tpot-median", "median_tpot_ms", "tpot", "median"),
    ("tpot-p99", "p99_tpot_ms", "tpot", "p99"),
    ("itl-mean", "mean_itl_ms", "tpot", "mean"),
    ("itl-median", "median_itl_ms", "tpot", "median"),
    ("itl-p99", "p99_itl_ms", "tpot", "p99"),
)


def serving_rows(run: RowBuilder, number: int, r: Mapping[str, str], load: str,
                 own_rate: bool = False) -> list[dict[str, str]]:
    """The tidy rows of one printed block ``r`` (raw row ``number``) of a run at ``load``: output
    tokens/s, mean TTFT and mean TPOT kept; total tokens/s, medians and ITL repeat them (where the
    kept row is printed), p99 is a tail, TTFT at maximum load is queueing. ``own_rate``: the run's
    request rate is its own measured throughput (a closed loop), so its tokens/s check nothing.
    A quantity the block does not print gives no row."""
    rows = []
    for suffix, col, metric, stat in SERVING_METRICS:
        if not r[col]:
            continue
        mskip, mnotes = [], []
        if metric in ("throughput", "total_throughput"):
            value = num(r[col])
            if own_rate:
                mskip.append("repeat")
                mnotes.append(
                    "closed loop: the request rate given is this run's own throughput, so tokens/s = "
                    "rate x tokens per request is no separate check"
                )
            elif metric == "total_throughput" and r["output_tokens_per_s"]:
                mskip.append("repeat")
                mnotes.append(
                    f"total = output x (input + output tokens) / output tokens: the output row "
                    f"{run.row_id(number, suffix='throughput')} is kept"
                )
        else:
            value = ms(r[col])
            if stat == "p99":
                mskip.append("p99")
            elif suffix.startswith("itl") and r["mean_tpot_ms"]:
                mskip.append("repeat")
                mnotes.append(
                    "ITL (all inter-token gaps) beside TPOT: the mean TPOT row "
                    f"{run.row_id(number, suffix='tpot-mean')} is kept"
                )
            elif stat == "median" and r[f"mean_{metric}_ms"]:
                mskip.append("repeat")
                mean_id = run.row_id(number, suffix=f"{metric}-mean")
                mnotes.append(f"the mean {metric.upper()} row {mean_id} is kept")
            if metric == "ttft" and load == "max_load":
                mskip.append("queueing")
        rows.append(run.row(number, metric, value, suffix=suffix, statistic=stat, skip=mskip,
                            notes=mnotes))
    return rows
