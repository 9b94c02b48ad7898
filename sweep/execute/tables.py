"""Pack catalog objects (``grids``) into the kernels' per-axis tables (``kernels.params``).

This is the only place that knows both sides: ``grids`` describes devices and models in SI units,
``kernels`` reads plain float64 tables. Per-axis work (model arithmetic, peak look-ups) happens here,
once per axis value, never inside the kernels' loops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grids.hardware import Device
from grids.layouts import Layout
from grids.models import ModelArch
from grids.precisions import Precision, peak_table
from kernels.params import HW_FIELDS, LAYOUT_FIELDS, MAX_TIERS, MODEL_FIELDS, PRECISION_FIELDS, pack


def hardware_columns(dev: Device) -> dict[str, float]:
    cols: dict[str, float] = {}
    for i in range(MAX_TIERS):
        t = dev.tiers[i] if i < len(dev.tiers) else None
        cols[f"tier{i}_capacity"] = t.capacity if t else 0.0
        cols[f"tier{i}_bandwidth"] = t.bandwidth if t else 1.0
        cols[f"tier{i}_efficiency"] = t.efficiency if t else 1.0
        cols[f"tier{i}_kind"] = (0.0 if t.kind == "sram" else 1.0) if t else 1.0
    h = dev.host
    cols.update(
        host_capacity=h.capacity if h else 0.0, host_bandwidth=h.bandwidth if h else 1.0,
        host_efficiency=h.efficiency if h else 1.0,
        link_bandwidth=dev.link_bandwidth, link_latency=dev.link_latency,
        domain_size=float(dev.domain_size), scaleout_bandwidth=dev.scaleout_bandwidth,
        scaleout_latency=dev.scaleout_latency, tdp=dev.tdp, idle=dev.idle,
        flops_efficiency=dev.efficiency.flops_efficiency,
        layer_overhead=dev.efficiency.layer_overhead, jitter=dev.efficiency.jitter,
        capacity_fraction=dev.efficiency.capacity_fraction)
    return cols


def model_columns(m: ModelArch) -> dict[str, float]:
    head = m.params_embed if m.lm_head_tied else m.params_lm_head
    return {
        "n_layers": m.n_layers, "d_model": m.d_model, "vocab_size": m.vocab_size,
        "params_linear": (m.params_attn + m.params_dense_mlp + m.params_shared_experts
                          + m.params_router + m.params_other),
        "params_head": head,
        "params_embed_only": 0 if m.lm_head_tied else m.params_embed,
        "params_expert": m.params_expert, "n_moe_layers": m.n_moe_layers,
        "n_experts": m.n_experts, "experts_per_token": m.experts_per_token,
        "kv_elems_full": m.kv_elems_full, "kv_elems_window": m.kv_elems_window,
        "window": m.window, "kv_tp_shardable": 1.0 if m.kv_tp_shardable else 0.0,
        "n_kv_heads": m.n_kv_heads,
        "attn_flops_full_decode": m.attn_flops_full_decode,
        "attn_flops_window_decode": m.attn_flops_window_decode,
        "attn_flops_full_prefill": m.attn_flops_full_prefill,
        "attn_flops_window_prefill": m.attn_flops_window_prefill,
        "act_elems": m.act_elems, "tp_divisor": m.tp_divisor,
    }


def precision_columns(p: Precision) -> dict[str, float]:
    return {"weight_bytes": p.weight_bits / 8.0, "act_bytes": p.act_bits / 8.0,
            "kv_bytes": p.kv_bits / 8.0, "embed_bytes": p.embed_bits / 8.0}


def layout_columns(lay: Layout) -> dict[str, float]:
    return {"tp": lay.tp, "pp": lay.pp, "ep": lay.ep, "dp": lay.dp, "offload": lay.offload}


def _table(rows: list[dict[str, float]], fields: tuple[str, ...], what: str) -> np.ndarray:
    cols = {f: np.array([r[f] for r in rows], dtype=np.float64) for f in fields}
    return pack(cols, fields, what)


@dataclass
class Tables:
    hw: np.ndarray
    md: np.ndarray
    peak: np.ndarray
    pr: np.ndarray
    ly: np.ndarray


def build_tables(devices: list[Device], models: list[ModelArch], precisions: list[Precision],
                 layouts: list[Layout]) -> Tables:
    return Tables(
        hw=_table([hardware_columns(d) for d in devices], HW_FIELDS, "hardware"),
        md=_table([model_columns(m) for m in models], MODEL_FIELDS, "model"),
        peak=peak_table([d.peak_flops for d in devices], precisions),
        pr=_table([precision_columns(p) for p in precisions], PRECISION_FIELDS, "precision"),
        ly=_table([layout_columns(lay) for lay in layouts], LAYOUT_FIELDS, "layout"),
    )
