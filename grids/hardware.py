"""Hardware catalog: accelerators as sourced TOML files, loaded into SI-unit :class:`Device` objects.

Each device is one file ``grids/data/hardware/<id>.toml`` (schema in ``docs/catalog.md``); per
architecture-class defaults for the efficiency parameters live in ``grids/data/classes.toml``; the
fitted efficiencies of ``sweep calibrate`` live in ``grids/data/calibration.toml`` and are applied on
top of the class defaults and catalog values (``calibrated=False`` gives the uncalibrated catalog).
A user adds a device by writing a file of the same schema and passing its path instead of an id.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

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
    "layer_overhead": ("time", -1e-300, 1.0),
    "jitter": ("fraction", -1e-300, 10.0),
    "capacity_fraction": ("fraction", 0.0, 1.0),
}
CLASS_FIELDS = {**EFFICIENCY_FIELDS, "idle_fraction": ("fraction", -1e-300, 1.0),
                "link_latency": ("time", 0.0, 1.0), "scaleout_latency": ("time", 0.0, 1.0)}


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
    """Achievable fractions and overheads (dimensionless unless noted)."""

    flops_efficiency: float
    bandwidth_efficiency: float
    layer_overhead: float  # [s] per layer per forward pass
    jitter: float  # coefficient of variation of per-token latency from scheduling
    capacity_fraction: float  # usable fraction of device memory
    origin: dict[str, str] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Device:
    """One accelerator, all numbers in SI base units."""

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
    tdp: float  # [W]
    idle: float  # [W]
    efficiency: Efficiency
    sources: dict[str, Sourced] = field(default_factory=dict, compare=False)
    notes: tuple[str, ...] = ()
    caches: tuple[dict[str, Any], ...] = ()
    base: str = ""  # catalog id a hypothetical device derives from
    overrides: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def device_capacity(self) -> float:
        """Sum of on-device tier capacities [B] (host tier excluded)."""
        return sum(t.capacity for t in self.tiers)

    def tier_of_kind(self, kind: str) -> MemoryTier | None:
        return next((t for t in self.tiers if t.kind == kind), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "name": self.name, "vendor": self.vendor, "class": self.cls,
            "release_year": self.release_year, "base": self.base or None,
            "overrides": self.overrides or None,
            "peak_flops": dict(self.peak_flops),
            "memory_tiers": [t.to_dict() for t in self.tiers],
            "host_tier": self.host.to_dict() if self.host else None,
            "link_bandwidth_bytes_per_s": self.link_bandwidth,
            "link_latency_s": self.link_latency, "domain_size": self.domain_size,
            "scaleout_bandwidth_bytes_per_s": self.scaleout_bandwidth,
            "scaleout_latency_s": self.scaleout_latency,
            "tdp_w": self.tdp, "idle_w": self.idle,
            "efficiency": {k: getattr(self.efficiency, k) for k in EFFICIENCY_FIELDS},
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


@functools.cache
def calibration_overlay() -> dict[str, Any]:
    """Fitted efficiencies written by ``sweep calibrate`` (empty when the file is absent)."""
    path = _data_dir() / "calibration.toml"
    if not path.exists():
        return {}
    return _load_toml(path)


def _load_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError as exc:
        raise SpecError(f"{path}: file not found") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: malformed TOML: {exc}") from exc


# --------------------------------------------------------------------------------------------
# parsing one device file


def parse_device(raw: dict[str, Any], where: str, *, calibrated: bool = True) -> Device:
    """Build a :class:`Device` from a parsed TOML table; raise one SpecError with every problem."""
    problems: list[str] = []
    sources: dict[str, Sourced] = {}

    def num(entry: Any, dim: str, key: str, positive: bool = True) -> float | None:
        s = read_sourced(entry, dim, f"{where}: {key}", problems, positive=positive)
        if s is not None:
            sources[key] = s
            return s.value
        return None

    for key in ("id", "name", "class"):
        if not isinstance(raw.get(key), str) or not raw.get(key):
            problems.append(f"{where}: missing text field '{key}'")
    cls = raw.get("class", "")
    if isinstance(cls, str) and cls and cls not in CLASSES:
        problems.append(f"{where}: unknown class {cls!r}{suggest(cls, CLASSES)}")
    defaults = class_defaults().get(cls, class_defaults()["gpu"])

    year = num(raw.get("release_year"), "count", "release_year") if "release_year" in raw else None
    if year is None and "release_year" not in raw:
        problems.append(f"{where}: missing release_year")

    peaks: dict[str, float] = {}
    pf = raw.get("peak_flops", {})
    if not isinstance(pf, dict) or not pf:
        problems.append(f"{where}: missing [peak_flops] table (dense FLOP/s per compute dtype)")
        pf = {}
    for dtype, entry in pf.items():
        if dtype not in COMPUTE_DTYPES:
            problems.append(f"{where}: peak_flops.{dtype}: unknown compute dtype"
                            f"{suggest(dtype, COMPUTE_DTYPES)}")
            continue
        v = num(entry, "flops", f"peak_flops.{dtype}")
        if v is not None:
            peaks[dtype] = v
    if pf and not ({"bf16", "fp16"} & set(peaks)):
        problems.append(f"{where}: peak_flops needs a 16-bit float figure (bf16 or fp16)")

    eff_over = raw.get("efficiency", {}) or {}
    bw_eff_default = defaults["bandwidth_efficiency"].value

    def tier(entry: Any, key: str) -> MemoryTier | None:
        if not isinstance(entry, dict):
            problems.append(f"{where}: {key}: expected a table")
            return None
        kind = entry.get("kind", "dram")
        if kind not in TIER_KINDS:
            problems.append(f"{where}: {key}.kind = {kind!r}: must be one of {TIER_KINDS}")
        cap = num(entry.get("capacity"), "bytes", f"{key}.capacity")
        bw = num(entry.get("bandwidth"), "bandwidth", f"{key}.bandwidth")
        eff = bw_eff_default
        if "bandwidth_efficiency" in entry:
            e = num(entry["bandwidth_efficiency"], "fraction", f"{key}.bandwidth_efficiency")
            eff = e if e is not None else eff
        if cap is None or bw is None:
            return None
        return MemoryTier(str(entry.get("name", kind)), str(kind), cap, bw, eff)

    tiers_raw = raw.get("memory_tiers", [])
    if not isinstance(tiers_raw, list) or not tiers_raw:
        problems.append(f"{where}: needs at least one [[memory_tiers]] entry")
        tiers_raw = []
    if len(tiers_raw) > MAX_TIERS:
        problems.append(f"{where}: at most {MAX_TIERS} memory tiers are supported, got "
                        f"{len(tiers_raw)}")
    tiers = tuple(t for i, e in enumerate(tiers_raw) if (t := tier(e, f"memory_tiers[{i}]")))
    host = tier(raw["host_tier"], "host_tier") if raw.get("host_tier") else None

    ic = raw.get("interconnect", {}) or {}
    link_bw = num(ic.get("link_bandwidth"), "bandwidth", "interconnect.link_bandwidth")
    domain = num(ic.get("domain_size"), "count", "interconnect.domain_size")
    so_bw = num(ic.get("scaleout_bandwidth"), "bandwidth", "interconnect.scaleout_bandwidth")

    def with_default(entry: Any, dim: str, key: str, default: Sourced) -> float:
        if entry is None:
            sources[key] = Sourced(default.value, f"class default for {cls}: {default.source}",
                                   estimate=True, rule=f"unpublished; class default for '{cls}'")
            return default.value
        v = num(entry, dim, key, positive=False)
        return default.value if v is None else v

    link_lat = with_default(ic.get("link_latency"), "time", "interconnect.link_latency",
                            defaults["link_latency"])
    so_lat = with_default(ic.get("scaleout_latency"), "time", "interconnect.scaleout_latency",
                          defaults["scaleout_latency"])
    power = raw.get("power", {}) or {}
    tdp = num(power.get("tdp"), "power", "power.tdp")
    if power.get("idle") is None and tdp is not None:
        frac = defaults["idle_fraction"]
        idle = frac.value * tdp
        sources["power.idle"] = Sourced(idle, f"class default idle fraction {frac.value} x TDP: "
                                        f"{frac.source}", estimate=True,
                                        rule="unpublished; idle_fraction x tdp")
    else:
        idle = num(power.get("idle"), "power", "power.idle", positive=False)
    if tdp is not None and idle is not None and idle > tdp:
        problems.append(f"{where}: power.idle ({idle} W) exceeds power.tdp ({tdp} W)")

    # efficiency: class default, then catalog override, then calibration overlay
    eff_values: dict[str, float] = {}
    origin: dict[str, str] = {}
    for name in EFFICIENCY_FIELDS:
        eff_values[name] = defaults[name].value
        origin[name] = f"class default ({cls})"
        if name in eff_over:
            v = num(eff_over[name], EFFICIENCY_FIELDS[name][0], f"efficiency.{name}",
                    positive=False)
            if v is not None:
                eff_values[name] = v
                origin[name] = "catalog"
    dev_id = str(raw.get("id", ""))
    if calibrated:
        cal = calibration_overlay().get("device", {}).get(dev_id, {})
        if not cal:
            cal = calibration_overlay().get("class", {}).get(cls, {})
            label = f"calibrated (class {cls})"
        else:
            label = "calibrated (device)"
        for name, v in cal.items():
            if name in EFFICIENCY_FIELDS and isinstance(v, (int, float)):
                eff_values[name] = float(v)
                origin[name] = label
    for name, (_, lo, hi) in EFFICIENCY_FIELDS.items():
        if not (lo < eff_values[name] <= hi):
            problems.append(f"{where}: efficiency.{name} = {eff_values[name]} outside ({lo}, {hi}]")
    if "bandwidth_efficiency" in origin and origin["bandwidth_efficiency"] != f"class default ({cls})":
        tiers = tuple(dataclasses.replace(t, efficiency=eff_values["bandwidth_efficiency"])
                      for t in tiers)
        if host is not None:
            host = dataclasses.replace(host, efficiency=eff_values["bandwidth_efficiency"])

    if problems:
        raise SpecError(problems, f"hardware {where}")
    assert tdp is not None and idle is not None and link_bw is not None
    assert domain is not None and so_bw is not None and year is not None
    return Device(
        id=dev_id, name=str(raw["name"]), vendor=str(raw.get("vendor", "")), cls=cls,
        release_year=int(year), peak_flops=peaks, tiers=tiers, host=host,
        link_bandwidth=link_bw, link_latency=link_lat, domain_size=int(domain),
        scaleout_bandwidth=so_bw, scaleout_latency=so_lat, tdp=tdp, idle=idle,
        efficiency=Efficiency(**eff_values, origin=origin), sources=sources,
        notes=tuple(str(n) for n in raw.get("notes", [])),
        caches=tuple(raw.get("caches", [])),
    )


# --------------------------------------------------------------------------------------------
# catalog access


def hardware_dir() -> Path:
    return _data_dir() / "hardware"


def catalog_ids() -> tuple[str, ...]:
    """Ids of the built-in devices (file stems), sorted."""
    return tuple(sorted(p.stem for p in hardware_dir().glob("*.toml")))


@functools.cache
def _load_catalog_device(dev_id: str, calibrated: bool) -> Device:
    path = hardware_dir() / f"{dev_id}.toml"
    raw = _load_toml(path)
    if raw.get("id") != dev_id:
        raise SpecError(f"{path.name}: id {raw.get('id')!r} does not match the file name")
    return parse_device(raw, dev_id, calibrated=calibrated)


def load_device(ref: str | Path, *, calibrated: bool = True) -> Device:
    """A device by catalog id, or from a user TOML file path of the catalog schema."""
    text = str(ref)
    if text.endswith(".toml") or "/" in text or Path(text).suffix:
        path = Path(text)
        raw = _load_toml(path)
        return parse_device(raw, path.name, calibrated=calibrated)
    ids = catalog_ids()
    if text not in ids:
        raise SpecError(f"unknown hardware id {text!r}{suggest(text, ids)}; "
                        f"`sweep catalog hardware` lists them, or give a path to a TOML file")
    return _load_catalog_device(text, calibrated)


def load_catalog(*, calibrated: bool = True) -> dict[str, Device]:
    """All built-in devices, every file checked; all problems reported together."""
    class_defaults()  # a broken classes.toml is one error, not one per device
    problems: list[str] = []
    out: dict[str, Device] = {}
    for dev_id in catalog_ids():
        try:
            out[dev_id] = _load_catalog_device(dev_id, calibrated)
        except SpecError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SpecError(problems, "hardware catalog")
    return out


def catalog_hash() -> str:
    """SHA-256 over every catalog data file (hardware, classes, calibration, models)."""
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
    "scaleout_bandwidth": ("bandwidth", "scale-out bandwidth per direction"),
    "tdp": ("power", "thermal design power"),
    "idle": ("power", "idle power"),
    **{f"efficiency.{k}": (v[0], f"efficiency parameter {k}") for k, v in EFFICIENCY_FIELDS.items()},
}


def derive_device(base: Device, new_id: str, overrides: dict[str, float],
                  name: str | None = None) -> Device:
    """A hypothetical device: ``base`` with fields replaced by ``overrides`` (SI values)."""
    problems: list[str] = []
    peaks = dict(base.peak_flops)
    tiers = list(base.tiers)
    host = base.host
    changes: dict[str, Any] = {}
    eff = {k: getattr(base.efficiency, k) for k in EFFICIENCY_FIELDS}

    def set_tier(kind: str, attr: str, value: float) -> None:
        idx = next((i for i, t in enumerate(tiers) if t.kind == kind), None)
        if idx is None:
            if kind == "sram":
                new = MemoryTier("SRAM (hypothetical)", "sram", 0.0, 0.0,
                                 base.efficiency.bandwidth_efficiency)
                tiers.insert(0, new)
                idx = 0
            else:
                problems.append(f"{new_id}: base {base.id!r} has no {kind} tier to override")
                return
        tiers[idx] = dataclasses.replace(tiers[idx], **{attr: value})

    for key, value in overrides.items():
        _ = OVERRIDE_KEYS[key]  # validated by the caller
        if key.startswith("peak_flops."):
            peaks[key.split(".", 1)[1]] = value
        elif key.startswith("efficiency."):
            eff[key.split(".", 1)[1]] = value
        elif key in ("sram_capacity", "sram_bandwidth"):
            set_tier("sram", key.split("_")[1], value)
        elif key in ("dram_capacity", "dram_bandwidth", "hbm_capacity", "hbm_bandwidth"):
            set_tier("dram", key.split("_")[1], value)
        elif key in ("host_capacity", "host_bandwidth"):
            if host is None:
                host = MemoryTier("host (hypothetical)", "dram", 0.0, 0.0,
                                  base.efficiency.bandwidth_efficiency)
            host = dataclasses.replace(host, **{key.split("_")[1]: value})
        elif key == "domain_size":
            changes[key] = int(value)
        else:
            changes[key] = value
    for t in tiers:
        if not (t.capacity > 0 and t.bandwidth > 0):
            problems.append(f"{new_id}: tier {t.name!r} needs both capacity and bandwidth > 0 "
                            f"(set both sram_capacity and sram_bandwidth)")
    if host is not None and not (host.capacity > 0 and host.bandwidth > 0):
        problems.append(f"{new_id}: host tier needs host_capacity and host_bandwidth > 0")
    for k, (_, lo, hi) in EFFICIENCY_FIELDS.items():
        if not (lo < eff[k] <= hi):
            problems.append(f"{new_id}: efficiency.{k} = {eff[k]} outside ({lo}, {hi}]")
    if "efficiency.bandwidth_efficiency" in overrides:
        tiers = [dataclasses.replace(t, efficiency=eff["bandwidth_efficiency"]) for t in tiers]
        if host is not None:
            host = dataclasses.replace(host, efficiency=eff["bandwidth_efficiency"])
    if len(tiers) > MAX_TIERS:
        problems.append(f"{new_id}: adding an SRAM tier exceeds {MAX_TIERS} tiers")
    tdp, idle = changes.get("tdp", base.tdp), changes.get("idle", base.idle)
    if idle > tdp:
        problems.append(f"{new_id}: idle power {idle:g} W exceeds tdp {tdp:g} W (set both tdp "
                        f"and idle)")
    if problems:
        raise SpecError(problems, "hypothetical device")
    origin = dict(base.efficiency.origin)
    origin.update({k.split(".", 1)[1]: "hypothetical override" for k in overrides
                   if k.startswith("efficiency.")})
    return dataclasses.replace(
        base, id=new_id, name=name or f"{base.name} (hypothetical)", peak_flops=peaks,
        tiers=tuple(tiers), host=host, efficiency=Efficiency(**eff, origin=origin),
        base=base.base or base.id, overrides={**base.overrides, **overrides}, **changes)


# --------------------------------------------------------------------------------------------
# calibration overlays (public: sweep's calibration writes and applies them through these)


def calibration_path() -> Path:
    """The shipped calibration overlay, ``grids/data/calibration.toml``."""
    return _data_dir() / "calibration.toml"


def read_overlay(path: str | Path) -> dict[str, Any]:
    """A calibration overlay TOML file, parsed (one SpecError if it cannot be read)."""
    return _load_toml(Path(path))


def with_efficiency(dev: Device, values: dict[str, float], label: str = "calibrated (device)"
                    ) -> Device:
    """``dev`` with efficiency fields replaced by ``values`` (fractions; ``layer_overhead`` [s]);
    the bandwidth efficiency applies to every memory tier and the host tier, as the loader does."""
    eff = {k: float(v) for k, v in values.items() if k in EFFICIENCY_FIELDS}
    origin = dict(dev.efficiency.origin)
    origin.update(dict.fromkeys(eff, label))
    new_eff = dataclasses.replace(dev.efficiency, **eff, origin=origin)
    tiers, host = dev.tiers, dev.host
    if "bandwidth_efficiency" in eff:
        bw = eff["bandwidth_efficiency"]
        tiers = tuple(dataclasses.replace(t, efficiency=bw) for t in tiers)
        host = dataclasses.replace(host, efficiency=bw) if host is not None else None
    return dataclasses.replace(dev, efficiency=new_eff, tiers=tiers, host=host)


def apply_overlay(dev: Device, overlay: dict[str, Any]) -> Device:
    """``dev`` with the overlay's ``[device.<id>]`` table applied, else its ``[class.<cls>]``
    table, as the catalog loader applies the shipped overlay."""
    cal = overlay.get("device", {}).get(dev.id) or overlay.get("class", {}).get(dev.cls) or {}
    vals = {k: float(v) for k, v in cal.items()
            if k in EFFICIENCY_FIELDS and isinstance(v, (int, float))}
    return with_efficiency(dev, vals) if vals else dev


def clear_caches() -> None:
    """Forget loaded catalog devices and the shipped overlay (after the overlay file changed)."""
    calibration_overlay.cache_clear()
    _load_catalog_device.cache_clear()
