"""Hypothesis strategies for random but physically valid kernel inputs, and table helpers.

Each strategy yields plain dicts keyed by the field names of :mod:`kernels.params`: a *platform*
(:func:`devices`: one hardware x engine row of HW_FIELDS), its row for one precision
(:func:`px_values`: PX_FIELDS), models (MODEL_FIELDS), precisions and layouts. The helpers
:func:`hw_table`, :func:`px_table`, :func:`model_table`, :func:`precision_table`,
:func:`layout_table` pack them into the float64 tables the kernels read. :func:`scenario` draws a
whole small grid, :func:`point` one point (dicts ``hw, px, md, pr, ly``, workload ``batch,
context, output_len`` and the serving ``mode``), with device capacities biased towards the
model sizes so that a useful share of points fits.

Models are built from architecture-like numbers (layers, hidden size, heads, FFN width, experts,
window) into the parameter groups of docs/model.md section 1, so they are internally consistent;
:func:`raw_models` draws the fields independently to reach corner rules.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from kernels.params import (
    HW_FIELDS,
    LAYOUT_FIELDS,
    MODEL_FIELDS,
    PRECISION_FIELDS,
    PX_FIELDS,
    pack,
)


# ------------------------------------------------------------------------------------ primitives
def log_floats(lo: float, hi: float) -> st.SearchStrategy[float]:
    """Log-uniform floats in [lo, hi] (lo > 0)."""
    return st.floats(math.log10(lo), math.log10(hi)).map(lambda x: float(10.0 ** x))


def log_ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    """Integers in [lo, hi], log-uniformly spread (so 1, 7, 300 and 200000 all appear)."""
    return log_floats(lo, hi + 0.999).map(lambda x: max(lo, min(hi, int(x))))


def zero_or(s: st.SearchStrategy[float]) -> st.SearchStrategy[float]:
    """0.0 or a value of ``s`` (half and half)."""
    return st.one_of(st.just(0.0), s)


def rarely(value, s: st.SearchStrategy, one_in: int = 6) -> st.SearchStrategy:
    """``value`` about once in ``one_in`` draws, else a value of ``s``. (``st.one_of`` with a
    branch repeated does not weight the branches: hypothesis picks among distinct ones.)"""
    return st.integers(1, one_in).flatmap(lambda i: st.just(value) if i == 1 else s)


efficiencies = st.floats(0.05, 1.0)


# ------------------------------------------------------------------------------------- platforms
#: the ideal engine's collective fields: no software cost, every algorithm, the fastest chosen
IDEAL_COLLECTIVES = {"collective_overhead": 0.0, "in_switch_overhead": 0.0,
                     "custom_ar_max_bytes": math.inf, "custom_ar_max_group": math.inf,
                     "custom_ar_overhead": 0.0, "custom_ar_efficiency": 1.0,
                     "oneshot_max_bytes": math.inf, "oneshot_max_bytes_large": math.inf,
                     "fastest_collective": 1.0}


@st.composite
def collective_engines(draw) -> dict:
    """The collective fields of a real engine (docs/model.md section 5): the library's cost per
    call, whether it reduces in the switch, and a custom all-reduce (sometimes none) with its
    limits, cost, bandwidth share and one-shot/two-shot thresholds; sometimes the fastest
    algorithm is chosen instead of the engine's rules."""
    custom = draw(st.booleans())
    return {
        "collective_overhead": draw(st.sampled_from([0.0, 1e-6, 6.6e-6, 2.05e-5])),
        "in_switch_overhead": draw(st.sampled_from([math.inf, 25e-6, 0.0])),
        "custom_ar_max_bytes": (draw(st.sampled_from([8 << 20, 8e6, 1e5, math.inf]))
                                if custom else 0.0),
        "custom_ar_max_group": float(draw(st.sampled_from([2, 4, 8, 16, math.inf]))),
        "custom_ar_overhead": draw(st.sampled_from([0.0, 2.5e-6, 7e-6])),
        "custom_ar_efficiency": draw(st.one_of(st.just(1.0), st.floats(0.3, 1.0))),
        "oneshot_max_bytes": float(draw(st.sampled_from([0, 256 << 10, 1e6, math.inf]))),
        "oneshot_max_bytes_large": float(draw(st.sampled_from([0, 256 << 10, 5e5, math.inf]))),
        "fastest_collective": float(draw(rarely(1, st.just(0), one_in=4))),
    }


