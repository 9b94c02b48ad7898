"""Loading and validating the price file (``grids/data/prices.toml``, or a file of the same format):
one SpecError lists every problem; the built-in catalog is read once.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from grids.errors import SpecError, suggest
from grids.prices.money import _read_money
from grids.prices.records import (
    PARAMETERS,
    STATUSES,
    STRENGTHS,
    CloudPrice,
    CostParameters,
    DevicePrice,
    PriceCatalog,
    PurchasePrice,
    _check_range,
)
from grids.sourced import Sourced, read_sourced


def _data_path() -> Path:
    return Path(str(resources.files("grids") / "data" / "prices.toml"))


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


def _field(table: dict[str, Any], key: str, where: str, problems: list[str], required: bool,
           default: Any, valid: Callable[[Any], bool], missing: str, expected: str) -> Any:
    """``table[key]`` when ``valid``; else ``default``, with a problem when the key is required
    (missing) or present but invalid."""
    v = table.get(key)
    if v is None:
        if required:
            problems.append(f"{where}: missing {missing}")
        return default
    if not valid(v):
        problems.append(f"{where}.{key}: must be {expected}, got {v!r}")
        return default
    return v


def _text(table: dict[str, Any], key: str, where: str, problems: list[str],
          required: bool = True) -> str:
    return _field(table, key, where, problems, required, "",
                  lambda v: isinstance(v, str) and (not required or bool(v.strip())),
                  f"text field '{key}'", "a non-empty string")


def _flag(table: dict[str, Any], key: str, where: str, problems: list[str],
          required: bool = True) -> bool:
    return _field(table, key, where, problems, required, False, lambda v: isinstance(v, bool),
                  f"'{key}' (true or false)", "true or false")


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


def _shared_fields(row: dict[str, Any], money: str, where: str, problems: list[str]
                   ) -> tuple[dict[str, Sourced], int, Sourced | None, bool, bool, str]:
    """What a cloud and a purchase row both hold: (sources, accelerators, price in ``money``
    units, includes_host, preferred, notes)."""
    sources: dict[str, Sourced] = {}
    n_acc = _accelerators(row, where, problems, sources)
    price = _read_money(row.get("price"), money, f"{where}.price", problems)
    host = _flag(row, "includes_host", where, problems)
    pref = _flag(row, "preferred", where, problems, required=False)
    notes = _text(row, "notes", where, problems, required=False)
    return sources, n_acc, price, host, pref, notes


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
    sources, n_acc, price, host, pref, notes = _shared_fields(row, "usd_per_hour", where,
                                                              problems)
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
    sources, n_acc, price, host, pref, notes = _shared_fields(row, "usd", where, problems)
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
