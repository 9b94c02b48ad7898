"""Board power that follows activity: a static floor, compute while it runs, energy per byte moved.

Numba scalar helpers inlined into :mod:`kernels.static` and :mod:`kernels.serving` (docs/model.md
section 9). Over a phase of ``duration`` seconds a device draws its static power (clocks up, the
model loaded, nothing moving: leakage, refresh, PHYs, fans of the board) plus the energy of what it
does: its compute units at their full dynamic power ``tdp - idle`` for as long as its kernels
compute (the FLOPs' time at the engine's rate, whatever share of the peak that rate is), bytes
read or written in each memory tier kind (on-chip SRAM, DRAM) and over the host link, and bytes
sent over the interconnect, each at its energy per byte. The board cannot draw more than its power
limit, so the result is capped at the TDP (a compute-bound phase sits at the cap).

Units: time [s], bytes [B], energies [J] and [J/B], power [W]. The coefficients
and their sources are the catalog's (``grids/data/classes.toml``, the devices' ``[power]``
tables, docs/catalog.md); ``sweep/execute/tables.py`` packs them.
"""

from __future__ import annotations

from kernels.accelerate import scalar_jit
from kernels.params import HW

H_TDP, H_IDLE = HW["tdp"], HW["idle"]
H_ESRAM, H_EDRAM, H_EHOST, H_ELINK = (HW["energy_sram"], HW["energy_dram"], HW["energy_host"],
                                      HW["energy_link"])


@scalar_jit
def moved_energy(hw, sram_bytes, dram_bytes, host_bytes, link_bytes):
    """Energy [J] of bytes read or written in the SRAM and DRAM tiers, over the host link and sent
    over the interconnect, at the platform's energies per byte  [model.md section 9]."""
    return (sram_bytes * hw[H_ESRAM] + dram_bytes * hw[H_EDRAM] + host_bytes * hw[H_EHOST]
            + link_bytes * hw[H_ELINK])


@scalar_jit
def compute_energy(hw, t_compute):
    """Energy [J] of a device whose compute units run for ``t_compute`` [s] (its FLOPs at the
    engine's rate): the dynamic range ``tdp - idle`` [W] over that time  [model.md section 9]."""
    return max(hw[H_TDP] - hw[H_IDLE], 0.0) * t_compute


@scalar_jit
def activity_power(hw, energy, duration):
    """Average power [W] of one device that spends ``energy`` [J] (compute and bytes moved) over a
    phase of ``duration`` [s]: ``P = min(tdp, idle + energy / duration)``  [model.md section 9]."""
    if duration <= 0.0:
        return hw[H_IDLE]
    return min(hw[H_TDP], hw[H_IDLE] + energy / duration)
