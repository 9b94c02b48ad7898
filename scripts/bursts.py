"""``python -m scripts.bursts [--calibration FILE]``: the measured runs of the staged sources that
issue every request at once at an unlimited rate (skip reason ``burst``, docs/measurements.md,
"Staged sources"), set against the model's
maximum-load steady state as if they were usable: one markdown row per run with its output
tokens/s and mean TPOT, measured and modelled, and their ratio, then the median ratio by engine
and device. These rows are kept out of the fit; this table is the disagreement they show
(docs/validation.md, "Bursts of requests at an unlimited rate")."""

from __future__ import annotations

import argparse
import sys
import tomllib

import numpy as np
import pandas as pd

from scripts.measurements.common import STAGED_CSV
from sweep.validate.evaluator import compare
from sweep.validate.measurements import read_measurements

BURST = "every request issued at once"


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


def table(res: pd.DataFrame) -> str:
    """The markdown tables: every run, then medians by engine and device."""
    res = res[res["status"].eq("used")].copy()
    res["ratio"] = res["predicted"] / res["measured"]
    res["run"] = res["id"].str.extract(r"^([a-z0-9]+-\d+)-", expand=False)  # source key, row
    piv = res.pivot_table(index=["run", "engine", "hardware", "model", "precision", "parallelism",
                                 "context", "output_len"],
                          columns="metric", values=["measured", "predicted", "ratio"],
                          aggfunc="first").reset_index()
    lines = ["| run | engine | device | model | layout | in / out | output tokens/s measured | "
             "model | model / measured | mean TPOT measured [ms] | model [ms] | model / measured |",
             "|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for _, r in piv.iterrows():
        def cell(kind: str, metric: str, scale: float = 1.0, fmt: str = "{:,.0f}",
                 r: pd.Series = r) -> str:
            v = r.get((kind, metric), np.nan)
            return "-" if not np.isfinite(v) else fmt.format(v * scale)
        lines.append(
            f"| {r[('run', '')]} | {r[('engine', '')]} | {r[('hardware', '')]} | "
            f"{r[('model', '')]} {r[('precision', '')]} | {r[('parallelism', '')]} | "
            f"{int(r[('context', '')])} / {int(r[('output_len', '')])} | "
            f"{cell('measured', 'throughput')} | {cell('predicted', 'throughput')} | "
            f"{cell('ratio', 'throughput', fmt='{:.2f}')} | {cell('measured', 'tpot', 1e3, '{:.1f}')} | "
            f"{cell('predicted', 'tpot', 1e3, '{:.1f}')} | {cell('ratio', 'tpot', fmt='{:.2f}')} |")
    thr = res[res["metric"].eq("throughput")]
    lines += ["", "| engine | device | runs | median model / measured, output tokens/s | range |",
              "|---|---|---:|---:|---|"]
    for (eng, hw), g in thr.groupby(["engine", "hardware"]):
        lines.append(f"| {eng} | {hw} | {len(g)} | {g['ratio'].median():.2f} | "
                     f"{g['ratio'].min():.2f}-{g['ratio'].max():.2f} |")
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
    print(table(compare(rows, overlay=overlay)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
