"""The published measurements the model is checked against: the table, its schema, reading it.

The shipped table is ``sweep/data/measurements/measurements.csv`` (built by
``scripts/measurements``; see docs/measurements.md); a user CSV with the same columns works too.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from grids import tomlio
from grids.errors import SpecError
from kernels.params import METRICS

MEASUREMENTS_DIR = Path(__file__).resolve().parents[1] / "data" / "measurements"
MEASUREMENTS_CSV = MEASUREMENTS_DIR / "measurements.csv"

MEASUREMENTS_SCHEMA = MEASUREMENTS_DIR / "schema.toml"

#: the table's columns, units and vocabularies: schema.toml is the one source (docs/measurements.md)
_SCHEMA = tomlio.load(MEASUREMENTS_SCHEMA)
COLUMNS = tuple(_SCHEMA["columns"])
METRIC_UNITS = dict(_SCHEMA["metric_units"])
#: older unit spellings accepted in user files ("tokens/s" -> "token/s")
UNIT_ALIASES = dict(_SCHEMA.get("unit_aliases", {}))
SCOPES = tuple(_SCHEMA["columns"]["scope"]["allowed"])
STATISTICS = tuple(_SCHEMA["columns"]["statistic"]["allowed"])

#: phase of each metric: what part of the model it tests
PHASE = {"tpot": "decode", "throughput": "decode", "total_throughput": "decode",
         "ttft": "prefill", "prefill_throughput": "prefill", "e2e_latency": "end-to-end",
         "tokens_per_joule": "energy", "total_tokens_per_joule": "energy", "power": "energy"}

#: candidate batches of a max-load row (plus the largest batch that fits)
SKIP_NO_FIT = "does not fit in the model"
SKIP_INCOMPATIBLE = "layout incompatible in the model"
SKIP_TAIL = "tail percentile (p99): the model predicts typical values"

def source_key(source_file: str) -> str:
    """A short name of a source file: its stem (``trtllm_v0.17_perf_overview_throughput``)."""
    return Path(str(source_file)).stem or str(source_file)


def file_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def one_line_error(problems: list[str], context: str) -> SpecError:
    """One SpecError whose message is a single line listing every problem (the first 20)."""
    n = len(problems)
    text = "; ".join(problems[:20]) + (f"; ... and {n - 20} more" if n > 20 else "")
    head = f"{n} problem{'s' if n > 1 else ''}: " if n > 1 else ""
    err = SpecError(head + text, context)
    err.problems = list(problems)
    return err


def read_measurements(path: str | Path | None = None) -> pd.DataFrame:
    """Read a measurements CSV (default: the shipped one) and check it.

    Raises one :class:`SpecError` listing every bad column and row (missing or unknown columns,
    non-numeric values, unknown metric/scope/statistic, usable rows missing what the model needs).
    Unusable rows are kept as they are (they are reported as skipped).
    """
    path = Path(path) if path is not None else MEASUREMENTS_CSV
    if not path.exists():
        raise SpecError(f"{path}: file not found (give a CSV with the columns of "
                        f"{MEASUREMENTS_CSV.name}, see docs/measurements.md)")
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
        raise SpecError(f"{path}: cannot read as CSV: {exc}") from exc
    problems: list[str] = []
    missing = [c for c in COLUMNS if c not in raw.columns]
    extra = [c for c in raw.columns if c not in COLUMNS]
    if missing:
        problems.append(f"missing columns {missing}")
    if extra:
        problems.append(f"unknown columns {extra}")
    if problems:
        raise one_line_error([*problems, f"the header must be the {len(COLUMNS)} columns of "
                                    f"measurements.csv: {','.join(COLUMNS)}"],
                        f"measurements {path}")
    if raw.empty:
        raise SpecError(f"measurements {path}: no data rows")
    df = raw[list(COLUMNS)].copy()
    for c in df.columns:
        df[c] = df[c].astype(str).str.strip()
    df["unit"] = df["unit"].replace(UNIT_ALIASES)

    def number(col: str, integer: bool) -> pd.Series:
        vals = pd.to_numeric(df[col].replace("", np.nan), errors="coerce")
        bad = df[col].ne("") & (vals.isna() | (vals <= 0) | (integer & (vals != np.round(vals))))
        for i in np.flatnonzero(bad.to_numpy())[:20]:
            kind = "a whole number >= 1" if integer else "a number > 0"
            problems.append(f"row {i + 2} ({df['id'].iloc[i] or '?'}): {col} = "
                            f"{df[col].iat[i]!r} is not {kind}")
        return vals

    nums = {c: number(c, True) for c in ("devices", "tp", "pp", "ep", "dp", "context",
                                         "output_len")}
    nums["value"] = number("value", False)
    batch = df["batch"]
    batch_num = pd.to_numeric(batch.where(batch != "max", ""), errors="coerce")
    bad_b = batch.ne("") & batch.ne("max") & (batch_num.isna() | (batch_num < 1)
                                              | (batch_num != np.round(batch_num)))
    for i in np.flatnonzero(bad_b.to_numpy())[:20]:
        problems.append(f"row {i + 2} ({df['id'].iat[i]}): batch = {batch.iat[i]!r} is not a "
                        f"whole number >= 1 or 'max'")
    dup = df["id"].duplicated(keep="first") & df["id"].ne("")
    for i in np.flatnonzero(dup.to_numpy())[:20]:
        problems.append(f"row {i + 2}: duplicate id {df['id'].iat[i]!r}")
    r: Any  # a row of the CSV, every field text (pandas-stubs types fields as any scalar)
    for i, r in enumerate(df.itertuples(index=False)):
        where = f"row {i + 2} ({r.id or '?'})"
        if not r.id:
            problems.append(f"row {i + 2}: id is empty")
        if r.usable not in ("yes", "no"):
            problems.append(f"{where}: usable = {r.usable!r} (must be 'yes' or 'no')")
            continue
        if r.usable == "no":
            if not r.skip_reason:
                problems.append(f"{where}: usable = no needs a skip_reason")
            continue
        if r.metric not in METRIC_UNITS:
            problems.append(f"{where}: metric {r.metric!r} is not one of {sorted(METRIC_UNITS)}")
        elif r.metric not in METRICS and r.metric != "total_tokens_per_joule":
            problems.append(f"{where}: metric {r.metric!r} is not evaluated by the model yet "
                            f"(mark the row usable = no)")
        elif r.unit != METRIC_UNITS[r.metric]:
            problems.append(f"{where}: unit {r.unit!r} does not match metric {r.metric!r} "
                            f"({METRIC_UNITS[r.metric]!r})")
        if r.scope not in SCOPES:
            problems.append(f"{where}: scope {r.scope!r} is not one of {SCOPES}")
        if r.statistic not in STATISTICS:
            problems.append(f"{where}: statistic {r.statistic!r} is not one of {STATISTICS}")
        need = ["hardware", "model", "precision", "parallelism", "batch", "context", "value"]
        if r.metric != "ttft":
            need.append("output_len")
        empty = [c for c in need if not getattr(r, c)]
        if empty:
            problems.append(f"{where}: usable row without {', '.join(empty)}")
    if problems:
        raise one_line_error(problems, f"measurements {path}")
    for c, v in nums.items():
        df[c] = v
    df["batch_num"] = batch_num
    df["source_key"] = df["source_file"].map(source_key)
    df.attrs["path"] = str(path)
    return df


def usable_mask(df: pd.DataFrame) -> np.ndarray:
    return (df["usable"].eq("yes") & df["statistic"].ne("p99")).to_numpy()
