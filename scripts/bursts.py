"""``python -m scripts.bursts [--calibration FILE]``: the measured runs of the staged sources that
issue every request at once at an unlimited rate (skip reason ``burst``, docs/measurements.md,
"Staged sources"), set against the model's maximum-load steady state and against the finite
run of the same requests (``sweep.finite_run``, docs/model.md section 13.7) as if they were
usable: one markdown row per run with its output tokens/s and mean TPOT, measured and
modelled, and their ratios, then the median ratios by engine and device. These rows are kept
out of the fit; this table is what they show (docs/validation.md, "Bursts of requests at an
unlimited rate")."""

from __future__ import annotations

import argparse
import math
import re
import sys
import tomllib

import numpy as np
import pandas as pd

from scripts.measurements.common import STAGED_CSV
from sweep.execute.finite import finite_run
from sweep.validate.evaluator import compare, engine_refs
from sweep.validate.measurements import read_measurements

BURST = "every request issued at once"
#: the number of requests of a run, as the converter notes it
REQUESTS = re.compile(r"(\d+) prompts at an unlimited request rate")
#: spread of ShareGPT's output lengths: coefficient of variation of its assistant turns,
#: 348.45 +/- 269.93 tokens (Llama-2 tokenizer; WildChat, Zhao et al., ICLR 2024, Table 1,
#: read from two transcriptions that agree), and the longest output vLLM's benchmark keeps
#: (prompt + output <= 2048 tokens, prompt >= 4: vLLM's ShareGPT sampler). Estimate: the
#: spread after that filter is not published (its cut trims the tail further)
SHAREGPT_CV = 0.77
SHAREGPT_MAX = 2044


def burst_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The burst runs' output tokens/s and mean TPOT rows, marked usable so the model evaluates
    them (their other reasons, if any, keep them out)."""
    only = df["skip_reason"].fillna("").str.split("; ").map(
        lambda rs: bool(rs) and all(r.startswith(BURST) for r in rs))
    want = only & df["metric"].isin(["throughput", "tpot"]) & ~df["id"].str.contains("itl")
    out = df[want].copy()
    out["usable"] = "yes"
    out["skip_reason"] = ""
    return out


def run_key(ids: pd.Series) -> pd.Series:
    """A row id's run: its source key and row number."""
    return ids.str.extract(r"^([a-z0-9]+-\d+)-", expand=False)


def finite(rows: pd.DataFrame, calibration: dict | None = None) -> pd.DataFrame:
    """The finite run's output tokens/s (``finite``) of each burst run and its prompts
    (``prompts``: ShareGPT or random), by run key: the run's own number of
    requests, all queued at once, at most the engine's cap in flight (the printed
    ``max_num_seqs``, else the build's maximum load), ShareGPT's spread of output lengths for
    ShareGPT prompts and one length for random prompts (``vllm bench serve``'s default
    ``--random-range-ratio 0``)."""
    thr = rows[rows["metric"].eq("throughput")]
    cap = pd.to_numeric(thr["batch_cap"], errors="coerce")
    sharegpt = thr["mapping_note"].str.contains("(sharegpt prompts)", regex=False)
    table = pd.DataFrame({
        "hardware": thr["hardware"], "model": thr["model"], "precision": thr["precision"],
        "parallelism": thr["parallelism"],
        "engine": engine_refs(thr),
        "batch": [int(c) if math.isfinite(c) else "max" for c in cap],
        "context": thr["context"].astype(float), "output_len": thr["output_len"].astype(float),
        "requests": thr["mapping_note"].str.extract(REQUESTS, expand=False).astype(float),
        "output_cv": [SHAREGPT_CV if g else 0.0 for g in sharegpt],
        "output_max": [float(SHAREGPT_MAX) if g else math.nan for g in sharegpt]})
    got = finite_run(table.reset_index(drop=True), calibration=calibration)
    return pd.DataFrame({"finite": got["run_throughput"].to_numpy(),
                         "prompts": np.where(sharegpt, "ShareGPT", "random")},
                        index=run_key(thr["id"]).to_numpy())


