"""Entry points: the Cartesian-grid kernel and the point-list kernel.

Both call :func:`kernels.roofline.evaluate_point`, so the physics is written once. Inputs are the
packed per-axis tables of :mod:`kernels.params`; outputs are float32 arrays with the metrics on the
first axis (``params.METRICS`` order).
"""

from __future__ import annotations

import numpy as np

from kernels.accelerate import fixed_tuple, parallel_jit, prange, serial_jit
from kernels.params import HW_FIELDS, LAYOUT_FIELDS, METRICS, MODEL_FIELDS, PRECISION_FIELDS
from kernels.roofline import (
    evaluate_point,
    is_compatible,
    stage_point,
    stage_prompt,
    stage_static,
    store_incompatible,
)

N_METRICS = len(METRICS)
N_HW, N_MD, N_PR, N_LY = len(HW_FIELDS), len(MODEL_FIELDS), len(PRECISION_FIELDS), len(LAYOUT_FIELDS)


@serial_jit
def _grid_block(hw_h, md_m, peak_h, bt, context, output_len, pr, ly, prefill_chunk, out, base):
    """One (hardware, model, batch) block of the grid: ``out[:, base:base + S*O*P*L]``.

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
        pk = peak_h[p]
        for li in range(n_l):
            ly_t = fixed_tuple(ly[li], N_LY)
            j0 = base + p * n_l + li
            if not is_compatible(hw_t, md_t, pk, ly_t):
                for so in range(n_s * n_o):
                    store_incompatible(out, j0 + so * n_pl)
                continue
            st = stage_static(hw_t, md_t, pk, bt, pr_t, ly_t)
            for s in range(n_s):
                cs = context[s]
                pt = stage_prompt(st, hw_t, md_t, pr_t, ly_t, bt, cs, prefill_chunk)
                js = j0 + s * n_o * n_pl
                for o in range(n_o):
                    stage_point(st, pt, hw_t, md_t, pk, pr_t, ly_t, bt, cs, output_len[o],
                                out, js + o * n_pl)


# The parallel loops below only call the serial block functions (ordinary calls, not numba-IR
# inlining), so numba's parfor analysis never walks the inlined physics: that keeps compilation
# short and avoids parfor array-analysis failures on the large inlined body.


@parallel_jit
def _grid_kernel(hw, md, peak, batch, context, output_len, pr, ly, prefill_chunk, out):
    n_m = md.shape[0]
    n_b = batch.shape[0]
    inner = context.shape[0] * output_len.shape[0] * pr.shape[0] * ly.shape[0]
    n_outer = hw.shape[0] * n_m * n_b
    # parallel over (hardware, model, batch), the outer dims in storage order
    for outer in prange(n_outer):
        b = outer % n_b
        hm = outer // n_b
        m = hm % n_m
        h = hm // n_m
        _grid_block(hw[h], md[m], peak[h], batch[b], context, output_len, pr, ly,
                    prefill_chunk, out, outer * inner)


@serial_jit
def _point_row(hw, md, peak, pr, ly, hi, mi, pi, li, batch, context, output_len,
               prefill_chunk, out, r):
    evaluate_point(hw[hi[r]], md[mi[r]], peak[hi[r], pi[r]], batch[r], context[r],
                   output_len[r], pr[pi[r]], ly[li[r]], prefill_chunk, out, r)


@parallel_jit
def _points_kernel(hw, md, peak, pr, ly, hi, mi, pi, li, batch, context, output_len,
                   prefill_chunk, out):
    for r in prange(hi.shape[0]):
        _point_row(hw, md, peak, pr, ly, hi, mi, pi, li, batch, context, output_len,
                   prefill_chunk, out, r)


def evaluate_grid(hw, md, peak, batch, context, output_len, pr, ly, prefill_chunk,
                  out=None):
    """Evaluate the Cartesian grid hardware x model x batch x context x output_len x precision x
    layout. Returns float32 ``(N_METRICS, H, M, B, S, O, P, L)`` (C order, storage order)."""
    shape = (hw.shape[0], md.shape[0], batch.shape[0], context.shape[0], output_len.shape[0],
             pr.shape[0], ly.shape[0])
    n = int(np.prod(shape))
    if out is None:
        out = np.empty((N_METRICS, n), dtype=np.float32)
    _grid_kernel(np.ascontiguousarray(hw, np.float64), np.ascontiguousarray(md, np.float64),
                 np.ascontiguousarray(peak, np.float64),
                 np.ascontiguousarray(batch, np.float64), np.ascontiguousarray(context, np.float64),
                 np.ascontiguousarray(output_len, np.float64),
                 np.ascontiguousarray(pr, np.float64), np.ascontiguousarray(ly, np.float64),
                 float(prefill_chunk), out)
    return out.reshape((N_METRICS, *shape))


def evaluate_points(hw, md, peak, pr, ly, hi, mi, pi, li, batch, context, output_len,
                    prefill_chunk):
    """Evaluate a list of points given by row indices into the tables and per-row batch, context
    and output length. Returns float32 ``(N_METRICS, n)``."""
    n = len(hi)
    out = np.empty((N_METRICS, n), dtype=np.float32)
    _points_kernel(np.ascontiguousarray(hw, np.float64), np.ascontiguousarray(md, np.float64),
                   np.ascontiguousarray(peak, np.float64), np.ascontiguousarray(pr, np.float64),
                   np.ascontiguousarray(ly, np.float64), np.asarray(hi, np.int64),
                   np.asarray(mi, np.int64), np.asarray(pi, np.int64), np.asarray(li, np.int64),
                   np.asarray(batch, np.float64), np.asarray(context, np.float64),
                   np.asarray(output_len, np.float64), float(prefill_chunk), out)
    return out
