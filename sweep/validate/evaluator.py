"""Evaluate measurement rows with the model: conventions converted, max-load rows searched."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from grids.errors import SpecError
from grids.spec import DEFAULT_PREFILL_CHUNK
from kernels.params import HW, METRICS
from sweep.execute.points import evaluate_rows, resolve_points
from sweep.validate.measurements import (
    PHASE,
    SKIP_INCOMPATIBLE,
    SKIP_NO_FIT,
    SKIP_TAIL,
    one_line_error,
    usable_mask,
)

MAX_LOAD_BATCHES = tuple(2 ** k for k in range(13))  # 1 .. 4096
LARGEST_BATCH_SEARCH = 1 << 20

_FITS = METRICS.index("fits")
_THR = METRICS.index("throughput")


#: source groups (leave-one-source-out unit) by a substring of ``source_file``
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
                 devices: dict[str, Any] | None = None,
                 prefill_chunk: int = DEFAULT_PREFILL_CHUNK,
                 paged_kv: bool = False, max_batch: int | None = None) -> None:
        from grids.hardware import load_device

        self.rows = rows.reset_index(drop=True)
        self.prefill_chunk = float(prefill_chunk)
        devices = dict(devices or {})

        def dev_loader(v: str) -> Any:
            return devices[v] if v in devices else load_device(v, calibrated=calibrated)

        try:
            self.points = resolve_points(self.rows.set_index("id", drop=False),
                                         {"hardware": dev_loader}, where="measurements")
        except SpecError as exc:
            raise one_line_error(exc.problems, "measurements") from None
        pt = self.points
        self.tables = pt.tables
        self.hw_ids = pt.labels["hardware"]
        self.devices = dict(zip(self.hw_ids, pt.objects["hardware"]))
        n = len(self.rows)
        self._hi = pt.index["hardware"]
        self._li = pt.index["layout"]
        layouts = pt.objects["layout"]
        self.layout_devices = np.array([layouts[i].devices for i in self._li], dtype=np.float64)
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
        t = self.tables
        if static:
            hw, peak, hi = t.hw, t.peak, self._hi[rows]
        else:
            hw, peak, hi = (self._hw if hw is None else hw), self._peak, self._hi_eval[rows]
        return evaluate_rows(self.points, rows, batch, self.context[rows],
                             self.output_len[rows] if out_len is None else out_len,
                             self.prefill_chunk, hw=hw, peak=peak, hw_index=hi)

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


def compare(df: pd.DataFrame, *, calibrated: bool = True,
            devices: dict[str, Any] | None = None, paged_kv: bool = False,
            max_batch: int | None = None) -> pd.DataFrame:
    """Predicted versus measured for every row of ``df`` (from :func:`read_measurements`).

    Returns one row per measurement with columns ``id, group, hardware, model, metric, phase,
    measured, predicted, rel_error, log_error, status ('used', 'skipped' or 'unusable'), reason,
    model_batch``. Rows marked ``usable = no`` in the data are ``unusable`` (reason: their
    skip_reason); usable rows the model cannot evaluate (p99, does not fit, layout incompatible)
    are ``skipped`` with the reason.
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
    use = usable_mask(df)
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