@st.composite
def engines(draw, ideal: bool | None = None) -> dict:
    """The engine fields of a platform row (docs/model.md section 1): per-layer, per-iteration and
    per-request overheads, collective payload and efficiency, overlap, batch cap (sometimes
    unlimited), prefill chunk, head padding, speculative decoding (sometimes on), support, and
    the cost fields (sometimes unpriced). ``ideal=True``: the physics bound (no overheads, unit
    factors, no cap, no speculation, supported)."""
    ideal = draw(st.booleans()) if ideal is None else ideal
    if ideal:
        e = {"layer_overhead": 0.0, "iteration_overhead": 0.0, "request_overhead": 0.0,
             "comm_bytes": 0.0, "comm_overlap": 1.0, "max_batch": math.inf, "pads_heads": 1.0,
             "spec_tokens": 0.0, "spec_acceptance": 0.0, "spec_draft_cost": 0.0,
             "supported": 1.0, "chunked_prefill": 1.0, "mixed_batching": 1.0, "kv_block": 1.0,
             "kv_reserve": 0.0, "kv_free_fraction": 1.0, "gqa_aware": 1.0, **IDEAL_COLLECTIVES}
    else:
        spec = draw(st.booleans())
        e = {"layer_overhead": draw(zero_or(st.floats(0.0, 1e-4))),
             "iteration_overhead": draw(zero_or(st.floats(0.0, 5e-3))),
             "request_overhead": draw(zero_or(st.floats(0.0, 0.05))),
             "comm_bytes": float(draw(st.sampled_from([0, 0, 1, 2, 4]))),
             **draw(collective_engines()),
             "comm_overlap": draw(st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0.0, 1.0))),
             "max_batch": float(draw(st.one_of(st.just(math.inf), log_ints(1, 4096)))),
             "pads_heads": float(draw(st.booleans())),
             "spec_tokens": float(draw(st.integers(1, 8))) if spec else 0.0,
             "spec_acceptance": draw(st.floats(0.0, 0.95)) if spec else 0.0,
             "spec_draft_cost": draw(st.floats(0.0, 0.5)) if spec else 0.0,
             "supported": float(draw(rarely(0, st.just(1), one_in=8))),
             "chunked_prefill": float(draw(st.booleans())),
             "mixed_batching": float(draw(st.booleans())),
             "kv_block": float(draw(st.sampled_from([1, 16, 32, 128]))),
             "kv_reserve": float(draw(st.booleans())),
             "kv_free_fraction": draw(st.one_of(st.just(1.0), st.floats(0.5, 1.0))),
             "gqa_aware": float(draw(rarely(0, st.just(1), one_in=4)))}
    e["prefill_chunk"] = float(draw(st.one_of(st.sampled_from([512, 2048, 8192, 8192, 65536]),
                                              log_ints(16, 1 << 17))))
    e["cost_fixed"] = draw(st.one_of(st.just(math.nan), log_floats(1e-6, 1e-2)))
    e["cost_energy"] = draw(zero_or(log_floats(1e-8, 1e-7)))
    return e


@st.composite
def devices(draw, n_tiers=None, host=None, capacity=None, kinds=None, ideal=None) -> dict:
    """A platform row: 1-3 tiers (fastest first), optional host tier, package / scale-up /
    scale-out links, power, capacity fraction, jitter, and an engine (:func:`engines`).

    ``capacity``: optional (lo, hi) range of the *total* tier capacity in bytes.
    ``kinds``: optional fixed kind for every tier (0 SRAM, 1 DRAM).
    ``ideal``: passed to :func:`engines`.
    """
    n = draw(st.integers(1, 3)) if n_tiers is None else n_tiers
    # fastest first, both in peak and in achievable bandwidth (bw * eff)
    bws = sorted((draw(log_floats(1e9, 1e16)) for _ in range(n)), reverse=True)
    effs = sorted((draw(efficiencies) for _ in range(n)), reverse=True)
    lo, hi = capacity if capacity is not None else (1e6, 1e13)
    total = draw(log_floats(lo, hi))
    shares = [draw(st.floats(0.05, 1.0)) for _ in range(n)]
    d = {}
    for i in range(3):
        if i < n:
            d[f"tier{i}_capacity"] = max(total * shares[i] / sum(shares), 1.0)
            d[f"tier{i}_bandwidth"] = bws[i]
            d[f"tier{i}_efficiency"] = effs[i]
            d[f"tier{i}_kind"] = float(draw(st.sampled_from([0, 1])) if kinds is None else kinds)
        else:   # an unused tier: capacity 0, its other numbers must not matter
            d[f"tier{i}_capacity"] = 0.0
            d[f"tier{i}_bandwidth"] = draw(st.sampled_from([1.0, 1e9]))
            d[f"tier{i}_efficiency"] = 1.0
            d[f"tier{i}_kind"] = float(draw(st.sampled_from([0, 1])))
    has_host = draw(st.booleans()) if host is None else host
    if has_host:
        d["host_capacity"] = draw(log_floats(1e9, 1e13))
        d["host_bandwidth"] = draw(log_floats(1e9, 1e12))
        d["host_efficiency"] = draw(efficiencies)
    else:
        d["host_capacity"] = 0.0
        d["host_bandwidth"] = draw(st.sampled_from([1.0, 64e9]))
        d["host_efficiency"] = draw(st.sampled_from([1.0, 0.8]))
    # links: a package of n_pkg devices inside a scale-up domain of a multiple of it
    pkg = draw(st.sampled_from([1, 1, 2, 4]))
    d["package_size"] = float(pkg)
    d["package_bandwidth"] = draw(log_floats(1e10, 1e13)) if pkg > 1 else 1.0
    d["package_latency"] = draw(st.sampled_from([0.0, 1e-7, 1e-6])) if pkg > 1 else 0.0
    d["domain_size"] = float(pkg * draw(st.sampled_from([1, 2, 4, 8, 9, 18])))
    d["link_bandwidth"] = draw(log_floats(1e9, 1e13))
    d["link_latency"] = draw(st.sampled_from([0.0, 1e-7, 1e-6, 5e-6]))
    d["scaleout_bandwidth"] = draw(log_floats(1e9, 1e12))
    d["scaleout_latency"] = draw(st.sampled_from([0.0, 2e-6, 1e-5]))
    # the fabric: switched (no direct links, sometimes reducing in the switch), a full mesh, a
    # torus-like set of direct links
    d["link_efficiency"] = draw(st.one_of(st.just(1.0), st.floats(0.2, 1.0)))
    dom = d["domain_size"]
    d["peer_links"] = float(draw(st.sampled_from([0, 0, 1, 2, 4, 6, max(dom - 1, 1)])))
    d["switch_efficiency"] = (draw(st.one_of(st.just(0.0), st.floats(0.3, 1.0)))
                              if d["peer_links"] == 0 else 0.0)
    d["tdp"] = draw(st.floats(50.0, 25000.0))
    d["idle"] = d["tdp"] * draw(st.floats(0.01, 1.0))  # a powered board draws static power
    d["host_power"] = draw(zero_or(st.floats(0.0, 1000.0)))
    d["energy_sram"] = draw(zero_or(log_floats(1e-13, 1e-10)))
    d["energy_dram"] = draw(zero_or(log_floats(1e-12, 1e-9)))
    d["energy_host"] = draw(zero_or(log_floats(1e-12, 1e-9)))
    d["energy_link"] = draw(zero_or(log_floats(1e-12, 1e-9)))
    d["capacity_fraction"] = draw(st.floats(0.5, 1.0))
    d["jitter"] = draw(zero_or(st.floats(0.0, 0.3)))
    d["spatial_layers"] = 0.0  # the layer pipeline has its own tests (S.variant to switch it on)
    d.update(draw(engines(ideal)))
    assert set(d) == set(HW_FIELDS)
    return d


