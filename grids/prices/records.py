"""The price catalog's records: a cloud offering's price, a purchase price, every price of one
device, the cost parameters, the whole catalog; with the names they use (statuses, strengths of
evidence) and the cost parameters' units and ranges (``PARAMETERS``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from grids.prices.money import HOURS_PER_MONTH, HOURS_PER_YEAR, JOULES_PER_KWH, SECONDS_PER_HOUR
from grids.sourced import Sourced

STATUSES = ("priced", "unpriced")
#: strength of a purchase price, strongest first
STRENGTHS = ("vendor_list", "reported_list", "analyst_estimate")

#: cost parameters: name -> (kind, lower bound, lower bound inclusive?, upper bound, what it is)
PARAMETERS: dict[str, tuple[str, float, bool, float, str]] = {
    "amortisation_years": ("years", 0.0, False, 30.0, "straight-line depreciation period"),
    "hosting_usd_per_kw_month": ("usd_per_kw_month", 0.0, True, 1e5,
                                 "colocation price per kW of hosting power per month"),
    "energy_usd_per_kwh": ("usd_per_kwh", 0.0, True, 10.0, "price of facility energy"),
    "pue": ("fraction", 1.0, True, 5.0, "power usage effectiveness (facility / IT energy)"),
    "utilisation": ("fraction", 0.0, False, 1.0, "fraction of paid hours that serve traffic"),
}


def _check_range(name: str, value: float, where: str, problems: list[str]) -> bool:
    _, lo, lo_incl, hi, _ = PARAMETERS[name]
    ok = (lo <= value if lo_incl else lo < value) and value <= hi
    if not ok:
        problems.append(f"{where}: {value:g} is outside {'[' if lo_incl else '('}{lo:g}, {hi:g}]")
    return ok


def _price_dict(rec: CloudPrice | PurchasePrice, per_accelerator: str) -> dict[str, Any]:
    """A price record as JSON-ready fields, in declaration order, with its price per accelerator
    (the property named ``per_accelerator``) and its sources."""
    out = {f.name: getattr(rec, f.name) for f in dataclasses.fields(rec) if f.name != "sources"}
    out[per_accelerator] = getattr(rec, per_accelerator)
    out["sources"] = {k: v.to_dict() for k, v in rec.sources.items()}
    return out


# --------------------------------------------------------------------------------------------
# catalog records


@dataclass(frozen=True)
class CloudPrice:
    """One cloud offering's price: ``usd_per_hour`` [USD/h] for ``accelerators`` devices."""

    provider: str
    offering: str
    accelerators: int
    usd_per_hour: float
    region: str
    as_of: str
    includes_host: bool
    notes: str = ""
    preferred: bool = False
    term: str = ""  # reservations only
    sources: dict[str, Sourced] = field(default_factory=dict, compare=False)

    @property
    def usd_per_accelerator_hour(self) -> float:
        """Price of one device-hour [USD/h]."""
        return self.usd_per_hour / self.accelerators

    def describe(self) -> str:
        host = ("includes the host: an upper bound of the accelerator's cost" if self.includes_host
                else "accelerator component only: the host VM is billed separately, not included")
        return (f"{self.provider} {self.offering} at {self.usd_per_hour:g} USD/h for "
                f"{self.accelerators} = {self.usd_per_accelerator_hour:.4g} USD per accelerator-hour "
                f"({self.region}; {self.as_of}; {host}); source: {self.sources['price'].source}")

    def to_dict(self) -> dict[str, Any]:
        return _price_dict(self, "usd_per_accelerator_hour")


@dataclass(frozen=True)
class PurchasePrice:
    """One purchase price: ``usd`` [USD] for an item holding ``accelerators`` devices."""

    seller: str
    item: str
    accelerators: int
    usd: float
    strength: str
    includes_host: bool
    includes: str
    as_of: str
    notes: str = ""
    preferred: bool = False
    sources: dict[str, Sourced] = field(default_factory=dict, compare=False)

    @property
    def usd_per_accelerator(self) -> float:
        """Purchase price of one device [USD]."""
        return self.usd / self.accelerators

    def describe(self) -> str:
        return (f"{self.item} from {self.seller} at {self.usd:,.0f} USD / {self.accelerators} = "
                f"{self.usd_per_accelerator:,.0f} USD per accelerator ({self.strength}; "
                f"{self.as_of}; covers {self.includes}); source: {self.sources['price'].source}")

    def to_dict(self) -> dict[str, Any]:
        return _price_dict(self, "usd_per_accelerator")


@dataclass(frozen=True)
class DevicePrice:
    """Every price known for one device id, or the reason there is none."""

    device_id: str
    name: str
    status: str  # "priced" | "unpriced"
    cloud: tuple[CloudPrice, ...] = ()
    reserved: tuple[CloudPrice, ...] = ()
    capex: tuple[PurchasePrice, ...] = ()
    reason: str = ""
    notes: tuple[str, ...] = ()
    pending: bool = False  # the id is not in the hardware catalog yet

    @property
    def priced(self) -> bool:
        return self.status == "priced"

    @property
    def preferred_cloud(self) -> CloudPrice | None:
        return next((c for c in self.cloud if c.preferred), None)

    @property
    def preferred_capex(self) -> PurchasePrice | None:
        return next((c for c in self.capex if c.preferred), None)

    def to_dict(self) -> dict[str, Any]:
        return {"device_id": self.device_id, "name": self.name, "status": self.status,
                "reason": self.reason, "notes": list(self.notes), "pending": self.pending,
                "cloud": [c.to_dict() for c in self.cloud],
                "reserved": [c.to_dict() for c in self.reserved],
                "capex": [c.to_dict() for c in self.capex]}


@dataclass(frozen=True)
class CostParameters:
    """Cost parameters in file units; SI helpers for the kernels."""

    amortisation_years: float  # [year]
    hosting_usd_per_kw_month: float  # [USD / (kW month)]
    energy_usd_per_kwh: float  # [USD / kWh]
    pue: float  # [1]
    utilisation: float  # [1]
    sources: dict[str, Sourced] = field(default_factory=dict, compare=False)

    @property
    def amortisation_hours(self) -> float:
        return self.amortisation_years * HOURS_PER_YEAR

    @property
    def amortisation_seconds(self) -> float:
        return self.amortisation_hours * SECONDS_PER_HOUR

    @property
    def hosting_usd_per_watt_hour(self) -> float:
        """Hosting [USD per W per hour] = USD/(kW month) / 1000 / 730."""
        return self.hosting_usd_per_kw_month / 1000.0 / HOURS_PER_MONTH

    @property
    def energy_usd_per_joule(self) -> float:
        """Facility energy per joule of IT energy [USD/J] = USD/kWh x pue / 3.6e6."""
        return self.energy_usd_per_kwh * self.pue / JOULES_PER_KWH

    def with_overrides(self, overrides: dict[str, float], origin: str) -> CostParameters:
        if not overrides:
            return self
        sources = dict(self.sources)
        for k, v in overrides.items():
            sources[k] = Sourced(v, origin)
        return dataclasses.replace(self, **overrides, sources=sources)


@dataclass(frozen=True)
class PriceCatalog:
    """The whole price file, validated."""

    devices: dict[str, DevicePrice]
    parameters: CostParameters
    rules: dict[str, str]
    pending: tuple[str, ...] = ()
    path: str = ""

    def unpriced(self) -> list[str]:
        return sorted(d for d, p in self.devices.items() if not p.priced)

    def providers(self) -> list[str]:
        return sorted({c.provider for p in self.devices.values() for c in p.cloud})

