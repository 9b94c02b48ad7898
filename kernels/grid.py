"""Entry points: the Cartesian-grid kernel and the point-list kernel.

Both call the stages of :mod:`kernels.roofline`, so the physics is written once. Inputs are the
packed per-axis tables of :mod:`kernels.params`: ``hw`` the platform rows (hardware x engine),
``px`` the (platform, precision, field) table, ``md``, ``pr``, ``ly``; outputs are float32 arrays
with the metrics on the first axis (``params.METRICS`` order).

How the work is compiled (docs/performance.md, "JIT start"):

* The stages are inlined (numba IR) into two serial functions that both entry points share:
  :func:`_static` (everything that depends on neither prompt nor output length) and
  :func:`_sweep` (the prefill and per-point parts over a range of prompt and output lengths).
  Each stage is therefore compiled once per process and cached once, whichever entry point runs
  first; the grid and the point list only add their own small loops.
* Each entry point has exactly one signature (:data:`GRID_SIG`, :data:`POINTS_SIG`): inputs are
  converted to it before the call and further compilation is disabled, so no second variant is
  ever built (a wrong type is a ``TypeError``, not a silent recompilation).
* The entry points are serial and release the GIL (``nogil``); :func:`_run_ranges` runs them on
  ``num_threads()`` Python threads over ranges of the outer loop. This replaces numba's
  ``prange``: no parallel-loop lowering to compile, no threading layer to start, and the caller
  can compute while another thread writes.
* Python's cyclic garbage collector is paused while numba compiles (:func:`_compiling`): the
  inliner deep-copies the intermediate representation of each inlined stage, and collections
  that scan those millions of short-lived objects made compilation several times slower.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import threading
import time

import numpy as np

from kernels.accelerate import fixed_tuple, numba_config, row_pointer, serial_jit
from kernels.params import (
    HW_FIELDS,
    LAYOUT_FIELDS,
    METRICS,
    MODE_CONTINUOUS,
    MODE_RATE,
    MODE_STATIC,
    MODEL_FIELDS,
    PRECISION_FIELDS,
    PX_FIELDS,
)
from kernels.point import stage_point, stage_prompt, stage_static
from kernels.roofline import static_reason, store_infeasible

N_METRICS = len(METRICS)
N_HW, N_MD, N_PR, N_LY = len(HW_FIELDS), len(MODEL_FIELDS), len(PRECISION_FIELDS), len(LAYOUT_FIELDS)
N_PX = len(PX_FIELDS)

#: CPU seconds a cold compile of one entry point takes on the reference machine (2-core AMD EPYC
#: VM, numba 0.68); only used for the one-line notice
COMPILE_ESTIMATE_S = 75


# ------------------------------------------------------------------------------ shared pieces
@serial_jit
def _static(hw_t, md_t, px_t, bt, pr_t, ly_t, mode):
    """The context-free part of one compatible (platform, model, batch, precision, layout)."""
    return stage_static(hw_t, md_t, px_t, bt, pr_t, ly_t, mode)


@serial_jit
def _sweep(st, hw_t, md_t, px_t, pr_t, ly_t, rows, bt, context, s0, s1, output_len, o0, o1,
           mode, out, j0, step):
    """Points (context[s], output_len[o]) for s in [s0, s1), o in [o0, o1) of one compatible
    (platform, model, batch, precision, layout) whose static part is ``st``; the point (s, o) is
    stored at ``out[:, j0 + ((s - s0) * (o1 - o0) + o - o0) * step]``. The prefill part is
    computed once per context."""
    n_o = o1 - o0
    for s in range(s0, s1):
        cs = context[s]
        pt = stage_prompt(st, hw_t, md_t, px_t, pr_t, ly_t, bt, cs, mode)
        js = j0 + (s - s0) * n_o * step
        for o in range(o0, o1):
            stage_point(st, pt, hw_t, md_t, px_t, pr_t, ly_t, rows, bt, cs, output_len[o],
                        mode, out, js + (o - o0) * step)


# ------------------------------------------------------------------------------ grid
@serial_jit
def _grid_block(hw_h, md_m, px_h, bt, context, output_len, pr, ly, mode, out, base):
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
    zero = np.int64(0)
    # table rows as tuples: the physics reads them with constant indices, and values held in
    # registers need no reload after every store to ``out`` (which row views might alias); the
    # scheduler's called (not inlined) functions take them as pointers (``rows``): a tuple
    # argument is passed field by field, ~125 values per call
    hw_t = fixed_tuple(hw_h, N_HW)
    md_t = fixed_tuple(md_m, N_MD)
    for p in range(n_p):
        pr_t = fixed_tuple(pr[p], N_PR)
        px_t = fixed_tuple(px_h[p], N_PX)
        for li in range(n_l):
            ly_t = fixed_tuple(ly[li], N_LY)
            j0 = base + p * n_l + li
            code = static_reason(hw_t, md_t, px_t, ly_t)
            if code != 0:
                for so in range(n_s * n_o):
                    store_infeasible(out, j0 + so * n_pl, code)
                continue
            st = _static(hw_t, md_t, px_t, bt, pr_t, ly_t, mode)
            rows = (row_pointer(hw_h), row_pointer(md_m), row_pointer(px_h[p]),
                    row_pointer(pr[p]), row_pointer(ly[li]))
            _sweep(st, hw_t, md_t, px_t, pr_t, ly_t, rows, bt, context, zero, n_s, output_len,
                   zero, n_o, mode, out, j0, n_pl)


@serial_jit
def _grid_range(hw, md, px, batch, context, output_len, pr, ly, mode, out, offset, start, stop):
    """Outer blocks (platform, model, batch) ``start <= outer < stop`` of the grid, in storage
    order; the grid's first point is stored at ``out[:, offset]``."""
    n_m = md.shape[0]
    n_b = batch.shape[0]
    inner = context.shape[0] * output_len.shape[0] * pr.shape[0] * ly.shape[0]
    for outer in range(start, stop):
        b = outer % n_b
        hm = outer // n_b
        m = hm % n_m
        h = hm // n_m
        _grid_block(hw[h], md[m], px[h], batch[b], context, output_len, pr, ly, mode, out,
                    offset + outer * inner)


