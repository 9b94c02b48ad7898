"""A grid spec packed for the kernels, and a method to evaluate any chunk of it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grids.spec import GridSpec
from sweep.execute.plan import N_OUTER, Chunk
from sweep.execute.tables import build_tables
from sweep.results.assemble import metric_arrays


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

    def evaluate(self, c: Chunk) -> np.ndarray:
        """Kernel output of chunk ``c``: ``(N_METRICS, h, e, m, b, s, O, P, L)``."""
        from kernels import evaluate_grid  # lazy: importing sweep does not compile kernels

        t = self.tables
        rows = t.platform_rows(c.h, c.e)
        out = evaluate_grid(t.hw[rows], t.md[c.m], t.px[rows], self.batch[c.b],
                            self.context[c.s], self.output_len, t.pr, t.ly)
        return out.reshape(out.shape[0], c.h.stop - c.h.start, c.e.stop - c.e.start,
                           *out.shape[2:])

    def write_shape(self, c: Chunk) -> tuple[int, ...]:
        """Shape of chunk ``c`` in the result's dims (storage chunks follow it)."""
        outer = tuple(sl.stop - sl.start for sl in c.slices)
        return outer + tuple(self.shape[N_OUTER:] if self.spec.output_len_is_dim
                             else self.shape[N_OUTER + 1:])

    def region(self, c: Chunk) -> tuple[slice, ...]:
        rest = (slice(None),) * (3 if self.spec.output_len_is_dim else 2)
        return (*c.slices, *rest)

    def chunk_arrays(self, c: Chunk, out: np.ndarray) -> dict[str, np.ndarray]:
        """The kernel output of chunk ``c`` as ``{metric: array}`` for its region."""
        return metric_arrays(out, drop_output_len=not self.spec.output_len_is_dim)


@dataclass
class RunStats:
    points: int
    seconds: float
    chunks: int
    path: Path | None = None
    feasible: int = 0  # points with fits = 1

    @property
    def points_per_second(self) -> float:
        return self.points / self.seconds if self.seconds > 0 else float("inf")
