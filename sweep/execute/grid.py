"""A grid spec packed for the kernels, and a method to evaluate any chunk of it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grids.spec import GridSpec
from sweep.execute.plan import Chunk
from sweep.execute.tables import build_tables
from sweep.results.assemble import metric_arrays


class GridRun:
    """The per-axis tables of a spec and a method to evaluate any chunk of it."""

    def __init__(self, spec: GridSpec) -> None:
        self.spec = spec
        self.tables = build_tables(spec.hardware, spec.models, spec.precisions, spec.layouts)
        self.batch = np.array(spec.batch, dtype=np.float64)
        self.context = np.array(spec.context, dtype=np.float64)
        self.output_len = np.array(spec.output_len, dtype=np.float64)
        self.shape = spec.shape

    def evaluate(self, c: Chunk) -> np.ndarray:
        from kernels import evaluate_grid  # lazy: importing sweep does not compile kernels

        t = self.tables
        return evaluate_grid(t.hw[c.h], t.md[c.m], t.peak[c.h], self.batch[c.b],
                             self.context[c.s], self.output_len, t.pr, t.ly,
                             float(self.spec.prefill_chunk))

    def write_shape(self, c: Chunk) -> tuple[int, ...]:
        """Shape of chunk ``c`` in the result's dims (storage chunks follow it)."""
        outer = tuple(sl.stop - sl.start for sl in (c.h, c.m, c.b, c.s))
        return outer + tuple(self.shape[4:] if self.spec.output_len_is_dim else self.shape[5:])

    def region(self, c: Chunk) -> tuple[slice, ...]:
        rest = (slice(None),) * (3 if self.spec.output_len_is_dim else 2)
        return (c.h, c.m, c.b, c.s, *rest)

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
