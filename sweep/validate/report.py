"""Validation reports: aggregates per group, text, Markdown, JSON and the parity plot."""

from __future__ import annotations

import math
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sweep.validate.measurements import METRIC_UNITS
from sweep.validate.scores import (
    mean_abs_log_error,
    median_abs_rel_error,
    median_log_error,
    median_rel_error,
    spearman,
)

#: the accuracy targets of the validation: median absolute relative error per metric family
#: (throughput: every tokens/s metric), and the largest allowed per-engine bias
TARGETS = {"throughput": 0.15, "ttft": 0.20, "tpot": 0.20}
BIAS_TARGET = 0.10  # |median ln(predicted / measured)| per engine
#: which target each metric counts toward
TARGET_OF = {"throughput": "throughput", "total_throughput": "throughput",
             "prefill_throughput": "throughput", "ttft": "ttft", "tpot": "tpot"}
#: batch buckets of the per-batch aggregate (the model's batch of the row)
BATCH_BUCKETS = ((1, 1, "1"), (2, 16, "2-16"), (17, 128, "17-128"), (129, float("inf"), ">128"))


def batch_bucket(batch: Any) -> str:
    """The bucket label of a batch size (NaN: '-')."""
    try:
        b = float(batch)
    except (TypeError, ValueError):
        return "-"
    for lo, hi, name in BATCH_BUCKETS:
        if lo <= b <= hi:
            return name
    return "-"


def aggregate(res: pd.DataFrame, by: str | list[str] | None, *,
              keep_empty: bool = False) -> pd.DataFrame:
    """Error statistics per group of ``by`` (None = all rows): rows used, skipped (usable rows
    the model could not evaluate) and unusable (``usable = no`` in the data), median absolute
    relative error, mean absolute log error, Spearman rank correlation, signed median relative
    error (bias). Groups with no usable row are left out unless ``keep_empty``."""
    records = []
    groups = [("all", res)] if by is None else res.groupby(by, sort=True)
    for key, g in groups:
        u = g[g["status"] == "used"]
        if by is not None and not keep_empty and (g["status"] == "unusable").all():
            continue
        rec = {"group": key if not isinstance(key, tuple) else "/".join(map(str, key)),
               "used": len(u), "skipped": int((g["status"] == "skipped").sum()),
               "unusable": int((g["status"] == "unusable").sum()),
               "median_abs_rel_error": median_abs_rel_error(u["predicted"], u["measured"]),
               "mean_abs_log_error": mean_abs_log_error(u["predicted"], u["measured"]),
               "spearman": spearman(u["predicted"], u["measured"]),
               "median_rel_error": median_rel_error(u["predicted"], u["measured"]),
               "bias_log": median_log_error(u["predicted"], u["measured"])}
        records.append(rec)
    return pd.DataFrame.from_records(records, columns=[
        "group", "used", "skipped", "unusable", "median_abs_rel_error", "mean_abs_log_error",
        "spearman", "median_rel_error", "bias_log"])


#: the loads of served requests (issue 19's targets are on these rows): maximum load and online
#: (request rate or concurrency); the others are fixed (static) batches
SERVED_LOADS = ("max_load", "online")


def served_load(res: pd.DataFrame) -> np.ndarray:
    """True for the rows of ``res`` (a compare() frame or measurements) measured at maximum load
    or online, as the evaluator reads them (``load``, or a batch of ``"max"``)."""
    return (res["load"].astype(str).isin(SERVED_LOADS).to_numpy()
            | res["batch"].astype(str).eq("max").to_numpy())


#: the standard aggregates: name -> column of compare()'s frame
AGGREGATES = {"publisher": "publisher", "source": "source", "engine": "engine",
              "release": "release",
              "hardware": "hardware", "metric": "metric", "phase": "phase",
              "batch": "batch_bucket", "target": "target", "load": "load"}


#: a release (engine and printed version) with fewer used rows gets no bias verdict (a median
#: of a handful of rows says little about a build); its row is still in the release table
RELEASE_MIN_ROWS = 20