def simple_device(bw=3.35e12, capacity=80e9, eff=1.0, kind=1, **over) -> dict:
    """One DRAM tier, no host, zero overheads, the ideal engine: the textbook roofline device."""
    d = dict.fromkeys(HW_FIELDS, 0.0)
    d.update(tier0_capacity=capacity, tier0_bandwidth=bw, tier0_efficiency=eff, tier0_kind=kind,
             tier1_bandwidth=1.0, tier1_efficiency=1.0, tier1_kind=1.0,
             tier2_bandwidth=1.0, tier2_efficiency=1.0, tier2_kind=1.0,
             host_bandwidth=1.0, host_efficiency=1.0,
             package_size=1.0, package_bandwidth=1.0, package_latency=0.0,
             link_bandwidth=450e9, link_latency=0.0, domain_size=8.0,
             scaleout_bandwidth=50e9, scaleout_latency=0.0, tdp=700.0, idle=100.0,
             host_power=0.0, capacity_fraction=1.0, jitter=0.0,
             link_efficiency=1.0, comm_overlap=1.0, max_batch=math.inf, prefill_chunk=8192.0,
             pads_heads=1.0, supported=1.0, cost_fixed=math.nan, cost_energy=0.0,
             chunked_prefill=1.0, mixed_batching=1.0, kv_block=1.0, kv_reserve=0.0,
             kv_free_fraction=1.0, gqa_aware=1.0, **IDEAL_COLLECTIVES)
    d.update(over)
    return d


# ---------------------------------------------------------------------- platform x precision
@st.composite
def px_values(draw, peak=None) -> dict:
    """A platform x precision row: dense peak (sometimes 0 = no compute dtype), prefill and
    decode efficiencies, the KV and weight-only segment factors (sometimes below 1)."""
    px = {"peak": draw(rarely(0.0, peaks)) if peak is None else float(peak),
          "eff_prefill": draw(efficiencies), "eff_decode": draw(efficiencies),
          "kv_factor": draw(st.one_of(st.just(1.0), st.floats(0.3, 1.0))),
          "weight_factor": draw(st.one_of(st.just(1.0), st.floats(0.3, 1.0))),
          "attn16_ratio_prefill": draw(st.one_of(st.just(1.0), st.floats(0.3, 4.0))),
          "attn16_ratio_decode": draw(st.one_of(st.just(1.0), st.floats(0.3, 4.0)))}
    assert set(px) == set(PX_FIELDS)
    return px


def simple_px(peak=989e12, eff=1.0) -> dict:
    """A platform x precision row with one efficiency for both phases and unit factors."""
    return {"peak": float(peak), "eff_prefill": eff, "eff_decode": eff, "kv_factor": 1.0,
            "weight_factor": 1.0, "attn16_ratio_prefill": 1.0, "attn16_ratio_decode": 1.0}


