"""Figures of a sweep result (matplotlib, no pyplot state: works on any backend, Agg by default).

Kinds (``plot(ds, kind, ...)`` or ``ds.sweep.plot(kind, ...)``):

- ``winner-map``: the best device at every (batch, context) cell for one model and precision
  (each device with its best layout): the signature picture;
- ``variation``: max/min of a metric across devices over (batch, context);
- ``pareto``: two objectives of every feasible configuration, the non-dominated ones marked;
- ``roofline``: achieved FLOP/s against arithmetic intensity with each device's ceilings;
- ``regimes``: seed 002's Fig. 8 as a heat map of regime scores (best = 1).

Every device has one look (colour, marker, hatch) in every figure, from the catalog-wide palette
of :mod:`sweep.analysis.palette` (Okabe-Ito colours; markers and hatches beyond eight devices).
Every figure has a title, axis labels with units, log axes where values span decades and a
legend naming the devices; titles are wrapped to the figure's width and legends sit in the
figure (``loc="outside ..."``, which the constrained layout makes room for), so nothing is drawn
off the canvas (tests/test_plots.py checks the drawn extents).

Files: this module holds :data:`KINDS`, :func:`plot` and :func:`save`; the kinds are drawn by
:mod:`sweep.analysis.plot_maps` (winner-map, variation, regimes), :mod:`sweep.analysis.plot_fronts`
(pareto, serving-front) and :mod:`sweep.analysis.plot_roofline`; what they share is in
:mod:`sweep.analysis.plot_style` (look, titles, legends, axes) and
:mod:`sweep.analysis.plot_slices` (choosing what a figure shows).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import xarray as xr
from matplotlib.figure import Figure

from grids.errors import SpecError, suggest
from sweep.analysis.plot_fronts import pareto_plot, serving_front_plot
from sweep.analysis.plot_maps import regimes_plot, variation_map, winner_map
from sweep.analysis.plot_roofline import roofline_plot
from sweep.analysis.plot_style import style as style  # re-exported: scripts/seeds draw with it

KINDS = ("winner-map", "variation", "pareto", "roofline", "regimes", "serving-front")


def save(fig: Figure, path: str | Path, dpi: int = 120, *, overwrite: bool = False) -> Path:
    """Write ``fig`` to ``path`` (png, pdf or svg from the extension), atomically; an existing
    file that is not an image written by sweep is refused unless ``overwrite``
    (:func:`sweep.results.images.save_figure`)."""
    from sweep.results.images import save_figure

    return save_figure(fig, path, dpi=dpi, overwrite=overwrite)


def plot(ds: xr.Dataset, kind: str = "winner-map", **kwargs) -> Figure:
    """A Figure of ``kind`` (one of :data:`KINDS`); ``kwargs`` go to that kind's function."""
    funcs: dict[str, Callable[..., Figure]] = {
        "winner-map": winner_map, "variation": variation_map, "pareto": pareto_plot,
        "roofline": roofline_plot, "regimes": regimes_plot, "serving-front": serving_front_plot}
    if kind not in funcs:
        raise SpecError(f"unknown plot kind {kind!r}{suggest(str(kind), KINDS)}")
    return funcs[kind](ds, **kwargs)
