"""Check the model against published measurements: predicted versus measured, row by row.

The measurements are the tidy table of ``docs/measurements.md``
(``sweep/data/measurements/measurements.csv``) or any user CSV with the same columns. Every usable
row is evaluated with the same per-point physics as :func:`sweep.run.evaluate` (the point-list
kernel), after converting conventions:

* ``scope = per_device``: the model's layout-wide value divided by the layout's devices
  (``throughput_per_device`` for throughput); ``per_system``: the value for the measured system
  of ``devices`` devices (the layout's value scaled by ``devices / layout devices``, which is 1 when
  the two agree, as in the shipped data);
* ``throughput`` / ``tokens_per_joule`` count generated tokens; ``total_throughput`` /
  ``total_tokens_per_joule`` count input + output tokens (seed 004's convention);
* ``batch = max`` (``statistic = max_load``, the engine chose the load): the best layout throughput
  over the batches that fit in memory, batch in powers of two from 1 to 4096 plus the largest
  batch that fits; latency or power metrics are taken at that batch;
* TTFT rows without an output length are evaluated with one generated token (TTFT does not depend
  on it).

A usable row whose point does not fit in memory in the model (or whose layout the model rejects) is
*skipped* with that reason, never dropped silently. Errors are aggregated with
:func:`median_abs_rel_error`, :func:`mean_abs_log_error` and :func:`spearman`.
"""

from __future__ import annotations

import hashlib
import math
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from grids.errors import SpecError
from kernels.params import HW, METRICS

MEASUREMENTS_DIR = Path(__file__).resolve().parent / "data" / "measurements"
MEASUREMENTS_CSV = MEASUREMENTS_DIR / "measurements.csv"
MEASUREMENTS_SCHEMA = MEASUREMENTS_DIR / "schema.toml"


def _schema() -> dict[str, Any]:
    with MEASUREMENTS_SCHEMA.open("rb") as fh:
        return tomllib.load(fh)


#: the table's columns, units and vocabularies: schema.toml is the one source (docs/measurements.md)
_SCHEMA = _schema()
COLUMNS = tuple(_SCHEMA["columns"])
METRIC_UNITS = dict(_SCHEMA["metric_units"])
#: older unit spellings accepted in user files ("tokens/s" -> "token/s")
UNIT_ALIASES = dict(_SCHEMA.get("unit_aliases", {}))
SCOPES = tuple(_SCHEMA["columns"]["scope"]["allowed"])
STATISTICS = tuple(_SCHEMA["columns"]["statistic"]["allowed"])
#: catalog ids being added: usable rows on them are skipped until the catalog entry exists
PENDING = {"hardware": frozenset(_SCHEMA["pending"]["hardware"]),
           "model": frozenset(_SCHEMA["pending"]["model"])}

#: phase of each metric: what part of the model it tests
PHASE = {"tpot": "decode", "throughput": "decode", "total_throughput": "decode",
         "ttft": "prefill", "prefill_throughput": "prefill", "e2e_latency": "end-to-end",
         "tokens_per_joule": "energy", "total_tokens_per_joule": "energy", "power": "energy"}
#: the accuracy targets of the validation (median absolute relative error)
TARGETS = {"decode": 0.15, "prefill": 0.25}

#: candidate batches of a max-load row (plus the largest batch that fits)
MAX_LOAD_BATCHES = tuple(2 ** k for k in range(13))  # 1 .. 4096
LARGEST_BATCH_SEARCH = 1 << 20

_FITS = METRICS.index("fits")
_THR = METRICS.index("throughput")

SKIP_NO_FIT = "does not fit in the model"
SKIP_INCOMPATIBLE = "layout incompatible in the model"
SKIP_TAIL = "tail percentile (p99): the model predicts typical values"
SKIP_PENDING = "catalog entry pending (device or model being added)"

