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
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from grids.errors import SpecError, suggest
from grids.sourced import Sourced, read_sourced

HOURS_PER_YEAR = 8760.0  # 365 d x 24 h
HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0  # 730 h
SECONDS_PER_HOUR = 3600.0
JOULES_PER_KWH = 3.6e6

BASES = ("cloud", "capex")
STATUSES = ("priced", "unpriced")
#: strength of a purchase price, strongest first
STRENGTHS = ("vendor_list", "reported_list", "analyst_estimate")

#: money-like quantities: kind -> (unit of a plain number, {accepted unit: factor to that unit})
MONEY_UNITS: dict[str, tuple[str, dict[str, float]]] = {
    "usd": ("USD", {"USD": 1.0, "kUSD": 1e3, "MUSD": 1e6}),
    "usd_per_hour": ("USD/h", {"USD/h": 1.0, "USD/hour": 1.0, "USD/hr": 1.0, "USD/min": 60.0,
                               "USD/s": SECONDS_PER_HOUR}),
    "usd_per_kwh": ("USD/kWh", {"USD/kWh": 1.0, "USD/MWh": 1e-3, "cents/kWh": 1e-2,
                                "USD/J": JOULES_PER_KWH}),
    "usd_per_kw_month": ("USD/kW/month", {"USD/kW/month": 1.0, "USD/kW-month": 1.0,
                                          "USD/kW/mo": 1.0, "USD/MW/month": 1e-3,
                                          "USD/W/month": 1e3}),
    "years": ("years", {"years": 1.0, "year": 1.0, "yr": 1.0, "y": 1.0, "months": 1.0 / 12.0,
                        "month": 1.0 / 12.0}),
    "fraction": ("1", {}),
}

#: cost parameters: name -> (kind, lower bound, lower bound inclusive?, upper bound, what it is)
PARAMETERS: dict[str, tuple[str, float, bool, float, str]] = {
    "amortisation_years": ("years", 0.0, False, 30.0, "straight-line depreciation period"),
    "hosting_usd_per_kw_month": ("usd_per_kw_month", 0.0, True, 1e5,
                                 "colocation price per kW of hosting power per month"),
    "energy_usd_per_kwh": ("usd_per_kwh", 0.0, True, 10.0, "price of facility energy"),
    "pue": ("fraction", 1.0, True, 5.0, "power usage effectiveness (facility / IT energy)"),
    "utilisation": ("fraction", 0.0, False, 1.0, "fraction of paid hours that serve traffic"),
}

_NUM = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")


def _data_path() -> Path:
    return Path(str(resources.files("grids") / "data" / "prices.toml"))


# --------------------------------------------------------------------------------------------
# units


def parse_money(value: object, kind: str, where: str = "") -> float:
    """Convert a money-like quantity to the file unit of ``kind`` (``MONEY_UNITS``).

    Parameters
    ----------
    value : float or str
        A plain number in the unit of ``kind`` (``21.96``) or a string with a unit
        (``"21.96 USD/h"``, ``"0.12 USD/kWh"``, ``"163.44 USD/kW/month"``, ``"60 months"``).
    kind : str
        ``usd`` [USD], ``usd_per_hour`` [USD/h], ``usd_per_kwh`` [USD/kWh], ``usd_per_kw_month``
        [USD/(kW month)], ``years`` [year] or ``fraction`` [1] (plain numbers only).
    where : str
        Location for the error message.

    Raises
    ------
    SpecError
        Unparseable text, unknown unit, a unit of another kind, a boolean, a non-finite number.
    """
    loc = f"{where}: " if where else ""
    base, units = MONEY_UNITS[kind]
    if isinstance(value, bool):
        raise SpecError(f"{loc}expected a number in {base}, got a boolean {value!r}")
    if isinstance(value, (int, float)):
        out = float(value)
    elif isinstance(value, str):
        m = _NUM.match(value)
        if not m:
            raise SpecError(f"{loc}cannot read {value!r} as a number with a unit (write e.g. "
                            f"'1.5 {base}' or a plain number in {base})")
        number, unit = float(m.group(1)), m.group(2)
        if unit == "":
            out = number
        elif unit in units:
            out = number * units[unit]
        else:
            other = next((k for k, (_, u) in MONEY_UNITS.items() if unit in u), None)
            if other is not None:
                raise SpecError(f"{loc}{value!r} is in {unit}, a {other} unit, but {base} is "
                                f"expected here")
            accepted = ", ".join(units) if units else "none: give a plain number"
            raise SpecError(f"{loc}unknown unit {unit!r} in {value!r} (accepted units: "
                            f"{accepted})")
    else:
        raise SpecError(f"{loc}expected a number in {base} (number or string with unit), got "
                        f"{type(value).__name__} {value!r}")
    if not math.isfinite(out):
        raise SpecError(f"{loc}{value!r} is not a finite number")
    return out


