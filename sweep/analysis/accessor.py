"""The ``ds.sweep`` xarray accessor: a thin facade over the analysis modules.

Registered on ``import sweep``. Works on any result Dataset, in memory or opened from disk,
NumPy- or Dask-backed, whatever subset of dims it has (any dim may have size 1 or have been
selected away; ``output_len`` may or may not be a dim). Each method calls one function of
:mod:`sweep.analysis` (variation, winners, pareto, regimes, strategies, plots); see
``docs/analysis.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd
import xarray as xr

from sweep.analysis import basis as _basis
from sweep.analysis import choose as _choose
from sweep.analysis import pareto as _pareto
from sweep.analysis import variation as _variation
from sweep.analysis import winners as _winners
from sweep.analysis.basis import DEFAULT_BASIS
from sweep.analysis.pareto import DEFAULT_PARETO_OVER
from sweep.analysis.select import candidates
from sweep.analysis.winners import DEFAULT_ALONG


@xr.register_dataset_accessor("sweep")
class SweepAccessor:
    """Analysis of a sweep result: ``ds.sweep.variation("throughput")`` etc."""

    #: ``ds.sweep.report(path, title)``: set by sweep/__init__.py (sweep.report, which
    #: imports bokeh, loads on first use)
    report: Callable[..., Any]

    def __init__(self, ds: xr.Dataset) -> None:
        self._ds = ds

    def best(self, metric: str, over: Iterable[str] | str = ("parallelism",),
             direction: str | None = None) -> xr.DataArray:
        """Best feasible value of ``metric`` over the dims ``over`` (NaN where none fits)."""
        return candidates(self._ds, metric, over, direction)

    def on_basis(self, metric: str, basis: str | None = DEFAULT_BASIS) -> xr.DataArray:
        """``metric`` put on a comparison basis, layouts kept (see
        :func:`sweep.analysis.basis.normalised`)."""
        return _basis.normalised(self._ds, metric, basis)

    def best_layout(self, metric: str, basis: str | None = DEFAULT_BASIS) -> xr.Dataset:
        """Each point at its best layout on ``basis``: ``value`` and ``layout`` (see
        :func:`sweep.analysis.choose.best_layout`)."""
        return _choose.best_layout(self._ds, metric, basis)

    def fewest_devices(self, metric: str = "throughput") -> xr.Dataset:
        """Each point's feasible layout with the fewest devices (see
        :func:`sweep.analysis.choose.fewest_devices`)."""
        return _choose.fewest_devices(self._ds, metric)

    def goodput(self, ttft: float | None = None, tpot: float | None = None,
                per: str = "device", metric: str = "throughput",
                percentile: str | None = None) -> xr.Dataset:
        """Best throughput over load and layout meeting latency targets; see
        :func:`sweep.analysis.goodput.goodput`."""
        from sweep.analysis.goodput import GOODPUT_OVER, goodput

        return goodput(self._ds, ttft, tpot, per, metric, GOODPUT_OVER, percentile)

    def fleet(self, rate: float, ttft: float | None = None, tpot: float | None = None, *,
              by: str = "devices", percentile: str | None = None,
              over: Iterable[str] | str | None = None) -> pd.DataFrame:
        """Devices (kW, $/h) of each type that serve ``rate`` requests/s under the latency
        targets, ranked; see :func:`sweep.analysis.fleet.fleet`."""
        from sweep.analysis.fleet import fleet

        return fleet(self._ds, rate, ttft, tpot, by=by, percentile=percentile, over=over)

    def serving_front(self, per: str = "device", metric: str = "throughput") -> pd.DataFrame:
        """Tokens/s per user vs per device (kW, $) Pareto fronts; see
        :func:`sweep.analysis.goodput.serving_front`."""
        from sweep.analysis.goodput import serving_front

        return serving_front(self._ds, per, metric)

    def variation(self, metric: str, over: str = "hardware",
                  best_over: Iterable[str] | str | None = None,
                  basis: str | None = DEFAULT_BASIS) -> xr.Dataset:
        """See :func:`sweep.analysis.variation.variation`."""
        return _variation.variation(self._ds, metric, over, best_over, basis)

    def max_variation(self, metric: str, over: str = "hardware",
                      best_over: Iterable[str] | str | None = None,
                      basis: str | None = DEFAULT_BASIS) -> dict[str, Any] | None:
        """See :func:`sweep.analysis.variation.max_variation`."""
        return _variation.max_variation(self._ds, metric, over, best_over, basis)

    def winner(self, metric: str, over: str = "hardware",
               best_over: Iterable[str] | str | None = None,
               basis: str | None = DEFAULT_BASIS) -> xr.DataArray:
        """See :func:`sweep.analysis.winners.winner`."""
        return _winners.winner(self._ds, metric, over, best_over, basis)

    def margin(self, metric: str, over: str = "hardware",
               best_over: Iterable[str] | str | None = None,
               basis: str | None = DEFAULT_BASIS) -> xr.Dataset:
        """Winner, runner-up, the margin between them and why nothing is feasible where
        nothing is; see :func:`sweep.analysis.winners.margin`."""
        return _winners.margin(self._ds, metric, over, best_over, basis)

    def frontier(self, metric: str, over: str = "hardware",
                 along: Iterable[str] | str = DEFAULT_ALONG,
                 best_over: Iterable[str] | str | None = None,
                 basis: str | None = DEFAULT_BASIS) -> pd.DataFrame:
        """See :func:`sweep.analysis.winners.frontier`."""
        return _winners.frontier(self._ds, metric, over, along, best_over, basis)

    def pareto(self, objectives, over: Iterable[str] | str = DEFAULT_PARETO_OVER,
               basis: str | None = DEFAULT_BASIS) -> xr.DataArray:
        """See :func:`sweep.analysis.pareto.pareto`."""
        return _pareto.pareto(self._ds, objectives, over, basis)

    def regimes(self, regimes=None, basis: str | None = DEFAULT_BASIS) -> xr.Dataset:
        """Seed 002's six operational regimes scored per accelerator (best = 1.0); see
        :func:`sweep.analysis.regimes.regime_scores`."""
        from sweep.analysis.regimes import regime_scores

        return regime_scores(self._ds, regimes, basis)

    def strategies(self) -> xr.Dataset:
        """Per layout: parameter-to-compute ratio, throughput, latency CoV, and EP vs TP ratios
        (see :func:`sweep.analysis.strategies.strategy_table`)."""
        from sweep.analysis.strategies import strategy_table

        return strategy_table(self._ds)

    def plot(self, kind: str = "winner-map", **kwargs):
        """A matplotlib Figure of ``kind`` (see :mod:`sweep.analysis.plots`)."""
        from sweep.analysis.plots import plot

        return plot(self._ds, kind, **kwargs)