# ------------------------------------------------------------------------------ point list
@serial_jit
def _points_range(hw, md, px, pr, ly, hi, mi, pi, li, batch, context, output_len, mode,
                  out, start, stop):
    """Points ``start <= r < stop`` of a point list (row indices into the tables), stored at
    ``out[:, r]``; the same stages as the grid, chained per point."""
    one = np.int64(1)
    for r in range(start, stop):
        h = hi[r]
        hw_t = fixed_tuple(hw[h], N_HW)
        md_t = fixed_tuple(md[mi[r]], N_MD)
        px_t = fixed_tuple(px[h, pi[r]], N_PX)
        pr_t = fixed_tuple(pr[pi[r]], N_PR)
        ly_t = fixed_tuple(ly[li[r]], N_LY)
        bt = batch[r]
        code = static_reason(hw_t, md_t, px_t, ly_t)
        if code != 0:
            store_infeasible(out, r, code)
            continue
        st = _static(hw_t, md_t, px_t, bt, pr_t, ly_t, mode[r])
        rows = (row_pointer(hw[h]), row_pointer(md[mi[r]]), row_pointer(px[h, pi[r]]),
                row_pointer(pr[pi[r]]), row_pointer(ly[li[r]]))
        _sweep(st, hw_t, md_t, px_t, pr_t, ly_t, rows, bt, context, r, r + one, output_len, r,
               r + one, mode[r], out, r, one)


# ------------------------------------------------------------------------------ compilation
def _signatures():
    from numba import types

    f1, f2, f3 = (types.Array(types.float64, n, "C") for n in (1, 2, 3))
    i1 = types.Array(types.int64, 1, "C")
    o2 = types.Array(types.float32, 2, "C")
    i = types.int64
    f = types.float64
    grid = (f2, f2, f3, f1, f1, f1, f2, f2, f, o2, i, i, i)
    points = (f2, f2, f3, f2, f2, i1, i1, i1, i1, f1, f1, f1, f1, o2, i, i)
    return grid, points


def jit_enabled() -> bool:
    return not numba_config.DISABLE_JIT


def cache_dir() -> str | None:
    """Where numba caches the compiled kernels (None: numba's own default locations)."""
    return numba_config.CACHE_DIR or None


class _Notice:
    """One line on stderr when the expensive shared pieces really compile (not on a cache load,
    and not for an entry point whose shared pieces are already compiled)."""

    def __init__(self) -> None:
        self.shown = False

    def on_start(self, event) -> None:
        disp = event.data.get("dispatcher") if isinstance(event.data, dict) else None
        if self.shown or disp not in (_static, _sweep):
            return
        self.shown = True
        where = cache_dir() or "numba's default cache"
        sys.stderr.write(f"accel-sweep: compiling the kernels once (~{COMPILE_ESTIMATE_S} s); "
                         f"cached in {where}\n")
        sys.stderr.flush()