def _read_money(entry: Any, kind: str, where: str, problems: list[str], *,
                positive: bool = True) -> Sourced | None:
    """A sourced money-like number (``read_sourced`` with money units); problems appended."""
    if isinstance(entry, dict) and "value" in entry:
        try:
            value = parse_money(entry["value"], kind, where)
        except SpecError as exc:
            problems.extend(exc.problems)
            read_sourced({**entry, "value": 1.0}, "count", where, problems)  # source, keys
            return None
        entry = {**entry, "value": value}
    return read_sourced(entry, "count", where, problems, positive=positive)


def _check_range(name: str, value: float, where: str, problems: list[str]) -> bool:
    _, lo, lo_incl, hi, _ = PARAMETERS[name]
    ok = (lo <= value if lo_incl else lo < value) and value <= hi
    if not ok:
        problems.append(f"{where}: {value:g} is outside {'[' if lo_incl else '('}{lo:g}, {hi:g}]")
    return ok


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
        out = {k: getattr(self, k) for k in ("provider", "offering", "accelerators",
                                             "usd_per_hour", "region", "as_of", "includes_host",
                                             "notes", "preferred", "term")}
        out["usd_per_accelerator_hour"] = self.usd_per_accelerator_hour
        out["sources"] = {k: v.to_dict() for k, v in self.sources.items()}
        return out


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
        out = {k: getattr(self, k) for k in ("seller", "item", "accelerators", "usd", "strength",
                                             "includes_host", "includes", "as_of", "notes",
                                             "preferred")}
        out["usd_per_accelerator"] = self.usd_per_accelerator
        out["sources"] = {k: v.to_dict() for k, v in self.sources.items()}
        return out


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


# --------------------------------------------------------------------------------------------
# loading and validating the price file

_CLOUD_REQUIRED = ("provider", "offering", "accelerators", "price", "region", "as_of",
                   "includes_host")
_CLOUD_KEYS = (*_CLOUD_REQUIRED, "notes", "preferred")
_RESERVED_KEYS = (*_CLOUD_REQUIRED, "notes", "term")
_CAPEX_REQUIRED = ("seller", "item", "accelerators", "price", "strength", "includes_host",
                   "includes", "as_of")
_CAPEX_KEYS = (*_CAPEX_REQUIRED, "notes", "preferred")
_DEVICE_KEYS = ("name", "status", "reason", "notes", "cloud", "reserved", "capex")
_TOP_KEYS = ("pending_hardware", "rules", "parameters", "devices")
_RULE_KEYS = ("cloud_preferred", "capex_preferred")


def _text(table: dict[str, Any], key: str, where: str, problems: list[str],
          required: bool = True) -> str:
    v = table.get(key)
    if v is None:
        if required:
            problems.append(f"{where}: missing text field '{key}'")
        return ""
    if not isinstance(v, str) or (required and not v.strip()):
        problems.append(f"{where}.{key}: must be a non-empty string, got {v!r}")
        return ""
    return v


def _flag(table: dict[str, Any], key: str, where: str, problems: list[str],
          required: bool = True) -> bool:
    v = table.get(key)
    if v is None:
        if required:
            problems.append(f"{where}: missing '{key}' (true or false)")
        return False
    if not isinstance(v, bool):
        problems.append(f"{where}.{key}: must be true or false, got {v!r}")
        return False
    return v


