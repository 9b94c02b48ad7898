"""Hypothetical devices: a catalog device with some fields replaced (``[hypothetical]`` of a grid
spec, ``[efficiency]`` overrides): the keys that may be overridden and the checks of the result.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from grids.errors import SpecError
from grids.hardware.device import (
    COMPUTE_DTYPES,
    EFFICIENCY_FIELDS,
    ENERGY_FIELDS,
    MAX_TIERS,
    Device,
    Efficiency,
    MemoryTier,
)

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
