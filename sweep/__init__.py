"""Orchestration and results: run grid specs, evaluate point lists, open and analyse results.

``import sweep`` does not import numba or compile any kernel (kernels load on first use) and
registers the ``ds.sweep`` xarray accessor. The rooms (see docs/architecture.md):

- :mod:`sweep.execute`: plan chunks, pack catalogs for the kernels, run in-process or on Dask;
- :mod:`sweep.results`: the variable registry, Dataset assembly, netCDF/Zarr files;
- :mod:`sweep.analysis`: variation, winners, Pareto fronts, regimes, strategies, plots;
- :mod:`sweep.validate`: measurements, the evaluator, scores, reports, calibration;
- :mod:`sweep.cli`: the ``sweep`` command.
"""

# isort: off
from sweep.execute import clock as _clock  # noqa: F401 - first: when `import sweep` began
# isort: on
from grids.errors import SpecError
from sweep.analysis import accessor as _accessor  # noqa: F401 - registers the ds.sweep accessor
from sweep.execute.local import run
from sweep.execute.points import evaluate
from sweep.results.files import open_result as open

__all__ = ["SpecError", "evaluate", "open", "run"]
