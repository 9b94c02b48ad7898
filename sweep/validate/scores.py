"""Error scores of predicted against measured values (pairs with both sides finite and > 0)."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np


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


def median_log_error(pred, meas) -> float:
    """median ln(pred / meas): the signed bias on a log scale (0 = unbiased)."""
    p, m = _pairs(pred, meas)
    return float(np.median(np.log(p / m))) if p.size else math.nan


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