@contextlib.contextmanager
def _compiling():
    """Context of a first call: the cyclic GC paused, a notice if numba really compiles."""
    from numba.core import event

    class Listener(event.Listener):
        def __init__(self) -> None:
            self.notice = _Notice()

        def on_start(self, ev) -> None:
            self.notice.on_start(ev)

        def on_end(self, ev) -> None:
            pass

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        with event.install_listener("numba:compile", Listener()):
            yield
    finally:
        if was_enabled:
            gc.enable()


_ready: dict[str, bool] = {}
_ready_lock = threading.Lock()


def _entry(name: str):
    """The compiled entry point ``name`` ('grid' or 'points'): compiled (or loaded from the cache)
    once for its one signature, then closed to further compilation."""
    disp = _grid_range if name == "grid" else _points_range
    if _ready.get(name) or not jit_enabled():
        return disp
    with _ready_lock:
        if not _ready.get(name):
            sig = _signatures()[0 if name == "grid" else 1]
            with _compiling():
                disp.compile(sig)
            disp.disable_compile()
            _ready[name] = True
    return disp


def compile_kernels() -> dict[str, float]:
    """Compile (or load from the cache) every entry point now; returns seconds per entry point.
    ``python -m kernels`` calls this, e.g. after installing, so that the first run is fast."""
    times = {}
    for name in ("grid", "points"):
        t0 = time.perf_counter()
        _entry(name)
        times[name] = time.perf_counter() - t0
    # the finite runs' fluid model (sweep.finite_run): small, one signature
    from kernels.fluid import fluid_iterations

    t0 = time.perf_counter()
    fluid_iterations(np.array([0.0, 1.0]), 1.0, 1.0, True)
    times["fluid"] = time.perf_counter() - t0
    return times


# ------------------------------------------------------------------------------ threads
_threads: int | None = None


