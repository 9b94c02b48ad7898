"""The headline of a run, computed from its chunks as they are produced.

``sweep run`` prints how far apart the devices are (:func:`sweep.analysis.variation.max_variation`
of throughput across hardware on the default basis, each device at its best layout). Reading that
back from the written file cost a second pass over the result, memory beyond the run's budget and
an interval after publication in which an interrupt could not be reported truthfully. Instead, a
run hands every region it evaluates to a :class:`ChunkReducer` (stateless and picklable, so a Dask
worker can run it next to the data) and merges the small piece it returns into a
:class:`HeadlineVariation`, whose :meth:`~HeadlineVariation.finish` runs before the result is
published.

The figures are exact and equal those of :func:`~sweep.analysis.variation.max_variation` on the
written result (tests/test_headline.py): each region's values on the basis come from the same
arithmetic (:func:`~sweep.analysis.basis.per_unit` for the per-unit bases, NumPy on the region's
arrays; :func:`~sweep.analysis.basis.normalised` on a Dataset of them for the others), the best
over layouts is a max, and the running extremes
(:class:`~sweep.analysis.variation.RunningExtremes`) keep max, min, counts and the tie rule
whatever order the pieces arrive in. The median is that of the exact ratio array (one value per
workload point), not an estimate. The layouts of the best and the worst device at the peak are
found at the end from that one point's values, which the run evaluates again (the kernel gives
a point the same bits whatever chunk it is in).

Memory: 28 bytes per workload point (the grid without its hardware and layout dims,
:attr:`HeadlineVariation.nbytes`), and :attr:`ChunkReducer.bytes_per_point` per point of a block.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

from sweep.analysis import core as an
from sweep.analysis.basis import (
    DEFAULT_BASIS,
    LAYOUT_DIM,
    Basis,
    needed_variables,
    normalised,
    parse_basis,
    per_unit,
    unit_terms,
    units_on,
)
from sweep.analysis.select import label_order, py_scalar
from sweep.analysis.uncertainty import has_bands, ratio_band
from sweep.analysis.variation import (
    RunningExtremes,
    by_rank,
    describe,
    estimated_power,
    label_ranks,
)
from sweep.results.variables import DIRECTION, VARIABLES

OVER = "hardware"
METRIC = "throughput"
#: a point's metrics over the layouts, ``lookup(hardware index, rest index) -> {name: (L,)}``
Lookup = Callable[[int, tuple[int, ...]], dict[str, np.ndarray]]


@dataclass(frozen=True)
class ChunkReducer:
    """One region of a run's output -> the running extremes of that region (a piece for
    :meth:`HeadlineVariation.merge`). Holds only labels and per-layout coordinates."""

    dims: tuple[str, ...]  # the result's dims, hardware first, parallelism last
    ranks: np.ndarray  # rank of each hardware label in sorted order
    layouts: np.ndarray  # parallelism labels
    devices: np.ndarray  # devices of each layout (float64)
    metric: str = METRIC
    basis: Basis = field(default_factory=lambda: parse_basis(DEFAULT_BASIS))
    direction: str = "max"

    #: peak bytes per point of a block (the float64 values, computed in place, and a mask;
    #: tracemalloc: 10.7-11.9 B on blocks of 2e5 and 1e6 points of a 32-device, 14-layout
    #: grid), with a margin
    bytes_per_point = 16

    @property
    def variables(self) -> tuple[str, ...]:
        """The result variables a region must carry."""
        need = (self.metric, "fits", *needed_variables(self.basis))
        return tuple(dict.fromkeys(need))

    def values(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        """The metric on the basis at every point of ``arrays`` (float64, NaN where infeasible),
        layouts last."""
        terms = unit_terms(self.basis)
        if terms is None:  # budgets and cost: through the Dataset arithmetic of normalised()
            data = {n: (self.dims[-a.ndim:], a, dict(VARIABLES[n].attrs()))
                    for n, a in arrays.items() if n in self.variables}
            ds = xr.Dataset(data, coords={LAYOUT_DIM: self.layouts,
                                          "devices": (LAYOUT_DIM, self.devices)})
            return np.asarray(normalised(ds, self.metric, self.basis).values)
        scale, den = terms
        x = arrays[self.metric]
        denominator = None if den is None else self.devices if den == "devices" else arrays[den]
        v = x.astype(np.float64)  # a new array, computed in place
        per_unit(v, denominator, scale, out=v)
        # feasible: finite and fits (sweep.analysis.feasible.masked)
        bad = np.isfinite(x)
        bad &= arrays["fits"] == 1
        np.putmask(v, np.logical_not(bad, out=bad), np.nan)
        return v

    def __call__(self, arrays: dict[str, np.ndarray], region: tuple[slice, ...]
                 ) -> tuple[tuple[slice, ...], dict[str, np.ndarray]]:
        """``(rest region, piece)`` of ``arrays`` (``{name: array}`` over the result's dims, as
        the run writes them) covering ``region`` of the result."""
        v = self.values(arrays)
        best = (np.fmax.reduce(v, axis=-1) if self.direction == "max"
                else np.fmin.reduce(v, axis=-1))  # over layouts, NaN where none is feasible
        piece = RunningExtremes.piece(best, self.ranks[region[0]], len(self.ranks))
        return tuple(region[1:-1]), piece

    def best_layout(self, arrays: dict[str, np.ndarray]) -> str:
        """The layout with the best value at one point (``arrays`` over the layouts), ties to
        the label that sorts first (as :func:`sweep.analysis.choose.best_layout`)."""
        v = self.values(arrays)
        i = int(an.extreme_index(v, np.isfinite(v), self.direction,
                                 order=label_order(self.layouts)))
        return str(self.layouts[i]) if i >= 0 else ""


class HeadlineVariation:
    """The run's headline variation, merged from the pieces of :class:`ChunkReducer`.

    ``template`` is the result without its metrics (coordinates and attributes,
    :func:`sweep.results.assemble.template`). ``skipped`` holds why no figure is computed (fewer
    than two devices, or the run's memory budget), else ''."""

    def __init__(self, template: xr.Dataset, metric: str = METRIC,
                 basis: str | Basis = DEFAULT_BASIS) -> None:
        from grids.spec import DIMS

        self.metric = metric
        self.basis = parse_basis(basis)
        self.dims = tuple(d for d in DIMS if d in template.dims)
        self.hardware = np.asarray(template[OVER].values)
        self.rest = self.dims[1:-1]
        self.rest_coords = {d: np.asarray(template[d].values) for d in self.rest}
        self.reducer = ChunkReducer(self.dims, label_ranks(self.hardware).astype(np.int32),
                                    np.asarray(template[LAYOUT_DIM].values),
                                    np.asarray(template["devices"].values, dtype=np.float64),
                                    metric, self.basis, DIRECTION.get(metric, "max"))
        self.skipped = "" if len(self.hardware) >= 2 else "fewer than two devices in the grid"
        #: the devices whose power on the basis is an estimate (coordinates tdp_estimated,
        #: host_power_estimated), as max_variation names them
        self.estimated = set(estimated_power(template, OVER, self.hardware, self.basis))
        #: the band coordinates of the result, for the band of the figure
        self.bands = template if has_bands(template) else None
        self._acc: RunningExtremes | None = None
        self._result: dict[str, Any] | None = None
        self._done = False

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(v) for v in self.rest_coords.values())

    @property
    def nbytes(self) -> int:
        """Memory of the running extremes [B] (allocated on the first :meth:`merge`)."""
        return 0 if self.skipped else 28 * int(np.prod(self.shape))

    def skip(self, why: str) -> None:
        """Compute nothing (``why`` is reported instead of the figure)."""
        self.skipped = why
        self._acc = None

    def merge(self, part: tuple[tuple[slice, ...], dict[str, np.ndarray]]) -> None:
        if self.skipped:
            return
        if self._acc is None:
            self._acc = RunningExtremes(self.shape, len(self.hardware))
        region, piece = part
        self._acc.merge(piece, region)

    def finish(self, lookup: Lookup | None = None) -> dict[str, Any] | None:
        """The figure, as :func:`~sweep.analysis.variation.max_variation` returns it (None when
        no workload point has two devices that fit, or when skipped); ``lookup`` gives the
        metrics of one (device, workload point) over the layouts, for the two layouts named
        (without it they are ''). The first call computes it; later calls return it."""
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
        picks = {k: int(np.flatnonzero(ranks == found[f"{k}_rank"])[0])
                 for k in ("best", "worst")}
        layouts = {f"{k}_layout": (self.reducer.best_layout(lookup(h, found["index"]))
                                   if lookup is not None else "") for k, h in picks.items()}
        best = by_rank(self.hardware, ranks, found["best_rank"])
        worst = by_rank(self.hardware, ranks, found["worst_rank"])
        self._result = describe(
            found, metric=self.metric, over=OVER, best_over=(LAYOUT_DIM,),
            basis=self.basis.label, where=where, best=best, worst=worst,
            units=units_on(self.basis, self.metric, VARIABLES[self.metric].units), **layouts,
            estimated_power=[h for h in dict.fromkeys((str(best), str(worst)))
                             if h in self.estimated],
            band=(ratio_band(self.bands, OVER, best, worst, where, (LAYOUT_DIM,))
                  if self.bands is not None else math.nan))
        return self._result