#: source groups (leave-one-source-out unit) by a substring of ``source_file``
SOURCE_GROUPS = (("v0.9.0", "trtllm v0.9.0"), ("trtllm_perf_overview_v1.0", "trtllm v1.0"),
                 ("neuron", "aws neuron"), ("seeds/004", "seed 004"))


def source_group(source_file: str) -> str:
    """The source group of a ``source_file`` (the file name itself for user files)."""
    for key, name in SOURCE_GROUPS:
        if key in str(source_file):
            return name
    return str(source_file)


def file_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# --------------------------------------------------------------------------------------------
# error metrics


def _pairs(pred: Iterable[float], meas: Iterable[float]) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(list(pred) if not isinstance(pred, np.ndarray) else pred, dtype=np.float64)
    m = np.asarray(list(meas) if not isinstance(meas, np.ndarray) else meas, dtype=np.float64)
    if p.shape != m.shape:
        raise ValueError(f"predicted and measured differ in length: {p.shape} vs {m.shape}")
    ok = np.isfinite(p) & np.isfinite(m) & (p > 0) & (m > 0)
    return p[ok], m[ok]


def median_abs_rel_error(pred, meas) -> float:
    """median |pred / meas - 1| over the pairs with both sides finite and positive (NaN if none)."""
    p, m = _pairs(pred, meas)
    return float(np.median(np.abs(p / m - 1.0))) if p.size else math.nan


def mean_abs_log_error(pred, meas) -> float:
    """mean |ln(pred / meas)| (natural log; NaN if no pairs). exp(MALE) - 1 is a typical factor."""
    p, m = _pairs(pred, meas)
    return float(np.mean(np.abs(np.log(p / m)))) if p.size else math.nan


def median_rel_error(pred, meas) -> float:
    """median (pred / meas - 1): the signed bias (negative = the model under-predicts)."""
    p, m = _pairs(pred, meas)
    return float(np.median(p / m - 1.0)) if p.size else math.nan


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties get the average of their ranks."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(x.size, dtype=np.float64)
    xs = x[order]
    i = 0
    while i < x.size:
        j = i
        while j + 1 < x.size and xs[j + 1] == xs[i]:
            j += 1
        ranks[order[i:j + 1]] = 0.5 * (i + j) + 1.0
        i = j + 1
    return ranks


def spearman(pred, meas) -> float:
    """Spearman rank correlation (Pearson correlation of tie-averaged ranks); NaN for fewer than
    3 pairs or a constant side."""
    p, m = _pairs(pred, meas)
    if p.size < 3:
        return math.nan
    rp, rm = _ranks(p), _ranks(m)
    rp -= rp.mean()
    rm -= rm.mean()
    den = math.sqrt(float(np.sum(rp * rp) * np.sum(rm * rm)))
    return float(np.sum(rp * rm) / den) if den > 0 else math.nan


# --------------------------------------------------------------------------------------------
# reading and checking a measurements CSV


