"""Numba roofline kernels: NumPy tables of per-axis parameters in, NumPy metric arrays out.

This package imports neither ``grids`` nor ``sweep``. Entry points: :func:`evaluate_grid` (the
Cartesian grid) and :func:`evaluate_points` (a list of arbitrary points); both run the same
per-point physics in :mod:`kernels.roofline`. The array contract is :mod:`kernels.params`.
:mod:`kernels.fluid` holds the fluid model of a finite run (``sweep.finite_run``).
Importing this package does not import numba: the entry points load on first use, and each is
compiled (or loaded from numba's on-disk cache) on its first call, for its one signature. The
kernels run on :func:`num_threads` threads (:func:`set_num_threads`); :func:`compile_kernels`
(``python -m kernels``) builds the cache ahead of time, :func:`cache_dir` says where it is.
"""

from kernels.params import (
    BOUND_INFEASIBLE,
    BOUND_MEANINGS,
    HW_FIELDS,
    INFEASIBLE_MEANINGS,
    LAYOUT_FIELDS,
    METRICS,
    MODEL_FIELDS,
    PRECISION_FIELDS,
    PX_FIELDS,
    pack,
)

N_METRICS = len(METRICS)

__all__ = ["BOUND_INFEASIBLE", "BOUND_MEANINGS", "HW_FIELDS", "INFEASIBLE_MEANINGS",
           "LAYOUT_FIELDS", "METRICS", "MODEL_FIELDS", "N_METRICS", "PRECISION_FIELDS",
           "PX_FIELDS", "cache_dir", "compile_kernels", "evaluate_grid", "evaluate_points",
           "num_threads", "pack", "set_num_threads"]

_LAZY = ("cache_dir", "compile_kernels", "evaluate_grid", "evaluate_points", "num_threads",
         "set_num_threads")


def __getattr__(name: str):
    if name in _LAZY:
        from kernels import grid

        return getattr(grid, name)
    raise AttributeError(f"module 'kernels' has no attribute {name!r}")
