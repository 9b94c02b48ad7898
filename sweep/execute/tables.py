"""Pack catalog objects (``grids``) into the kernels' per-axis tables (``kernels.params``).

This is the only place that knows both sides: ``grids`` describes devices, engines, models and
prices in SI units, ``kernels`` reads plain float64 tables. A *platform* row is one (hardware,
engine) pair: the device's physical numbers with the engine's parameters folded in (docs/model.md
section 1). Per-axis work (model arithmetic, peak and efficiency look-ups, engine resolution)
happens here, once per axis value, never inside the kernels' loops.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from grids.hardware import Device
from grids.layouts import Layout
from grids.models import ModelArch
from grids.precisions import Precision, parse_precision
from kernels.params import (
    HW_FIELDS,
    LAYOUT_FIELDS,
    MAX_TIERS,
    MODEL_FIELDS,
    PRECISION_FIELDS,
    PX_FIELDS,
    pack,
)


def platform_columns(dev: Device, eng: Any, cost: Any | None, prefill_chunk: float
                     ) -> dict[str, float]:
    """One platform row: device ``dev`` served by the resolved engine ``eng``
    (:class:`grids.engines.EngineParams`), priced by ``cost`` (:class:`grids.prices.DeviceCost`,
    None = unpriced); ``prefill_chunk`` [token] is the workload's, used when the engine has none."""
    bw = eng.bandwidth
    cols: dict[str, float] = {}
    for i in range(MAX_TIERS):
        t = dev.tiers[i] if i < len(dev.tiers) else None
        cols[f"tier{i}_capacity"] = t.capacity if t else 0.0
        cols[f"tier{i}_bandwidth"] = t.bandwidth if t else 1.0
        cols[f"tier{i}_efficiency"] = t.efficiency * bw if t else 1.0
        cols[f"tier{i}_kind"] = (0.0 if t.kind == "sram" else 1.0) if t else 1.0
    h = dev.host
    pkg = dev.package_size
    cols.update(
        host_capacity=h.capacity if h else 0.0, host_bandwidth=h.bandwidth if h else 1.0,
        host_efficiency=h.efficiency * bw if h else 1.0,
        package_size=float(pkg),
        package_bandwidth=dev.package_bandwidth if pkg > 1 and dev.package_bandwidth else 1.0,
        package_latency=dev.package_latency if pkg > 1 and dev.package_latency else 0.0,
        domain_size=float(dev.domain_size), link_bandwidth=dev.link_bandwidth,
        link_latency=dev.link_latency, scaleout_bandwidth=dev.scaleout_bandwidth,
        scaleout_latency=dev.scaleout_latency, link_efficiency=dev.link_efficiency,
        peer_links=float(dev.peer_links), switch_efficiency=dev.switch_reduction_efficiency,
        tdp=dev.tdp, idle=dev.idle,
        host_power=dev.host_power, energy_sram=dev.energy_sram, energy_dram=dev.energy_dram,
        energy_host=dev.energy_host, energy_link=dev.energy_link,
        capacity_fraction=dev.efficiency.capacity_fraction * (
            1.0 if eng.memory_of_free else eng.memory_fraction),
        kv_free_fraction=eng.memory_fraction if eng.memory_of_free else 1.0,
        jitter=dev.efficiency.jitter, spatial_layers=1.0 if dev.spatial_layers else 0.0,
        layer_overhead=eng.layer_overhead, iteration_overhead=eng.iteration_overhead,
        request_overhead=eng.request_overhead, comm_bytes=eng.comm_bytes,
        collective_overhead=eng.collective_overhead, comm_overlap=eng.comm_overlap,
        in_switch_overhead=eng.in_switch_overhead,
        custom_ar_max_bytes=eng.custom_allreduce_max_bytes,
        custom_ar_max_group=eng.custom_allreduce_max_group,
        custom_ar_overhead=eng.custom_allreduce_overhead,
        custom_ar_efficiency=eng.custom_allreduce_efficiency,
        oneshot_max_bytes=eng.oneshot_max_bytes, oneshot_max_bytes_large=eng.oneshot_max_bytes_large,
        fastest_collective=eng.fastest_collective, max_batch=eng.max_batch,
        prefill_chunk=eng.prefill_chunk if eng.prefill_chunk > 0 else float(prefill_chunk),
        pads_heads=1.0 if eng.pads_heads else 0.0,
        chunked_prefill=1.0 if eng.chunked_prefill else 0.0,
        mixed_batching=1.0 if eng.mixed_batching else 0.0,
        kv_block=float(eng.kv_block), kv_reserve=1.0 if eng.kv_reserve else 0.0,
        gqa_aware=1.0 if eng.gqa_aware_attention else 0.0,
        spec_tokens=float(eng.speculative_tokens), spec_acceptance=eng.speculative_acceptance,
        spec_draft_cost=eng.speculative_draft_cost,
        supported=1.0 if eng.supported else 0.0,
        cost_fixed=cost.served_usd_per_second if cost is not None else math.nan,
        cost_energy=cost.energy_usd_per_joule if cost is not None else 0.0,
    )
    return cols


