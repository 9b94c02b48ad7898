"""The headline of a run, computed from its chunks as they are produced.

``sweep run`` prints how far apart the devices are (:func:`sweep.analysis.variation.max_variation`
of throughput across hardware on the default basis, each device at its best layout). Reading that
back from the written file cost a second pass over the result, memory beyond the run's budget and
an interval after publication in which an interrupt could not be reported truthfully. Instead, a
run hands every region it evaluates to a :class:`ChunkReducer` (stateless and picklable, so a Dask
worker can run it next to the data) and merges the small piece it returns into a
:class:`HeadlineVariation`, whose :meth:`~HeadlineVariation.result` is ready before the result is
published.

The figures are exact and equal those of :func:`~sweep.analysis.variation.max_variation` on the
written result: every region goes through the same basis arithmetic (:func:`normalised` on a
Dataset of the region's arrays), the same best-layout rule (:func:`winner_index`) and the same
running extremes (:class:`~sweep.analysis.variation.RunningExtremes`), whose max, min, counts
and tie rules do not depend on the order the pieces arrive in. The median is the median of the
exact ratio array (one value per workload point), not an estimate. The layouts of the best and
the worst device are carried with their values, so nothing is read back.

Memory: the running extremes hold ~40 bytes per workload point (the grid without its hardware and
layout dims, :attr:`HeadlineVariation.nbytes`); each region is reduced in blocks of
:attr:`ChunkReducer.bytes_per_point` bytes per point at most.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

from sweep.analysis.basis import (
    DEFAULT_BASIS,
    LAYOUT_DIM,
    Basis,
    needed_variables,
    normalised,
    parse_basis,
    units_on,
)
from sweep.analysis.select import py_scalar, winner_index
from sweep.analysis.variation import RunningExtremes, by_rank, describe, label_ranks
from sweep.results.variables import DIRECTION, VARIABLES

OVER = "hardware"
METRIC = "throughput"


@dataclass(frozen=True)
class ChunkReducer:
    """One region of a run's output -> the running extremes of that region (a piece for
    :meth:`HeadlineVariation.merge`). Holds only labels and per-layout coordinates."""

    dims: tuple[str, ...]  # the result's dims, hardware first, parallelism last
    ranks: np.ndarray  # rank of each hardware label in sorted order
    layouts: np.ndarray  # parallelism labels
    layout_coords: dict[str, np.ndarray]  # per-layout coordinates the basis reads (devices)
    metric: str = METRIC
    basis: Basis = field(default_factory=lambda: parse_basis(DEFAULT_BASIS))
    direction: str = "max"

    #: peak bytes per point of a reduction (float64 temporaries of the basis arithmetic and the
    #: best-layout search; tracemalloc measured 35-36 B on blocks of 2e5 and 1e6 points of a
    #: 32-device, 14-layout grid), with a margin
    bytes_per_point = 48

    @property
    def variables(self) -> tuple[str, ...]:
        """The result variables a region must carry."""
        need = (self.metric, "fits", *needed_variables(self.basis))
        return tuple(dict.fromkeys(need))

    def __call__(self, arrays: dict[str, np.ndarray], region: tuple[slice, ...]
                 ) -> tuple[tuple[slice, ...], dict[str, np.ndarray]]:
        """``(rest region, piece)`` of ``arrays`` (``{name: array}`` over the result's dims,
        as the run writes them) covering ``region`` of the result."""
        data = {name: (self.dims, arrays[name], dict(VARIABLES[name].attrs()))
                for name in self.variables}
        coords = {LAYOUT_DIM: self.layouts,
                  **{k: (LAYOUT_DIM, v) for k, v in self.layout_coords.items()}}
        ds = xr.Dataset(data, coords=coords)
        vals = normalised(ds, self.metric, self.basis)
        best = (vals.max(LAYOUT_DIM) if self.direction == "max" else vals.min(LAYOUT_DIM))
        lay = winner_index(vals, LAYOUT_DIM, self.direction)
        h = region[0]
        piece = RunningExtremes.piece(best.values, self.ranks[h], len(self.ranks),
                                      carried=lay.values)
        return tuple(region[1:-1]), piece


class HeadlineVariation:
    """The run's headline variation, merged from the pieces of :class:`ChunkReducer`.

    ``template`` is the result without its metrics (coordinates and attributes,
    :func:`sweep.results.assemble.template`). ``skipped`` holds why no figure is computed (fewer
    than two devices, or the caller's memory budget), else ''."""

    def __init__(self, template: xr.Dataset, metric: str = METRIC,
                 basis: str | Basis = DEFAULT_BASIS) -> None:
        self.metric = metric
        self.basis = parse_basis(basis)
        self.dims = _dims_order(template)
        self.hardware = np.asarray(template[OVER].values)
        self.layouts = np.asarray(template[LAYOUT_DIM].values)
        self.rest = self.dims[1:-1]
        self.rest_coords = {d: np.asarray(template[d].values) for d in self.rest}
        ranks = label_ranks(self.hardware)
        lay_coords = ({"devices": np.asarray(template["devices"].values)}
                      if "devices" in template.coords else {})
        self.reducer = ChunkReducer(self.dims, ranks.astype(np.int32), self.layouts, lay_coords,
                                    metric, self.basis, DIRECTION.get(metric, "max"))
        self.skipped = ("" if len(self.hardware) >= 2 else
                        "fewer than two devices in the grid")
        self._acc: RunningExtremes | None = None
        self._result: dict[str, Any] | None = None
        self._done = False

    @property
    def nbytes(self) -> int:
        """Memory of the running extremes [B] (allocated on the first :meth:`merge`)."""
        n = int(np.prod([len(v) for v in self.rest_coords.values()]))
        return 0 if self.skipped else 40 * n

    def skip(self, why: str) -> None:
        """Compute nothing (``why`` is reported instead of the figure)."""
        self.skipped = why
        self._acc = None

    def merge(self, part: tuple[tuple[slice, ...], dict[str, np.ndarray]]) -> None:
        if self.skipped:
            return
        if self._acc is None:
            shape = tuple(len(v) for v in self.rest_coords.values())
            self._acc = RunningExtremes(shape, len(self.hardware), carry=True)
        region, piece = part
        self._acc.merge(piece, region)

    def finish(self) -> dict[str, Any] | None:
        """The figure, as :func:`~sweep.analysis.variation.max_variation` returns it (None when
        no workload point has two devices that fit, or when skipped); frees the running
        extremes."""
        if self._done:
            return self._result
        self._done = True
        if self.skipped or self._acc is None:
            return None
        found = self._acc.extreme(self.reducer.direction)
        self._acc = None
        if found is None:
            return None
        ranks = self.reducer.ranks
        where = {d: py_scalar(self.rest_coords[d][i]) for d, i in zip(self.rest, found["index"])}
        self._result = describe(
            found, metric=self.metric, over=OVER, best_over=(LAYOUT_DIM,),
            basis=self.basis.label, where=where,
            best=by_rank(self.hardware, ranks, found["best_rank"]),
            worst=by_rank(self.hardware, ranks, found["worst_rank"]),
            units=units_on(self.basis, self.metric, VARIABLES[self.metric].units),
            best_layout=_label(self.layouts, found["best_carried"]),
            worst_layout=_label(self.layouts, found["worst_carried"]))
        return self._result

    @property
    def result(self) -> dict[str, Any] | None:
        return self.finish()


def _label(labels: np.ndarray, i: int) -> str:
    return str(labels[i]) if i >= 0 else ""


def _dims_order(template: xr.Dataset) -> tuple[str, ...]:
    """The result's dims in storage order (the order of ``grids.spec.DIMS``)."""
    from grids.spec import DIMS

    return tuple(d for d in DIMS if d in template.dims)
