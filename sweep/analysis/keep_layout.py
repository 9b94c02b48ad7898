"""Keep only each point's best layout, chunk by chunk (spec key ``best_layout``).

The run (:class:`sweep.execute.grid.GridRun`) calls a :class:`LayoutKeeper` on each chunk; the
execute room does not import the analyses, so the package root installs this class as the run's
keeper (``sweep/__init__.py``), as it attaches the report to the accessor.

A grid over many layouts stores mostly points that cannot run: ``parallelism = "auto"`` over the
whole catalog and the default models evaluates the union of every device's family, 527 layouts,
of which each device uses a few. With ``best_layout`` the run evaluates every layout of a chunk
into a scratch buffer, picks per point the layout with the highest throughput on the basis, and
writes only that layout's metrics and its index (``layout_index``): the result has no
parallelism dim and is smaller by the number of layouts, and no file ever holds the rest.

The choice is that of :func:`sweep.analysis.choose.best_layout` (``ds.sweep.best_layout``) on the
full result: the same values on the basis (:meth:`~sweep.analysis.headline.ChunkReducer.values`,
the arithmetic of :func:`~sweep.analysis.basis.normalised`) and the same tie rule (the label
that sorts first); tests/test_keep_layout.py compares the two. Where no layout is feasible on
the basis the point is infeasible: NaN metrics, ``fits = 0``, ``layout_index = -1`` and as
``infeasible_reason`` the largest code of its layouts (the furthest stage any of them reached),
or ``outside_basis`` when a layout fits but none is within the basis (beyond its budget, or the
device unpriced on a cost basis).
"""

from __future__ import annotations

import numpy as np

from grids.errors import SpecError
from grids.spec import GridSpec
from kernels.params import BOUND_INFEASIBLE, INFEASIBLE_MEANINGS, METRICS
from sweep.analysis.basis import LAYOUT_DIM, parse_basis
from sweep.analysis.core import extreme_index
from sweep.analysis.headline import ChunkReducer
from sweep.analysis.select import label_order

#: the metric whose best value on the basis chooses the layout
METRIC = "throughput"
N_METRICS = len(METRICS)
FITS, WHY, BOUND = (METRICS.index(n) for n in ("fits", "infeasible_reason", "bound"))
OUTSIDE_BASIS = INFEASIBLE_MEANINGS.index("outside_basis")


class LayoutKeeper:
    """Reduces a chunk's kernel output over its layouts (see the module docstring)."""

    def __init__(self, spec: GridSpec) -> None:
        try:
            basis = parse_basis(spec.best_layout or None)
        except SpecError as exc:
            raise SpecError([f"best_layout: {p}" for p in exc.problems], "grid spec") from None
        labels = np.array([x.display for x in spec.layouts], dtype=object)
        devices = np.array([x.devices for x in spec.layouts], dtype=np.float64)
        self.basis = basis
        self.n_layouts = len(labels)
        self.reducer = ChunkReducer(("point", LAYOUT_DIM), np.zeros(0, dtype=np.int32), labels,
                                    devices, METRIC, basis, "max")
        self.order = label_order(labels)

    @property
    def attrs(self) -> dict[str, str]:
        """Attributes of the result that say what was kept."""
        return {"best_layout_basis": self.basis.spec, "best_layout_metric": METRIC}

    def keep(self, out: np.ndarray, dest: np.ndarray) -> None:
        """Write into ``dest`` (``(N_METRICS + 1, n)``, any strides) each point's best layout of
        ``out`` (a C-contiguous kernel output of ``n`` points times the layouts, layouts
        innermost): its metrics, then its index (-1: none)."""
        n_l = self.n_layouts
        full = out.reshape(N_METRICS, -1, n_l)
        n = full.shape[1]
        if dest.shape != (N_METRICS + 1, n):
            raise ValueError(f"destination of shape {dest.shape}, expected {(N_METRICS + 1, n)}")
        v = self.reducer.values({name: full[METRICS.index(name)]
                                 for name in self.reducer.variables})
        idx = extreme_index(v, np.isfinite(v), "max", order=self.order)
        del v
        none = idx < 0
        take = np.where(none, 0, idx)[:, None]
        for k in range(N_METRICS):
            dest[k] = np.take_along_axis(full[k], take, axis=1)[:, 0]
        dest[N_METRICS] = idx
        if none.any():
            fits = (full[FITS][none] == 1.0).any(axis=1)
            dest[:, none] = np.nan
            dest[FITS, none] = 0.0
            dest[BOUND, none] = BOUND_INFEASIBLE
            dest[WHY, none] = np.where(fits, OUTSIDE_BASIS, full[WHY][none].max(axis=1))
            dest[N_METRICS, none] = -1.0
