"""Hardware catalog: accelerators as sourced TOML files, loaded into SI-unit :class:`Device` objects.

Each device is one file ``grids/data/hardware/<id>.toml`` (schema in ``docs/catalog.md``); per
architecture-class defaults for the efficiency parameters live in ``grids/data/classes.toml``; the
efficiencies are what the best software reaches on the hardware ("achievable"); what a given
serving stack falls short of that, and costs on top, is the engine catalog's (``grids.engines``),
which ``sweep calibrate`` fits against measurements.
A user adds a device by writing a file of the same schema and passing its path instead of an id.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from grids import tomlio
from grids.errors import SpecError, suggest
from grids.sourced import Sourced, read_sourced

COMPUTE_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4", "int4")
CLASSES = ("gpu", "systolic", "sram-manycore", "wafer-scale", "dataflow", "deterministic-pipeline")
TIER_KINDS = ("sram", "dram")
MAX_TIERS = 3

#: efficiency parameters: name -> (dimension, lower bound exclusive, upper bound inclusive)
EFFICIENCY_FIELDS = {
    "flops_efficiency": ("fraction", 0.0, 1.0),
    "bandwidth_efficiency": ("fraction", 0.0, 1.0),
    "jitter": ("fraction", -1e-300, 10.0),
    "capacity_fraction": ("fraction", 0.0, 1.0),
}
#: sub-table of ``[efficiency]``: achievable fraction of the dense peak per compute dtype
BY_DTYPE = "flops_efficiency_by_dtype"
#: energies per byte moved (docs/model.md section 9): catalog key -> Device attribute
ENERGY_FIELDS = {"sram_energy": "energy_sram", "dram_energy": "energy_dram",
                 "host_energy": "energy_host", "link_energy": "energy_link"}
CLASS_FIELDS = {**EFFICIENCY_FIELDS, "idle_fraction": ("fraction", -1e-300, 1.0),
                "host_power_fraction": ("fraction", -1e-300, 10.0),
                "link_latency": ("time", 0.0, 1.0), "scaleout_latency": ("time", 0.0, 1.0),
                "link_efficiency": ("fraction", 0.0, 1.0),
                **dict.fromkeys(ENERGY_FIELDS, ("energy_per_byte", -1e-300, 1e-8))}

#: keys allowed in the tables of a device file (text fields included)
INTERCONNECT_KEYS = ("name", "link_bandwidth", "link_latency", "domain_size", "scaleout_bandwidth",
                     "scaleout_latency", "package_size", "package_bandwidth", "package_latency",
                     "link_efficiency", "peer_links", "switch_reduction_efficiency")
POWER_KEYS = ("tdp", "idle", "host_power", *ENERGY_FIELDS)


def _data_dir() -> Path:
    return Path(str(resources.files("grids") / "data"))


@dataclass(frozen=True)
class MemoryTier:
    """A placement tier: capacity [B] and peak bandwidth [B/s]; ``efficiency`` is achievable/peak."""

    name: str
    kind: str
    capacity: float
    bandwidth: float
    efficiency: float

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "capacity_bytes": self.capacity,
                "bandwidth_bytes_per_s": self.bandwidth, "bandwidth_efficiency": self.efficiency}


@dataclass(frozen=True)
class Efficiency:
    """Achievable fractions and overheads (dimensionless unless noted).

    ``flops_efficiency_by_dtype`` maps a compute dtype to the achievable fraction of that dtype's
    dense peak where it is known to differ from ``flops_efficiency`` (which applies to every other
    dtype); see :meth:`flops_efficiency_for`.
    """

    flops_efficiency: float
    bandwidth_efficiency: float
    jitter: float  # coefficient of variation of per-token latency from scheduling
    capacity_fraction: float  # usable fraction of device memory
    flops_efficiency_by_dtype: dict[str, float] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict, compare=False)

    def flops_efficiency_for(self, dtype: str) -> float:
        """Achievable fraction [1] of the dense peak of compute dtype ``dtype``."""
        return self.flops_efficiency_by_dtype.get(dtype, self.flops_efficiency)


@dataclass(frozen=True)
class Device:
    """One accelerator as the operating system sees it, all numbers in SI base units.

    A multi-die package that software sees as several devices (MI250X: 2 GCDs, Max 1550: 2 stacks)
    is ``package_size`` devices joined by an in-package link (``package_bandwidth`` per direction,
    ``package_latency``); ``domain_size`` counts devices, not packages. ``tdp`` and ``idle`` are the
    device's own board/module power; ``host_power`` is the host and system overhead (CPU, DRAM,
    NICs, switches, fans, power-supply losses) attributed to one device.
    """

    id: str
    name: str
    vendor: str
    cls: str
    release_year: int
    peak_flops: dict[str, float]  # dtype -> dense FLOP/s (OP/s for integer dtypes)
    tiers: tuple[MemoryTier, ...]  # fastest first
    host: MemoryTier | None
    link_bandwidth: float  # [B/s] per direction per device, scale-up
    link_latency: float  # [s] per hop
    domain_size: int  # devices in one scale-up domain
    scaleout_bandwidth: float  # [B/s] per direction per device
    scaleout_latency: float  # [s]
    tdp: float  # [W] the device's own board/module power
    idle: float  # [W]
    efficiency: Efficiency
    sources: dict[str, Sourced] = field(default_factory=dict, compare=False)
    notes: tuple[str, ...] = ()
    caches: tuple[dict[str, Any], ...] = ()
    base: str = ""  # catalog id a hypothetical device derives from
    overrides: dict[str, Any] = field(default_factory=dict, compare=False)
    host_power: float = 0.0  # [W] host/system overhead attributed to this device
    package_size: int = 1  # devices per package sharing an in-package link
    package_bandwidth: float | None = None  # [B/s] per direction, in-package (package_size > 1)
    package_latency: float | None = None  # [s] per in-package hop
    #: achievable fraction [1] of a link's bandwidth in large-message collectives (the bus
    #: bandwidth of nccl-tests / rccl-tests over the link rate), at every interconnect level
    link_efficiency: float = 0.8
    #: direct links the scale-up bandwidth is split over (a full mesh: one per peer; a torus: one
    #: per neighbour); 0 = a switched fabric, which gives any group the whole link bandwidth
    peer_links: int = 0
    #: achievable fraction [1] of the link bandwidth of an all-reduce reduced inside the switch
    #: (NVLink SHARP, "NVLS"); 0 = the fabric has no in-switch reduction
    switch_reduction_efficiency: float = 0.0
    energy_sram: float = 0.0  # [J/B] per byte read or written in an SRAM tier
    energy_dram: float = 0.0  # [J/B] per byte read or written in a DRAM tier
    energy_host: float = 0.0  # [J/B] per byte over the host link
    energy_link: float = 0.0  # [J/B] per byte sent over the interconnect
    spatial_layers: bool = False  # each layer of a stage on its own region (a layer pipeline)

    @property
    def device_capacity(self) -> float:
        """Sum of on-device tier capacities [B] (host tier excluded)."""
        return sum(t.capacity for t in self.tiers)

    def flop_energy(self, dtype: str) -> float:
        """Energy per FLOP [J/FLOP] of compute dtype ``dtype``: ``(tdp - idle) / (peak x
        achievable fraction)``, so that computing at the achievable rate draws the board power
        (docs/model.md section 9: that rate is what the device sustains within its power limit;
        power.md, "Dynamic pJ/FLOP", uses the same rule at the dense peak). 0 without a peak."""
        rate = self.peak_flops.get(dtype, 0.0) * self.efficiency.flops_efficiency_for(dtype)
        return max(self.tdp - self.idle, 0.0) / rate if rate > 0 else 0.0

    @property
    def tdp_estimated(self) -> bool:
        """True when the board power ``tdp`` is an estimate (the vendor publishes none)."""
        src = self.sources.get("power.tdp")
        return bool(src and src.estimate)

    @property
    def host_power_estimated(self) -> bool:
        """True when the host and system share ``host_power`` is an estimate or a class rule."""
        src = self.sources.get("power.host_power")
        return bool(src and src.estimate)

    @property
    def system_power(self) -> float:
        """Maximum power [W] of the device plus its attributed host share (``tdp + host_power``)."""
        return self.tdp + self.host_power

    def tier_of_kind(self, kind: str) -> MemoryTier | None:
        return next((t for t in self.tiers if t.kind == kind), None)

    def to_dict(self) -> dict[str, Any]:
        eff = {k: getattr(self.efficiency, k) for k in EFFICIENCY_FIELDS}
        eff[BY_DTYPE] = dict(self.efficiency.flops_efficiency_by_dtype)
        return {
            "id": self.id, "name": self.name, "vendor": self.vendor, "class": self.cls,
            "release_year": self.release_year, "base": self.base or None,
            "overrides": self.overrides or None,
            "peak_flops": dict(self.peak_flops),
            "memory_tiers": [t.to_dict() for t in self.tiers],
            "host_tier": self.host.to_dict() if self.host else None,
            "link_bandwidth_bytes_per_s": self.link_bandwidth,
            "link_latency_s": self.link_latency, "domain_size": self.domain_size,
            "package_size": self.package_size,
            "package_bandwidth_bytes_per_s": self.package_bandwidth,
            "package_latency_s": self.package_latency,
            "scaleout_bandwidth_bytes_per_s": self.scaleout_bandwidth,
            "scaleout_latency_s": self.scaleout_latency,
            "link_efficiency": self.link_efficiency, "peer_links": self.peer_links,
            "switch_reduction_efficiency": self.switch_reduction_efficiency,
            "tdp_w": self.tdp, "idle_w": self.idle, "host_power_w": self.host_power,
            "spatial_layers": self.spatial_layers,
            "tdp_estimated": self.tdp_estimated,
            "host_power_estimated": self.host_power_estimated,
            **{f"{k}_j_per_byte": getattr(self, a) for k, a in ENERGY_FIELDS.items()},
            "efficiency": eff,
            "efficiency_origin": dict(self.efficiency.origin),
            "notes": list(self.notes),
            "sources": {k: v.to_dict() for k, v in self.sources.items()},
        }


# --------------------------------------------------------------------------------------------
# class defaults and calibration overlay


@functools.cache
def class_defaults() -> dict[str, dict[str, Sourced]]:
    """Per-class default efficiency parameters from ``classes.toml``."""
    path = _data_dir() / "classes.toml"
    raw = _load_toml(path)
    problems: list[str] = []
    out: dict[str, dict[str, Sourced]] = {}
    for cls in CLASSES:
        table = raw.get(cls)
        if not isinstance(table, dict):
            problems.append(f"{path.name}: missing class table [{cls}]")
            continue
        out[cls] = {}
        for name, (dim, lo, hi) in CLASS_FIELDS.items():
            if name not in table:
                problems.append(f"{path.name}: [{cls}] missing {name}")
                continue
            s = read_sourced(table[name], dim, f"{path.name}: [{cls}].{name}", problems,
                             positive=False)
            if s is not None and not (lo < s.value <= hi):
                problems.append(f"{path.name}: [{cls}].{name} = {s.value} outside ({lo}, {hi}]")
            if s is not None:
                out[cls][name] = s
    if problems:
        raise SpecError(problems, "class defaults")
    return out


def _load_toml(path: Path) -> dict[str, Any]:
    return tomlio.load(path)


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


def _read_peaks(raw: dict[str, Any], r: _Reader) -> dict[str, float]:
    pf = raw.get("peak_flops", {})
    if not isinstance(pf, dict) or not pf:
        r.problems.append(f"{r.where}: missing [peak_flops] table (dense FLOP/s per compute dtype)")
        return {}
    peaks: dict[str, float] = {}
    for dtype, entry in pf.items():
        if dtype not in COMPUTE_DTYPES:
            r.problems.append(f"{r.where}: peak_flops.{dtype}: unknown compute dtype"
                              f"{suggest(dtype, COMPUTE_DTYPES)}")
            continue
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
    for dtype, entry in table.items():
        if dtype not in COMPUTE_DTYPES:
            r.problems.append(f"{r.where}: {key}.{dtype}: unknown compute dtype"
                              f"{suggest(dtype, COMPUTE_DTYPES)}")
            continue
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


# --------------------------------------------------------------------------------------------
# catalog access


def hardware_dir() -> Path:
    return _data_dir() / "hardware"


def catalog_ids() -> tuple[str, ...]:
    """Ids of the built-in devices (file stems), sorted."""
    return tuple(sorted(p.stem for p in hardware_dir().glob("*.toml")))


@functools.cache
def _load_catalog_device(dev_id: str) -> Device:
    path = hardware_dir() / f"{dev_id}.toml"
    raw = _load_toml(path)
    if raw.get("id") != dev_id:
        raise SpecError(f"{path.name}: id {raw.get('id')!r} does not match the file name")
    return parse_device(raw, dev_id)


def load_device(ref: str | Path) -> Device:
    """A device by catalog id, or from a user TOML file path of the catalog schema."""
    text = str(ref)
    if text.endswith(".toml") or "/" in text or Path(text).suffix:
        path = Path(text)
        raw = _load_toml(path)
        if raw.get("id") != path.stem:  # as in the catalog: the id names the file
            raise SpecError(f"{path.name}: id {raw.get('id')!r} differs from the file name "
                            f"{path.stem!r}; the id of a device file is its name: rename the "
                            f"file to {raw.get('id')}.toml or set id = {path.stem!r}")
        return parse_device(raw, path.name)
    ids = catalog_ids()
    if text not in ids:
        raise SpecError(f"unknown hardware id {text!r}{suggest(text, ids)}; "
                        f"`sweep catalog hardware` lists them, or give a path to a TOML file")
    return _load_catalog_device(text)


def load_catalog() -> dict[str, Device]:
    """All built-in devices, every file checked; all problems reported together."""
    class_defaults()  # a broken classes.toml is one error, not one per device
    problems: list[str] = []
    out: dict[str, Device] = {}
    for dev_id in catalog_ids():
        try:
            out[dev_id] = _load_catalog_device(dev_id)
        except SpecError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SpecError(problems, "hardware catalog")
    return out


def catalog_hash() -> str:
    """SHA-256 over every catalog data file (hardware, classes, engines, prices, models)."""
    h = hashlib.sha256()
    root = _data_dir()
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in (".toml", ".json", ".csv"):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


# --------------------------------------------------------------------------------------------
# hypothetical devices

#: override keys accepted for hypothetical devices -> (dimension, description)
OVERRIDE_KEYS: dict[str, tuple[str, str]] = {
    **{f"peak_flops.{d}": ("flops", f"dense {d} peak") for d in COMPUTE_DTYPES},
    "sram_capacity": ("bytes", "capacity of the first SRAM tier (adds one if absent)"),
    "sram_bandwidth": ("bandwidth", "bandwidth of the first SRAM tier"),
    "dram_capacity": ("bytes", "capacity of the first DRAM/HBM tier"),
    "dram_bandwidth": ("bandwidth", "bandwidth of the first DRAM/HBM tier"),
    "hbm_capacity": ("bytes", "alias of dram_capacity"),
    "hbm_bandwidth": ("bandwidth", "alias of dram_bandwidth"),
    "host_capacity": ("bytes", "host tier capacity"),
    "host_bandwidth": ("bandwidth", "host link bandwidth per direction"),
    "link_bandwidth": ("bandwidth", "scale-up link bandwidth per direction"),
    "link_latency": ("time", "scale-up link latency"),
    "domain_size": ("count", "devices in one scale-up domain"),
    "package_size": ("count", "devices per package (must divide domain_size)"),
    "package_bandwidth": ("bandwidth", "in-package link bandwidth per direction"),
    "package_latency": ("time", "in-package link latency"),
    "scaleout_bandwidth": ("bandwidth", "scale-out bandwidth per direction"),
    "link_efficiency": ("fraction", "achievable fraction of the link bandwidth in collectives"),
    "peer_links": ("count", "direct links the scale-up bandwidth splits over (0 = switched)"),
    "switch_reduction_efficiency": ("fraction", "in-switch all-reduce efficiency (0 = none)"),
    "tdp": ("power", "the device's own board/module power"),
    "idle": ("power", "static power while serving (clocks up, nothing moving)"),
    "host_power": ("power", "host and system overhead attributed to one device"),
    **{a: ("energy_per_byte", f"energy per byte ({k})") for k, a in ENERGY_FIELDS.items()},
    **{f"efficiency.{k}": (v[0], f"efficiency parameter {k}") for k, v in EFFICIENCY_FIELDS.items()},
    **{f"efficiency.flops_efficiency.{d}": ("fraction", f"achievable fraction of the dense {d} peak")
       for d in COMPUTE_DTYPES},
}


def _override_tier(tiers: list[MemoryTier], kind: str, attr: str, value: float, base: Device,
                   new_id: str, problems: list[str]) -> None:
    idx = next((i for i, t in enumerate(tiers) if t.kind == kind), None)
    if idx is None:
        if kind != "sram":
            problems.append(f"{new_id}: base {base.id!r} has no {kind} tier to override")
            return
        tiers.insert(0, MemoryTier("SRAM (hypothetical)", "sram", 0.0, 0.0,
                                   base.efficiency.bandwidth_efficiency))
        idx = 0
    change: dict[str, Any] = {attr: value}  # capacity or bandwidth
    tiers[idx] = dataclasses.replace(tiers[idx], **change)


def _check_derived(dev: Device, new_id: str, problems: list[str]) -> None:
    """Consistency of a derived device (tiers, power, package, efficiencies)."""
    for t in dev.tiers:
        if not (t.capacity > 0 and t.bandwidth > 0):
            problems.append(f"{new_id}: tier {t.name!r} needs both capacity and bandwidth > 0 "
                            f"(set both sram_capacity and sram_bandwidth)")
    if dev.host is not None and not (dev.host.capacity > 0 and dev.host.bandwidth > 0):
        problems.append(f"{new_id}: host tier needs host_capacity and host_bandwidth > 0")
    if len(dev.tiers) > MAX_TIERS:
        problems.append(f"{new_id}: adding an SRAM tier exceeds {MAX_TIERS} tiers")
    if dev.idle > dev.tdp:
        problems.append(f"{new_id}: idle power {dev.idle:g} W exceeds tdp {dev.tdp:g} W (set both tdp "
                        f"and idle)")
    if dev.idle <= 0:
        problems.append(f"{new_id}: idle power must be > 0 W (a powered board draws static power)")
    if dev.domain_size % dev.package_size:
        problems.append(f"{new_id}: package_size {dev.package_size} does not divide domain_size "
                        f"{dev.domain_size} (set both)")
    if dev.package_size > 1 and dev.package_bandwidth is None:
        problems.append(f"{new_id}: package_size {dev.package_size} needs package_bandwidth")
    if not 0 < dev.link_efficiency <= 1:
        problems.append(f"{new_id}: link_efficiency = {dev.link_efficiency} outside (0, 1]")
    if not 0 <= dev.switch_reduction_efficiency <= 1:
        problems.append(f"{new_id}: switch_reduction_efficiency = "
                        f"{dev.switch_reduction_efficiency} outside [0, 1]")
    if dev.switch_reduction_efficiency > 0 and dev.peer_links > 0:
        problems.append(f"{new_id}: switch_reduction_efficiency needs a switched fabric "
                        f"(peer_links = 0), got peer_links = {dev.peer_links}")
    e = dev.efficiency
    for k, (_, lo, hi) in EFFICIENCY_FIELDS.items():
        if not (lo < getattr(e, k) <= hi):
            problems.append(f"{new_id}: efficiency.{k} = {getattr(e, k)} outside ({lo}, {hi}]")
    for d, v in e.flops_efficiency_by_dtype.items():
        if not 0 < v <= 1:
            problems.append(f"{new_id}: efficiency.flops_efficiency.{d} = {v} outside (0, 1]")
        if d not in dev.peak_flops:
            problems.append(f"{new_id}: efficiency.flops_efficiency.{d}: the device has no "
                            f"peak_flops.{d} (set it too)")


def derive_device(base: Device, new_id: str, overrides: dict[str, float],
                  name: str | None = None) -> Device:
    """A hypothetical device: ``base`` with fields replaced by ``overrides`` (SI values).

    ``efficiency.flops_efficiency`` changes the achievable fraction of every compute dtype without
    a per-dtype value; ``efficiency.flops_efficiency.<dtype>`` sets (or adds) the one of ``dtype``.
    """
    problems: list[str] = []
    peaks = dict(base.peak_flops)
    tiers = list(base.tiers)
    host = base.host
    changes: dict[str, Any] = {}
    eff = {k: getattr(base.efficiency, k) for k in EFFICIENCY_FIELDS}
    by_dtype = dict(base.efficiency.flops_efficiency_by_dtype)

    for key, value in overrides.items():
        _ = OVERRIDE_KEYS[key]  # validated by the caller
        head, _, tail = key.partition(".")
        if head == "peak_flops":
            peaks[tail] = value
        elif head == "efficiency" and tail.startswith("flops_efficiency."):
            by_dtype[tail.split(".", 1)[1]] = value
        elif head == "efficiency":
            eff[tail] = value
        elif key in ("sram_capacity", "sram_bandwidth"):
            _override_tier(tiers, "sram", key.split("_")[1], value, base, new_id, problems)
        elif key in ("dram_capacity", "dram_bandwidth", "hbm_capacity", "hbm_bandwidth"):
            _override_tier(tiers, "dram", key.split("_")[1], value, base, new_id, problems)
        elif key in ("host_capacity", "host_bandwidth"):
            if host is None:
                host = MemoryTier("host (hypothetical)", "dram", 0.0, 0.0,
                                  base.efficiency.bandwidth_efficiency)
            change: dict[str, Any] = {key.split("_")[1]: value}  # capacity or bandwidth
            host = dataclasses.replace(host, **change)
        elif key in ("domain_size", "package_size", "peer_links"):
            changes[key] = int(value)
        else:
            changes[key] = value
    if "efficiency.bandwidth_efficiency" in overrides:
        tiers = [dataclasses.replace(t, efficiency=eff["bandwidth_efficiency"]) for t in tiers]
        if host is not None:
            host = dataclasses.replace(host, efficiency=eff["bandwidth_efficiency"])
    origin = dict(base.efficiency.origin)
    origin.update({k.split(".", 1)[1]: "hypothetical override" for k in overrides
                   if k.startswith("efficiency.")})
    if changes.get("package_size", base.package_size) > 1 and "package_latency" not in changes \
            and base.package_latency is None:
        changes["package_latency"] = base.link_latency
    derived = dataclasses.replace(
        base, id=new_id, name=name or f"{base.name} (hypothetical)", peak_flops=peaks,
        tiers=tuple(tiers), host=host,
        efficiency=Efficiency(**eff, flops_efficiency_by_dtype=by_dtype, origin=origin),
        base=base.base or base.id, overrides={**base.overrides, **overrides}, **changes)
    _check_derived(derived, new_id, problems)
    for key in ("package_bandwidth", "package_latency"):
        if key in overrides and derived.package_size == 1:
            problems.append(f"{new_id}: {key} needs package_size > 1 (one device per package has "
                            f"no in-package link; set package_size too)")
    if problems:
        raise SpecError(problems, "hypothetical device")
    return derived