def _unknown(table: dict[str, Any], allowed: tuple[str, ...], where: str,
             problems: list[str]) -> None:
    for key in table:
        if key not in allowed:
            problems.append(f"{where}: unknown key {key!r}{suggest(key, allowed)}")


def _accelerators(table: dict[str, Any], where: str, problems: list[str],
                  sources: dict[str, Sourced]) -> int:
    s = read_sourced(table.get("accelerators"), "count", f"{where}.accelerators", problems)
    if s is None:
        return 0
    if not (s.value >= 1 and float(s.value).is_integer()):
        problems.append(f"{where}.accelerators: must be a whole number >= 1, got {s.value:g}")
        return 0
    sources["accelerators"] = s
    return int(s.value)


def _rows(table: dict[str, Any], key: str, where: str, problems: list[str]) -> list[Any]:
    rows = table.get(key, [])
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        problems.append(f"{where}.{key}: must be a list of tables ([[devices.<id>.{key}]])")
        return []
    return rows


def _cloud_row(row: dict[str, Any], where: str, problems: list[str],
               reserved: bool) -> CloudPrice | None:
    n0 = len(problems)
    if reserved and "preferred" in row:
        problems.append(f"{where}: 'preferred' is not allowed here: reservations are never "
                        f"preferred (only [[cloud]] on-demand rows are)")
        row = {k: v for k, v in row.items() if k != "preferred"}
    _unknown(row, _RESERVED_KEYS if reserved else _CLOUD_KEYS, where, problems)
    texts = {k: _text(row, k, where, problems) for k in ("provider", "offering", "region",
                                                          "as_of")}
    sources: dict[str, Sourced] = {}
    n_acc = _accelerators(row, where, problems, sources)
    price = _read_money(row.get("price"), "usd_per_hour", f"{where}.price", problems)
    host = _flag(row, "includes_host", where, problems)
    pref = _flag(row, "preferred", where, problems, required=False)
    notes = _text(row, "notes", where, problems, required=False)
    term = _text(row, "term", where, problems, required=reserved)
    if len(problems) > n0 or price is None:
        return None
    sources["price"] = price
    return CloudPrice(texts["provider"], texts["offering"], n_acc, price.value, texts["region"],
                      texts["as_of"], host, notes, pref, term, sources)


def _capex_row(row: dict[str, Any], where: str, problems: list[str]) -> PurchasePrice | None:
    n0 = len(problems)
    _unknown(row, _CAPEX_KEYS, where, problems)
    texts = {k: _text(row, k, where, problems) for k in ("seller", "item", "strength",
                                                          "includes", "as_of")}
    if texts["strength"] and texts["strength"] not in STRENGTHS:
        problems.append(f"{where}.strength: {texts['strength']!r} is not one of "
                        f"{', '.join(STRENGTHS)}{suggest(texts['strength'], STRENGTHS)}")
    sources: dict[str, Sourced] = {}
    n_acc = _accelerators(row, where, problems, sources)
    price = _read_money(row.get("price"), "usd", f"{where}.price", problems)
    host = _flag(row, "includes_host", where, problems)
    pref = _flag(row, "preferred", where, problems, required=False)
    notes = _text(row, "notes", where, problems, required=False)
    if len(problems) > n0 or price is None:
        return None
    sources["price"] = price
    return PurchasePrice(texts["seller"], texts["item"], n_acc, price.value, texts["strength"],
                         host, texts["includes"], texts["as_of"], notes, pref, sources)