def table(res: pd.DataFrame, runs: pd.DataFrame) -> str:
    """The markdown tables: every run, then medians by engine and device."""
    res = res[res["status"].eq("used")].copy()
    res["ratio"] = res["predicted"] / res["measured"]
    res["run"] = run_key(res["id"])
    piv = res.pivot_table(index=["run", "engine", "hardware", "model", "precision", "parallelism",
                                 "context", "output_len"],
                          columns="metric", values=["measured", "predicted", "ratio"],
                          aggfunc="first").reset_index()
    lines = ["| run | engine | device | model | layout | in / out | output tokens/s measured | "
             "steady state | steady / measured | finite run | finite / measured | "
             "mean TPOT measured [ms] | steady state [ms] | steady / measured |",
             "|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for _, r in piv.iterrows():
        fin = float(runs["finite"].get(r[("run", "")], np.nan))
        def cell(kind: str, metric: str, scale: float = 1.0, fmt: str = "{:,.0f}",
                 r: pd.Series = r) -> str:
            v = r.get((kind, metric), np.nan)
            return "-" if not np.isfinite(v) else fmt.format(v * scale)
        lines.append(
            f"| {r[('run', '')]} | {r[('engine', '')]} | {r[('hardware', '')]} | "
            f"{r[('model', '')]} {r[('precision', '')]} | {r[('parallelism', '')]} | "
            f"{int(r[('context', '')])} / {int(r[('output_len', '')])} | "
            f"{cell('measured', 'throughput')} | {cell('predicted', 'throughput')} | "
            f"{cell('ratio', 'throughput', fmt='{:.2f}')} | {fin:,.0f} | "
            f"{fin / r[('measured', 'throughput')]:.2f} | "
            f"{cell('measured', 'tpot', 1e3, '{:.1f}')} | "
            f"{cell('predicted', 'tpot', 1e3, '{:.1f}')} | {cell('ratio', 'tpot', fmt='{:.2f}')} |")
    thr = res[res["metric"].eq("throughput")].copy()
    thr["finite"] = runs["finite"].reindex(thr["run"]).to_numpy() / thr["measured"].to_numpy()
    thr["prompts"] = runs["prompts"].reindex(thr["run"]).to_numpy()
    lines += ["", "| engine | device | runs | steady state / measured, median | range | "
              "finite run / measured, median | range |", "|---|---|---:|---:|---|---:|---|"]
    for (eng, hw), g in thr.groupby(["engine", "hardware"]):
        lines.append(f"| {eng} | {hw} | {len(g)} | {g['ratio'].median():.2f} | "
                     f"{g['ratio'].min():.2f}-{g['ratio'].max():.2f} | "
                     f"{g['finite'].median():.2f} | "
                     f"{g['finite'].min():.2f}-{g['finite'].max():.2f} |")
    lines += ["", "| prompts | runs | steady state / measured, median | median "
              "\\|log\\| | finite run / measured, median | median \\|log\\| |",
              "|---|---:|---:|---:|---:|---:|"]
    for name, g in [*thr.groupby("prompts"), ("all", thr)]:
        err = np.abs(np.log(g[["ratio", "finite"]].to_numpy(float)))
        lines.append(f"| {name} | {len(g)} | {g['ratio'].median():.2f} | "
                     f"{np.median(err[:, 0]):.2f} | {g['finite'].median():.2f} | "
                     f"{np.nanmedian(err[:, 1]):.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.bursts", description=__doc__)
    ap.add_argument("--calibration", help="calibration overlay TOML (default: the shipped one)")
    args = ap.parse_args(argv)
    overlay = None
    if args.calibration:
        with open(args.calibration, "rb") as fh:
            overlay = {k: v for k, v in tomllib.load(fh).items() if k != "provenance"}
    rows = burst_rows(read_measurements(STAGED_CSV))
    print(table(compare(rows, overlay=overlay), finite(rows, overlay)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
