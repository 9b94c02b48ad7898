"""Orchestration and results: run grid specs, evaluate point lists, open and analyse results.

``import sweep`` does not import numba or compile any kernel (kernels load on first use) and
registers the ``ds.sweep`` xarray accessor. The rooms (see docs/architecture.md):

- :mod:`sweep.execute`: plan chunks, pack catalogs for the kernels, run in-process or on Dask;
- :mod:`sweep.results`: the variable registry, Dataset assembly, netCDF/Zarr files;
- :mod:`sweep.analysis`: variation, winners, Pareto fronts, regimes, strategies, plots;
- :mod:`sweep.validate`: measurements, the evaluator, scores, reports, calibration;
- :mod:`sweep.report`: the interactive HTML report (``ds.sweep.report(path)``), loaded on use;
- :mod:`sweep.cli`: the ``sweep`` command.
"""

# isort: off
from sweep.execute import clock as _clock  # noqa: F401 - first: when `import sweep` began
from sweep import siblings as _siblings  # noqa: F401 - checks kernels and grids, first
# isort: on
from grids.errors import SpecError
from sweep.analysis import accessor as _accessor  # registers the ds.sweep accessor
from sweep.execute import grid as _grid
from sweep.execute.finite import finite_run
from sweep.execute.local import run
from sweep.execute.point import evaluate, evaluate_point
from sweep.results.files import open_result as open
from sweep.results.units import unit_registry

__all__ = ["SpecError", "evaluate", "evaluate_point", "finite_run", "open", "report", "run",
           "unit_registry"]


def report(ds, path="report.html", title: str | None = None):
    """Write the interactive HTML report of the result ``ds`` to ``path`` (one self-contained
    file; docs/report.md) and return its path. Also ``ds.sweep.report(path)``.

    The report room (:mod:`sweep.report`, which needs bokeh) is a leaf that no room imports: the
    package root reaches it here, at call time, so ``import sweep`` stays light."""
    from sweep.report import write_report

    return write_report(ds, path, title)


def _report_method(self, path="report.html", title: str | None = None):
    return report(self._ds, path, title)


def _layout_keeper(spec):
    """The run keeps each point's best layout (spec key ``best_layout``) with the analyses'
    arithmetic (:class:`sweep.analysis.keep_layout.LayoutKeeper`, imported on first use); the
    execute room does not import the analyses, the root connects the two."""
    from sweep.analysis.keep_layout import LayoutKeeper

    return LayoutKeeper(spec)


_grid.KEEPER = _layout_keeper
_report_method.__doc__ = report.__doc__
_report_method.__name__ = "report"
_accessor.SweepAccessor.report = _report_method  # ds.sweep.report(...)
