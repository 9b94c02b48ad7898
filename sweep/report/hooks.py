"""Panels that appear when a result carries their numbers, and the hooks for those that no
result carries yet.

* **Fleet size** (:func:`fleet_section`): how many devices (and $/h, kW) of each type serve a
  demand under latency targets. It needs the continuous-batching serving model (per-request
  TTFT/TPOT under load, maximum concurrency) and its analysis ``ds.sweep.fleet(...)``, which
  this version does not have; the hook says so on the page, and is where that panel goes.
* **Uncertainty band** (:func:`uncertainty_section`): a result that carries an uncertainty
  for a metric names it in the metric's CF ``ancillary_variables`` attribute (CF conventions,
  section 3.4); no result of this version does, and the page says so.
"""

from __future__ import annotations

import html

import xarray as xr

from sweep.report.tables import METRIC


def fleet_section(ds: xr.Dataset) -> str:
    """The fleet-sizing panel (HTML). Hook: when the serving model lands, build the panel from
    ``ds.sweep.fleet(...)`` here; until then, one line saying it is not in this result."""
    available = hasattr(ds.sweep, "fleet")
    what = ("this version of accel-sweep has a fleet analysis (ds.sweep.fleet) but the report "
            "does not draw it yet" if available else
            "not in this result: fleet sizing needs the continuous-batching serving model "
            "(per-request latency under load), which this version of accel-sweep does not have")
    return f"<p><b>Fleet size</b>: {html.escape(what)}.</p>"


def uncertainty_variables(ds: xr.Dataset, metric: str = METRIC) -> list[str]:
    """The variables that carry ``metric``'s uncertainty (its CF ``ancillary_variables``), those
    present in ``ds``."""
    if metric not in ds.data_vars:
        return []
    names = str(ds[metric].attrs.get("ancillary_variables", "")).split()
    return [n for n in names if n in ds.variables]


def uncertainty_section(ds: xr.Dataset) -> str:
    """The uncertainty note (HTML): which variables carry the metric's uncertainty, or that the
    result carries none."""
    names = uncertainty_variables(ds)
    if not names:
        return (f"<p><b>Uncertainty</b>: this result carries no uncertainty for {METRIC} (no "
                f"ancillary variables), so the page draws no band.</p>")
    return (f"<p><b>Uncertainty</b>: the result carries {html.escape(', '.join(names))} for "
            f"{METRIC}; the page does not draw bands yet.</p>")


def optional_sections(ds: xr.Dataset) -> list[str]:
    """HTML of every optional panel, in page order."""
    return [fleet_section(ds), uncertainty_section(ds)]