def precision_platform_values(dev: Device, eng: Any, p: Precision) -> dict[str, float]:
    """Peak [FLOP/s] and efficiencies of precision ``p``'s compute dtype on the platform
    (docs/model.md section 1): the device's achievable fraction x the engine's factors."""
    dtype = p.compute_dtype_for(dev.peak_flops)
    # an engine build without FP8/FP4 GEMMs or a narrow KV cache cannot run the scheme at all:
    # like a device without the dtype's units (infeasible_reason no_compute_dtype)
    if dtype is not None and not eng.runs(dtype, p.kv_bits):
        dtype = None
    if dtype is None:
        return {"peak": 0.0, "eff_prefill": 1.0, "eff_decode": 1.0, "kv_factor": 1.0,
                "weight_factor": 1.0, "attn16_ratio_prefill": 1.0, "attn16_ratio_decode": 1.0}
    achievable = dev.efficiency.flops_efficiency_for(dtype)
    weight_only = p.weight_bits < p.act_bits
    w = eng.weight_only_efficiency if weight_only else 1.0
    out = {"peak": dev.peak_flops[dtype],
           "eff_prefill": achievable * eng.compute(dtype, "prefill") * w,
           "eff_decode": achievable * eng.compute(dtype, "decode") * w,
           # the decode attention kernel's KV read rate: the 16-bit one, times the narrow one's
           # over it for an 8-bit cache (docs/model.md eq. (3b))
           "kv_factor": eng.kv_efficiency * (eng.kv8_efficiency if p.kv_bits < 16 else 1.0),
           "weight_factor": w, "attn16_ratio_prefill": 1.0, "attn16_ratio_decode": 1.0}
    if p.attn_weight_bits > p.weight_bits:
        # the attention projections run as 16-bit GEMMs: the scheme's rate over that one
        wide = parse_precision("bf16")
        d16 = wide.compute_dtype_for(dev.peak_flops)
        if d16 is not None:
            a16 = dev.achievable_flops(d16)
            for phase in ("prefill", "decode"):
                out[f"attn16_ratio_{phase}"] = (out["peak"] * out[f"eff_{phase}"]
                                                / (a16 * eng.compute(d16, phase)))
    return out