# ---------------------------------------------------------------------------------------- models
def build_model(*, n_layers, d_model, n_heads, n_kv_heads, head_dim, ffn, vocab, tied=False,
                n_moe_layers=0, n_experts=0, top_k=0, expert_ffn=0, shared_ffn=0,
                window=0, n_window_layers=0, chunked=False, mla=None,
                max_context=1 << 21) -> dict:
    """Parameter groups (docs/model.md section 1) of a decoder from architecture numbers.

    ``mla``: optional ``(kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim)``; MLA
    caches one latent of ``kv_lora_rank + qk_rope_head_dim`` per layer, replicated over tp.
    ``chunked``: the windowed layers attend within chunks of ``window`` tokens (not sliding).
    """
    d, h, hd = d_model, n_heads, head_dim
    if mla is None:
        attn = d * h * hd + 2 * d * n_kv_heads * hd + h * hd * d
        kv_per_layer = 2 * n_kv_heads * hd
        pair_dec = pair_pre = 2 * h * (hd + hd)
        shardable = 1.0
    else:
        rank, rope, nope, vdim = mla
        attn = d * (rank + rope) + rank * h * (nope + vdim) + d * h * (nope + rope) + h * vdim * d
        kv_per_layer = rank + rope
        pair_dec = 2 * h * ((rank + rope) + rank)
        pair_pre = 2 * h * ((nope + rope) + vdim)
        shardable = 0.0
    n_dense = n_layers - n_moe_layers
    router = d * n_experts
    p_lin = (n_layers * (attn + 2 * d) + n_dense * 3 * d * ffn
             + n_moe_layers * (router + 3 * d * shared_ffn) + d)
    n_full = n_layers - n_window_layers
    i_tok = ffn if n_moe_layers == 0 else top_k * expert_ffn + shared_ffn
    return {
        "n_layers": float(n_layers), "d_model": float(d), "vocab_size": float(vocab),
        "params_linear": float(p_lin), "params_attention": float(n_layers * attn),
        "params_head": float(vocab * d),
        "params_embed_only": 0.0 if tied else float(vocab * d),
        "params_expert": float(3 * d * expert_ffn) if n_experts else 0.0,
        "n_moe_layers": float(n_moe_layers), "n_experts": float(n_experts),
        "experts_per_token": float(top_k),
        "kv_elems_full": float(kv_per_layer * n_full),
        "kv_elems_window": float(kv_per_layer * n_window_layers),
        "window": float(window), "window_chunked": 1.0 if (chunked and window) else 0.0,
        "kv_tp_shardable": shardable, "n_kv_heads": float(n_kv_heads),
        "attn_flops_full_decode": float(pair_dec * n_full),
        "attn_flops_window_decode": float(pair_dec * n_window_layers),
        "attn_flops_full_prefill": float(pair_pre * n_full),
        "attn_flops_window_prefill": float(pair_pre * n_window_layers),
        "act_elems": float((4 * d + 2 * i_tok) * n_layers),
        "n_heads": float(h), "max_context": float(max_context),
    }


LLAMA_31_8B = build_model(n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8, head_dim=128,
                          ffn=14336, vocab=128256, max_context=131072)

#: context windows: mostly larger than any drawn prompt + output, sometimes not (section 2, code 7)
max_contexts = rarely(None, st.just(1 << 21), one_in=3).flatmap(
    lambda v: log_ints(2048, 1 << 20) if v is None else st.just(v))


