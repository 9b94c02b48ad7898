"""Entry points: the Cartesian-grid kernel and the point-list kernel.

Both call the stages of :mod:`kernels.roofline`, so the physics is written once. Inputs are the
packed per-axis tables of :mod:`kernels.params`: ``hw`` the platform rows (hardware x engine),
``px`` the (platform, precision, field) table, ``md``, ``pr``, ``ly``; outputs are float32 arrays
with the metrics on the first axis (``params.METRICS`` order).
"""

from __future__ import annotations

import numpy as np

from kernels.accelerate import fixed_tuple, parallel_jit, prange, serial_jit
from kernels.params import (
    HW_FIELDS,
    LAYOUT_FIELDS,
    METRICS,
    MODEL_FIELDS,
    PRECISION_FIELDS,
    PX_FIELDS,
)
from kernels.roofline import (
    evaluate_point,
    stage_point,
    stage_prompt,
    stage_static,
    static_reason,
    store_infeasible,
)

N_METRICS = len(METRICS)
N_HW, N_MD, N_PR, N_LY = len(HW_FIELDS), len(MODEL_FIELDS), len(PRECISION_FIELDS), len(LAYOUT_FIELDS)
N_PX = len(PX_FIELDS)


@serial_jit
def _grid_block(hw_h, md_m, px_h, bt, context, output_len, pr, ly, out, base):
    """One (platform, model, batch) block of the grid: ``out[:, base:base + S*O*P*L]``.

    Each quantity is computed once per distinct value of the axes it depends on: per (precision,
    layout) the context-free part, per context the prefill part, per output length the rest
    (``kernels.roofline``, ``stage_*``). Output index of (s, o, p, l) inside the block:
    ((s * n_o + o) * n_p + p) * n_l + l (storage order).
    """
    n_s = context.shape[0]
    n_o = output_len.shape[0]
    n_p = pr.shape[0]
    n_l = ly.shape[0]
    n_pl = n_p * n_l
    # table rows as tuples: the physics reads them with constant indices, and values held in
    # registers need no reload after every store to ``out`` (which row views might alias)
    hw_t = fixed_tuple(hw_h, N_HW)
    md_t = fixed_tuple(md_m, N_MD)
    for p in range(n_p):
        pr_t = fixed_tuple(pr[p], N_PR)
        px_t = fixed_tuple(px_h[p], N_PX)
        for li in range(n_l):
            ly_t = fixed_tuple(ly[li], N_LY)
            j0 = base + p * n_l + li
            code = static_reason(hw_t, md_t, px_t, ly_t, bt)
            if code != 0:
                for so in range(n_s * n_o):
                    store_infeasible(out, j0 + so * n_pl, code)
                continue
            st = stage_static(hw_t, md_t, px_t, bt, pr_t, ly_t)
            for s in range(n_s):
                cs = context[s]
                pt = stage_prompt(st, hw_t, md_t, px_t, pr_t, ly_t, bt, cs)
                js = j0 + s * n_o * n_pl
                for o in range(n_o):
                    stage_point(st, pt, hw_t, md_t, px_t, pr_t, ly_t, bt, cs, output_len[o],
                                False, out, js + o * n_pl)


# The parallel loops below only call the serial block functions (ordinary calls, not numba-IR
# inlining), so numba's parfor analysis never walks the inlined physics: that keeps compilation
# short and avoids parfor array-analysis failures on the large inlined body.


@parallel_jit
def _grid_kernel(hw, md, px, batch, context, output_len, pr, ly, out):
    n_m = md.shape[0]
    n_b = batch.shape[0]
    inner = context.shape[0] * output_len.shape[0] * pr.shape[0] * ly.shape[0]
    n_outer = hw.shape[0] * n_m * n_b
    # parallel over (platform, model, batch), the outer dims in storage order
    for outer in prange(n_outer):
        b = outer % n_b
        hm = outer // n_b
        m = hm % n_m
        h = hm // n_m
        _grid_block(hw[h], md[m], px[h], batch[b], context, output_len, pr, ly, out,
                    outer * inner)


@serial_jit
def _point_row(hw, md, px, pr, ly, hi, mi, pi, li, batch, context, output_len, inflight, out, r):
    evaluate_point(hw[hi[r]], md[mi[r]], px[hi[r], pi[r]], batch[r], context[r], output_len[r],
                   pr[pi[r]], ly[li[r]], inflight[r] > 0.5, out, r)


@parallel_jit
def _points_kernel(hw, md, px, pr, ly, hi, mi, pi, li, batch, context, output_len, inflight, out):
    for r in prange(hi.shape[0]):
        _point_row(hw, md, px, pr, ly, hi, mi, pi, li, batch, context, output_len, inflight, out,
                   np.int64(r))


def _f64(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


def evaluate_grid(hw, md, px, batch, context, output_len, pr, ly, out=None):
    """Evaluate the Cartesian grid platform x model x batch x context x output_len x precision x
    layout. Returns float32 ``(N_METRICS, H, M, B, S, O, P, L)`` (C order, storage order)."""
    shape = (hw.shape[0], md.shape[0], batch.shape[0], context.shape[0], output_len.shape[0],
             pr.shape[0], ly.shape[0])
    n = int(np.prod(shape))
    if out is None:
        out = np.empty((N_METRICS, n), dtype=np.float32)
    _grid_kernel(_f64(hw), _f64(md), _f64(px), _f64(batch), _f64(context), _f64(output_len),
                 _f64(pr), _f64(ly), out)
    return out.reshape((N_METRICS, *shape))


def evaluate_points(hw, md, px, pr, ly, hi, mi, pi, li, batch, context, output_len,
                    inflight=None):
    """Evaluate a list of points given by row indices into the tables and per-row batch, context,
    output length and in-flight flag (1 = KV sized for maximum load). Returns float32
    ``(N_METRICS, n)``. Inputs are converted once here to one signature (contiguous int64
    indices, float64 values), so the kernel is compiled once."""
    n = len(hi)
    out = np.empty((N_METRICS, n), dtype=np.float32)
    flags = np.zeros(n) if inflight is None else np.asarray(inflight, dtype=np.float64)
    if flags.ndim == 0:
        flags = np.full(n, float(flags))
    if flags.shape != (n,):
        raise ValueError(f"inflight: one flag per point ({n}) or one for all, got shape "
                         f"{flags.shape}")
    _points_kernel(_f64(hw), _f64(md), _f64(px), _f64(pr), _f64(ly),
                   np.ascontiguousarray(hi, np.int64), np.ascontiguousarray(mi, np.int64),
                   np.ascontiguousarray(pi, np.int64), np.ascontiguousarray(li, np.int64),
                   _f64(batch), _f64(context), _f64(output_len), _f64(flags), out)
    return out
