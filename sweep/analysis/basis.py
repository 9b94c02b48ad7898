"""Comparison bases: what makes two accelerators comparable in a cross-hardware analysis.

A grid point of one device type is a *replica* of a layout (``devices`` accelerators drawing
``system_power`` and costing ``rate``). Comparing replicas as they come sets a 23 kW wafer against
a 90 W chip. A basis states the unit of comparison (docs/analysis.md, "Comparison bases"):

* ``device``: per accelerator. Throughputs are divided by the layout's devices.
* ``system:N``: an equal budget of ``N`` devices. A layout of ``d <= N`` devices runs
  ``floor(N / d)`` replicas; throughputs are multiplied by that count; larger layouts are out.
* ``power`` (per kW) or ``power:<budget>`` (an equal power budget, e.g. ``power:10kW``), at the
  ``system`` boundary (accelerators plus their host and system share, ``system_power``; the
  default) or the ``accelerator`` boundary (board/module power only, ``power``):
  throughput per kW, or ``floor(budget / power)`` replicas.
* ``cost`` (per US dollar) or ``cost:<budget>`` (an equal spend rate in USD/h): tokens per dollar,
  or ``floor(budget / (USD/h of a replica))`` replicas (``grids/data/prices.toml``; unpriced
  devices are out).
* ``replica``: the grid values as they are, one replica of each layout (not a fair comparison
  across devices of different sizes; useful within one device type).

Only throughputs (``throughput``, ``total_throughput``) scale with replicas and are normalised;
every other metric (latencies, efficiencies) keeps its value and the basis only removes the
layouts beyond the budget. Each device is then taken at its best layout on that basis.

The default is :data:`DEFAULT_BASIS` (``power``: per kW at the system boundary), the one that
makes a wafer-scale system and a single chip comparable without choosing a budget.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import xarray as xr

from grids.errors import SpecError, suggest
from grids.units import parse_quantity
from sweep.analysis.feasible import masked
from sweep.analysis.kept import check_basis, is_kept, kept_devices

KINDS = ("device", "system", "power", "cost", "replica")
BOUNDARIES = ("system", "accelerator")
DEFAULT_BASIS = "power"
#: the device budget of ``system`` when none is given (one 8-accelerator node)
DEFAULT_SYSTEM_DEVICES = 8
#: metrics that scale with the number of replicas (normalised by a basis)
EXTENSIVE = ("throughput", "total_throughput")
LAYOUT_DIM = "parallelism"


@dataclass(frozen=True)
class Basis:
    """A comparison basis (see the module docstring). ``budget``: devices for ``system``, W for
    ``power``, USD/h for ``cost``; None = per unit (per device, per kW, per dollar)."""

    kind: str = DEFAULT_BASIS
    budget: float | None = None
    boundary: str = "system"

    @property
    def label(self) -> str:
        """A short human-readable name, as printed by the CLI and stored in ``attrs['basis']``."""
        at = f" ({self.boundary} boundary)" if self.kind == "power" else ""
        if self.kind == "device":
            return "per device"
        if self.kind == "replica":
            return "per replica (grid values)"
        if self.kind == "system":
            return f"{self.budget:g}-device budget"
        if self.budget is None:
            return {"power": "per kW", "cost": "per US dollar"}[self.kind] + at
        if self.kind == "power":
            return f"{_kw(self.budget)} budget{at}"
        return f"{self.budget:g} USD/h budget"

    @property
    def spec(self) -> str:
        """The text form :func:`parse_basis` reads back."""
        parts = [self.kind]
        if self.budget is not None:
            parts.append(f"{self.budget:g}" + {"system": "", "power": "W", "cost": "$/h"}[self.kind])
        if self.kind == "power" and self.boundary != "system":
            parts.append(self.boundary)
        return ":".join(parts)

    def units(self, units: str) -> str:
        """Units of a throughput normalised on this basis."""
        if self.kind == "device":
            return f"{units} per device"
        if self.budget is not None or self.kind == "replica":
            return units
        return {"system": units, "power": f"{units} per kW", "cost": "token/USD"}[self.kind]


def _kw(watts: float) -> str:
    return f"{watts / 1e3:g} kW" if watts >= 1e3 else f"{watts:g} W"


def parse_basis(value: str | Basis | None) -> Basis:
    """A :class:`Basis` from its text form: ``device``, ``system``, ``system:16``, ``power``,
    ``power:accelerator``, ``power:20kW``, ``power:20kW:accelerator``, ``cost``, ``cost:100``
    (USD/h); None gives the default. One SpecError says what is wrong."""
    if isinstance(value, Basis):
        return value
    if value is None:
        value = DEFAULT_BASIS
    text = str(value).strip()
    kind, *rest = [p.strip() for p in text.split(":")]
    kind = kind.lower()
    if kind not in KINDS:
        raise SpecError(f"basis {value!r}: unknown kind {kind!r}{suggest(kind, KINDS)}; use "
                        f"device, system[:N], power[:budget][:boundary], cost[:USD/h] or replica")
    boundary = "system"
    budget = None
    for part in rest:
        if part.lower() in BOUNDARIES and kind == "power":
            boundary = part.lower()
            continue
        if budget is not None or not part or kind in ("device", "replica"):
            raise SpecError(f"basis {value!r}: cannot read {part!r}")
        budget = _budget(kind, part, value)
    if kind == "system" and budget is None:
        budget = float(DEFAULT_SYSTEM_DEVICES)
    return Basis(kind, budget, boundary)


def _budget(kind: str, part: str, value) -> float:
    try:
        if kind == "system":
            n = float(part)
            if n != int(n) or n < 1:
                raise ValueError
            return n
        if kind == "power":
            x = parse_quantity(part if re.search(r"[A-Za-z]", part) else f"{part} W", "power",
                               f"basis {value!r}")
        else:
            x = float(re.sub(r"(?i)\s*(usd/h|\$/h|\$)$", "", part))
    except (SpecError, ValueError):
        what = {"system": "a whole number of devices", "power": "a power such as 10kW",
                "cost": "USD per hour such as 100"}[kind]
        raise SpecError(f"basis {value!r}: the budget must be {what}, got {part!r}") from None
    if not (math.isfinite(x) and x > 0):
        raise SpecError(f"basis {value!r}: the budget must be positive, got {part!r}")
    return float(x)


# --------------------------------------------------------------------------------------------
# values on a basis


def layout_devices(ds: xr.Dataset) -> xr.DataArray:
    """Devices of each layout (per point where the result kept only each point's best one)."""
    if is_kept(ds):
        return kept_devices(ds)
    if "devices" in ds.coords:
        return ds["devices"].astype(np.float64)
    raise SpecError("this result has no 'devices' coordinate of its layouts; a basis needs it "
                    "(results written by sweep run have it)")


def _need(ds: xr.Dataset, name: str, basis: Basis) -> xr.DataArray:
    if name not in ds.data_vars:
        raise SpecError(f"the basis {basis.spec!r} needs the metric {name!r}, which this result "
                        f"lacks (select fewer variables, or use basis='device')")
    return ds[name].astype(np.float64)


def needed_variables(basis: Basis | str | None) -> tuple[str, ...]:
    """The result variables :func:`normalised` reads besides the metric itself."""
    basis = parse_basis(basis)
    if basis.kind == "power":
        return ("system_power",) if basis.boundary == "system" else ("power",)
    if basis.kind == "cost":
        return ("throughput", "tokens_per_dollar")
    return ()


def replica_power(ds: xr.Dataset, basis: Basis) -> xr.DataArray:
    """Power of one replica [W] at the basis' boundary."""
    return _need(ds, "system_power" if basis.boundary == "system" else "power", basis)


def replica_rate(ds: xr.Dataset, basis: Basis) -> xr.DataArray:
    """Spend rate of one replica [USD/h] (NaN where a device is unpriced)."""
    thr = _need(ds, "throughput", basis)
    per_dollar = _need(ds, "tokens_per_dollar", basis)
    return 3600.0 * thr / per_dollar


def replicas(ds: xr.Dataset, basis: Basis) -> xr.DataArray | None:
    """Replicas that fit the budget per layout point (NaN where none does); None for the per-unit
    bases."""
    if basis.budget is None and basis.kind != "system":
        return None
    if basis.kind == "system":
        size = layout_devices(ds)
    elif basis.kind == "power":
        size = replica_power(ds, basis)
    elif basis.kind == "cost":
        size = replica_rate(ds, basis)
    else:
        return None
    assert basis.budget is not None  # parse_basis gives ``system`` its default budget
    # numpy's stubs type a ufunc's result as an ndarray; on a DataArray it is a DataArray
    n: xr.DataArray = np.floor(basis.budget / size)  # type: ignore[assignment]
    return n.where(n >= 1)


def unit_terms(basis: Basis) -> tuple[float, str | None] | None:
    """A per-unit basis as ``(scale, denominator)``: throughput on it is
    :func:`per_unit` ``(throughput, denominator, scale)``, the denominator being a metric
    (``system_power``, ``power``), the layouts' ``devices`` or None (replicas as they are). None
    for the bases that count replicas within a budget and for ``cost``."""
    if basis.budget is not None or basis.kind in ("system", "cost"):
        return None
    if basis.kind == "power":
        return 1e3, ("system_power" if basis.boundary == "system" else "power")  # W -> kW
    return 1.0, ("devices" if basis.kind == "device" else None)


def per_unit(values, denominator, scale: float, out: np.ndarray | None = None):
    """A throughput per unit of a basis, ``scale * values / denominator`` (NumPy or xarray;
    ``denominator`` None: ``values``). The one place the per-unit bases divide. ``out``: a
    float64 NumPy array to compute in (it may be ``values``)."""
    if out is not None:
        np.multiply(values, scale, out=out)
        return out if denominator is None else np.divide(out, denominator, out=out)
    if denominator is None and scale == 1.0:
        return values
    return scale * values / (1.0 if denominator is None else denominator)


def units_on(basis: Basis, metric: str, units: str) -> str:
    """Units of ``metric`` (whose grid units are ``units``) on ``basis``: throughputs take the
    basis' unit, other metrics keep theirs."""
    return basis.units(units) if metric in EXTENSIVE else units


def normalised(ds: xr.Dataset, metric: str, basis: Basis | str | None) -> xr.DataArray:
    """``metric`` at every point on ``basis`` (NaN where infeasible or beyond the budget), with
    the layout dim kept: throughputs normalised per unit or scaled to the budget's replicas,
    other metrics as they are (see the module docstring)."""
    basis = parse_basis(basis)
    if is_kept(ds):
        check_basis(ds, basis)
    da = masked(ds, metric).astype(np.float64)
    n = replicas(ds, basis)
    if metric in EXTENSIVE:
        terms = unit_terms(basis)
        if n is not None:
            out = da * n
        elif terms is not None:
            scale, den = terms
            out = per_unit(da, None if den is None else layout_devices(ds) if den == "devices"
                           else replica_power(ds, basis), scale)
        else:  # cost, per dollar: R / (USD/s)
            out = da / (replica_rate(ds, basis) / 3600.0)
        out.attrs = {**ds[metric].attrs,
                     "units": units_on(basis, metric, ds[metric].attrs.get("units", "")),
                     "long_name": f"{ds[metric].attrs.get('long_name', metric)}, {basis.label}"}
    else:
        out = da if n is None else da.where(n.notnull())
        out.attrs = dict(ds[metric].attrs)
    out.attrs["basis"] = basis.label
    out.name = metric
    return out