@st.composite
def models(draw, kind=None) -> dict:
    """A random decoder: dense (MHA/GQA/MQA), MoE with or without shared experts, MLA-like,
    with or without windowed layers (sliding or chunked). ``kind`` in {None, "dense", "moe",
    "mla"}."""
    kind = kind or draw(st.sampled_from(["dense", "dense", "moe", "mla"]))
    n_layers = draw(log_ints(1, 128))
    head_dim = draw(st.sampled_from([32, 64, 128, 256]))
    n_heads = draw(st.sampled_from([1, 2, 4, 8, 12, 16, 32, 40, 64, 128]))
    d_model = draw(st.sampled_from([64, 256, 1024, 4096, 8192, 16384]))
    gqa = draw(st.sampled_from([1, 2, 4, 8, n_heads]))
    n_kv = max(1, n_heads // gqa)
    vocab = draw(log_ints(256, 262144))
    ffn = draw(log_ints(64, 65536))
    kw = {}
    if kind in ("moe", "mla"):
        moe = kind == "moe" or draw(st.booleans())
        if moe:
            n_exp = draw(st.sampled_from([2, 4, 8, 16, 64, 128, 256, 512]))
            top_k = draw(st.one_of(st.integers(1, min(n_exp, 16)), st.just(n_exp)))
            kw.update(n_moe_layers=draw(st.integers(1, n_layers)), n_experts=n_exp,
                      top_k=top_k, expert_ffn=draw(log_ints(64, 16384)),
                      shared_ffn=draw(st.sampled_from([0, 0, 512, 2048, 8192])))
    if kind == "mla":
        kw["mla"] = (draw(st.sampled_from([128, 512])), draw(st.sampled_from([32, 64])),
                     draw(st.sampled_from([64, 128])), draw(st.sampled_from([64, 128])))
    if draw(st.booleans()):
        kw.update(window=draw(log_ints(16, 16384)),
                  n_window_layers=draw(st.integers(1, n_layers)), chunked=draw(st.booleans()))
    md = build_model(n_layers=n_layers, d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv,
                     head_dim=head_dim, ffn=ffn, vocab=vocab, tied=draw(st.booleans()),
                     max_context=draw(max_contexts), **kw)
    assert set(md) == set(MODEL_FIELDS)
    return md


@st.composite
def raw_models(draw) -> dict:
    """Model rows with independently drawn fields (still non-negative and self-consistent in the
    counts the spec divides by), to reach corner rules: window 0 with windowed KV elements
    (``min(x, W)`` -> ``x``), ``n_kv_heads = 0``, ``k >= E``, zero attention or activations,
    head counts no power of two divides."""
    n_layers = draw(log_ints(1, 200))
    n_exp = draw(st.sampled_from([0, 0, 1, 2, 8, 64, 256]))
    cnt = log_floats(1.0, 1e11)
    p_lin = draw(cnt)
    window = float(draw(st.one_of(st.just(0), log_ints(1, 100000))))
    md = {
        "n_layers": float(n_layers), "d_model": float(draw(log_ints(1, 32768))),
        "vocab_size": float(draw(log_ints(1, 300000))),
        "params_linear": p_lin, "params_attention": p_lin * draw(st.floats(0.0, 1.0)),
        "params_head": draw(zero_or(cnt)),
        "params_embed_only": draw(zero_or(cnt)),
        "params_expert": draw(cnt) if n_exp else 0.0,
        "n_moe_layers": float(draw(st.integers(1, n_layers))) if n_exp else 0.0,
        "n_experts": float(n_exp),
        "experts_per_token": float(draw(st.integers(1, max(1, n_exp + 1)))) if n_exp else 0.0,
        "kv_elems_full": draw(zero_or(log_floats(1.0, 1e6))),
        "kv_elems_window": draw(zero_or(log_floats(1.0, 1e6))),
        "window": window,
        "window_chunked": float(draw(st.booleans())) if window else 0.0,
        "kv_tp_shardable": float(draw(st.booleans())),
        "n_kv_heads": float(draw(st.integers(0, 128))),
        "attn_flops_full_decode": draw(zero_or(log_floats(1.0, 1e8))),
        "attn_flops_window_decode": draw(zero_or(log_floats(1.0, 1e8))),
        "attn_flops_full_prefill": draw(zero_or(log_floats(1.0, 1e8))),
        "attn_flops_window_prefill": draw(zero_or(log_floats(1.0, 1e8))),
        "act_elems": draw(zero_or(log_floats(1.0, 1e8))),
        "n_heads": float(draw(st.sampled_from([1, 2, 3, 5, 8, 12, 16, 28, 64, 128]))),
        "max_context": float(draw(max_contexts)),
    }
    assert set(md) == set(MODEL_FIELDS)
    return md


def model_bytes(md: dict, pr: dict | None = None) -> float:
    """Total weight bytes of a model (all parameter groups), for sizing devices."""
    wb = 2.0 if pr is None else pr["weight_bytes"]
    eb = 2.0 if pr is None else pr["embed_bytes"]
    awb = wb if pr is None else pr["attn_weight_bytes"]
    return (wb * (md["params_linear"] + md["n_moe_layers"] * md["n_experts"] * md["params_expert"])
            + (awb - wb) * md["params_attention"]
            + eb * (md["params_head"] + md["params_embed_only"]))


# ------------------------------------------------------------------------------------ precisions
@st.composite
def precisions(draw) -> dict:
    wb = draw(st.sampled_from([0.5, 1.0, 2.0, 4.0]))
    pr = {"weight_bytes": wb, "act_bytes": draw(st.sampled_from([1.0, 2.0, 4.0])),
          "kv_bytes": draw(st.sampled_from([0.5, 1.0, 2.0, 4.0])),
          "embed_bytes": max(2.0, wb),
          # sometimes the attention projections kept at 16 bits (a -attn16 scheme)
          "attn_weight_bytes": draw(st.sampled_from([wb, max(2.0, wb)]))}
    assert set(pr) == set(PRECISION_FIELDS)
    return pr


# --------------------------------------------------------------------------------------- layouts
offloads = rarely(None, st.just(0.0), one_in=3).flatmap(
    lambda v: st.floats(0.01, 0.99) if v is None else st.just(v))
spills = rarely(1.0, st.just(0.0), one_in=4)


def _offload_spill(draw, ly: dict, offload, spill) -> dict:
    ly["offload"] = draw(offloads) if offload is None else float(offload)
    ly["spill"] = draw(spills) if spill is None else float(spill)
    assert set(ly) == set(LAYOUT_FIELDS)
    return ly


@st.composite
def layouts(draw, offload=None, spill=None) -> dict:
    """tp / pp / ep / dp / offload / spill, including combinations a model may reject (section 2)."""
    ly = {"tp": float(draw(st.sampled_from([1, 1, 2, 4, 8, 16, 3]))),
          "pp": float(draw(st.sampled_from([1, 1, 2, 3, 4, 8]))),
          "ep": float(draw(st.sampled_from([1, 1, 2, 4, 8, 16]))),
          "dp": float(draw(st.sampled_from([1, 2, 3, 8])))}
    return _offload_spill(draw, ly, offload, spill)


@st.composite
def layouts_for(draw, md: dict, offload=None, spill=None, padded: bool = False) -> dict:
    """A layout the model accepts structurally (tp | heads, ep | experts, pp <= layers);
    ``padded``: tp need not divide the heads (for a platform that pads them)."""
    heads, n_exp, n_layers = int(md["n_heads"]), int(md["n_experts"]), int(md["n_layers"])
    tps = [t for t in (1, 2, 4, 8, 16, 3) if padded or heads % t == 0]
    eps = [1] + [e for e in (2, 4, 8, 16) if n_exp and n_exp % e == 0]
    pps = [p for p in (1, 2, 3, 4, 8, 16) if p <= n_layers]
    ly = {"tp": float(draw(st.sampled_from(tps))), "pp": float(draw(st.sampled_from(pps))),
          "ep": float(draw(st.sampled_from(eps))),
          "dp": float(draw(st.sampled_from([1, 2, 3, 8])))}
    return _offload_spill(draw, ly, offload, spill)


# -------------------------------------------------------------------------------------- workload
batches = log_ints(1, 4096)
#: serving modes (kernels.params.MODE_*): static, continuous at a concurrency, at a rate
modes = st.sampled_from([0.0, 1.0, 2.0])
contexts = log_ints(1, 131072)
outputs = log_ints(1, 8192)
peaks = log_floats(1e12, 1e18)


# --------------------------------------------------------------------------------------- packing
def hw_table(rows: list[dict] | dict) -> np.ndarray:
    return _pack(rows, HW_FIELDS, "platform")


def model_table(rows: list[dict] | dict) -> np.ndarray:
    return _pack(rows, MODEL_FIELDS, "model")


def precision_table(rows: list[dict] | dict) -> np.ndarray:
    return _pack(rows, PRECISION_FIELDS, "precision")


def layout_table(rows: list[dict] | dict) -> np.ndarray:
    return _pack(rows, LAYOUT_FIELDS, "layout")


def px_table(rows: list[list[dict]]) -> np.ndarray:
    """The (platform, precision, field) float64 table from ``rows[platform][precision]`` dicts."""
    return np.ascontiguousarray(
        np.array([[[r[f] for f in PX_FIELDS] for r in per_platform] for per_platform in rows],
                 dtype=np.float64).reshape(len(rows), -1, len(PX_FIELDS)))


def _pack(rows, fields, what):
    rows = [rows] if isinstance(rows, dict) else list(rows)
    return pack({f: np.array([r[f] for r in rows], dtype=np.float64) for f in fields}, fields, what)


# -------------------------------------------------------------------------------------- scenarios
@st.composite
def device_for(draw, md: dict, **kw) -> dict:
    """A platform whose total capacity is within 1e-2..1e2 x the model's bf16 weight bytes."""
    size = max(model_bytes(md), 1e6)
    return draw(devices(capacity=(size * 1e-2, size * 1e2), **kw))


@st.composite
def point(draw, raw: bool = False, **layout_kw) -> dict:
    """One random point: dicts hw (platform), px, md, pr, ly, the workload and the serving mode.
    ``raw``: also draw models from :func:`raw_models`."""
    md = draw(st.one_of(models(), raw_models()) if raw else models())
    hw = draw(rarely(None, device_for(md), one_in=3).flatmap(
        lambda v: devices() if v is None else st.just(v)))
    ly = draw(rarely(None, layouts_for(md, **layout_kw), one_in=3).flatmap(
        lambda v: layouts(**layout_kw) if v is None else st.just(v)))
    return {"hw": hw, "px": draw(px_values()), "md": md, "pr": draw(precisions()), "ly": ly,
            "batch": draw(batches), "context": draw(contexts), "output_len": draw(outputs),
            "mode": draw(modes)}


@st.composite
def scenario(draw, max_axis: int = 2) -> dict:
    """A small Cartesian grid: lists of dicts per table axis (``px[platform][precision]``) and
    1-D workload arrays."""
    n = st.integers(1, max_axis)
    mds = [draw(models()) for _ in range(draw(n))]
    hws = [draw(st.one_of(device_for(draw(st.sampled_from(mds))), devices()))
           for _ in range(draw(n))]
    prs = [draw(precisions()) for _ in range(draw(n))]
    lys = [draw(st.one_of(layouts_for(draw(st.sampled_from(mds))), layouts()))
           for _ in range(draw(n))]
    pxs = [[draw(px_values()) for _ in prs] for _ in hws]
    return {"hw": hws, "md": mds, "pr": prs, "ly": lys, "px": pxs,
            "batch": np.array([draw(batches) for _ in range(draw(n))], dtype=np.float64),
            "context": np.array([draw(contexts) for _ in range(draw(n))], dtype=np.float64),
            "output_len": np.array([draw(outputs) for _ in range(draw(n))], dtype=np.float64)}


# ------------------------------------------------------------------------------ kernel plumbing
def evaluate(points: list[dict]) -> list[dict[str, float]]:
    """Evaluate point dicts (keys hw, px, md, pr, ly, batch, context, output_len, optional
    serving mode) with ``kernels.evaluate_points`` in one call; one ``{metric: float}`` per
    point.

    Every point gets its own table rows, and the px table is ``(n, n, fields)`` with the point's
    row on the diagonal and decoys elsewhere, so that the kernel's row gathering is exercised too.
    """
    import kernels  # local: keep this module importable without compiling anything
    from kernels.params import METRICS

    n = len(points)
    decoy = {"peak": 7.0e13, "eff_prefill": 0.31, "eff_decode": 0.37, "kv_factor": 0.5,
             "weight_factor": 0.7, "attn16_ratio_prefill": 2.1, "attn16_ratio_decode": 0.6}
    pxs = [[p["px"] if i == j else decoy for j in range(n)] for i, p in enumerate(points)]
    idx = np.arange(n, dtype=np.int64)
    out = kernels.evaluate_points(
        hw_table([p["hw"] for p in points]), model_table([p["md"] for p in points]),
        px_table(pxs), precision_table([p["pr"] for p in points]),
        layout_table([p["ly"] for p in points]), idx, idx, idx, idx,
        np.array([p["batch"] for p in points], dtype=np.float64),
        np.array([p["context"] for p in points], dtype=np.float64),
        np.array([p["output_len"] for p in points], dtype=np.float64),
        mode=np.array([float(p.get("mode", 0.0)) for p in points]))
    return [{name: float(out[j, i]) for j, name in enumerate(METRICS)} for i in range(n)]


def evaluate_one(p: dict) -> dict[str, float]:
    return evaluate([p])[0]


def with_capacity_for(p: dict, factor: float = 1.01, device_factor: float | None = None) -> dict:
    """A copy of point ``p`` whose device tiers (scaled together) and host tier are large enough
    for it to fit: memory_per_device is independent of the tier sizes, so read it from the kernel
    and scale. ``p`` must pass section 2's codes 1-8. ``device_factor`` (for a layout that may
    spill): size the device tiers to this multiple of the point's bytes instead, even below 1."""
    mem = evaluate_one(p)["memory_per_device"]
    assert np.isfinite(mem), "point is incompatible"
    hw = dict(p["hw"])
    usable = hw["capacity_fraction"] * sum(hw[f"tier{i}_capacity"] for i in range(3))
    if device_factor is not None and p["ly"]["spill"]:
        scale = device_factor * mem / usable
    else:
        scale = max(1.0, factor * mem / usable)
    for i in range(3):
        hw[f"tier{i}_capacity"] *= scale
    if p["ly"]["offload"] > 0 or p["ly"]["spill"]:
        hw["host_capacity"] = max(hw["host_capacity"], factor * mem)
        hw["host_bandwidth"] = max(hw["host_bandwidth"], 1e9)
        hw["host_efficiency"] = max(hw["host_efficiency"], 0.05)
    q = {**p, "hw": hw}
    # memory_per_device is that of the sequences that run at once: a static batch beyond memory
    # runs in waves (section 11) and reports one wave's bytes; grow the tiers until it is whole
    # (the host tier where the device tiers were sized to spill: they keep their size)
    spilling = device_factor is not None and p["ly"]["spill"]
    for _ in range(8):
        r = evaluate_one(q)
        if not (r["concurrency"] < q["batch"]) or q.get("mode", 0.0) != 0.0:
            break
        grow = 2.0 * q["batch"] / max(r["concurrency"], 1.0)
        if spilling:
            grown = {"host_capacity": q["hw"]["host_capacity"] * grow}
        else:
            grown = {f"tier{i}_capacity": q["hw"][f"tier{i}_capacity"] * grow for i in range(3)}
        q = {**q, "hw": {**q["hw"], **grown}}
    return q


def variant(p: dict, **changes) -> dict:
    """A copy of point ``p`` with top-level values or nested fields changed: ``hw=dict(...)``,
    ``md=dict(...)`` etc. are merged into the nested dicts; scalars replace."""
    q = dict(p)
    for key, val in changes.items():
        q[key] = {**p[key], **val} if isinstance(val, dict) else val
    return q


@st.composite
def fitting_points(draw, model_kind=None, n_tiers=None, host=None, offload=None, spill=None,
                   layout=None, ideal=None, modes=(0.0,)) -> dict:
    """A point that passes section 2's codes 1-8 (supported engine, positive peak, structurally
    compatible layout, host tier whenever offloading or spilling, prompt + output within the
    window, batch within the cap) whose device is sized so that it fits; ``layout`` overrides
    layout fields, ``ideal`` selects the ideal engine, ``modes`` the serving modes drawn (static
    batches by default: the closed forms of sections 7-11; continuous batching's properties are
    in tests/test_serving.py, and tests that hold in both draw both)."""
    md = draw(models(model_kind))
    padded = draw(st.booleans())
    ly = draw(layouts_for(md, offload=offload, spill=spill, padded=padded))
    if layout:
        ly.update({k: float(v) for k, v in layout.items()})
    has_host = True if (ly["offload"] > 0 or ly["spill"]) else host
    hw = draw(device_for(md, n_tiers=n_tiers, host=has_host, ideal=ideal))
    hw["supported"] = 1.0
    if padded:
        hw["pads_heads"] = 1.0
    p = {"hw": hw, "px": draw(px_values(peak=draw(peaks))), "md": md, "pr": draw(precisions()),
         "ly": ly, "batch": draw(batches), "context": draw(contexts), "output_len": draw(outputs),
         "mode": draw(st.sampled_from(modes))}  # a rate may saturate: see rate tests
    hw["max_batch"] = max(hw["max_batch"], float(p["batch"]))
    md["max_context"] = max(md["max_context"], float(p["context"] + p["output_len"]))
    return with_capacity_for(p, factor=draw(st.floats(1.01, 4.0)),
                             device_factor=draw(st.one_of(st.none(), st.floats(0.05, 1.5))))


# ------------------------------------------------------------------- HF config.json (grids.models)
#: model_types with their own config semantics in grids.models (plus an unknown one)
CONFIG_KINDS = ("llama", "mistral", "mixtral", "qwen2", "qwen3_moe", "deepseek_v3", "gemma",
                "gemma2", "gemma3_text", "cohere2", "gpt_oss", "llama4_text", "gptj", "bloom",
                "falcon", "nemotron-nas", "my_new_arch")


@st.composite
def hf_configs(draw, kind: str | None = None) -> dict:
    """A valid ``config.json`` dict of one of :data:`CONFIG_KINDS`, small enough to parse fast.

    Fields the model_type has defaults for are sometimes left out, so the defaults are exercised.
    """
    kind = kind or draw(st.sampled_from(CONFIG_KINDS))
    n_heads = draw(st.sampled_from([1, 2, 4, 8, 12]))
    n_kv = draw(st.sampled_from([h for h in (1, 2, 4, n_heads) if n_heads % h == 0]))
    head_dim = draw(st.sampled_from([8, 16, 64]))
    n_layers = draw(st.integers(1, 12))
    maybe = lambda: draw(st.booleans())  # noqa: E731
    cfg: dict = {"model_type": kind, "hidden_size": n_heads * head_dim,
                 "num_hidden_layers": n_layers, "num_attention_heads": n_heads,
                 "num_key_value_heads": n_kv, "vocab_size": draw(st.integers(1, 5000)),
                 "max_position_embeddings": draw(log_ints(16, 1 << 20)),
                 "intermediate_size": draw(st.integers(1, 512))}
    if maybe():
        cfg["tie_word_embeddings"] = maybe()
    if kind in ("mixtral", "qwen3_moe", "deepseek_v3", "llama4_text", "gpt_oss"):
        n_exp = draw(st.integers(1, 16))
        cfg.update(num_local_experts=n_exp, num_experts_per_tok=draw(st.integers(1, n_exp)))
        if maybe():
            cfg["moe_intermediate_size"] = draw(st.integers(1, 256))
        if maybe():
            cfg["first_k_dense_replace"] = draw(st.integers(0, n_layers))
    if kind == "deepseek_v3" and maybe():
        cfg.update(kv_lora_rank=draw(st.integers(1, 64)), q_lora_rank=draw(st.sampled_from([None, 32])),
                   qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16)
    if kind in ("mistral", "qwen2", "gemma2", "gemma3_text", "cohere2") and maybe():
        cfg["sliding_window"] = draw(st.one_of(st.none(), log_ints(1, 1 << 16)))
    if kind == "qwen2" and maybe():
        cfg["use_sliding_window"] = maybe()
        cfg["max_window_layers"] = draw(st.integers(0, n_layers))
    if kind in ("gemma3_text", "cohere2") and maybe():
        cfg["sliding_window_pattern"] = draw(st.integers(1, 8))
    if kind == "gpt_oss" and maybe():
        cfg["sliding_window"] = 128
        cfg["layer_types"] = draw(st.lists(st.sampled_from(["sliding_attention", "full_attention"]),
                                           min_size=n_layers, max_size=n_layers))
    if kind == "llama4_text":
        if maybe():
            cfg["attention_chunk_size"] = draw(log_ints(1, 1 << 16))
        if maybe():
            cfg["no_rope_layer_interval"] = draw(st.integers(1, 6))
    if kind in ("gptj", "bloom"):
        cfg.pop("num_key_value_heads")
        if maybe():
            cfg.pop("intermediate_size")
    if kind == "falcon":
        cfg.pop("num_key_value_heads")
        cfg.update(new_decoder_architecture=maybe(), num_kv_heads=n_kv, bias=maybe())
        if maybe():
            cfg.pop("max_position_embeddings")
    if kind == "nemotron-nas":
        cfg.pop("num_key_value_heads")
        groups = [g for g in (1, 2, 4) if n_heads % g == 0]
        attention = st.one_of(st.just({"no_op": True}), st.just({"replace_with_linear": True}),
                              st.sampled_from(groups).map(lambda g: {"n_heads_in_group": g}))
        ffn = st.one_of(st.just({"no_op": True}), st.floats(0.1, 8.0).map(lambda m: {"ffn_mult": m}))
        cfg["block_configs"] = draw(st.lists(st.fixed_dictionaries({"attention": attention,
                                                                    "ffn": ffn}),
                                             min_size=n_layers, max_size=n_layers))
    if maybe():
        factor = draw(st.floats(1.0, 64.0))
        cfg["rope_scaling"] = draw(st.sampled_from([
            {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": 4096},
            {"type": "linear", "factor": factor}, {"rope_type": "llama3", "factor": factor},
            {"rope_type": "dynamic", "factor": factor}, {"rope_type": "longrope"}]))
    if maybe():  # a multimodal wrapper around the decoder
        cfg = {"model_type": "wrapper_of_" + kind, "text_config": cfg}
    return cfg


#: values a corrupted config field may take: every JSON type, huge and non-finite numbers
junk_values = st.one_of(
    st.none(), st.booleans(), st.integers(-10, 10), st.integers(-(10**6), -1),
    st.integers(2**31 + 1, 10**400), st.integers(-(10**400), -(2**63)),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e15, 1e300, 0.5, -0.0]),
    st.text(max_size=6), st.lists(st.one_of(st.integers(-3, 3), st.text(max_size=2)), max_size=4),
    st.lists(st.lists(st.integers(), max_size=2), max_size=3),
    st.dictionaries(st.text(max_size=4), st.one_of(st.integers(), st.none(), st.text(max_size=3)),
                    max_size=3),
    st.just({"rope_type": "yarn", "factor": "x"}), st.just({"full_attention": 5}))

