"""A grid spec packed for the kernels, and a method to evaluate any chunk of it."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from grids.spec import GridSpec
from kernels.params import METRICS
from sweep.execute.memory import populated_empty
from sweep.execute.plan import N_OUTER, Chunk, plan_chunks
from sweep.execute.tables import build_tables
from sweep.results.assemble import KEPT_ROWS, metric_arrays, result_metrics

#: what keeps each point's best layout of a chunk when the spec says ``best_layout``: a class
#: taking the spec, with ``keep(out, dest)``, ``n_layouts``, ``basis`` and ``attrs``
#: (:class:`sweep.analysis.keep_layout.LayoutKeeper`, installed by the package root: this room
#: does not import the analyses)
KEEPER: Callable | None = None

#: where :meth:`GridRun.evaluate` writes a chunk: ``dest(chunk) -> (out, offset)``, ``out`` a
#: C-contiguous float32 ``(N_METRICS, N)`` array and the chunk's first point at ``out[:, offset]``
Destination = Callable[[Chunk], tuple[np.ndarray, int]]


class GridRun:
    """The per-axis tables of a spec and a method to evaluate any chunk of it."""

    def __init__(self, spec: GridSpec) -> None:
        self.spec = spec
        self.engines = spec.resolved_engines()
        self.costs = spec.device_costs()
        self.tables = build_tables(spec.hardware, spec.models, spec.precisions, spec.layouts,
                                   self.engines, self.costs, float(spec.prefill_chunk),
                                   spec.context_scaling)
        self.batch = np.array(spec.batch, dtype=np.float64)
        self.context = np.array(spec.context, dtype=np.float64)
        self.output_len = np.array(spec.output_len, dtype=np.float64)
        self.shape = spec.shape
        self._dest: Destination | None = None
        #: keeps each point's best layout (spec key ``best_layout``), else None
        self.keeper = None
        if spec.keeps_best_layout:
            if KEEPER is None:
                raise RuntimeError("no layout keeper installed: import sweep (its package root "
                                   "installs sweep.analysis.keep_layout.LayoutKeeper)")
            self.keeper = KEEPER(spec)
        self._buffer: np.ndarray | None = None
        self.every_layout: np.ndarray | None = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_dest"] = None  # a local buffer, never shipped to a Dask worker
        state["_buffer"] = state["every_layout"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        state.setdefault("_dest", None)
        state.setdefault("_buffer", None)
        state.setdefault("every_layout", None)
        state.setdefault("keeper", None)
        self.__dict__.update(state)

    def evaluate(self, c: Chunk) -> np.ndarray:
        """Output of chunk ``c`` as the result stores it: the kernel's ``(N_METRICS, h, e, m, b,
        s, O, P, L)``, or, when the spec keeps only each point's best layout, the rows
        :data:`~sweep.results.assemble.KEPT_ROWS` over ``(h, e, m, b, s, O, P)`` (the kernel's
        output of every layout is then :attr:`every_layout`, until the next chunk).

        Written into the destination set by :meth:`writing_into` (a view of it is returned), or
        into a fresh array."""
        if self.keeper is None:
            return self._kernel(c, *((None, 0) if self._dest is None else self._dest(c)))
        res = self.every_layout = self._kernel(c, self._scratch(c.size(self.shape)), 0)
        n = c.size(self.spec.result_shape)
        dest, offset = ((np.empty((len(KEPT_ROWS), n), dtype=np.float32), 0)
                        if self._dest is None else self._dest(c))
        kept = dest[:, offset:offset + n]
        self.keeper.keep(res, kept)
        return kept.reshape(len(KEPT_ROWS), *res.shape[1:-1])

    def _kernel(self, c: Chunk, out: np.ndarray | None, offset: int) -> np.ndarray:
        """The kernel's output of chunk ``c``, every layout: ``(N_METRICS, h, e, m, b, s, O, P,
        L)``, written at ``out[:, offset:]`` (None: a fresh array)."""
        from kernels import evaluate_grid  # lazy: importing sweep does not compile kernels

        t = self.tables
        rows = t.platform_rows(c.h, c.e)
        res = evaluate_grid(t.hw[rows], t.md[c.m], t.px[rows], self.batch[c.b],
                            self.context[c.s], self.output_len, t.pr, t.ly, out, offset=offset,
                            mode=self.spec.mode)
        return res.reshape(res.shape[0], c.h.stop - c.h.start, c.e.stop - c.e.start,
                           *res.shape[2:])

    def _scratch(self, points: int) -> np.ndarray:
        """The buffer the kernel writes a chunk into when only each point's best layout is kept
        (one, reused chunk after chunk; grown when too small)."""
        buf = self._buffer
        if buf is None or buf.shape[1] < points:
            buf = self._buffer = populated_empty((len(METRICS), points), np.float32)
        return buf

    @property
    def kept(self) -> tuple[int, str] | None:
        """(layouts evaluated, basis) when only each point's best layout is kept, else None."""
        return (None if self.keeper is None
                else (self.keeper.n_layouts, self.keeper.attrs["best_layout_basis"]))

    def observed(self, out: np.ndarray) -> np.ndarray:
        """The kernel output of every layout behind ``out`` (what :meth:`evaluate` returned for
        the last chunk), as a summary's observer reads it."""
        if self.keeper is None:
            return out
        assert self.every_layout is not None  # set by evaluate()
        return self.every_layout

    @property
    def rows(self) -> int:
        """Rows of the chunks :meth:`evaluate` writes (metrics, and the layout kept)."""
        return len(METRICS) if self.keeper is None else len(KEPT_ROWS)

    @contextlib.contextmanager
    def writing_into(self, dest: Destination):
        """Within this context, :meth:`evaluate` writes each chunk where ``dest`` says."""
        previous, self._dest = self._dest, dest
        try:
            yield self
        finally:
            self._dest = previous

    def flat_offset(self, c: Chunk) -> int:
        """Index of chunk ``c``'s first point in the whole grid (storage order); the chunks of
        :func:`sweep.execute.plan.plan_chunks` are contiguous runs of it."""
        outer = self.shape[:N_OUTER]
        start = np.ravel_multi_index(tuple(sl.start for sl in c.slices), outer)
        return int(start) * math.prod(self.spec.result_shape[N_OUTER:])

    def is_contiguous(self, c: Chunk) -> bool:
        outer = self.shape[:N_OUTER]
        first = np.ravel_multi_index(tuple(sl.start for sl in c.slices), outer)
        last = np.ravel_multi_index(tuple(sl.stop - 1 for sl in c.slices), outer)
        return int(last - first + 1) == math.prod(sl.stop - sl.start for sl in c.slices)

    def write_shape(self, c: Chunk) -> tuple[int, ...]:
        """Shape of chunk ``c`` in the result's dims (storage chunks follow it)."""
        outer = tuple(sl.stop - sl.start for sl in c.slices)
        inner = self.spec.result_shape[N_OUTER:]
        return outer + tuple(inner if self.spec.output_len_is_dim else inner[1:])

    def region(self, c: Chunk) -> tuple[slice, ...]:
        return (*c.slices, *(slice(None),) * (len(self.write_shape(c)) - N_OUTER))

    def chunk_arrays(self, c: Chunk, out: np.ndarray,
                     int8_buffers: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
        """The kernel output of chunk ``c`` as ``{metric: array}`` for its region (views of
        ``out``; the int8 flags are cast into ``int8_buffers`` when given, reused chunk after
        chunk)."""
        return metric_arrays(out, drop_output_len=not self.spec.output_len_is_dim,
                             int8_out=int8_buffers, metrics=result_metrics(self.spec))


    def metric_views(self, out: np.ndarray, names) -> dict[str, np.ndarray]:
        """Some metrics of a chunk's kernel output, as views in the result's dims (float32; the
        int8 flags uncast): what a :class:`~sweep.analysis.headline.ChunkReducer` reads."""
        drop = not self.spec.output_len_is_dim
        return {n: out[METRICS.index(n)][:, :, :, :, :, 0] if drop else out[METRICS.index(n)]
                for n in names}

    def reduce(self, reducer, c: Chunk, arrays: dict[str, np.ndarray],
               block_points: int) -> list:
        """``reducer(arrays, region)`` over chunk ``c`` in blocks of at most ``block_points``
        points (whole inner blocks; cut along the outer dims as chunks are), so its temporaries
        stay small; returns the pieces. ``arrays`` are the chunk's metrics in the result's dims."""
        shape = tuple(sl.stop - sl.start for sl in c.slices) + tuple(self.shape[N_OUTER:])
        parts = []
        for b in plan_chunks(shape, block_points):
            sub = {n: a[b.slices] for n, a in arrays.items()}
            whole = Chunk(*(slice(o.start + s.start, o.start + s.stop)
                            for o, s in zip(c.slices, b.slices)))
            parts.append(reducer(sub, self.region(whole)))
        return parts

    def point_metrics(self, names, h: int, rest: tuple[int, ...]) -> dict[str, np.ndarray]:
        """Some metrics of one (device, workload point) over the layouts, evaluated again:
        ``rest`` indexes the result's dims between hardware and parallelism (engine, model,
        batch, context, [output_len], precision). The kernel gives a point the same values in
        any chunk."""
        e, m, b, s = rest[:4]
        o = rest[4] if self.spec.output_len_is_dim else 0
        c = Chunk(*(slice(i, i + 1) for i in (h, e, m, b, s)))
        out = self._kernel(c, None, 0)  # a fresh array, every layout
        return {n: out[METRICS.index(n)][0, 0, 0, 0, 0, o, rest[-1], :] for n in names}

    def observe(self, obs, c: Chunk, arrays: dict[str, np.ndarray], block_points: int) -> None:
        """Hand chunk ``c`` (``arrays``: its metrics in the result's dims) to a summary's
        observer (``obs.reducer`` reduces a block, ``obs.merge`` keeps the piece), in blocks of
        at most ``block_points`` points."""
        for part in self.reduce(obs.reducer, c, arrays, block_points):
            obs.merge(part)


FITS = METRICS.index("fits")


def count_feasible(out: np.ndarray) -> int:
    """Points with fits = 1 in a kernel output (metrics on the first axis)."""
    return int(np.count_nonzero(out[FITS] == 1.0))


@dataclass
class RunStats:
    points: int
    seconds: float
    chunks: int
    path: Path | None = None
    feasible: int = 0  # points with fits = 1
    #: seconds by phase, e.g. "kernel" (evaluating), "assemble" (building the Dataset),
    #: "buffer_wait" / "final_write_wait" (the run waiting for the writer thread: a free buffer,
    #: the last writes), "writer_busy" (the writer thread's own busy time, which overlaps the rest)
    phases: dict[str, float] = field(default_factory=dict)
    #: the observer that computed the run's summary from its chunks (``summarise=`` of
    #: :func:`sweep.execute.local.run_with_stats`), and how the memory budget was spent
    summary: object | None = None
    memory: object | None = None
    #: the result's dims and their sizes, in storage order
    sizes: dict[str, int] | None = None
    #: (layouts evaluated, basis) when the result keeps only each point's best layout
    kept: tuple[int, str] | None = None

    @property
    def points_per_second(self) -> float:
        return self.points / self.seconds if self.seconds > 0 else float("inf")
