"""One look per device across every figure: a catalog-wide palette.

Each catalog device (``grids.hardware.catalog_ids()``, sorted) gets a fixed :class:`Look`: its
position ``i`` in the catalog picks the colour ``i mod 8`` of the Okabe-Ito colour-blind-safe
palette and the marker and hatch ``i div 8``, so the catalog's 32 devices have 32 distinct
(colour, marker, hatch) triples and ``tpu-v7`` is drawn the same way in a winner map, a Pareto
plot, a roofline and the HTML report. A device outside the catalog (a user's TOML file, a
hypothetical variant) gets a look from a hash of its id, the same in every figure and every run.
Adding a device to the catalog moves the looks of the devices sorted after it (between
releases; never between two figures of one release).

Reference: M. Okabe and K. Ito, "Color Universal Design (CUD): how to make figures and
presentations that are friendly to colorblind people" (2008), the eight colours below.
"""

from __future__ import annotations

import functools
import zlib
from dataclasses import dataclass

#: Okabe & Ito (2008) colour-blind-safe palette (black last)
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",
             "#000000")
#: marker shapes by variant: (matplotlib, bokeh) names of the same shape
MARKERS = (("o", "circle"), ("s", "square"), ("^", "triangle"), ("D", "diamond"),
           ("v", "inverted_triangle"), ("P", "plus"), ("X", "x"), ("*", "star"))
#: hatches by variant: (matplotlib, bokeh) patterns of the same look
HATCHES = (("", " "), ("//", "/"), ("..", "."), ("xx", "x"), ("\\\\", "\\"), ("oo", "o"),
           ("++", "+"), ("--", "-"))
#: the colour of "nothing": cells where no device is feasible, missing values
NONE_COLOR = "#DDDDDD"


@dataclass(frozen=True)
class Look:
    """How one category is drawn: colour, marker and hatch, in matplotlib's and bokeh's names."""

    colour: str
    marker: str
    hatch: str
    bokeh_marker: str
    bokeh_hatch: str


def style(i: int) -> Look:
    """The look of the i-th category: colour ``i mod 8``, marker and hatch ``i div 8``."""
    variant = (i // len(OKABE_ITO)) % len(MARKERS)
    (marker, bokeh_marker), (hatch, bokeh_hatch) = MARKERS[variant], HATCHES[variant]
    return Look(OKABE_ITO[i % len(OKABE_ITO)], marker, hatch, bokeh_marker, bokeh_hatch)


@functools.cache
def _catalog_positions() -> dict[str, int]:
    from grids.hardware import catalog_ids

    return {dev: i for i, dev in enumerate(catalog_ids())}


def device_look(device: str) -> Look:
    """The look of a device: by its catalog position, or from a hash of its id (stable across
    runs) for a device outside the catalog."""
    pos = _catalog_positions()
    name = str(device)
    if name in pos:
        return style(pos[name])
    span = len(OKABE_ITO) * len(MARKERS)
    return style(zlib.crc32(name.encode()) % span)


def looks(labels, dim: str = "hardware") -> list[Look]:
    """Looks of the labels of ``dim``: devices by :func:`device_look`, any other dim (layouts,
    engines, ...) by position in ``labels``."""
    labels = [str(x) for x in labels]
    if dim == "hardware":
        return [device_look(x) for x in labels]
    return [style(i) for i in range(len(labels))]