#: fields a corruption may hit besides those of the drawn config
CONFIG_FIELDS = (
    "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
    "head_dim", "vocab_size", "max_position_embeddings", "intermediate_size", "tie_word_embeddings",
    "num_local_experts", "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
    "shared_expert_intermediate_size", "first_k_dense_replace", "moe_layers", "mlp_only_layers",
    "interleave_moe_layer_step", "decoder_sparse_step", "kv_lora_rank", "q_lora_rank",
    "qk_rope_head_dim", "sliding_window", "use_sliding_window", "max_window_layers",
    "layer_types", "attention_chunk_size", "no_rope_layers", "no_rope_layer_interval",
    "sliding_window_pattern", "attention_bias", "rope_scaling", "rope_parameters",
    "block_configs", "text_config", "num_kv_heads", "new_decoder_architecture", "bias",
    "parallel_attn", "num_ln_in_parallel_attn", "ffn_hidden_size", "n_inner", "n_embd")


@st.composite
def corrupted_configs(draw) -> tuple[dict, list[str]]:
    """A valid config with 1-4 fields (of it, or of :data:`CONFIG_FIELDS`) set to junk; returns
    the config and the corrupted field names."""
    cfg = draw(hf_configs())
    inner = cfg.get("text_config", cfg)
    keys = draw(st.lists(st.sampled_from(sorted(set(inner) | set(CONFIG_FIELDS))), min_size=1,
                         max_size=4, unique=True))
    for key in keys:
        inner[key] = draw(junk_values)
    return cfg, keys
