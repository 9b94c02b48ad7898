"""The cost of one device-hour on a price basis (:class:`DeviceCost`, :func:`device_cost`): the
cloud or capex price picked for a device, how energy is billed, and the cost per token that
follows (formulas in the package docstring, :mod:`grids.prices`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from grids.errors import SpecError
from grids.prices.catalog import load_prices
from grids.prices.cost_spec import CostSpec, parse_cost_spec
from grids.prices.money import JOULES_PER_KWH, SECONDS_PER_HOUR
from grids.prices.records import CostParameters, DevicePrice, PriceCatalog

# --------------------------------------------------------------------------------------------
# cost of one device-hour


@dataclass(frozen=True)
class DeviceCost:
    """The fixed cost of one device-hour on one basis, and how energy is billed.

    ``fixed_usd_per_hour`` is NaN when the device has no price on the basis used (``priced`` is
    False); ``basis_used`` differs from ``basis`` when the spec's fallback applied (``fallback``).
    """

    device_id: str
    basis: str  # requested
    basis_used: str  # "cloud", "capex", or "" when unpriced
    fixed_usd_per_hour: float  # [USD/h]
    energy_billed: bool
    energy_usd_per_kwh: float  # [USD/kWh] of facility energy; 0 when not billed
    pue: float  # [1]
    utilisation: float  # [1]
    source: str
    purchase_usd_per_hour: float = 0.0  # [USD/h], capex only
    hosting_usd_per_hour: float = 0.0  # [USD/h], capex only
    hosting_power_w: float = 0.0  # [W], capex only
    label: str = ""  # which price: provider and offering, the rule, or "unpriced"

    @property
    def priced(self) -> bool:
        return math.isfinite(self.fixed_usd_per_hour)

    @property
    def fallback(self) -> bool:
        return self.basis_used not in ("", self.basis)

    @property
    def fixed_usd_per_second(self) -> float:
        """[USD/s] per device-second paid."""
        return self.fixed_usd_per_hour / SECONDS_PER_HOUR

    @property
    def served_usd_per_second(self) -> float:
        """[USD/s] per device-second serving: the fixed cost spread over the served share."""
        return self.fixed_usd_per_second / self.utilisation

    @property
    def energy_usd_per_joule(self) -> float:
        """[USD/J] per joule of device (IT) energy; 0 when energy is not billed separately."""
        if not self.energy_billed:
            return 0.0
        return self.energy_usd_per_kwh * self.pue / JOULES_PER_KWH

    def usd_per_token(self, tokens_per_s: Any, power_w: Any) -> Any:
        """[USD/token] at ``tokens_per_s`` generated per device and ``power_w`` per device.

        Works on floats and NumPy arrays alike (no branching); NaN for an unpriced device.
        """
        return (self.served_usd_per_second + self.energy_usd_per_joule * power_w) / tokens_per_s

    def cost_per_mtok(self, tokens_per_s: Any, power_w: Any) -> Any:
        """[USD per 10^6 generated tokens]."""
        return 1e6 * self.usd_per_token(tokens_per_s, power_w)

    def tokens_per_dollar(self, tokens_per_s: Any, power_w: Any) -> Any:
        """[token/USD]."""
        return 1.0 / self.usd_per_token(tokens_per_s, power_w)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out.update(priced=self.priced, fallback=self.fallback,
                   fixed_usd_per_second=self.fixed_usd_per_second,
                   energy_usd_per_joule=self.energy_usd_per_joule)
        return out


def hosting_power(device: Any) -> tuple[float, str]:
    """Power hosting is charged on [W]: ``power.tdp`` plus ``host_power`` when the device has it.

    ``host_power`` (the host share per accelerator) is read with ``getattr(device, "host_power",
    0.0)``: devices without the field are charged at the accelerator boundary only.
    """
    tdp = float(device.tdp)
    host = getattr(device, "host_power", 0.0)
    host = float(host) if isinstance(host, (int, float)) and math.isfinite(host) else 0.0
    if hasattr(device, "host_power"):
        text = f"tdp {tdp:g} W + host_power {host:g} W"
    else:
        text = f"tdp {tdp:g} W (the device has no host_power field: accelerator boundary only)"
    return tdp + host, text


def _unpriced(dev_id: str, spec: CostSpec, params: CostParameters, why: str) -> DeviceCost:
    return DeviceCost(dev_id, spec.basis, "", math.nan, spec.basis == "capex", 0.0, params.pue,
                      params.utilisation, f"unpriced: {why}", label="unpriced")


def _spec_override(over: dict[str, float], key: str, dev_id: str, what: str
                   ) -> tuple[float, str, str] | None:
    """``(value, source text, short label)`` of a price the grid spec's [cost.device.<id>] table
    sets (``what`` formats the value), or None when it does not set ``key``."""
    if key not in over:
        return None
    value = over[key]
    return (value, f"{what.format(value)} from the grid spec [cost.device.{dev_id}]",
            "grid spec [cost.device]")


def _cloud_cost(dev_id: str, entry: DevicePrice | None, over: dict[str, float], spec: CostSpec,
                params: CostParameters, prices: PriceCatalog, how: str) -> DeviceCost | None:
    picked = _spec_override(over, "cloud_usd_per_hour", dev_id,
                            "cloud: {:g} USD per accelerator-hour")
    if picked is None:
        if entry is None or not entry.cloud:
            return None
        picked = _pick_cloud(entry, spec, prices)
        if picked is None:
            return None
    rate, text, label = picked
    text += "; includes energy and hosting (not billed separately)"
    return DeviceCost(dev_id, spec.basis, "cloud", rate, False, 0.0, params.pue,
                      params.utilisation, how + text, label=label)


def _pick_cloud(entry: DevicePrice, spec: CostSpec, prices: PriceCatalog
                ) -> tuple[float, str, str] | None:
    """``(USD per accelerator-hour, source text, short label)`` of the device's cloud price
    under ``spec.cloud_provider`` and ``spec.cloud_price``; None when no allowed row lists it."""
    for prov in spec.cloud_provider:
        rows = [c for c in entry.cloud if c.provider == prov]
        if rows:
            row = min(rows, key=lambda c: (not c.includes_host, c.usd_per_accelerator_hour))
            return (row.usd_per_accelerator_hour,
                    f"cloud on-demand: {row.describe()}; chosen as the first provider of "
                    f"cost.cloud_provider that lists it ({prov})",
                    f"{row.provider} {row.offering}")
    if spec.cloud_price == "provider":
        return None
    whole = [c for c in entry.cloud if c.includes_host] or list(entry.cloud)
    if spec.cloud_price == "median":
        rates = sorted(c.usd_per_accelerator_hour for c in whole)
        mid = len(rates) // 2
        rate = rates[mid] if len(rates) % 2 else 0.5 * (rates[mid - 1] + rates[mid])
        names = ", ".join(f"{c.provider} {c.usd_per_accelerator_hour:.4g}" for c in whole)
        return (rate, f"cloud on-demand: median of the {len(whole)} listed whole-instance "
                      f"offerings per accelerator-hour ({names} USD/h)",
                f"median of {len(whole)} listed")
    if spec.cloud_price == "cheapest":
        row = min(whole, key=lambda c: c.usd_per_accelerator_hour)
        rule = "the cheapest listed whole-instance offering"
    else:
        preferred = entry.preferred_cloud
        assert preferred is not None
        row = preferred
        rule = f"preferred: {prices.rules['cloud_preferred']}"
    return (row.usd_per_accelerator_hour, f"cloud on-demand: {row.describe()}; chosen as {rule}",
            f"{row.provider} {row.offering}")


def _capex_cost(device: Any, entry: DevicePrice | None, over: dict[str, float], spec: CostSpec,
                params: CostParameters, prices: PriceCatalog, how: str) -> DeviceCost | None:
    dev_id = device.id
    picked = _spec_override(over, "purchase_usd", dev_id, "{:,.0f} USD per accelerator")
    if picked is None:
        if entry is None or not entry.capex:
            return None
        row = entry.preferred_capex
        assert row is not None
        picked = (row.usd_per_accelerator,
                  f"{row.describe()}; preferred: {prices.rules['capex_preferred']}",
                  f"{row.seller} {row.item}")
    purchase, origin, label = picked
    power_w, power_text = hosting_power(device)
    purchase_h = purchase / params.amortisation_hours
    hosting_h = params.hosting_usd_per_watt_hour * power_w
    text = (f"capex: purchase {purchase:,.0f} USD / ({params.amortisation_years:g} y x 8760 h) = "
            f"{purchase_h:.4g} USD/h [{origin}] + hosting {params.hosting_usd_per_kw_month:g} "
            f"USD/kW/month x {power_w / 1000:.4g} kW / 730 h = {hosting_h:.4g} USD/h [{power_text}]; "
            f"energy billed separately at {params.energy_usd_per_kwh:g} USD/kWh x pue "
            f"{params.pue:g}")
    return DeviceCost(dev_id, spec.basis, "capex", purchase_h + hosting_h, True,
                      params.energy_usd_per_kwh, params.pue, params.utilisation, how + text,
                      purchase_h, hosting_h, power_w, label=label)


def device_cost(device: Any, cost: CostSpec | str | None = None, *,
                prices: PriceCatalog | None = None, missing: str = "error") -> DeviceCost:
    """Fixed cost of one device-hour [USD/h] on the spec's basis, and how energy is billed.

    Parameters
    ----------
    device : grids.hardware.Device
        Needs ``id`` and ``tdp`` [W]; ``host_power`` [W] and ``base`` (hypothetical devices are
        priced as their base device) are read when present.
    cost : CostSpec or str, optional
        From :func:`parse_cost_spec`, or just a basis name ("cloud" | "capex"); default: basis
        "cloud", no fallback, catalog parameters.
    prices : PriceCatalog, optional
        Default: the built-in catalog.
    missing : "error" or "nan"
        A device with no entry in the price catalog (and no spec override) raises SpecError, or
        gets an unpriced (NaN) result. Catalog devices marked unpriced always give NaN.

    Notes
    -----
    cloud: ``fixed = offering price / accelerators`` (energy and hosting included).
    capex: ``fixed = purchase / (amortisation_years x 8760) + hosting_usd_per_kw_month x P[kW] /
    730`` with ``P = tdp + host_power``; energy is billed at ``energy_usd_per_kwh x pue``.
    """
    cat = prices or load_prices()
    spec = parse_cost_spec({"basis": cost}, prices=cat) if isinstance(cost, str) else cost
    spec = spec or CostSpec()
    params = spec.resolve_parameters(cat)
    dev_id = str(device.id)
    over = spec.device_prices.get(dev_id, {})
    entry = cat.devices.get(dev_id)
    how = ""
    base = str(getattr(device, "base", "") or "")
    if entry is None and base in cat.devices:
        entry = cat.devices[base]
        how = f"priced as its base device {base!r} (hypothetical device); "
    if entry is None and not over:
        why = (f"device {dev_id!r} has no entry in the price catalog (add [devices.{dev_id}] to "
               f"grids/data/prices.toml, or give [cost.device.{dev_id}] cloud_usd_per_hour or "
               f"purchase_usd in the grid spec)")
        if missing == "error":
            raise SpecError(why, "cost")
        return _unpriced(dev_id, spec, params, why)
    for basis in (spec.basis, spec.fallback) if spec.fallback else (spec.basis,):
        note = how
        if basis != spec.basis:
            note += f"FALLBACK to {basis}: no {spec.basis} price for {dev_id!r}; "
        if basis == "cloud":
            out = _cloud_cost(dev_id, entry, over, spec, params, cat, note)
        else:
            out = _capex_cost(device, entry, over, spec, params, cat, note)
        if out is not None:
            return out
    if entry is not None and not entry.priced:
        why = f"{dev_id!r}: {entry.reason}"
    elif spec.basis == "cloud" and spec.cloud_price == "provider" and entry is not None \
            and entry.cloud:
        why = (f"none of cost.cloud_provider ({', '.join(spec.cloud_provider)}) lists {dev_id!r} "
               f"(listed by: {', '.join(sorted({c.provider for c in entry.cloud}))})")
    else:
        have = [b for b, rows in (("cloud", entry.cloud if entry else ()),
                                  ("capex", entry.capex if entry else ())) if rows]
        why = (f"no {spec.basis} price for {dev_id!r}"
               + (f" (a {have[0]} price exists: set cost.fallback = {have[0]!r} or cost.basis = "
                  f"{have[0]!r})" if have else ""))
    return _unpriced(dev_id, spec, params, how + why)


def device_costs(devices: list[Any], cost: CostSpec | str | None = None, *,
                 prices: PriceCatalog | None = None, missing: str = "nan") -> dict[str, DeviceCost]:
    """:func:`device_cost` for several devices; with ``missing="error"`` one SpecError lists all."""
    problems: list[str] = []
    out: dict[str, DeviceCost] = {}
    for dev in devices:
        try:
            out[str(dev.id)] = device_cost(dev, cost, prices=prices, missing=missing)
        except SpecError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SpecError(problems, "cost")
    return out