def _one_line(problems: list[str], context: str) -> SpecError:
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
        raise _one_line([*problems, f"the header must be the {len(COLUMNS)} columns of "
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
            problems.append(f"row {i + 2} ({df['id'].iat[i] or '?'}): {col} = "
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
        need = ["hardware", "model", "precision", "layout", "batch", "context", "value"]
        if r.metric != "ttft":
            need.append("output_len")
        empty = [c for c in need if not getattr(r, c)]
        if empty:
            problems.append(f"{where}: usable row without {', '.join(empty)}")
    if problems:
        raise _one_line(problems, f"measurements {path}")
    for c, v in nums.items():
        df[c] = v
    df["batch_num"] = batch_num
    df["group"] = df["source_file"].map(source_group)
    df.attrs["path"] = str(path)
    return df


# --------------------------------------------------------------------------------------------
# evaluating rows


@dataclass
class _Axis:
    ids: list[str]
    objs: list[Any]


def _conversion(metric: str, scope: str, devices: float, lay_devices: float
                ) -> tuple[int, float]:
    """(kernel output index, factor): the model's value of ``metric`` in the row's convention is
    ``out[index] * factor``; index -1 marks total_tokens_per_joule (total_throughput / power)."""
    system = devices if np.isfinite(devices) else lay_devices
    per = 1.0 / lay_devices if scope == "per_device" else system / lay_devices
    if metric in ("throughput", "total_throughput", "power"):
        return METRICS.index(metric), per
    if metric == "total_tokens_per_joule":
        return -1, 1.0
    return METRICS.index(metric), 1.0  # tpot, ttft, e2e_latency [s]; tokens_per_joule


class Evaluator:
    """The usable rows of a measurements table as kernel points, ready to be evaluated repeatedly
    with different hardware tables (the calibration varies efficiency columns of ``hw``).

    ``devices`` maps hardware id -> :class:`grids.hardware.Device` (default: the catalog,
    calibrated or not). Rows whose hardware, model, precision or layout cannot be loaded raise one
    SpecError listing them.

    What-if options for max-load rows (not the model's physics; see docs/validation.md):
    ``paged_kv`` checks memory capacity with the KV cache at the mean length ``S + O/2`` of an
    in-flight batch instead of the full ``S + O`` of a static batch (exact for single-tier
    devices); ``max_batch`` caps the engine's batch.
    """

    def __init__(self, rows: pd.DataFrame, *, calibrated: bool = True,
                 devices: dict[str, Any] | None = None, prefill_chunk: int = 8192,
                 paged_kv: bool = False, max_batch: int | None = None) -> None:
        from grids.hardware import load_device
        from grids.layouts import parse_layout
        from grids.models import load_model
        from grids.precisions import parse_precision
        from sweep.tables import build_tables

        self.rows = rows.reset_index(drop=True)
        self.prefill_chunk = float(prefill_chunk)
        problems: list[str] = []
        cache: dict[tuple[str, str], Any] = {}
        devices = dict(devices or {})

        def get(kind: str, value: str, loader) -> Any:
            key = (kind, value)
            if key not in cache:
                try:
                    cache[key] = loader(value)
                except SpecError as exc:
                    cache[key] = None
                    bad = self.rows.loc[self.rows[kind] == value, "id"].tolist()
                    problems.append(f"{kind} {value!r} (rows {', '.join(bad[:5])}"
                                    f"{', ...' if len(bad) > 5 else ''}): {exc.problems[0]}")
            return cache[key]

        def dev_loader(v: str) -> Any:
            return devices[v] if v in devices else load_device(v, calibrated=calibrated)

        axes: dict[str, _Axis] = {}
        for kind, loader in (("hardware", dev_loader), ("model", load_model),
                             ("precision", parse_precision), ("layout", parse_layout)):
            ids = [str(v) for v in pd.unique(self.rows[kind].astype(str))]
            objs = [get(kind, v, loader) for v in ids]
            axes[kind] = _Axis(ids, objs)
        if problems:
            raise _one_line(problems, "measurements")
        self.hw_ids = axes["hardware"].ids
        self.devices = dict(zip(self.hw_ids, axes["hardware"].objs))
        self.tables = build_tables(axes["hardware"].objs, axes["model"].objs,
                                   axes["precision"].objs, axes["layout"].objs)
        n = len(self.rows)
        self._hi = self.rows["hardware"].map({k: i for i, k in enumerate(self.hw_ids)}
                                             ).to_numpy(np.int64)
        self._mi = self.rows["model"].map({k: i for i, k in enumerate(axes["model"].ids)}
                                          ).to_numpy(np.int64)
        self._pi = self.rows["precision"].map(
            {k: i for i, k in enumerate(axes["precision"].ids)}).to_numpy(np.int64)
        self._li = self.rows["layout"].map({k: i for i, k in enumerate(axes["layout"].ids)}
                                           ).to_numpy(np.int64)
        self.layout_devices = np.array([axes["layout"].objs[i].devices for i in self._li],
                                       dtype=np.float64)
        self.context = self.rows["context"].to_numpy(np.float64)
        out_len = self.rows["output_len"].to_numpy(np.float64)
        self.output_len = np.where(np.isfinite(out_len), out_len, 1.0)
        self.max_load = self.rows["batch"].eq("max").to_numpy()
        self.largest_fit = np.full(n, np.nan)
        # candidate batches per row (R, K), padded with NaN
        k = len(MAX_LOAD_BATCHES) + 1 if self.max_load.any() else 1
        cand = np.full((n, k), np.nan)
        cand[~self.max_load, 0] = self.rows["batch_num"].to_numpy(np.float64)[~self.max_load]
        self._hw = self.tables.hw
        self._peak = self.tables.peak
        self._hi_eval = self._hi.copy()
        if self.max_load.any():
            rows_ml = np.flatnonzero(self.max_load)
            cap_len = np.ceil(self.output_len[rows_ml] / 2) if paged_kv else None
            largest = self._largest_fitting_batch(rows_ml, cap_len)
            if max_batch is not None:
                largest = np.minimum(largest, float(max_batch))
            self.largest_fit[rows_ml] = largest
            if paged_kv:  # one hardware row per max-load row, capacity check lifted
                extra = self.tables.hw[self._hi[rows_ml]].copy()
                extra[:, HW["capacity_fraction"]] *= 1e3
                self._hi_eval[rows_ml] = self.tables.hw.shape[0] + np.arange(rows_ml.size)
                self._hw = np.vstack([self.tables.hw, extra])
                self._peak = np.vstack([self.tables.peak, self.tables.peak[self._hi[rows_ml]]])
            for j, r in enumerate(rows_ml):
                if np.isfinite(largest[j]):
                    b = [x for x in MAX_LOAD_BATCHES if x < largest[j]] + [largest[j]]
                    cand[r, :len(b)] = b
                else:  # nothing fits: keep batch 1 so the reason can be told
                    cand[r, 0] = 1.0
        self.candidates = cand
        valid = np.isfinite(cand)
        self._row_of = np.nonzero(valid)[0]
        self._slot = np.nonzero(valid)[1]
        self._batch = cand[valid]
        conv = [_conversion(m, sc, d, ld) for m, sc, d, ld in zip(
            self.rows["metric"], self.rows["scope"], self.rows["devices"].to_numpy(np.float64),
            self.layout_devices)]
        self._p_index = np.array([conv[r][0] for r in self._row_of], dtype=np.int64)
        self._p_factor = np.array([conv[r][1] for r in self._row_of], dtype=np.float64)

    # ---- kernel calls

    def _points(self, rows: np.ndarray, batch: np.ndarray, hw: np.ndarray | None = None,
                out_len: np.ndarray | None = None, static: bool = False) -> np.ndarray:
        from kernels import evaluate_points

        t = self.tables
        if static:
            hw, peak, hi = t.hw, t.peak, self._hi[rows]
        else:
            hw, peak, hi = (self._hw if hw is None else hw), self._peak, self._hi_eval[rows]
        return evaluate_points(hw, t.md, peak, t.pr, t.ly,
                               hi, self._mi[rows], self._pi[rows], self._li[rows],
                               batch, self.context[rows],
                               self.output_len[rows] if out_len is None else out_len,
                               self.prefill_chunk)

    def _largest_fitting_batch(self, rows: np.ndarray, out_len: np.ndarray | None = None
                               ) -> np.ndarray:
        """Largest batch (<= 2^20) that fits for each row, by bisection; NaN if batch 1 does not.
        ``out_len`` replaces the output length in the capacity check (paged-KV what-if)."""
        fits_i = METRICS.index("fits")
        lo = np.ones(rows.size)
        ok1 = self._points(rows, lo, out_len=out_len, static=True)[fits_i] == 1.0
        hi = np.full(rows.size, float(LARGEST_BATCH_SEARCH) + 1.0)
        while True:
            active = ok1 & (hi - lo > 1)
            if not active.any():
                break
            mid = np.floor((lo + hi) / 2)
            ol = None if out_len is None else out_len[active]
            f = self._points(rows[active], mid[active], out_len=ol,
                             static=True)[fits_i] == 1.0
            idx = np.flatnonzero(active)
            lo[idx[f]] = mid[idx[f]]
            hi[idx[~f]] = mid[idx[~f]]
        return np.where(ok1, lo, np.nan)

    def hw_table(self) -> np.ndarray:
        """A copy of the hardware table the points are evaluated with (edit and pass it to
        :meth:`predict`)."""
        return self._hw.copy()

    def hw_rows(self, dev_id: str) -> list[int]:
        """Rows of :meth:`hw_table` that describe device ``dev_id``."""
        if dev_id not in self.hw_ids:
            return []
        h = self.hw_ids.index(dev_id)
        extra = np.unique(self._hi_eval[self._hi == h])
        return sorted({h, *extra.tolist()})

    def predict_values(self, hw: np.ndarray | None = None) -> np.ndarray:
        """Predicted value per row in the row's convention (NaN where nothing fits)."""
        return self.predict(hw, frame=False)

    def predict(self, hw: np.ndarray | None = None, frame: bool = True):
        """Predicted value per row in the row's convention, with status, reason, chosen batch.

        For max-load rows the candidate batch with the highest layout throughput is chosen.
        """
        out = self._points(self._row_of, self._batch, hw)
        n, k = self.candidates.shape
        idx = self._p_index
        safe = np.where(idx < 0, 0, idx)
        v = out[safe, np.arange(out.shape[1])].astype(np.float64) * self._p_factor
        if (idx < 0).any():
            tt = out[METRICS.index("total_throughput")] / out[METRICS.index("power")]
            v = np.where(idx < 0, tt, v)
        fits = np.zeros((n, k), dtype=bool)
        fits[self._row_of, self._slot] = out[_FITS] == 1.0
        thr = np.full((n, k), -np.inf)
        thr[self._row_of, self._slot] = np.where(fits[self._row_of, self._slot],
                                                 np.nan_to_num(out[_THR], nan=-np.inf), -np.inf)
        val = np.full((n, k), np.nan)
        val[self._row_of, self._slot] = v
        best = np.argmax(thr, axis=1)
        anyfit = fits.any(axis=1)
        pred = np.where(anyfit, val[np.arange(n), best], np.nan)
        if not frame:
            return pred
        batch = np.where(anyfit, self.candidates[np.arange(n), best], np.nan)
        # incompatible (model.md section 2): memory_per_device NaN at the first candidate
        mem = np.full((n, k), np.nan)
        mem[self._row_of, self._slot] = out[METRICS.index("memory_per_device")]
        compatible = np.isfinite(mem[:, 0])
        reason = np.where(anyfit, "", np.where(compatible, SKIP_NO_FIT, SKIP_INCOMPATIBLE))
        return pd.DataFrame({"predicted": pred, "model_batch": batch, "reason": reason},
                            index=self.rows.index)


def with_kv_bits(df: pd.DataFrame, bits: int | None) -> pd.DataFrame:
    """What-if: every usable row's precision with a ``bits``-bit KV cache (``fp8`` ->
    ``fp8-kv8``); None or 16 leaves the table as mapped."""
    if bits is None:
        return df
    out = df.copy()
    use = out["usable"].eq("yes") & out["precision"].ne("")
    base = out.loc[use, "precision"].str.replace(r"-kv\d+$", "", regex=True)
    out.loc[use, "precision"] = base if bits == 16 else base + f"-kv{int(bits)}"
    return out


def _pending_mask(df: pd.DataFrame) -> np.ndarray:
    """Rows on a pending hardware or model id (schema.toml [pending]) that has no catalog entry yet."""
    from grids import MODEL_IDS, catalog_ids

    known = {"hardware": set(catalog_ids()), "model": set(MODEL_IDS)}
    out = np.zeros(len(df), dtype=bool)
    for kind, ids in PENDING.items():
        waiting = (ids - known[kind]) & set(df[kind])
        if waiting:
            out |= df[kind].isin(waiting).to_numpy()
    return out


def _usable_mask(df: pd.DataFrame) -> np.ndarray:
    return (df["usable"].eq("yes") & df["statistic"].ne("p99")).to_numpy() & ~_pending_mask(df)


def compare(df: pd.DataFrame, *, calibrated: bool = True,
            devices: dict[str, Any] | None = None, paged_kv: bool = False,
            max_batch: int | None = None) -> pd.DataFrame:
    """Predicted versus measured for every row of ``df`` (from :func:`read_measurements`).

    Returns one row per measurement with columns ``id, group, hardware, model, metric, phase,
    measured, predicted, rel_error, log_error, status ('used', 'skipped' or 'unusable'), reason,
    model_batch``. Rows marked ``usable = no`` in the data are ``unusable`` (reason: their
    skip_reason); usable rows the model cannot evaluate (p99, does not fit, layout incompatible,
    catalog entry pending) are ``skipped`` with the reason.
    """
    res = df[["id", "group", "hardware", "model", "precision", "layout", "batch", "context",
              "output_len", "metric", "scope", "statistic", "value"]].copy()
    res = res.rename(columns={"value": "measured"})
    res["phase"] = res["metric"].map(PHASE).fillna("other")
    res["predicted"] = np.nan
    res["model_batch"] = np.nan
    res["status"] = np.where(df["usable"].eq("yes"), "skipped", "unusable")
    res["reason"] = df["skip_reason"].to_numpy()
    p99 = df["usable"].eq("yes") & df["statistic"].eq("p99")
    res.loc[p99, "reason"] = SKIP_TAIL
    res.loc[df["usable"].eq("yes").to_numpy() & _pending_mask(df), "reason"] = SKIP_PENDING
    use = _usable_mask(df)
    if use.any():
        ev = Evaluator(df.loc[use], calibrated=calibrated, devices=devices, paged_kv=paged_kv,
                       max_batch=max_batch)
        p = ev.predict()
        idx = res.index[use]
        res.loc[idx, "predicted"] = p["predicted"].to_numpy()
        res.loc[idx, "model_batch"] = p["model_batch"].to_numpy()
        res.loc[idx, "reason"] = p["reason"].to_numpy()
        res.loc[idx, "status"] = np.where(p["reason"].to_numpy() == "", "used", "skipped")
    used = res["status"].eq("used")
    res["rel_error"] = np.where(used, res["predicted"] / res["measured"] - 1.0, np.nan)
    res["log_error"] = np.where(used, np.log(res["predicted"] / res["measured"]), np.nan)
    return res


def aggregate(res: pd.DataFrame, by: str | Sequence[str] | None, *,
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
               "median_rel_error": median_rel_error(u["predicted"], u["measured"])}
        records.append(rec)
    return pd.DataFrame.from_records(records, columns=[
        "group", "used", "skipped", "unusable", "median_abs_rel_error", "mean_abs_log_error",
        "spearman", "median_rel_error"])


AGGREGATES = {"source": "group", "hardware": "hardware", "metric": "metric", "phase": "phase"}


def summarize(res: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The standard aggregates: overall, per source, per device, per metric and per phase."""
    out = {"overall": aggregate(res, None)}
    for name, col in AGGREGATES.items():
        out[name] = aggregate(res, col, keep_empty=(name == "source"))
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


# --------------------------------------------------------------------------------------------
# text, JSON and plot


def _fmt(v: float, pct: bool = True) -> str:
    if v is None or not np.isfinite(v):
        return "-"
    return f"{100 * v:.1f}%" if pct else f"{v:.3f}"


def aggregate_markdown(table: pd.DataFrame, title: str = "group") -> str:
    lines = [f"| {title} | used | skipped | unusable | median abs rel err | MALE | Spearman | "
             f"bias |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in table.itertuples(index=False):
        lines.append(f"| {r.group} | {r.used} | {r.skipped} | {r.unusable} | "
                     f"{_fmt(r.median_abs_rel_error)} | "
                     f"{_fmt(r.mean_abs_log_error, False)} | {_fmt(r.spearman, False)} | "
                     f"{_fmt(r.median_rel_error)} |")
    return "\n".join(lines)


def rows_text(res: pd.DataFrame, only_used: bool = False) -> str:
    sel = res[res["status"] == "used"] if only_used else res[res["status"] != "unusable"]
    lines = [f"{'id':<22} {'hardware':<13} {'model':<17} {'prec':<5} {'layout':<6} "
             f"{'batch':>5} {'in':>6} {'out':>5} {'metric':<11} {'measured':>11} "
             f"{'predicted':>11} {'err':>7}  note"]
    for r in sel.itertuples(index=False):
        note = r.reason if r.status == "skipped" else (
            f"model batch {int(r.model_batch)}" if r.batch == "max" else "")
        out = "" if not np.isfinite(r.output_len) else f"{int(r.output_len)}"
        lines.append(f"{r.id:<22} {r.hardware:<13} {r.model:<17} {r.precision:<5} "
                     f"{r.layout:<6} {r.batch:>5} {int(r.context):>6} {out:>5} {r.metric:<11} "
                     f"{r.measured:>11.4g} {r.predicted:>11.4g} "
                     f"{_fmt(r.rel_error):>7}  {note}")
    return "\n".join(lines)


def report_text(res: pd.DataFrame, title: str) -> str:
    agg = summarize(res)
    parts = [title, ""]
    for name in ("overall", "phase", "metric", "source", "hardware"):
        parts.append(aggregate_markdown(agg[name], name))
        parts.append("")
    sk = skip_reasons(res)
    if len(sk):
        parts.append("rows not used, by reason (skipped: usable rows the model cannot evaluate; "
                     "unusable: usable = no in the data):")
        parts.extend(f"  {r.rows:4d}  {r.status:<8}  {r.reason}"
                     for r in sk.itertuples(index=False))
    verdict = []
    ph = agg["phase"].set_index("group")
    for phase, target in TARGETS.items():
        if phase in ph.index and ph.loc[phase, "used"] > 0:
            e = ph.loc[phase, "median_abs_rel_error"]
            verdict.append(f"{phase}: median abs rel error {_fmt(e)} (target <= {target:.0%}) "
                           f"{'met' if e <= target else 'NOT met'}")
    if verdict:
        parts.append("")
        parts.extend(verdict)
    return "\n".join(parts)


def _records(table: pd.DataFrame) -> list[dict[str, Any]]:
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
    out["aggregates"] = {k: _records(v) for k, v in agg.items()}
    out["skip_reasons"] = _records(skip_reasons(res))
    if include_rows:
        cols = ["id", "group", "hardware", "model", "precision", "layout", "batch", "context",
                "output_len", "metric", "scope", "statistic", "measured", "predicted",
                "model_batch", "rel_error", "log_error", "status", "reason"]
        out["rows"] = _records(res[cols])
    return out


def parity_plot(res: pd.DataFrame, path: str | Path, *, title: str = "",
                compare_with: pd.DataFrame | None = None) -> Path:
    """Log-log parity plot of predicted versus measured: one panel per metric (each in its SI
    unit), one colour per device, the y = x line and a +/-25% band. With ``compare_with`` (e.g.
    the uncalibrated result) a first row of panels shows it for comparison."""
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
            ax.set_title(f"{name}: {m}, {len(g)} rows\nmedian |rel err| {_fmt(mare)}",
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
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