def model_columns(m: ModelArch, context_scaling: float = 1.0) -> dict[str, float]:
    """One model row; ``context_scaling`` multiplies the context window (a spec that allows
    extended context, e.g. by rope scaling the config does not state)."""
    head = m.params_embed if m.lm_head_tied else m.params_lm_head
    return {
        "n_layers": m.n_layers, "d_model": m.d_model, "vocab_size": m.vocab_size,
        "params_linear": (m.params_attn + m.params_dense_mlp + m.params_shared_experts
                          + m.params_router + m.params_other),
        "params_attention": m.params_attn,
        "params_head": head,
        "params_embed_only": 0 if m.lm_head_tied else m.params_embed,
        "params_expert": m.params_expert, "n_moe_layers": m.n_moe_layers,
        "n_experts": m.n_experts, "experts_per_token": m.experts_per_token,
        "kv_elems_full": m.kv_elems_full, "kv_elems_window": m.kv_elems_window,
        "window": m.window, "window_chunked": 1.0 if m.window_chunked else 0.0,
        "kv_tp_shardable": 1.0 if m.kv_tp_shardable else 0.0,
        "n_kv_heads": m.n_kv_heads,
        "attn_flops_full_decode": m.attn_flops_full_decode,
        "attn_flops_window_decode": m.attn_flops_window_decode,
        "attn_flops_full_prefill": m.attn_flops_full_prefill,
        "attn_flops_window_prefill": m.attn_flops_window_prefill,
        "act_elems": m.act_elems, "n_heads": m.tp_divisor,
        "max_context": m.max_context * context_scaling,
    }


def precision_columns(p: Precision) -> dict[str, float]:
    return {"weight_bytes": p.weight_bits / 8.0, "act_bytes": p.act_bits / 8.0,
            "kv_bytes": p.kv_bits / 8.0, "embed_bytes": p.embed_bits / 8.0,
            "attn_weight_bytes": p.attn_weight_bits / 8.0}


def layout_columns(lay: Layout) -> dict[str, float]:
    return {"tp": lay.tp, "pp": lay.pp, "ep": lay.ep, "dp": lay.dp, "offload": lay.offload,
            "spill": 1.0 if lay.spill else 0.0}


def _table(rows: list[dict[str, float]], fields: tuple[str, ...], what: str) -> np.ndarray:
    cols = {f: np.array([r[f] for r in rows], dtype=np.float64) for f in fields}
    return pack(cols, fields, what)


@dataclass
class Tables:
    """The kernels' tables: ``hw`` (platform rows, hardware-major: row h * E + e), ``px``
    (platform, precision, field), ``md``, ``pr``, ``ly``; ``n_engines`` engines per device."""

    hw: np.ndarray
    px: np.ndarray
    md: np.ndarray
    pr: np.ndarray
    ly: np.ndarray
    n_engines: int = 1

    def platform_rows(self, h: slice, e: slice) -> np.ndarray:
        """Indices of the platform rows of devices ``h`` x engines ``e`` (hardware-major)."""
        n_e = self.n_engines
        hs = np.arange(h.start, h.stop)
        es = np.arange(e.start, e.stop)
        return (hs[:, None] * n_e + es[None, :]).reshape(-1)


def build_tables(devices: list[Device], models: list[ModelArch], precisions: list[Precision],
                 layouts: list[Layout], engines: list[list[Any]], costs: list[Any | None],
                 prefill_chunk: float, context_scaling: float = 1.0) -> Tables:
    """Tables for ``devices`` x ``engines`` (``engines[h][e]``: engine e resolved for device h),
    with ``costs[h]`` the device's price (None = unpriced)."""
    n_e = len(engines[0]) if engines else 1
    plat = [platform_columns(d, eng, costs[h], prefill_chunk)
            for h, d in enumerate(devices) for eng in engines[h]]
    px = np.array([[[precision_platform_values(d, eng, p)[f] for f in PX_FIELDS]
                    for p in precisions] for h, d in enumerate(devices) for eng in engines[h]],
                  dtype=np.float64).reshape(len(plat), len(precisions), len(PX_FIELDS))
    return Tables(
        hw=_table(plat, HW_FIELDS, "platform"),
        px=np.ascontiguousarray(px),
        md=_table([model_columns(m, context_scaling) for m in models], MODEL_FIELDS, "model"),
        pr=_table([precision_columns(p) for p in precisions], PRECISION_FIELDS, "precision"),
        ly=_table([layout_columns(lay) for lay in layouts], LAYOUT_FIELDS, "layout"),
        n_engines=n_e,
    )