def summarize(res: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The standard aggregates: overall, per publisher, source, engine, engine release (as
    printed), device, metric, phase, batch bucket, target family and load (``static``,
    ``max_load``, ``online``)."""
    res = res.assign(batch_bucket=res["model_batch"].map(batch_bucket),
                     target=res["metric"].map(TARGET_OF).fillna("other"))
    out = {"overall": aggregate(res, None)}
    for name, col in AGGREGATES.items():
        out[name] = aggregate(res, col, keep_empty=(name in ("source", "publisher")))
    return out


def skip_reasons(res: pd.DataFrame) -> pd.DataFrame:
    """Counts of skipped and unusable rows per (status, reason); a row with several reasons
    counts under each."""
    r = res.loc[res["status"] != "used", ["status", "reason"]].copy()
    r["reason"] = r["reason"].fillna("").str.split("; ")
    r = r.explode("reason")
    r = r[r["reason"] != ""]
    out = r.groupby(["status", "reason"]).size().rename("rows").reset_index()
    return out.sort_values(["status", "rows"], ascending=[True, False]).reset_index(drop=True)


def fmt_error(v: float, pct: bool = True) -> str:
    if v is None or not np.isfinite(v):
        return "-"
    return f"{100 * v:.1f}%" if pct else f"{v:.3f}"


def aggregate_markdown(table: pd.DataFrame, title: str = "group") -> str:
    lines = [f"| {title} | used | skipped | unusable | median abs rel err | MALE | Spearman | "
             f"bias (median rel) | bias (median ln) |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    r: Any  # a row of an aggregate() table (pandas-stubs types its fields as any scalar)
    for r in table.itertuples(index=False):
        lines.append(f"| {r.group} | {r.used} | {r.skipped} | {r.unusable} | "
                     f"{fmt_error(r.median_abs_rel_error)} | "
                     f"{fmt_error(r.mean_abs_log_error, False)} | {fmt_error(r.spearman, False)} | "
                     f"{fmt_error(r.median_rel_error)} | {fmt_error(r.bias_log, False)} |")
    return "\n".join(lines)


def rows_text(res: pd.DataFrame, only_used: bool = False) -> str:
    sel = res[res["status"] == "used"] if only_used else res[res["status"] != "unusable"]
    lines = [f"{'id':<22} {'hardware':<13} {'engine':<9} {'model':<17} {'prec':<7} "
             f"{'layout':<8} {'batch':>5} {'in':>6} {'out':>5} {'metric':<11} {'measured':>11} "
             f"{'predicted':>11} {'err':>7}  note"]
    r: Any  # a row of a compare() frame (pandas-stubs types its fields as any scalar)
    for r in sel.itertuples(index=False):
        note = r.reason if r.status == "skipped" else (
            f"model batch {int(r.model_batch)}" if r.batch == "max" else "")
        if r.assumption:
            note = f"{note}; {r.assumption}" if note else r.assumption
        out = "" if not np.isfinite(r.output_len) else f"{int(r.output_len)}"
        lines.append(f"{r.id:<22} {r.hardware:<13} {r.engine:<9} {r.model:<17} "
                     f"{r.precision:<7} {r.parallelism:<8} {r.batch:>5} {int(r.context):>6} "
                     f"{out:>5} {r.metric:<11} {r.measured:>11.4g} {r.predicted:>11.4g} "
                     f"{fmt_error(r.rel_error):>7}  {note}")
    return "\n".join(lines)


def verdicts(agg: dict[str, pd.DataFrame], scope: str = "in sample") -> list[str]:
    """Each target of TARGETS and the per-engine bias, met or not, with the figure. ``scope``
    says what the rows are (the targets are meant for rows held out of the calibration:
    ``sweep calibrate`` reports them leave-one-publisher-out)."""
    out = []
    tg = agg["target"].set_index("group")
    used, error = tg["used"], tg["median_abs_rel_error"]  # by group
    for name, target in TARGETS.items():
        if name in tg.index and used.loc[name] > 0:
            e = error.loc[name]
            out.append(f"{name} ({scope}): median abs rel error {fmt_error(e)} over "
                       f"{int(used.loc[name])} rows (target <= {target:.0%}) "
                       f"{'met' if e <= target else 'NOT met'}")
    r: Any  # a row of an aggregate() table (pandas-stubs types its fields as any scalar)
    for r in agg["engine"].itertuples(index=False):
        if r.used > 0 and np.isfinite(r.bias_log):
            out.append(f"engine {r.group} ({scope}): bias median ln(pred/meas) {r.bias_log:+.3f} over "
                       f"{r.used} rows (target within +/-{BIAS_TARGET:.2f}) "
                       f"{'met' if abs(r.bias_log) <= BIAS_TARGET else 'NOT met'}")
    for r in agg["release"].itertuples(index=False):
        if r.used >= RELEASE_MIN_ROWS and np.isfinite(r.bias_log):
            out.append(f"release {r.group} ({scope}): bias {r.bias_log:+.3f} over {r.used} rows "
                       f"(target within +/-{BIAS_TARGET:.2f}) "
                       f"{'met' if abs(r.bias_log) <= BIAS_TARGET else 'NOT met'}")
    return out


def report_text(res: pd.DataFrame, title: str, scope: str = "in sample") -> str:
    """The text report of a compare() frame; ``scope`` labels the verdicts (see
    :func:`verdicts`)."""
    agg = summarize(res)
    parts = [title, ""]
    for name in ("overall", "target", "load", "metric", "engine", "release", "publisher",
                 "source", "hardware", "batch"):
        parts.append(aggregate_markdown(agg[name], name))
        parts.append("")
    sk = skip_reasons(res)
    if len(sk):
        parts.append("rows not used, by reason (skipped: usable rows the model cannot evaluate; "
                     "unusable: usable = no in the data):")
        parts.extend(f"  {r.rows:4d}  {r.status:<8}  {r.reason}"
                     for r in sk.itertuples(index=False))
    v = verdicts(agg, scope)
    if v:
        parts.append("")
        parts.extend(v)
        parts.append("(the targets are for rows held out of the calibration: `sweep calibrate` "
                     "reports them leave-one-publisher-out; docs/validation.md)")
    return "\n".join(parts)


def records(table: pd.DataFrame) -> list[dict[Hashable, Any]]:
    recs = table.to_dict(orient="records")
    for r in recs:
        for k, v in r.items():
            if isinstance(v, float) and not math.isfinite(v):
                r[k] = None
            elif isinstance(v, np.integer):
                r[k] = int(v)
            elif isinstance(v, np.floating):
                r[k] = None if not np.isfinite(v) else float(v)
    return recs


def report_json(res: pd.DataFrame, *, include_rows: bool = False, **meta: Any) -> dict[str, Any]:
    agg = summarize(res)
    out: dict[str, Any] = dict(meta)
    out["aggregates"] = {k: records(v) for k, v in agg.items()}
    out["skip_reasons"] = records(skip_reasons(res))
    if include_rows:
        cols = ["id", "publisher", "source", "hardware", "engine", "model", "precision",
                "parallelism", "load", "batch", "context",
                "output_len", "metric", "scope", "statistic", "measured", "predicted",
                "model_batch", "rel_error", "log_error", "status", "reason"]
        out["rows"] = records(res[cols])
    return out


def parity_plot(res: pd.DataFrame, path: str | Path, *, title: str = "",
                compare_with: pd.DataFrame | None = None, overwrite: bool = False) -> Path:
    """Log-log parity plot of predicted versus measured: one panel per metric (each in its SI
    unit), one colour per device, the y = x line and a +/-25% band. With ``compare_with`` (e.g.
    the uncalibrated result) a first row of panels shows it for comparison. Written atomically;
    an existing file that is not an image written by sweep is refused unless ``overwrite``."""
    from sweep.results.images import check_image_output, save_figure

    check_image_output(path, overwrite)  # before drawing
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    variants = [(res, title or "model")]
    if compare_with is not None:
        variants.insert(0, (compare_with, "uncalibrated"))
    used_all = pd.concat([r[r.status == "used"] for r, _ in variants])
    metrics = [m for m in METRIC_UNITS if m in set(used_all["metric"])] or ["throughput"]
    hws = sorted(set(used_all["hardware"]))
    colours = {h: plt.get_cmap("tab10")(i % 10) for i, h in enumerate(hws)}
    fig, axes = plt.subplots(len(variants), len(metrics),
                             figsize=(4.6 * len(metrics) + 1.6, 4.3 * len(variants)),
                             squeeze=False)
    for i, (r, name) in enumerate(variants):
        u = r[r.status == "used"]
        for j, m in enumerate(metrics):
            ax = axes[i][j]
            g = u[u.metric == m]
            allv = used_all.loc[used_all.metric == m, ["measured", "predicted"]].to_numpy()
            allv = allv[np.isfinite(allv) & (allv > 0)]
            lo, hi = (float(allv.min()) / 1.5, float(allv.max()) * 1.5) if allv.size else (0.1, 10)
            xs = np.geomspace(lo, hi, 50)
            ax.fill_between(xs, xs * 0.75, xs * 1.25, color="grey", alpha=0.2, lw=0,
                            label="±25%")
            ax.plot(xs, xs, "k-", lw=0.8, label="y = x")
            for h, gh in g.groupby("hardware"):
                ax.scatter(gh["measured"], gh["predicted"], s=16, alpha=0.8, color=colours[h],
                           label=h, edgecolors="none")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlim(lo, hi)
            ax.set_ylim(lo, hi)
            unit = METRIC_UNITS.get(m, "")
            ax.set_xlabel(f"measured {m} [{unit}]")
            ax.set_ylabel(f"predicted {m} [{unit}]")
            mare = median_abs_rel_error(g["predicted"], g["measured"])
            ax.set_title(f"{name}: {m}, {len(g)} rows\nmedian |rel err| {fmt_error(mare)}",
                         fontsize=10)
            ax.grid(True, which="both", alpha=0.2)
    handles, labels = [], []
    for ax in axes.flat:
        for hd, lb in zip(*ax.get_legend_handles_labels()):
            if lb not in labels:
                handles.append(hd)
                labels.append(lb)
    fig.legend(handles, labels, loc="center right", fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1 - 1.4 / (4.6 * len(metrics) + 1.6), 1))
    try:
        return save_figure(fig, path, dpi=110, overwrite=overwrite, what="sweep validate")
    finally:
        plt.close(fig)
