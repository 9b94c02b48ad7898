"""Orchestration and results: run grid specs, evaluate point lists, open and analyse results.

``import sweep`` does not compile any kernel (kernels are imported lazily on first use) and
registers the ``ds.sweep`` xarray accessor for analysis.
"""

from grids.errors import SpecError
from sweep.io import open_result as open  # noqa: A001 - the documented API name
from sweep.run import evaluate, run

try:  # the analysis accessor (registers ds.sweep)
    from sweep import accessor as _accessor  # noqa: F401
except ImportError:  # pragma: no cover - during bootstrap before the module exists
    pass

__all__ = ["SpecError", "evaluate", "open", "run"]
