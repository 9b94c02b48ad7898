"""Evaluate measurement rows with the model: each row on its engine, in its load mode, in its
convention.

* ``load = static``: a batch of ``batch`` requests processed together (TTFT the batch's prefill,
  TPOT its decode step; docs/model.md sections 7-11);
* ``load = max_load``: the engine chose the concurrency: continuous batching at the maximum
  concurrency its scheduler and KV cache reach (:func:`sweep.execute.points.max_load`,
  docs/model.md section 13.2), capped by the row's ``batch_cap`` where the source states one;
* ``load = online``: requests arrive at ``request_rate`` (Poisson): continuous batching at that
  rate, the mean TTFT with the queueing of docs/model.md section 13.4; a row that states only a
  concurrency (``batch``) is evaluated at that concurrency.

A row whose engine the source does not state is evaluated with the default engine (``native``,
each device's vendor stack), and says so in ``assumption``. A row whose ``engine_version`` names
one of its engine's ``[builds]`` (a ``matches`` prefix) runs as that build (``vllm@0.6.0``).
Conventions: ``scope = per_device``
divides the layout's value by its devices, ``per_system`` scales it to the measured system's
devices; ``total_*`` metrics count input + output tokens (seed 004's convention).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from grids.engines import engine_for_version
from grids.errors import SpecError
from grids.spec import DEFAULT_ENGINE
from kernels.params import (
    INFEASIBLE_MEANINGS,
    METRICS,
    MODE_CONTINUOUS,
    MODE_RATE,
    MODE_STATIC,
)
from sweep.execute.points import PointTables, evaluate_rows, max_load, resolve_points
from sweep.execute.tables import Tables
from sweep.validate.measurements import (
    PHASE,
    SKIP_TAIL,
    one_line_error,
    usable_mask,
)

_FITS = METRICS.index("fits")
_WHY = METRICS.index("infeasible_reason")
_CONC = METRICS.index("concurrency")
#: what a row whose engine is not stated is evaluated with
ASSUME_ENGINE = DEFAULT_ENGINE
ENGINE_ASSUMED = f"engine not stated: evaluated with '{ASSUME_ENGINE}'"
BEYOND_WINDOW = ("prompt + output beyond the model's context window: evaluated as measured "
                 "(extended context)")
#: measured rows beyond a model's window ran it (rope scaling): the model does not refuse them
MEASURED_CONTEXT_SCALING = 1024.0


def infeasible_text(code: float) -> str:
    """The skip reason of a row the model cannot evaluate (the kernel's infeasible_reason)."""
    c = int(code) if np.isfinite(code) else 0
    what = INFEASIBLE_MEANINGS[c] if 0 < c < len(INFEASIBLE_MEANINGS) else "unknown"
    return f"infeasible in the model: {what}"


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


def engine_versions(rows: pd.DataFrame) -> pd.Series:
    """Each row's ``engine_version`` as printed, stripped ("" where the table has none)."""
    if "engine_version" not in rows:
        return pd.Series("", index=rows.index)
    return rows["engine_version"].fillna("").astype(str).str.strip()


def engine_refs(rows: pd.DataFrame) -> list[str]:
    """Each row's engine as the model runs it: the build its ``engine_version`` names, or the
    assumed engine where the row states none."""
    engine = rows["engine"].fillna("").astype(str).str.strip()
    return [engine_for_version(e, v) if e else ASSUME_ENGINE
            for e, v in zip(engine, engine_versions(rows))]


class Evaluator:
    """The usable rows of a measurements table as kernel points, ready to be evaluated repeatedly
    with different engine parameters (the calibration varies them: :meth:`predict` takes a
    replacement platform table).

    ``overlay`` is an engine calibration overlay (parsed TOML; None = the shipped one, ``{}`` =
    none). Rows whose hardware, engine, model, precision or layout cannot be loaded raise one
    SpecError listing them.
    """

    def __init__(self, rows: pd.DataFrame, *, overlay: dict[str, Any] | None = None) -> None:
        self.rows = rows.reset_index(drop=True)
        engine = self.rows["engine"].fillna("").astype(str).str.strip()
        self.engine_assumed = engine.eq("").to_numpy()
        # a row whose engine_version names one of its engine's [builds] runs as that build
        self.engine_ref = engine_refs(self.rows)
        table = self.rows.assign(engine=self.engine_ref)
        table = table.set_index("id", drop=False)
        try:
            self.points: PointTables = resolve_points(
                table, where="measurements", overlay=overlay,
                context_scaling=MEASURED_CONTEXT_SCALING)
        except SpecError as exc:
            raise one_line_error(exc.problems, "measurements") from None
        pt = self.points
        n = len(self.rows)
        layouts = pt.objects["parallelism"]
        self.layout_devices = np.array([layouts[i].devices for i in pt.index["parallelism"]],
                                       dtype=np.float64)
        self.context = self.rows["context"].to_numpy(np.float64)
        out_len = self.rows["output_len"].to_numpy(np.float64)
        self.output_len = np.where(np.isfinite(out_len), out_len, 1.0)
        load = self.rows["load"].astype(str).to_numpy()
        self.max_load = (load == "max_load") | self.rows["batch"].eq("max").to_numpy()
        self.online = load == "online"
        self.batch = np.where(self.max_load, 1.0, self.rows["batch_num"].to_numpy(np.float64))
        self.rate = pd.to_numeric(self.rows["request_rate"], errors="coerce").to_numpy(np.float64)
        self.metric = self.rows["metric"].to_numpy()
        conv = [_conversion(m, sc, d, ld) for m, sc, d, ld in zip(
            self.metric, self.rows["scope"], self.rows["devices"].to_numpy(np.float64),
            self.layout_devices)]
        self._index = np.array([c[0] for c in conv], dtype=np.int64)
        self._factor = np.array([c[1] for c in conv], dtype=np.float64)
        self.n = n
        devs = pt.objects["hardware"]
        precs = pt.objects["precision"]
        h, p = pt.index["hardware"], pt.index["precision"]
        #: per row: the device's vendor and the compute dtype the precision runs in
        self.vendors = np.array([devs[i].vendor for i in h], dtype=object)
        self.compute_dtypes = np.array([precs[j].compute_dtype_for(devs[i].peak_flops) or ""
                                        for i, j in zip(h, p)], dtype=object)
        self.overlay = overlay
        models = pt.objects["model"]
        window = np.array([models[i].max_context for i in pt.index["model"]], dtype=np.float64)
        self.beyond_window = self.context + self.output_len > window

    def subset(self, rows: np.ndarray) -> Evaluator:
        """An evaluator of some of these rows (same overlay)."""
        return Evaluator(self.rows.iloc[np.asarray(rows)], overlay=self.overlay)

    def tables_for(self, overlay: dict[str, Any] | None) -> Tables:
        """The kernels' tables of these rows with the engines resolved under ``overlay``."""
        return self.points.retable(self.points.engines(overlay))

    def outputs(self, tables: Tables | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Kernel output per row in its load mode ``(N_METRICS, n)``, and the concurrency used."""
        n = self.n
        out = np.full((len(METRICS), n), np.nan, dtype=np.float32)
        rows = np.arange(n)
        load = np.where(self.online & np.isfinite(self.rate), self.rate, self.batch)
        mode = np.where(self.max_load | ~self.online, MODE_STATIC, MODE_CONTINUOUS)
        mode = np.where(self.online & np.isfinite(self.rate), MODE_RATE, mode)
        plain = ~self.max_load
        if plain.any():
            r = rows[plain]
            out[:, r] = evaluate_rows(self.points, r, load[r], self.context[r],
                                      self.output_len[r], mode=mode[r], tables=tables)
        if self.max_load.any():
            r = rows[self.max_load]
            o, _ = max_load(self.points, r, self.context[r], self.output_len[r], tables=tables,
                            cap=self._cap(r))
            out[:, r] = o
        return out, out[_CONC].astype(np.float64)

    def _cap(self, r: np.ndarray) -> np.ndarray:
        cap = pd.to_numeric(self.rows["batch_cap"].iloc[r], errors="coerce").to_numpy(np.float64)
        return np.where(np.isfinite(cap), cap, np.inf)

    def predict_values(self, tables: Tables | None = None) -> np.ndarray:
        """Predicted value per row in the row's convention (NaN where the model cannot)."""
        return self.predict(tables, frame=False)

    def predict(self, tables: Tables | None = None, frame: bool = True):
        """Predicted value per row in the row's convention, with the batch the model used and
        the reason where it cannot evaluate the row (``tables``: see :meth:`tables_for`)."""
        out, used = self.outputs(tables)
        cols = np.arange(self.n)
        safe = np.where(self._index < 0, 0, self._index)
        v = out[safe, cols].astype(np.float64) * self._factor
        if (self._index < 0).any():
            tt = out[METRICS.index("total_throughput")] / out[METRICS.index("power")]
            v = np.where(self._index < 0, tt, v)
        ok = out[_FITS] == 1.0
        pred = np.where(ok, v, np.nan)
        if not frame:
            return pred
        reason = np.array(["" if good else infeasible_text(code)
                           for good, code in zip(ok, out[_WHY])], dtype=object)
        assumption = np.array(["; ".join(t for t, on in ((ENGINE_ASSUMED, a), (BEYOND_WINDOW, b))
                                         if on) for a, b in zip(self.engine_assumed,
                                                                self.beyond_window)],
                              dtype=object)
        return pd.DataFrame({"predicted": pred, "model_batch": np.where(ok, used, np.nan),
                             "reason": reason, "assumption": assumption},
                            index=self.rows.index)


def compare(df: pd.DataFrame, *, overlay: dict[str, Any] | None = None) -> pd.DataFrame:
    """Predicted versus measured for every row of ``df`` (from :func:`read_measurements`).

    Returns one row per measurement with columns ``id, publisher, source, hardware, engine,
    model, precision, parallelism, load, batch, context, output_len, metric, phase, scope,
    statistic, measured, predicted, model_batch, rel_error, log_error, status ('used', 'skipped'
    or 'unusable'), reason, assumption, release, build``: ``release`` is the engine and its
    ``engine_version`` as the source printed it, ``build`` the engine reference the row was
    evaluated with (``vllm@0.6.0`` where the version names one of the file's builds). Rows
    marked ``usable = no`` in the data are ``unusable`` (reason: their skip_reason); usable rows
    the model cannot evaluate (p99, infeasible in the model) are ``skipped`` with the reason.
    ``overlay`` (a calibration overlay's tables; None = the shipped one) is checked whole: a
    misspelt section is an error.
    """
    if overlay:
        from grids.engines import check_overlay

        check_overlay(overlay)
    res = df[["id", "publisher", "source_key", "hardware", "engine", "model", "precision",
              "parallelism", "load", "batch", "context", "output_len", "metric", "scope",
              "statistic", "value"]].copy()
    res = res.rename(columns={"value": "measured", "source_key": "source"})
    res["engine"] = res["engine"].where(res["engine"].astype(str).str.strip().ne(""),
                                        f"({ASSUME_ENGINE})")
    res["phase"] = res["metric"].map(PHASE).fillna("other")
    res["predicted"] = np.nan
    res["model_batch"] = np.nan
    res["status"] = np.where(df["usable"].eq("yes"), "skipped", "unusable")
    res["reason"] = df["skip_reason"].to_numpy()
    res["assumption"] = ""
    version = engine_versions(df)
    res["release"] = (res["engine"].astype(str) + " "
                      + version.where(version.ne(""), "(version not printed)"))
    res["build"] = ""
    p99 = df["usable"].eq("yes") & df["statistic"].eq("p99")
    res.loc[p99, "reason"] = SKIP_TAIL
    use = usable_mask(df)
    if use.any():
        ev = Evaluator(df.loc[use], overlay=overlay)
        p = ev.predict()
        idx = res.index[use]
        for c in ("predicted", "model_batch", "reason", "assumption"):
            res.loc[idx, c] = p[c].to_numpy()
        res.loc[idx, "build"] = ev.engine_ref
        res.loc[idx, "status"] = np.where(p["reason"].to_numpy() == "", "used", "skipped")
    used = res["status"].eq("used")
    with np.errstate(invalid="ignore", divide="ignore"):
        res["rel_error"] = np.where(used, res["predicted"] / res["measured"] - 1.0, np.nan)
        res["log_error"] = np.where(used, np.log(res["predicted"] / res["measured"]), np.nan)
    return res
