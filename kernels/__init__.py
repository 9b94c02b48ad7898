"""Numba roofline kernels: NumPy tables of per-axis parameters in, NumPy metric arrays out.

This package imports neither ``grids`` nor ``sweep``. Entry points: :func:`evaluate_grid` (the
Cartesian grid) and :func:`evaluate_points` (a list of arbitrary points); both run the same
per-point physics in :mod:`kernels.roofline`. The array contract is :mod:`kernels.params`.
"""

from kernels.grid import N_METRICS, evaluate_grid, evaluate_points
from kernels.params import (BOUND_INFEASIBLE, BOUND_MEANINGS, HW_FIELDS, LAYOUT_FIELDS, METRICS,
                            MODEL_FIELDS, PRECISION_FIELDS, pack)

__all__ = ["evaluate_grid", "evaluate_points", "pack", "METRICS", "N_METRICS", "HW_FIELDS",
           "MODEL_FIELDS", "PRECISION_FIELDS", "LAYOUT_FIELDS", "BOUND_MEANINGS",
           "BOUND_INFEASIBLE"]
