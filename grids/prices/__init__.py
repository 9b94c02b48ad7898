"""Price catalog and cost parameters: what one device-hour costs, on a stated price basis.

The catalog ``grids/data/prices.toml`` holds, per hardware-catalog device id, sourced public prices:
on-demand cloud prices per offering (``cloud``, one of them ``preferred``), reservations
(``reserved``, informational, never preferred), purchase prices (``capex``, with the strength of
the evidence), or an explicit ``status = "unpriced"`` with the reason; plus the cost parameters
(``[parameters]``) a grid spec's ``[cost]`` table can override. Format and caveats: docs/prices.md.

Two price bases (``BASES``) give the fixed cost of one device-hour [USD/h]:

``cloud``
    the preferred on-demand price per accelerator-hour, ``offering price / accelerators``; it
    already pays for energy, hosting and the host, so energy is not billed separately.
``capex``
    ``purchase / (amortisation_years x 8760 h) + hosting_usd_per_kw_month x P / 730 h`` with
    ``P = power.tdp + host_power`` in kW (the device's hosting power); energy is billed separately
    at ``energy_usd_per_kwh x pue`` per kWh of the power the model reports.

Per generated token, at throughput ``T`` [token/s] per device and device power ``W`` [W]::

    usd_per_token = (fixed_usd_per_second / utilisation + energy_usd_per_joule x W) / T

Units: money in USD; the file and the per-hour figures use hours (``HOURS_PER_YEAR`` = 8760,
``HOURS_PER_MONTH`` = 730), everything a kernel reads is per SI second or joule
(:attr:`DeviceCost.fixed_usd_per_second`, :attr:`DeviceCost.energy_usd_per_joule`).

Which file holds what (each imports only the ones above it):

``money.py``
    ``MONEY_UNITS``, :func:`parse_money` and the hour/second/kWh constants.
``records.py``
    :class:`CloudPrice`, :class:`PurchasePrice`, :class:`DevicePrice`, :class:`CostParameters`,
    :class:`PriceCatalog`; ``STATUSES``, ``STRENGTHS`` and the cost ``PARAMETERS``.
``catalog.py``
    :func:`load_prices`, :func:`parse_price_catalog`, :func:`parse_device_price`,
    :func:`missing_entries`: reading and validating ``prices.toml``.
``cost_spec.py``
    :class:`CostSpec` and :func:`parse_cost_spec`: a grid spec's ``[cost]`` table (``BASES``,
    ``CLOUD_PRICES``).
``device_hour.py``
    :class:`DeviceCost`, :func:`device_cost`, :func:`device_costs`, :func:`hosting_power`: the
    cost of one device-hour and per token.
"""

from grids.prices.catalog import load_prices, missing_entries, parse_device_price, parse_price_catalog
from grids.prices.cost_spec import (
    BASES,
    CLOUD_PRICES,
    COST_KEYS,
    DEVICE_OVERRIDE_KEYS,
    CostSpec,
    parse_cost_spec,
)
from grids.prices.device_hour import DeviceCost, device_cost, device_costs, hosting_power
from grids.prices.money import (
    HOURS_PER_MONTH,
    HOURS_PER_YEAR,
    JOULES_PER_KWH,
    MONEY_UNITS,
    SECONDS_PER_HOUR,
    parse_money,
)
from grids.prices.records import (
    PARAMETERS,
    STATUSES,
    STRENGTHS,
    CloudPrice,
    CostParameters,
    DevicePrice,
    PriceCatalog,
    PurchasePrice,
)

__all__ = [
    "BASES", "CLOUD_PRICES", "COST_KEYS", "DEVICE_OVERRIDE_KEYS", "HOURS_PER_MONTH", "HOURS_PER_YEAR",
    "JOULES_PER_KWH", "MONEY_UNITS", "PARAMETERS", "SECONDS_PER_HOUR", "STATUSES", "STRENGTHS",
    "CloudPrice", "CostParameters", "CostSpec", "DeviceCost", "DevicePrice", "PriceCatalog",
    "PurchasePrice", "device_cost", "device_costs", "hosting_power", "load_prices",
    "missing_entries", "parse_cost_spec", "parse_device_price", "parse_money", "parse_price_catalog",
]
