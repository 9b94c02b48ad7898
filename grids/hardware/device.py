"""The :class:`Device` record (with :class:`MemoryTier` and :class:`Efficiency`) and the names of
the hardware catalog's schema: compute dtypes, architecture classes, memory tier kinds, the
efficiency, energy and class-default fields and the keys of a device file's tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grids.errors import suggest
from grids.sourced import Sourced

COMPUTE_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4", "int4")


def unknown_dtype(dtype: str, where: str) -> str:
    """The problem of a per-dtype table key that is not a compute dtype ('' when it is one):
    ``"<where>: unknown compute dtype (did you mean ...)"``."""
    if dtype in COMPUTE_DTYPES:
        return ""
    return f"{where}: unknown compute dtype{suggest(dtype, COMPUTE_DTYPES)}"
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

    def achievable_flops(self, dtype: str) -> float:
        """Achievable dense rate [FLOP/s] in compute dtype ``dtype``: its peak x its fraction
        (:meth:`Efficiency.flops_efficiency_for`; docs/catalog.md 2.5). A dtype the device
        publishes no peak for is a KeyError that names the device's dtypes."""
        if dtype not in self.peak_flops:
            raise KeyError(f"device {self.id!r} has no {dtype!r} peak; its dtypes are "
                           f"{', '.join(sorted(self.peak_flops))}")
        return self.peak_flops[dtype] * self.efficiency.flops_efficiency_for(dtype)

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
