"""Orchestration and results: run grid specs, evaluate point lists, open and analyse results.

``import sweep`` does not import numba or compile any kernel (kernels load on first use) and
registers the ``ds.sweep`` xarray accessor for analysis.
"""

from grids.errors import SpecError
from sweep import accessor as _accessor  # noqa: F401 - registers the ds.sweep accessor
from sweep.io import open_result as open
from sweep.run import evaluate, run

__all__ = ["SpecError", "evaluate", "open", "run"]