def parse_device_price(dev_id: str, table: Any, where: str = "",
                       pending: bool = False) -> DevicePrice:
    """One ``[devices.<id>]`` table; raises one SpecError listing every problem."""
    where = where or f"devices.{dev_id}"
    problems: list[str] = []
    if not isinstance(table, dict):
        raise SpecError(f"{where}: must be a table with status = \"priced\" or \"unpriced\"")
    _unknown(table, _DEVICE_KEYS, where, problems)
    status = table.get("status")
    if status not in STATUSES:
        problems.append(f"{where}.status: must be \"priced\" or \"unpriced\", got {status!r} "
                        f"(write status = \"unpriced\" with a reason when no price is known)")
    name = _text(table, "name", where, problems, required=False)
    reason = _text(table, "reason", where, problems, required=status == "unpriced")
    notes = table.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        problems.append(f"{where}.notes: must be a list of strings")
        notes = []
    clouds = [_cloud_row(r, f"{where}.cloud[{i}]", problems, reserved=False)
              for i, r in enumerate(_rows(table, "cloud", where, problems))]
    reserved = [_cloud_row(r, f"{where}.reserved[{i}]", problems, reserved=True)
                for i, r in enumerate(_rows(table, "reserved", where, problems))]
    capex = [_capex_row(r, f"{where}.capex[{i}]", problems)
             for i, r in enumerate(_rows(table, "capex", where, problems))]
    n_rows = len(table.get("cloud", []) or []) + len(table.get("capex", []) or [])
    if status == "unpriced" and (n_rows or table.get("reserved")):
        problems.append(f"{where}: status = \"unpriced\" but price rows are given (set status = "
                        f"\"priced\", or remove the rows)")
    if status == "priced" and not n_rows:
        problems.append(f"{where}: status = \"priced\" needs at least one [[cloud]] or [[capex]] "
                        f"row (or status = \"unpriced\" with a reason)")
    for key, rows in (("cloud", clouds), ("capex", capex)):
        n_pref = sum(1 for r in rows if r is not None and r.preferred)
        if rows and all(r is not None for r in rows) and n_pref != 1:
            problems.append(f"{where}.{key}: exactly one row must have preferred = true (the "
                            f"rule of [rules].{key}_preferred), found {n_pref}")
    if problems:
        raise SpecError(problems, "price catalog")
    return DevicePrice(dev_id, name, str(status), tuple(c for c in clouds if c),
                       tuple(r for r in reserved if r), tuple(c for c in capex if c), reason,
                       tuple(notes), pending)


def _parameters(table: Any, where: str, problems: list[str]) -> CostParameters | None:
    if not isinstance(table, dict):
        problems.append(f"{where}: missing [parameters] table ({', '.join(PARAMETERS)})")
        return None
    _unknown(table, tuple(PARAMETERS), where, problems)
    values: dict[str, float] = {}
    sources: dict[str, Sourced] = {}
    for name, (kind, *_rest) in PARAMETERS.items():
        if name not in table:
            problems.append(f"{where}: missing {name} ({PARAMETERS[name][4]})")
            continue
        s = _read_money(table[name], kind, f"{where}.{name}", problems, positive=False)
        if s is not None and s.value >= 0 and _check_range(name, s.value, f"{where}.{name}",
                                                           problems):
            values[name] = s.value
            sources[name] = s
    if len(values) != len(PARAMETERS):
        return None
    return CostParameters(**values, sources=sources)


