"""The kernels' array contract: column order of the per-axis parameter tables and of the outputs.

``sweep`` prepares, per axis, a dict ``{field name: 1-D array}``; :func:`pack` stacks it into the
2-D float64 table the kernels read, in the column order below, checking that every field is
present. All values are in SI base units (bytes, B/s, FLOP/s, s, W, USD) or plain counts; the
meaning of every field is in ``docs/model.md`` section 1.
"""

from __future__ import annotations

import numpy as np

MAX_TIERS = 3

#: platform table columns: one row per (hardware, engine) pair. Tiers fastest first; kind 0 = SRAM,
#: 1 = DRAM; unused tiers have 0 capacity. Bandwidth efficiencies and the usable capacity fraction
#: already include the engine's factors; the engine's own costs follow the power fields.
HW_FIELDS = (
    "tier0_capacity", "tier0_bandwidth", "tier0_efficiency", "tier0_kind",
    "tier1_capacity", "tier1_bandwidth", "tier1_efficiency", "tier1_kind",
    "tier2_capacity", "tier2_bandwidth", "tier2_efficiency", "tier2_kind",
    "host_capacity", "host_bandwidth", "host_efficiency",   # host tier; capacity 0 = none
    "package_size", "package_bandwidth", "package_latency",  # in-package link, per direction
    "domain_size", "link_bandwidth", "link_latency",        # scale-up, per direction [B/s], [s]
    "scaleout_bandwidth", "scaleout_latency",
    "link_efficiency",      # achievable fraction of a link's bandwidth in collectives, every level
    "peer_links",           # direct links the scale-up bandwidth splits over; 0 = switched fabric
    "switch_efficiency",    # in-switch all-reduce (NVLS): achievable fraction; 0 = none
    "tdp", "idle", "host_power",                            # [W] per device
    "energy_sram", "energy_dram", "energy_host", "energy_link",  # [J/B] moved, per device
    "capacity_fraction", "jitter",
    "spatial_layers",  # 1 = each layer of a stage on its own region of the device (section 7)
    # engine
    "layer_overhead", "iteration_overhead", "request_overhead",  # [s]
    "comm_bytes", "collective_overhead", "comm_overlap",     # [B], [s] per library call, [1]
    "in_switch_overhead",                                   # [s] per NVLS call; inf = not used
    "custom_ar_max_bytes", "custom_ar_max_group",           # custom all-reduce: [B] (0 = none), [1]
    "custom_ar_overhead", "custom_ar_efficiency",           # [s] per call, [1]
    "oneshot_max_bytes", "oneshot_max_bytes_large",         # [B] one-shot below, groups 3-4 / 5+
    "fastest_collective",                                   # 1 = fastest algorithm, 0 = the rules
    "max_batch", "prefill_chunk", "pads_heads",
    "spec_tokens", "spec_acceptance", "spec_draft_cost",
    "supported",
    # scheduler (docs/model.md section 13): whether prompts are chunked across iterations and
    # mixed with decode in one forward pass, the KV block [token], and the admission rule
    # (1 = reserve prompt + output per request, 0 = allocate as generated)
    "chunked_prefill", "mixed_batching", "kv_block", "kv_reserve",
    # the share of the memory free after weights and activations the KV cache gets (engines whose
    # memory fraction applies to the free memory; 1 = the whole of it, section 11)
    "kv_free_fraction",
    # 1 = decode attention reads each KV head once for its group of query heads (GQA-aware
    # kernels); 0 = once per query head (section 3, eq. (3b))
    "gqa_aware",
    # cost
    "cost_fixed", "cost_energy",                            # [USD/s per device], [USD/J]
)

#: platform x precision table fields (third axis of the (platform, precision, field) table)
PX_FIELDS = ("peak", "eff_prefill", "eff_decode", "kv_factor", "weight_factor",
             # a scheme that keeps the attention projections at 16 bits (``-attn16``): its rate
             # over the platform's 16-bit rate in each phase, by which those FLOPs take longer
             # (1 = no such projections)
             "attn16_ratio_prefill", "attn16_ratio_decode")

