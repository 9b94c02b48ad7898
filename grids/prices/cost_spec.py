"""The ``[cost]`` table of a grid spec: price basis, fallback basis, which cloud price, cost
parameter and per-device price overrides, validated into a :class:`CostSpec`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grids.errors import SpecError, suggest
from grids.prices.catalog import _unknown, load_prices
from grids.prices.money import parse_money
from grids.prices.records import PARAMETERS, CostParameters, PriceCatalog, _check_range

# --------------------------------------------------------------------------------------------
# the [cost] table of a grid spec

#: price bases of a device-hour (``basis`` and ``fallback`` of a spec's [cost]; the package
#: docstring gives both)
BASES = ("cloud", "capex")
COST_KEYS = ("basis", "fallback", "cloud_price", "cloud_provider", "device", *PARAMETERS)
#: which cloud price a device gets (``cloud_price`` of a spec's [cost]): the catalog's preferred
#: row, the cheapest or the median of the listed whole-instance on-demand rows, or only the
#: providers named in ``cloud_provider`` (a device none of them lists is unpriced)
CLOUD_PRICES = ("preferred", "cheapest", "median", "provider")
DEVICE_OVERRIDE_KEYS = {"cloud_usd_per_hour": "usd_per_hour", "purchase_usd": "usd"}


@dataclass(frozen=True)
class CostSpec:
    """A validated ``[cost]`` table: basis, optional fallback basis, overrides.

    ``fallback`` is ``""`` (none: a device without a price on ``basis`` gets NaN costs) or the
    other basis, used per device only when ``basis`` has no price for it; the result says so.
    ``parameters`` hold overridden cost parameters (file units); ``device_prices`` per device id
    ``cloud_usd_per_hour`` [USD/h] and/or ``purchase_usd`` [USD] replacing the catalog's.
    """

    basis: str = "cloud"
    fallback: str = ""
    cloud_provider: tuple[str, ...] = ()
    parameters: dict[str, float] = field(default_factory=dict)
    device_prices: dict[str, dict[str, float]] = field(default_factory=dict)
    cloud_price: str = "preferred"

    def resolve_parameters(self, prices: PriceCatalog | None = None) -> CostParameters:
        cat = prices or load_prices()
        return cat.parameters.with_overrides(self.parameters, "grid spec [cost]")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"basis": self.basis, "fallback": self.fallback or "none"}
        if self.cloud_provider:
            out["cloud_provider"] = list(self.cloud_provider)
        if self.cloud_price != "preferred":
            out["cloud_price"] = self.cloud_price
        out.update(self.parameters)
        if self.device_prices:
            out["device"] = {k: dict(v) for k, v in self.device_prices.items()}
        return out


def _money(value: Any, kind: str, where: str, problems: list[str]) -> float | None:
    """:func:`parse_money`, its problems appended instead of raised (None then)."""
    try:
        return parse_money(value, kind, where)
    except SpecError as exc:
        problems.extend(exc.problems)
        return None


def parse_cost_spec(table: Any, *, device_ids: list[str] | tuple[str, ...] | None = None,
                    prices: PriceCatalog | None = None) -> CostSpec:
    """Validate a grid spec's ``[cost]`` table; one SpecError lists every problem.

    Keys: ``basis`` ("cloud" | "capex", default "cloud"); ``fallback`` ("none" | the other basis |
    true | false, default "none"); ``cloud_provider`` (a provider name or a list, in order of
    preference; default: each device's preferred offering); ``cloud_price`` (``CLOUD_PRICES``:
    "preferred", default, the catalog's preferred row; "cheapest" or "median" of the listed
    whole-instance rows; "provider": only ``cloud_provider``'s rows, a device none of them lists
    being unpriced); any of ``PARAMETERS`` with units
    (``energy_usd_per_kwh = "0.12 USD/kWh"`` or ``0.12``); ``[cost.device.<id>]`` with
    ``cloud_usd_per_hour`` and/or ``purchase_usd``. ``device_ids`` (the grid's devices) lets the
    per-device tables be checked; ``None`` skips that check.
    """
    if table is None:
        return CostSpec()
    if not isinstance(table, dict):
        raise SpecError(f"cost: must be a table ([cost] with basis = \"cloud\" or \"capex\"), "
                        f"got {type(table).__name__} {table!r}", "grid spec")
    cat = prices or load_prices()
    problems: list[str] = []
    _unknown(table, COST_KEYS, "cost", problems)
    basis = table.get("basis", "cloud")
    if basis not in BASES:
        problems.append(f"cost.basis: {basis!r} is not a price basis{suggest(str(basis), BASES)}; "
                        f"use \"cloud\" (on-demand USD per accelerator-hour) or \"capex\" "
                        f"(purchase amortised + hosting + energy)")
        basis = "cloud"
    other = next(b for b in BASES if b != basis)
    fb = table.get("fallback", "none")
    fallback = ""
    if fb is True:
        fallback = other
    elif fb is False or fb == "none":
        fallback = ""
    elif fb == other:
        fallback = other
    elif fb == basis:
        problems.append(f"cost.fallback: {fb!r} is the basis itself; use \"none\" or {other!r}")
    else:
        problems.append(f"cost.fallback: {fb!r} must be \"none\", {other!r}, true or false")
    providers = table.get("cloud_provider", [])
    providers = [providers] if isinstance(providers, str) else providers
    known_prov = cat.providers()
    if not isinstance(providers, list) or not all(isinstance(p, str) for p in providers):
        problems.append(f"cost.cloud_provider: must be a provider name or a list of them, got "
                        f"{providers!r}")
        providers = []
    for p in providers:
        if p not in known_prov:
            problems.append(f"cost.cloud_provider: unknown provider {p!r}{suggest(p, known_prov)}")
    cloud_price = table.get("cloud_price", "preferred")
    if cloud_price not in CLOUD_PRICES:
        problems.append(f"cost.cloud_price: {cloud_price!r} is not one of {CLOUD_PRICES}"
                        f"{suggest(str(cloud_price), CLOUD_PRICES)} (preferred: the catalog's "
                        f"preferred offering; cheapest or median of the listed offerings; "
                        f"provider: only cloud_provider's offerings)")
        cloud_price = "preferred"
    elif cloud_price == "provider" and not providers:
        problems.append("cost.cloud_price = \"provider\" needs cloud_provider (the provider or "
                        "providers whose prices every device must have)")
    params: dict[str, float] = {}
    for name, (kind, *_rest) in PARAMETERS.items():
        if name not in table:
            continue
        v = _money(table[name], kind, f"cost.{name}", problems)
        if v is not None and _check_range(name, v, f"cost.{name}", problems):
            params[name] = v
    dev_prices: dict[str, dict[str, float]] = {}
    per_dev = table.get("device", {})
    if not isinstance(per_dev, dict) or not all(isinstance(v, dict) for v in per_dev.values()):
        problems.append("cost.device: must hold [cost.device.<id>] tables with cloud_usd_per_hour "
                        "and/or purchase_usd")
        per_dev = {}
    for dev_id, over in per_dev.items():
        where = f"cost.device.{dev_id}"
        if device_ids is not None and dev_id not in device_ids:
            problems.append(f"{where}: no such device in this grid{suggest(dev_id, device_ids)}")
        _unknown(over, tuple(DEVICE_OVERRIDE_KEYS), where, problems)
        if not over:
            problems.append(f"{where}: empty (give cloud_usd_per_hour and/or purchase_usd)")
        values = {}
        for key, kind in DEVICE_OVERRIDE_KEYS.items():
            if key not in over:
                continue
            v = _money(over[key], kind, f"{where}.{key}", problems)
            if v is None:
                continue
            if not v > 0:
                problems.append(f"{where}.{key}: must be > 0, got {over[key]!r}")
                continue
            values[key] = v
        dev_prices[dev_id] = values
    if problems:
        raise SpecError(problems, "grid spec [cost]")
    return CostSpec(str(basis), fallback, tuple(providers), params, dev_prices, str(cloud_price))