def parse_price_catalog(raw: dict[str, Any], known_ids: set[str] | None = None,
                        where: str = "prices.toml") -> PriceCatalog:
    """Validate a parsed price file; one SpecError lists every problem.

    ``known_ids`` are the device ids an entry may name (default: the hardware catalog); the file's
    ``pending_hardware`` ids are accepted as well.
    """
    from grids.hardware import catalog_ids  # same package; imported late to keep import light

    problems: list[str] = []
    if not isinstance(raw, dict):
        raise SpecError(f"{where}: must be a TOML table")
    _unknown(raw, _TOP_KEYS, where, problems)
    pending = raw.get("pending_hardware", [])
    if not isinstance(pending, list) or not all(isinstance(p, str) for p in pending):
        problems.append(f"{where}: pending_hardware must be a list of device ids")
        pending = []
    known = set(catalog_ids()) if known_ids is None else set(known_ids)
    rules = raw.get("rules", {})
    if not isinstance(rules, dict):
        problems.append(f"{where}: [rules] must be a table")
        rules = {}
    _unknown(rules, _RULE_KEYS, f"{where}: rules", problems)
    for key in _RULE_KEYS:
        _text(rules, key, f"{where}: rules", problems)
    params = _parameters(raw.get("parameters"), f"{where}: parameters", problems)
    devices_raw = raw.get("devices", {})
    if not isinstance(devices_raw, dict) or not devices_raw:
        problems.append(f"{where}: needs [devices.<id>] tables")
        devices_raw = {}
    devices: dict[str, DevicePrice] = {}
    for dev_id, table in devices_raw.items():
        if dev_id not in known and dev_id not in pending:
            problems.append(f"{where}: devices.{dev_id}: unknown device id"
                            f"{suggest(dev_id, known | set(pending))} (use a hardware catalog "
                            f"id, or list it in pending_hardware)")
            continue
        try:
            devices[dev_id] = parse_device_price(dev_id, table, f"{where}: devices.{dev_id}",
                                                 pending=dev_id not in known)
        except SpecError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SpecError(problems, "price catalog")
    assert params is not None
    return PriceCatalog(devices, params, {k: str(rules[k]) for k in _RULE_KEYS},
                        tuple(pending), where)


def load_prices(path: str | Path | None = None) -> PriceCatalog:
    """The built-in price catalog (cached), or a price file of the same format."""
    if path is None:
        return _load_builtin()
    return _load_file(Path(path))


@functools.cache
def _load_builtin() -> PriceCatalog:
    return _load_file(_data_path())


def _load_file(path: Path) -> PriceCatalog:
    try:
        with open(path, "rb") as fh:
            raw = tomllib.load(fh)
    except FileNotFoundError as exc:
        raise SpecError(f"{path}: price file not found") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: malformed TOML: {exc}") from exc
    return parse_price_catalog(raw, where=path.name)


def missing_entries(device_ids: list[str] | tuple[str, ...],
                    prices: PriceCatalog | None = None) -> list[str]:
    """Device ids that have no entry at all (neither priced nor explicitly unpriced)."""
    cat = prices or load_prices()
    return sorted(d for d in device_ids if d not in cat.devices)


# --------------------------------------------------------------------------------------------
# the [cost] table of a grid spec

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
        try:
            v = parse_money(table[name], kind, f"cost.{name}")
        except SpecError as exc:
            problems.extend(exc.problems)
            continue
        if _check_range(name, v, f"cost.{name}", problems):
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
            try:
                v = parse_money(over[key], kind, f"{where}.{key}")
            except SpecError as exc:
                problems.extend(exc.problems)
                continue
            if not v > 0:
                problems.append(f"{where}.{key}: must be > 0, got {over[key]!r}")
                continue
            values[key] = v
        dev_prices[dev_id] = values
    if problems:
        raise SpecError(problems, "grid spec [cost]")
    return CostSpec(str(basis), fallback, tuple(providers), params, dev_prices, str(cloud_price))


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


def _cloud_cost(dev_id: str, entry: DevicePrice | None, over: dict[str, float], spec: CostSpec,
                params: CostParameters, prices: PriceCatalog, how: str) -> DeviceCost | None:
    if "cloud_usd_per_hour" in over:
        rate = over["cloud_usd_per_hour"]
        text = f"cloud: {rate:g} USD per accelerator-hour from the grid spec [cost.device.{dev_id}]"
        label = "grid spec [cost.device]"
    else:
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
    if "purchase_usd" in over:
        purchase = over["purchase_usd"]
        origin = f"{purchase:,.0f} USD per accelerator from the grid spec [cost.device.{dev_id}]"
        label = "grid spec [cost.device]"
    else:
        if entry is None or not entry.capex:
            return None
        row = entry.preferred_capex
        assert row is not None
        purchase = row.usd_per_accelerator
        origin = f"{row.describe()}; preferred: {prices.rules['capex_preferred']}"
        label = f"{row.seller} {row.item}"
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