def _default_threads() -> int:
    env = os.environ.get("NUMBA_NUM_THREADS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            pass
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def num_threads() -> int:
    """Threads the kernels run on (default: the CPUs this process may use, or
    ``NUMBA_NUM_THREADS``)."""
    return _threads if _threads is not None else _default_threads()


def set_num_threads(n: int | None) -> None:
    """Run the kernels on ``n`` threads (None: back to the default)."""
    global _threads
    if n is not None and int(n) < 1:
        raise ValueError(f"threads must be >= 1, got {n}")
    _threads = None if n is None else int(n)


#: below this many points a call runs on the calling thread only
SERIAL_POINTS = 20_000
#: ranges per thread (dynamic scheduling evens out cheap infeasible and costly feasible blocks)
RANGES_PER_THREAD = 8


def _run_ranges(fn, args: tuple, n: int, points: int, threads: int | None) -> None:
    """``fn(*args, lo, hi)`` over ``[0, n)`` cut into ranges, on ``threads`` threads.

    The calling thread waits (interruptibly); on any exception, or an interrupt, no further
    range is started, the ranges already running finish, and the exception is raised."""
    if points < SERIAL_POINTS:  # before asking for the thread count: one-point calls
        fn(*args, 0, n)
        return
    k = num_threads() if threads is None else max(1, int(threads))
    k = min(k, n)
    if k <= 1:
        fn(*args, 0, n)
        return
    size = max(1, -(-n // (k * RANGES_PER_THREAD)))
    ranges = iter([(lo, min(n, lo + size)) for lo in range(0, n, size)])
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[BaseException] = []

    def worker() -> None:
        while not stop.is_set():
            with lock:
                r = next(ranges, None)
            if r is None:
                return
            try:
                fn(*args, r[0], r[1])
            except BaseException as exc:  # re-raised in the calling thread
                errors.append(exc)
                stop.set()
                return

    workers = [threading.Thread(target=worker, name=f"accel-sweep-kernel-{i}", daemon=True)
               for i in range(k)]
    for t in workers:
        t.start()
    try:
        for t in workers:
            t.join()
    except BaseException:
        stop.set()
        for t in workers:  # running ranges finish (milliseconds): ``out`` is not written later
            t.join()
        raise
    if errors:
        raise errors[0]


# ------------------------------------------------------------------------------ public API
_MODES = (MODE_STATIC, MODE_CONTINUOUS, MODE_RATE)


def _mode(mode) -> float:
    m = float(mode)
    if m not in _MODES:
        raise ValueError(f"mode must be one of {_MODES} (kernels.params.MODE_*), got {mode!r}")
    return m


def _f64(a) -> np.ndarray:
    """A C-contiguous, writable float64 copy or view (the one type the entry points take)."""
    return a if _typed(a, np.float64) else np.require(a, dtype=np.float64,
                                                      requirements=("C", "W"))


def _i64(a) -> np.ndarray:
    return a if _typed(a, np.int64) else np.require(a, dtype=np.int64, requirements=("C", "W"))


def _typed(a, dtype) -> bool:
    """``a`` already is what np.require would return (the check costs a tenth of the call, which
    matters for one-point calls)."""
    return (type(a) is np.ndarray and a.dtype == dtype and a.flags.c_contiguous
            and a.flags.writeable)


def grid_shape(hw, md, batch, context, output_len, pr, ly) -> tuple[int, ...]:
    return (hw.shape[0], md.shape[0], batch.shape[0], context.shape[0], output_len.shape[0],
            pr.shape[0], ly.shape[0])


def evaluate_grid(hw, md, px, batch, context, output_len, pr, ly, out=None, *, offset: int = 0,
                  threads: int | None = None, mode: float = MODE_STATIC):
    """Evaluate the Cartesian grid platform x model x batch x context x output_len x precision x
    layout. Returns float32 ``(N_METRICS, H, M, B, S, O, P, L)`` (C order, storage order).

    ``out``: a C-contiguous float32 ``(N_METRICS, N)`` array to write into, the grid's points at
    ``out[:, offset:offset + n]`` (a chunk of a larger result is written in place); the return
    value is then a view of that part. ``threads``: override :func:`num_threads` for this call.
    ``mode``: the serving mode (``kernels.params.MODE_*``; with ``MODE_RATE`` the ``batch`` axis
    holds request rates of the layout [1/s]). The metrics of ``params.RATE_METRICS`` are written
    in rate mode only (otherwise their rows are NaN at infeasible points and left as they were
    at the others).
    """
    shape = grid_shape(hw, md, batch, context, output_len, pr, ly)
    n = int(np.prod(shape))
    offset = int(offset)
    if out is None:  # NaN in the rows a mode does not write (params.RATE_METRICS)
        out = np.full((N_METRICS, n), np.nan, dtype=np.float32)
        offset = 0
    if (out.dtype != np.float32 or out.ndim != 2 or out.shape[0] != N_METRICS
            or not out.flags.c_contiguous or not out.flags.writeable
            or offset < 0 or offset + n > out.shape[1]):
        raise ValueError(f"out must be a writable C-contiguous float32 ({N_METRICS}, N) array with "
                         f"room for {n} points at offset {offset}; got {out.dtype} {out.shape}")
    n_outer = shape[0] * shape[1] * shape[2]
    if n > 0:
        _run_ranges(_entry("grid"),
                    (_f64(hw), _f64(md), _f64(px), _f64(batch), _f64(context), _f64(output_len),
                     _f64(pr), _f64(ly), _mode(mode), out, offset),
                    n_outer, n, threads)
    return out[:, offset:offset + n].reshape((N_METRICS, *shape))


def evaluate_points(hw, md, px, pr, ly, hi, mi, pi, li, batch, context, output_len,
                    mode=None, *, threads: int | None = None):
    """Evaluate a list of points given by row indices into the tables and per-row batch, context,
    output length and serving mode (``kernels.params.MODE_*``, one per row or one for all;
    default static). Returns float32 ``(N_METRICS, n)`` (NaN where a metric does not apply).
    Inputs are converted once here to the entry point's one signature (contiguous int64
    indices, float64 values)."""
    n = len(hi)
    out = np.full((N_METRICS, n), np.nan, dtype=np.float32)
    flags = np.zeros(n) if mode is None else np.asarray(mode, dtype=np.float64)
    if flags.ndim == 0:
        flags = np.full(n, float(flags))
    if flags.shape != (n,) or not (set(flags.tolist()) <= set(_MODES) if n <= 64
                                   else np.isin(flags, _MODES).all()):
        raise ValueError(f"mode: one of {_MODES} per point ({n}) or one for all, got "
                         f"{np.unique(flags)[:5]} of shape {flags.shape}")
    if n > 0:
        _run_ranges(_entry("points"),
                    (_f64(hw), _f64(md), _f64(px), _f64(pr), _f64(ly), _i64(hi), _i64(mi),
                     _i64(pi), _i64(li), _f64(batch), _f64(context), _f64(output_len),
                     _f64(flags), out),
                    n, n, threads)
    return out
