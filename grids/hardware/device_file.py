"""Parsing one device file (``grids/data/hardware/<id>.toml`` or a user's file of the same schema)
into a :class:`~grids.hardware.device.Device`: one small reader per topic (identity, peaks, memory
tiers, interconnect, power, spatial layout, efficiency), all sharing one problem list, with the
class defaults (:mod:`grids.hardware.classes`) filling what the file leaves out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from grids.errors import SpecError, suggest
from grids.hardware.classes import class_defaults
from grids.hardware.device import (
    BY_DTYPE,
    CLASSES,
    EFFICIENCY_FIELDS,
    ENERGY_FIELDS,
    INTERCONNECT_KEYS,
    MAX_TIERS,
    POWER_KEYS,
    TIER_KINDS,
    Device,
    Efficiency,
    MemoryTier,
    unknown_dtype,
)
from grids.sourced import Sourced, read_sourced

# --------------------------------------------------------------------------------------------
# parsing one device file: one small reader per topic, all sharing one problem list


@dataclass
class _Reader:
    """Collects the problems and the sources of one device file while its topics are read."""

    where: str
    problems: list[str] = field(default_factory=list)
    sources: dict[str, Sourced] = field(default_factory=dict)
    cls: str = ""
    defaults: dict[str, Sourced] = field(default_factory=dict)

    def num(self, entry: Any, dim: str, key: str, positive: bool = True) -> float | None:
        """A sourced number in SI units (``None`` and a problem when it is unusable)."""
        s = read_sourced(entry, dim, f"{self.where}: {key}", self.problems, positive=positive)
        if s is None:
            return None
        self.sources[key] = s
        return s.value

    def whole(self, entry: Any, key: str) -> int | None:
        """A sourced count that must be a whole number >= 1."""
        v = self.num(entry, "count", key)
        if v is None or v <= 0:
            return None
        if not float(v).is_integer():
            self.problems.append(f"{self.where}: {key} = {v:g} must be a whole number of devices")
            return None
        return int(v)

    def fraction(self, entry: Any, key: str) -> float | None:
        """A sourced fraction in (0, 1]; one problem per bad value."""
        v = self.num(entry, "fraction", key, positive=False)
        if v is not None and v >= 0 and not 0 < v <= 1:
            self.problems.append(f"{self.where}: {key} = {v:g} outside (0, 1] (a fraction of the "
                                 f"dense peak)")
            return None
        return v if v is not None and v > 0 else None

    def with_default(self, entry: Any, dim: str, key: str, default_name: str) -> float:
        """A sourced number, or the class default (recorded as an estimate) when absent."""
        default = self.defaults[default_name]
        if entry is None:
            self.sources[key] = Sourced(default.value, f"class default for {self.cls}: "
                                        f"{default.source}", estimate=True,
                                        rule=f"unpublished; class default for '{self.cls}'")
            return default.value
        v = self.num(entry, dim, key, positive=False)
        return default.value if v is None else v

    def share_of_tdp(self, entry: Any, key: str, tdp: float | None, fraction_name: str,
                     what: str) -> float | None:
        """A sourced power, or ``fraction_name`` of the class x ``tdp`` (an estimate) when absent."""
        if entry is not None:
            return self.num(entry, "power", key, positive=False)
        if tdp is None:
            return None
        frac = self.defaults[fraction_name]
        value = frac.value * tdp
        self.sources[key] = Sourced(value, f"class default {what} {frac.value} x TDP: {frac.source}",
                                    estimate=True, rule=f"unpublished; {fraction_name} x tdp")
        return value

    def unknown_keys(self, table: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
        for key in table:
            if key not in allowed:
                self.problems.append(f"{self.where}: {where}.{key}: unknown field"
                                     f"{suggest(key, allowed)}")


def _table(raw: dict[str, Any], key: str, reader: _Reader) -> dict[str, Any]:
    """``raw[key]`` as a table ({} when absent); a non-table is a problem."""
    value = raw.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        reader.problems.append(f"{reader.where}: [{key}] must be a table, got {value!r}")
        return {}
    return value


def _read_identity(raw: dict[str, Any], r: _Reader) -> int | None:
    """Text fields and class (sets the reader's class defaults); returns the release year."""
    for key in ("id", "name", "class"):
        if not isinstance(raw.get(key), str) or not raw.get(key):
            r.problems.append(f"{r.where}: missing text field '{key}'")
    cls = raw.get("class", "")
    if isinstance(cls, str) and cls and cls not in CLASSES:
        r.problems.append(f"{r.where}: unknown class {cls!r}{suggest(cls, CLASSES)}")
    r.cls = cls if isinstance(cls, str) else ""
    r.defaults = class_defaults().get(r.cls, class_defaults()["gpu"])
    if "release_year" not in raw:
        r.problems.append(f"{r.where}: missing release_year")
        return None
    year = r.num(raw["release_year"], "count", "release_year")
    return None if year is None else int(year)


def _known_dtypes(table: dict[str, Any], key: str, r: _Reader) -> Iterator[tuple[str, Any]]:
    """The ``(dtype, entry)`` pairs of a per-dtype table whose dtype is a compute dtype; each
    other key is reported as a problem."""
    for dtype, entry in table.items():
        if bad := unknown_dtype(dtype, f"{r.where}: {key}.{dtype}"):
            r.problems.append(bad)
            continue
        yield dtype, entry


def _read_peaks(raw: dict[str, Any], r: _Reader) -> dict[str, float]:
    pf = raw.get("peak_flops", {})
    if not isinstance(pf, dict) or not pf:
        r.problems.append(f"{r.where}: missing [peak_flops] table (dense FLOP/s per compute dtype)")
        return {}
    peaks: dict[str, float] = {}
    for dtype, entry in _known_dtypes(pf, "peak_flops", r):
        v = r.num(entry, "flops", f"peak_flops.{dtype}")
        if v is not None:
            peaks[dtype] = v
    if not ({"bf16", "fp16"} & set(peaks)):
        r.problems.append(f"{r.where}: peak_flops needs a 16-bit float figure (bf16 or fp16)")
    return peaks


def _read_tier(entry: Any, key: str, r: _Reader) -> MemoryTier | None:
    if not isinstance(entry, dict):
        r.problems.append(f"{r.where}: {key}: expected a table")
        return None
    kind = entry.get("kind", "dram")
    if kind not in TIER_KINDS:
        r.problems.append(f"{r.where}: {key}.kind = {kind!r}: must be one of {TIER_KINDS}")
    cap = r.num(entry.get("capacity"), "bytes", f"{key}.capacity")
    bw = r.num(entry.get("bandwidth"), "bandwidth", f"{key}.bandwidth")
    eff = r.defaults["bandwidth_efficiency"].value
    if "bandwidth_efficiency" in entry:
        e = r.num(entry["bandwidth_efficiency"], "fraction", f"{key}.bandwidth_efficiency")
        eff = e if e is not None else eff
    if cap is None or bw is None:
        return None
    return MemoryTier(str(entry.get("name", kind)), str(kind), cap, bw, eff)


def _read_tiers(raw: dict[str, Any], r: _Reader) -> tuple[tuple[MemoryTier, ...], MemoryTier | None]:
    tiers_raw = raw.get("memory_tiers", [])
    if not isinstance(tiers_raw, list) or not tiers_raw:
        r.problems.append(f"{r.where}: needs at least one [[memory_tiers]] entry")
        tiers_raw = []
    if len(tiers_raw) > MAX_TIERS:
        r.problems.append(f"{r.where}: at most {MAX_TIERS} memory tiers are supported, got "
                          f"{len(tiers_raw)}")
    tiers = tuple(t for i, e in enumerate(tiers_raw) if (t := _read_tier(e, f"memory_tiers[{i}]", r)))
    host = _read_tier(raw["host_tier"], "host_tier", r) if raw.get("host_tier") else None
    return tiers, host


@dataclass(frozen=True)
class _Links:
    link_bandwidth: float | None
    link_latency: float
    domain_size: int | None
    scaleout_bandwidth: float | None
    scaleout_latency: float
    package_size: int
    package_bandwidth: float | None
    package_latency: float | None
    link_efficiency: float
    peer_links: int
    switch_reduction_efficiency: float


def _read_collective_fabric(ic: dict[str, Any], r: _Reader) -> tuple[float, int, float]:
    """``(link_efficiency, peer_links, switch_reduction_efficiency)`` of ``[interconnect]``: the
    achievable collective bandwidth fraction (class default when absent), the direct links the
    scale-up bandwidth splits over (absent: 0, a switched fabric) and the in-switch reduction's
    efficiency (absent: 0, none); see docs/catalog.md."""
    eff = r.with_default(ic.get("link_efficiency"), "fraction", "interconnect.link_efficiency",
                         "link_efficiency")
    if not 0 < eff <= 1:
        r.problems.append(f"{r.where}: interconnect.link_efficiency = {eff:g} outside (0, 1] (the "
                          f"achievable fraction of the link bandwidth in collectives)")
    peers = 0
    if ic.get("peer_links") is not None:
        v = r.num(ic["peer_links"], "count", "interconnect.peer_links", positive=False)
        if v is not None and (v < 0 or not float(v).is_integer()):
            r.problems.append(f"{r.where}: interconnect.peer_links = {v:g} must be a whole number "
                              f">= 0 (0 = a switched fabric)")
        elif v is not None:
            peers = int(v)
    switch = 0.0
    if ic.get("switch_reduction_efficiency") is not None:
        v = r.num(ic["switch_reduction_efficiency"], "fraction",
                  "interconnect.switch_reduction_efficiency", positive=False)
        if v is not None and not 0 <= v <= 1:
            r.problems.append(f"{r.where}: interconnect.switch_reduction_efficiency = {v:g} outside "
                              f"[0, 1] (0 = no in-switch reduction)")
        elif v is not None:
            switch = v
        if switch > 0 and peers > 0:
            r.problems.append(f"{r.where}: interconnect.switch_reduction_efficiency needs a switched "
                              f"fabric, but peer_links = {peers} says the links are direct (set "
                              f"peer_links = 0 or remove the switch reduction)")
    return eff, peers, switch


def _read_interconnect(raw: dict[str, Any], r: _Reader) -> _Links:
    ic = _table(raw, "interconnect", r)
    r.unknown_keys(ic, INTERCONNECT_KEYS, "interconnect")
    domain = r.whole(ic.get("domain_size"), "interconnect.domain_size")
    package: int | None = 1
    if ic.get("package_size") is not None:
        package = r.whole(ic["package_size"], "interconnect.package_size")
    pkg_bw = pkg_lat = None
    if package is not None and package > 1:
        if ic.get("package_bandwidth") is None:
            r.problems.append(f"{r.where}: interconnect.package_size = {package} needs "
                              f"interconnect.package_bandwidth (in-package link, per direction)")
        else:
            pkg_bw = r.num(ic["package_bandwidth"], "bandwidth", "interconnect.package_bandwidth")
        pkg_lat = r.with_default(ic.get("package_latency"), "time", "interconnect.package_latency",
                                 "link_latency")
        if domain is not None and domain % package:
            r.problems.append(f"{r.where}: interconnect.package_size = {package} does not divide "
                              f"domain_size = {domain} (domain_size counts devices as the OS sees "
                              f"them, in whole packages of package_size devices)")
    elif package == 1:
        for key in ("package_bandwidth", "package_latency"):
            if key in ic:
                r.problems.append(f"{r.where}: interconnect.{key} is set but package_size is 1 "
                                  f"(one device per package): set package_size or remove {key}")
    eff, peers, switch = _read_collective_fabric(ic, r)
    return _Links(
        link_bandwidth=r.num(ic.get("link_bandwidth"), "bandwidth", "interconnect.link_bandwidth"),
        link_latency=r.with_default(ic.get("link_latency"), "time", "interconnect.link_latency",
                                    "link_latency"),
        domain_size=domain,
        scaleout_bandwidth=r.num(ic.get("scaleout_bandwidth"), "bandwidth",
                                 "interconnect.scaleout_bandwidth"),
        scaleout_latency=r.with_default(ic.get("scaleout_latency"), "time",
                                        "interconnect.scaleout_latency", "scaleout_latency"),
        package_size=package or 1, package_bandwidth=pkg_bw, package_latency=pkg_lat,
        link_efficiency=eff, peer_links=peers, switch_reduction_efficiency=switch)


def _read_power(raw: dict[str, Any], r: _Reader
                ) -> tuple[float | None, float | None, float | None, dict[str, float]]:
    """``(tdp, idle, host_power)`` [W], the device's own power and its attributed host share, and
    the energies per byte moved [J/B] (``{Device attribute: value}``, class defaults if absent)."""
    power = _table(raw, "power", r)
    r.unknown_keys(power, POWER_KEYS, "power")
    tdp = r.num(power.get("tdp"), "power", "power.tdp")
    idle = r.share_of_tdp(power.get("idle"), "power.idle", tdp, "idle_fraction", "idle fraction")
    host = r.share_of_tdp(power.get("host_power"), "power.host_power", tdp, "host_power_fraction",
                          "host power fraction")
    if tdp is not None and idle is not None and idle > tdp:
        r.problems.append(f"{r.where}: power.idle ({idle} W) exceeds power.tdp ({tdp} W)")
    if idle is not None and idle <= 0:
        r.problems.append(f"{r.where}: power.idle must be > 0 W (the static draw of the powered "
                          f"board with the model loaded; omit it for the class estimate)")
    energies = {attr: r.with_default(power.get(key), "energy_per_byte", f"power.{key}", key)
                for key, attr in ENERGY_FIELDS.items()}
    return tdp, idle, host, energies


def _read_spatial(raw: dict[str, Any], r: _Reader) -> bool:
    """``spatial_layers = true`` (with ``spatial_layers_source``): every layer of a stage sits on
    its own region of the device, a weight-stationary layer pipeline (docs/model.md section 7)."""
    value = raw.get("spatial_layers", False)
    if not isinstance(value, bool):
        r.problems.append(f"{r.where}: spatial_layers must be true or false, got {value!r}")
        return False
    if value and not str(raw.get("spatial_layers_source", "")).strip():
        r.problems.append(f"{r.where}: spatial_layers = true needs spatial_layers_source (where "
                          f"the layer-per-region layout is documented)")
    return value


def _read_by_dtype(table: Any, peaks: dict[str, float], r: _Reader) -> dict[str, float]:
    key = f"efficiency.{BY_DTYPE}"
    if not isinstance(table, dict):
        r.problems.append(f"{r.where}: {key} must be a table of sourced fractions per compute "
                          f"dtype, e.g. bf16 = {{ value = 0.5, source = \"...\" }}")
        return {}
    out: dict[str, float] = {}
    for dtype, entry in _known_dtypes(table, key, r):
        v = r.fraction(entry, f"{key}.{dtype}")
        if v is None:
            continue
        if peaks and dtype not in peaks:
            r.problems.append(f"{r.where}: {key}.{dtype}: the device has no peak_flops.{dtype} "
                              f"(add the peak or remove the efficiency)")
            continue
        out[dtype] = v
    return out


def _read_efficiency(raw: dict[str, Any], r: _Reader, peaks: dict[str, float]) -> Efficiency:
    """Class default, then the device file's ``[efficiency]``."""
    over = _table(raw, "efficiency", r)
    r.unknown_keys(over, (*EFFICIENCY_FIELDS, BY_DTYPE), "efficiency")
    values: dict[str, float] = {}
    origin: dict[str, str] = {}
    for name, (dim, _, _) in EFFICIENCY_FIELDS.items():
        values[name] = r.defaults[name].value
        origin[name] = f"class default ({r.cls})"
        if name in over:
            v = r.num(over[name], dim, f"efficiency.{name}", positive=False)
            if v is not None:
                values[name] = v
                origin[name] = "catalog"
    by_dtype = _read_by_dtype(over[BY_DTYPE], peaks, r) if BY_DTYPE in over else {}
    origin.update({f"flops_efficiency.{d}": "catalog" for d in by_dtype})
    for name, (_, lo, hi) in EFFICIENCY_FIELDS.items():
        if not (lo < values[name] <= hi) and not (values[name] < 0 and origin[name] == "catalog"):
            r.problems.append(f"{r.where}: efficiency.{name} = {values[name]} outside ({lo}, {hi}]")
    return Efficiency(**values, flops_efficiency_by_dtype=by_dtype, origin=origin)


def parse_device(raw: dict[str, Any], where: str) -> Device:
    """Build a :class:`Device` from a parsed TOML table; raise one SpecError with every problem."""
    r = _Reader(where)
    year = _read_identity(raw, r)
    peaks = _read_peaks(raw, r)
    tiers, host = _read_tiers(raw, r)
    links = _read_interconnect(raw, r)
    tdp, idle, host_power, energies = _read_power(raw, r)
    spatial = _read_spatial(raw, r)
    eff = _read_efficiency(raw, r, peaks)
    if eff.origin["bandwidth_efficiency"] != f"class default ({r.cls})":
        tiers = tuple(dataclasses.replace(t, efficiency=eff.bandwidth_efficiency) for t in tiers)
        if host is not None:
            host = dataclasses.replace(host, efficiency=eff.bandwidth_efficiency)
    if r.problems:
        raise SpecError(r.problems, f"hardware {where}")
    assert tdp is not None and idle is not None and host_power is not None and year is not None
    assert links.link_bandwidth is not None and links.domain_size is not None
    assert links.scaleout_bandwidth is not None
    return Device(
        id=str(raw.get("id", "")), name=str(raw["name"]), vendor=str(raw.get("vendor", "")),
        cls=r.cls, release_year=year, peak_flops=peaks, tiers=tiers, host=host,
        link_bandwidth=links.link_bandwidth, link_latency=links.link_latency,
        domain_size=links.domain_size, scaleout_bandwidth=links.scaleout_bandwidth,
        scaleout_latency=links.scaleout_latency, tdp=tdp, idle=idle, efficiency=eff,
        sources=r.sources, notes=tuple(str(n) for n in raw.get("notes", [])),
        caches=tuple(raw.get("caches", [])), host_power=host_power,
        package_size=links.package_size, package_bandwidth=links.package_bandwidth,
        package_latency=links.package_latency, link_efficiency=links.link_efficiency,
        peer_links=links.peer_links,
        switch_reduction_efficiency=links.switch_reduction_efficiency,
        energy_sram=energies["energy_sram"], energy_dram=energies["energy_dram"],
        energy_host=energies["energy_host"], energy_link=energies["energy_link"],
        spatial_layers=spatial,
    )