#: model table columns (parameter and element counts, see grids.models.ModelArch)
MODEL_FIELDS = (
    "n_layers", "d_model", "vocab_size",
    "params_linear",        # read every step at weight precision: attention, dense MLP,
                            # shared experts, router, norms
    "params_attention",     # the attention part of params_linear (head padding scales it)
    "params_head",          # LM head read every step at embedding precision (the embedding when tied)
    "params_embed_only",    # input embedding stored but not read per step (0 when tied)
    "params_expert",        # one routed expert in one MoE layer
    "n_moe_layers", "n_experts", "experts_per_token",
    "kv_elems_full", "kv_elems_window", "window", "window_chunked",
    "kv_tp_shardable", "n_kv_heads",
    "attn_flops_full_decode", "attn_flops_window_decode",
    "attn_flops_full_prefill", "attn_flops_window_prefill",
    "act_elems", "n_heads", "max_context",
)

#: precision table columns: bytes per element (``attn_weight_bytes``: of the attention
#: projections' weights, ``weight_bytes`` unless the scheme keeps them at 16 bits)
PRECISION_FIELDS = ("weight_bytes", "act_bytes", "kv_bytes", "embed_bytes", "attn_weight_bytes")

#: layout table columns
LAYOUT_FIELDS = ("tp", "pp", "ep", "dp", "offload", "spill")

#: output metrics, in the order of the kernels' output array's first axis
METRICS = (
    "ttft", "tpot", "e2e_latency", "throughput", "total_throughput", "throughput_per_device",
    "tokens_per_joule", "tokens_per_joule_system", "power", "system_power",
    "cost_per_mtok", "tokens_per_dollar",
    "memory_per_device", "host_fraction", "fits", "infeasible_reason", "bound",
    "arithmetic_intensity", "mfu", "mbu", "latency_cov", "min_devices",
    "max_concurrency", "concurrency",
    "ttft_p50", "ttft_p90", "ttft_p99", "e2e_p50", "e2e_p90", "e2e_p99",
)
#: metrics that only a request-rate grid carries (latency percentiles under Poisson arrivals);
#: the kernels leave them unwritten in the other modes and the results drop them
RATE_METRICS = ("ttft_p50", "ttft_p90", "ttft_p99", "e2e_p50", "e2e_p90", "e2e_p99")
#: serving modes (an argument of the entry points, docs/model.md section 13): a static batch of
#: ``batch`` sequences; continuous batching at a concurrency of ``batch`` requests per replica;
#: continuous batching at a request rate (the batch axis holds requests/s of the layout)
MODE_STATIC, MODE_CONTINUOUS, MODE_RATE = 0.0, 1.0, 2.0
SERVING_MODES = ("static", "continuous", "rate")
M = {name: i for i, name in enumerate(METRICS)}

#: values of ``bound`` (which resource limits the decode step); -1 marks an infeasible point
BOUND_MEANINGS = ("compute", "sram", "dram", "host_link", "interconnect", "overhead")
BOUND_INFEASIBLE = -1

#: values of ``infeasible_reason`` (0 = feasible), docs/model.md section 2; the last one is not a
#: kernel's: a result that keeps each point's best layout (spec key ``best_layout``) gives it
#: where some layout fits but none is comparable on the basis (beyond its budget, unpriced)
INFEASIBLE_MEANINGS = ("feasible", "engine_unsupported", "no_compute_dtype", "tp_heads",
                       "ep_experts", "pp_layers", "no_host_tier", "batch_cap", "context_window",
                       "memory", "host_capacity", "saturated", "outside_basis")
R = {name: i for i, name in enumerate(INFEASIBLE_MEANINGS)}


def _index(fields: tuple[str, ...]) -> dict[str, int]:
    return {name: i for i, name in enumerate(fields)}


HW = _index(HW_FIELDS)
PX = _index(PX_FIELDS)
MD = _index(MODEL_FIELDS)
PR = _index(PRECISION_FIELDS)
LY = _index(LAYOUT_FIELDS)


def pack(columns: dict[str, np.ndarray], fields: tuple[str, ...], what: str) -> np.ndarray:
    """Stack ``columns`` into a C-contiguous float64 table ``(n, len(fields))``."""
    missing = [f for f in fields if f not in columns]
    if missing:
        raise KeyError(f"{what} table is missing fields {missing}")
    extra = [f for f in columns if f not in fields]
    if extra:
        raise KeyError(f"{what} table has unknown fields {extra}")
    arrays = [np.asarray(columns[f], dtype=np.float64).reshape(-1) for f in fields]
    n = {a.shape[0] for a in arrays}
    if len(n) != 1:
        raise ValueError(f"{what} table columns differ in length: {sorted(n)}")
    return np.ascontiguousarray(np.stack(arrays, axis=1))
