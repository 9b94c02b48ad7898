"""Per-point roofline physics: the one place where the model's equations are written.

Every function here is a numba scalar helper, inlined into both entry points of ``kernels.grid``
(the Cartesian grid and the point list), so the physics exists once. ``docs/model.md`` states every
equation with its source; the comments below name the equation numbers and sections used there.

A point is evaluated in three stages by the axes each quantity depends on, so that the Cartesian
kernel computes each quantity once per distinct value of its axes while the point-list kernel
chains them per point: :func:`stage_static` (platform, model, batch, precision, layout),
:func:`stage_prompt` (+ prompt length), :func:`stage_point` (+ output length). The stages pass
named tuples (:data:`Static`, :data:`Decode`, :data:`Prompt`); every expression is the same whichever
way the stages are called, so the results are bit-identical.

Units: bytes [B], bandwidth [B/s], FLOP/s, time [s], power [W], money [USD]; counts are plain
numbers.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from kernels.accelerate import scalar_jit
from kernels.params import BOUND_INFEASIBLE, HW, LY, MD, PR, PX, M, R

# column indices as module constants (numba freezes globals at compile time)
H_T0C, H_T0B, H_T0E, H_T0K = (HW["tier0_capacity"], HW["tier0_bandwidth"],
                              HW["tier0_efficiency"], HW["tier0_kind"])
H_T1C, H_T1B, H_T1E, H_T1K = (HW["tier1_capacity"], HW["tier1_bandwidth"],
                              HW["tier1_efficiency"], HW["tier1_kind"])
H_T2C, H_T2B, H_T2E, H_T2K = (HW["tier2_capacity"], HW["tier2_bandwidth"],
                              HW["tier2_efficiency"], HW["tier2_kind"])
H_HC, H_HB, H_HE = HW["host_capacity"], HW["host_bandwidth"], HW["host_efficiency"]
H_PKG, H_PBW, H_PLAT = HW["package_size"], HW["package_bandwidth"], HW["package_latency"]
H_DOM, H_LBW, H_LLAT = HW["domain_size"], HW["link_bandwidth"], HW["link_latency"]
H_SBW, H_SLAT = HW["scaleout_bandwidth"], HW["scaleout_latency"]
H_TDP, H_IDLE, H_HOSTP = HW["tdp"], HW["idle"], HW["host_power"]
H_CAPF, H_JIT = HW["capacity_fraction"], HW["jitter"]
H_OVL, H_OVI, H_OVR = HW["layer_overhead"], HW["iteration_overhead"], HW["request_overhead"]
H_CB, H_LEFF, H_CLAT, H_OV = (HW["comm_bytes"], HW["link_efficiency"],
                              HW["collective_latency"], HW["comm_overlap"])
H_BCAP, H_CHUNK, H_PADS = HW["max_batch"], HW["prefill_chunk"], HW["pads_heads"]
H_SPK, H_SPA, H_SPC = HW["spec_tokens"], HW["spec_acceptance"], HW["spec_draft_cost"]
H_SUP, H_CFIX, H_CEN = HW["supported"], HW["cost_fixed"], HW["cost_energy"]

X_PEAK, X_EPRE, X_EDEC, X_GKV, X_GW = (PX["peak"], PX["eff_prefill"], PX["eff_decode"],
                                       PX["kv_factor"], PX["weight_factor"])

M_L, M_D, M_V = MD["n_layers"], MD["d_model"], MD["vocab_size"]
M_PLIN, M_PATT, M_PHEAD, M_PEMB, M_PEXP = (MD["params_linear"], MD["params_attention"],
                                           MD["params_head"], MD["params_embed_only"],
                                           MD["params_expert"])
M_NMOE, M_NEXP, M_TOPK = MD["n_moe_layers"], MD["n_experts"], MD["experts_per_token"]
M_KVF, M_KVW, M_WIN, M_CHK = (MD["kv_elems_full"], MD["kv_elems_window"], MD["window"],
                              MD["window_chunked"])
M_KVSH, M_NKV = MD["kv_tp_shardable"], MD["n_kv_heads"]
M_AFD, M_AWD, M_AFP, M_AWP = (MD["attn_flops_full_decode"], MD["attn_flops_window_decode"],
                              MD["attn_flops_full_prefill"], MD["attn_flops_window_prefill"])
M_ACT, M_H, M_CTX = MD["act_elems"], MD["n_heads"], MD["max_context"]

P_WB, P_AB, P_KVB, P_EB = PR["weight_bytes"], PR["act_bytes"], PR["kv_bytes"], PR["embed_bytes"]
L_TP, L_PP, L_EP, L_DP, L_OFF, L_SPILL = (LY["tp"], LY["pp"], LY["ep"], LY["dp"], LY["offload"],
                                          LY["spill"])

NAN = np.nan
O_TTFT, O_TPOT, O_E2E, O_THR, O_TTHR, O_THRD = (M["ttft"], M["tpot"], M["e2e_latency"],
                                                M["throughput"], M["total_throughput"],
                                                M["throughput_per_device"])
O_TPJ, O_TPJS, O_PWR, O_SPWR = (M["tokens_per_joule"], M["tokens_per_joule_system"], M["power"],
                                M["system_power"])
O_CPM, O_TPD = M["cost_per_mtok"], M["tokens_per_dollar"]
O_MEM, O_HOSTF, O_FITS, O_WHY, O_BOUND = (M["memory_per_device"], M["host_fraction"], M["fits"],
                                          M["infeasible_reason"], M["bound"])
O_AI, O_MFU, O_MBU, O_COV, O_MIND = (M["arithmetic_intensity"], M["mfu"], M["mbu"],
                                     M["latency_cov"], M["min_devices"])
R_ENGINE, R_DTYPE, R_HEADS, R_EXPERTS, R_LAYERS, R_HOST = (
    R["engine_unsupported"], R["no_compute_dtype"], R["tp_heads"], R["ep_experts"],
    R["pp_layers"], R["no_host_tier"])
R_CONTEXT, R_BATCH, R_MEMORY, R_HOSTCAP = (R["context_window"], R["batch_cap"], R["memory"],
                                           R["host_capacity"])

#: what :func:`stage_static` passes on: per (platform, model, batch, precision, layout)
Static = namedtuple("Static", (
    "a_pad", "p_lin", "stage_layers", "sf", "moe_stage", "w_read_end",
    "dense_read_dev", "experts_dev", "weights_dev", "dense_read_on", "experts_on", "stored_on",
    "host_bytes", "kv_frac", "mb", "b_m", "g_m", "g_all", "rounds",
    "act_per_token_layer", "logits_dev", "w_replica", "logits_replica", "dev_cap",
    "cbytes", "bw_tp", "lat_tp", "bw_ep", "lat_ep", "t_ovh", "dec", "dec_spec"))
#: the decode step's parts that do not depend on the KV length, for one verification of ``q``
#: tokens per sequence (q = 1 without speculative decoding)
Decode = namedtuple("Decode", (
    "flops_w", "flops_exp", "experts_read", "act_read", "host_traffic", "place", "t_comm",
    "t_a2a", "t_hops", "r_imb", "q"))
#: what :func:`stage_prompt` passes on: + the prompt length
Prompt = namedtuple("Prompt", (
    "act_dev", "act_replica", "fl_pre", "t_comp_pre", "kv_write", "act_pre", "pre_place",
    "host_traffic_pre", "t_comm_pre", "t_hops_pre", "t_ovh_pre", "n_chunks"))


# ------------------------------------------------------------------------------------------------
# scalar building blocks


@scalar_jit
def experts_touched_fraction(tokens, k, e):
    """Expected fraction of E experts touched by ``tokens`` tokens each routed to k of them.

    Uniform routing: an expert is missed by one token with probability (1 - k/E), so the expected
    number of distinct experts is E (1 - (1 - k/E)^T)  [model.md eq. (7)]. Returns that / E.
    """
    if e <= 0.0:
        return 0.0
    if k >= e:
        return 1.0
    return 1.0 - math.exp(tokens * math.log1p(-k / e))


@scalar_jit
def ep_imbalance(assignments, ep):
    """Load imbalance under expert parallelism: (E[max load], std[max load]) / mean load.

    ``assignments`` token-to-expert assignments land uniformly on ``ep`` ranks: the loads are
    multinomial with mean n/ep and sigma = sqrt(n (1/ep)(1 - 1/ep)). The expected maximum of ep such
    loads is approximated by the Gumbel limit mean + sigma sqrt(2 ln ep), its standard deviation by
    sigma pi / sqrt(12 ln ep)  [model.md eq. (12)]. The factor is capped at ep (all load on one rank).
    Returns (factor >= 1, relative std of the maximum).
    """
    if ep <= 1.0 or assignments <= 0.0:
        return 1.0, 0.0
    mean = assignments / ep
    sigma = math.sqrt(assignments * (1.0 / ep) * (1.0 - 1.0 / ep))
    lg = math.log(ep)
    emax = mean + sigma * math.sqrt(2.0 * lg)
    factor = min(emax / mean, ep)
    smax = sigma * math.pi / math.sqrt(12.0 * lg)
    return factor, smax / (factor * mean)


@scalar_jit
def chunk_prefix(n, w):
    """F(n) = sum_{i=0..n-1} ((i mod w) + 1): keys attended by n tokens of chunked attention with
    chunks of w tokens (token i attends to its own chunk up to itself)  [model.md section 7]."""
    q = math.floor(n / w)
    r = n - q * w
    return q * 0.5 * w * (w + 1.0) + 0.5 * r * (r + 1.0)


@scalar_jit
def window_pairs(s, w, chunked):
    """(query, key) pairs of causal attention over s tokens with window w (0 = none): sliding
    sum_{i=1..s} min(i, w); chunked F(s)  [model.md eq. (5)]."""
    if w <= 0.0 or s <= w:
        return 0.5 * s * (s + 1.0)
    if chunked > 0.5:
        return chunk_prefix(s, w)
    return 0.5 * w * (w + 1.0) + (s - w) * w


@scalar_jit
def window_mean_length(context, output_len, w, chunked):
    """Mean attended length of a windowed layer over the generation of ``output_len`` tokens after
    a prompt of ``context``: sliding min(c, w) at the mean length c; chunked the exact mean
    (F(S + O) - F(S)) / O  [model.md section 7]."""
    c = context + 0.5 * output_len
    if w <= 0.0:
        return c
    if chunked > 0.5:
        return (chunk_prefix(context + output_len, w) - chunk_prefix(context, w)) / output_len
    return min(c, w)


@scalar_jit
def window_capacity(x, w):
    """Tokens of KV a windowed layer keeps at sequence length x (sliding or chunked: at most w)."""
    return min(x, w) if w > 0.0 else x


@scalar_jit
def ring_allreduce_time(nbytes, n, bw, lat):
    """Ring all-reduce of ``nbytes`` over n devices: 2 (n-1)/n bytes/bw + 2 (n-1) lat  [eq. (9)]."""
    if n <= 1.0:
        return 0.0
    return 2.0 * (n - 1.0) / n * nbytes / bw + 2.0 * (n - 1.0) * lat


@scalar_jit
def link_for(hw, n):
    """(bandwidth, latency) of the innermost interconnect level holding ``n`` contiguous devices:
    the package, the scale-up domain, or scale-out, with the engine's link efficiency and
    collective latency applied  [model.md section 5]."""
    if hw[H_PKG] > 1.0 and n <= hw[H_PKG]:
        bw, lat = hw[H_PBW], hw[H_PLAT]
    elif n <= hw[H_DOM]:
        bw, lat = hw[H_LBW], hw[H_LLAT]
    else:
        bw, lat = hw[H_SBW], hw[H_SLAT]
    return bw * hw[H_LEFF], lat + hw[H_CLAT]


@scalar_jit
def hops_leaving(pp, span, block):
    """How many of the pp - 1 pipeline hops leave a block of ``block`` contiguous devices, when a
    stage spans ``span`` devices: hop q crosses iff q span mod block = 0  [model.md eq. (11)]."""
    if block <= 1.0:
        return pp - 1.0
    g = math.gcd(int(span), int(block))
    return math.floor((pp - 1.0) / (block / g))


@scalar_jit
def hops_time(hw, pp, span, nbytes):
    """Total time of the pp - 1 pipeline hops of ``nbytes`` each, every hop on the level it
    crosses  [model.md eq. (11)]."""
    if pp <= 1.0:
        return 0.0
    eff, clat = hw[H_LEFF], hw[H_CLAT]
    n_out = hops_leaving(pp, span, hw[H_DOM])  # leave the scale-up domain: scale-out
    t = n_out * (nbytes / (hw[H_SBW] * eff) + hw[H_SLAT] + clat)
    if hw[H_PKG] > 1.0:
        n_pkg = hops_leaving(pp, span, hw[H_PKG])
        t += (n_pkg - n_out) * (nbytes / (hw[H_LBW] * eff) + hw[H_LLAT] + clat)
        t += (pp - 1.0 - n_pkg) * (nbytes / (hw[H_PBW] * eff) + hw[H_PLAT] + clat)
    else:
        t += (pp - 1.0 - n_out) * (nbytes / (hw[H_LBW] * eff) + hw[H_LLAT] + clat)
    return t


@scalar_jit
def stage_time(t_comp, t_mem, t_comm, overlap, t_ovh):
    """One stage pass: T + t_comm - ov min(t_comm, T) + overheads, T = max(t_comp, t_mem)
    [model.md section 5]."""
    top = max(t_comp, t_mem)
    return top + t_comm - overlap * min(t_comm, top) + t_ovh


# ------------------------------------------------------------------------------------------------
# placement fastest tier first: model.md eq. (8)


@scalar_jit
def _put_segment(hw, size, traffic, factor, st):
    """Place one segment of ``size`` bytes (``traffic`` bytes of it moved, at ``factor`` of the
    tiers' achievable bandwidth) fastest tier first, continuing the placement state ``st``."""
    free0, free1, free2, t_sram, t_dram, t_peak, spill, spill_traffic = st
    if size <= 0.0:
        return st
    rate = traffic / size
    remaining = size
    for t in range(3):
        if remaining <= 0.0:
            break
        if t == 0:
            free, bw, eff, kind = free0, hw[H_T0B], hw[H_T0E], hw[H_T0K]
        elif t == 1:
            free, bw, eff, kind = free1, hw[H_T1B], hw[H_T1E], hw[H_T1K]
        else:
            free, bw, eff, kind = free2, hw[H_T2B], hw[H_T2E], hw[H_T2K]
        if free <= 0.0:
            continue
        put = min(free, remaining)
        remaining -= put
        if t == 0:
            free0 -= put
        elif t == 1:
            free1 -= put
        else:
            free2 -= put
        moved = put * rate
        t_peak += moved / bw
        if kind < 0.5:
            t_sram += moved / (bw * eff * factor)
        else:
            t_dram += moved / (bw * eff * factor)
    if remaining > 0.0:
        spill += remaining
        spill_traffic += remaining * rate
    return free0, free1, free2, t_sram, t_dram, t_peak, spill, spill_traffic


@scalar_jit
def place_begin(hw, seg0, seg1, tr0, tr1, seg_stored, g_w):
    """First half of the placement: the weight segments, which do not depend on the prompt or
    output length (so the grid kernel places them once per platform x model x batch x precision x
    layout): ``seg0`` dense weights read every pass, ``seg1`` expert weights, then ``seg_stored``
    bytes held but not read (the input embedding). ``tr0``/``tr1`` are the bytes of each segment
    moved in the phase; weights stream at ``g_w`` of the tiers' bandwidth. Returns the placement
    state (free bytes per tier, times so far, spill so far) for :func:`place_end`."""
    capf = hw[H_CAPF]
    st = (hw[H_T0C] * capf, hw[H_T1C] * capf, hw[H_T2C] * capf, 0.0, 0.0, 0.0, 0.0, 0.0)
    st = _put_segment(hw, seg0, tr0, g_w, st)
    st = _put_segment(hw, seg1, tr1, g_w, st)
    return _put_segment(hw, seg_stored, 0.0, 1.0, st)


@scalar_jit
def place_end(hw, st, seg_kv, seg_act, tr_kv, tr_act, host_bytes, host_traffic, allow_spill,
              g_kv):
    """Second half of the placement: KV cache (read at ``g_kv`` of the bandwidth) and activations,
    then the host tier. Bytes that do not fit the device tiers spill to the host tier only when
    ``allow_spill``; ``host_bytes`` / ``host_traffic`` are placed there by the offload fraction.
    Returns (reason code: 0, memory or host_capacity; t_sram, t_dram, t_host, time at peak
    bandwidth, host-resident bytes)."""
    st = _put_segment(hw, seg_kv, tr_kv, g_kv, st)
    st = _put_segment(hw, seg_act, tr_act, 1.0, st)
    _, _, _, t_sram, t_dram, t_peak, spill, spill_traffic = st
    code = 0
    t_host = 0.0
    total_host = host_bytes + spill
    if spill > 0.0 and not allow_spill:
        code = R_MEMORY
    elif total_host > 0.0:
        if hw[H_HC] <= 0.0 or total_host > hw[H_HC]:
            code = R_HOSTCAP
        else:
            moved = host_traffic + spill_traffic
            t_host = moved / (hw[H_HB] * hw[H_HE])
            t_peak += moved / hw[H_HB]
    return code, t_sram, t_dram, t_host, t_peak, total_host


# ------------------------------------------------------------------------------------------------
# the three stages of a point


@scalar_jit
def static_reason(hw, md, px, ly, batch):
    """Why a (platform, model, batch, precision, layout) is infeasible before any size is known
    (model.md section 2: codes 1-6 and 8), or 0."""
    tp = ly[L_TP]
    ep = ly[L_EP]
    n_exp = md[M_NEXP]
    if hw[H_SUP] < 0.5:
        return R_ENGINE
    if px[X_PEAK] <= 0.0:
        return R_DTYPE
    if md[M_H] % tp != 0.0 and hw[H_PADS] < 0.5:
        return R_HEADS
    if ep > 1.0 and (n_exp <= 0.0 or n_exp % ep != 0.0):
        return R_EXPERTS
    if ly[L_PP] > md[M_L]:
        return R_LAYERS
    if (ly[L_OFF] > 0.0 or ly[L_SPILL] > 0.5) and hw[H_HC] <= 0.0:
        return R_HOST
    if batch > hw[H_BCAP]:
        return R_BATCH
    return 0


@scalar_jit
def decode_fixed(hw, md, px, pr, ly, q, p_lin, sf, moe_stage, w_read_end, dense_read_dev,
                 experts_dev, dense_read_on, experts_on, stored_on, b_m, g_m, stage_layers,
                 cbytes, bw_tp, lat_tp, bw_ep, lat_ep):
    """The decode step's parts that do not depend on the KV length, for ``q`` tokens per sequence
    (a speculative verification step checks q = k_s + 1)  [model.md sections 6-7]."""
    tp = ly[L_TP]
    pp = ly[L_PP]
    ep = ly[L_EP]
    off = ly[L_OFF]
    topk = md[M_TOPK]
    assign = b_m * q * topk
    imb, r_imb = ep_imbalance(assign, ep)
    u = experts_touched_fraction(b_m * q * imb, topk, md[M_NEXP])
    flops_dense = 2.0 * g_m * q * (p_lin * sf + w_read_end / pr[P_EB]) / tp
    flops_exp = 2.0 * (assign / ep) * imb * md[M_PEXP] * moe_stage / tp
    experts_read = experts_on * u
    act_read = 2.0 * g_m * q * md[M_ACT] * sf * pr[P_AB] / tp
    host_traffic = (dense_read_dev + experts_dev * u) * off
    place = place_begin(hw, dense_read_on, experts_on, dense_read_on, experts_read, stored_on,
                        px[X_GW])
    msg = g_m * q * md[M_D] * cbytes
    t_a2a = 0.0
    if ep > 1.0:
        a2a = g_m * q * topk * md[M_D] * cbytes * (ep - 1.0) / ep * imb / tp
        t_a2a = 2.0 * moe_stage * (a2a / bw_ep + (ep - 1.0) * lat_ep)
    t_comm = 2.0 * stage_layers * ring_allreduce_time(msg, tp, bw_tp, lat_tp) + t_a2a
    t_hops = hops_time(hw, pp, tp * ep, msg)
    return Decode(flops_dense + flops_exp, flops_exp, experts_read, act_read, host_traffic, place,
                  t_comm, t_a2a, t_hops, r_imb, q)


@scalar_jit
def stage_static(hw, md, px, batch, pr, ly):
    """Quantities of one compatible (platform, model, batch, precision, layout): everything that
    depends on neither the prompt nor the output length  [model.md sections 3, 5-7]."""
    tp = ly[L_TP]
    pp = ly[L_PP]
    ep = ly[L_EP]
    off = ly[L_OFF]
    n_layers = md[M_L]
    n_exp = md[M_NEXP]
    wb = pr[P_WB]
    eb = pr[P_EB]

    # ---- head padding and pipeline stages with balanced ends: section 3
    heads = md[M_H]
    a_pad = math.ceil(heads / tp) * tp / heads
    p_lin = md[M_PLIN] + (a_pad - 1.0) * md[M_PATT]
    w_expert_one = md[M_PEXP] * wb  # one expert, one layer
    w_experts_all = md[M_NMOE] * n_exp * w_expert_one
    w_head = md[M_PHEAD] * eb
    w_embed = md[M_PEMB] * eb
    if pp > 1.0:
        w_layer = (wb * p_lin + w_experts_all) / n_layers
        units = n_layers + (w_head + w_embed) / w_layer
        stage_layers = min(n_layers, math.ceil(units / pp))
        w_end = max(0.0, max(w_head, w_embed) - stage_layers * w_layer)
        w_ends_stored = w_end
        w_read_end = w_end
    else:
        stage_layers = n_layers
        w_ends_stored = w_head + w_embed
        w_read_end = w_head
    sf = stage_layers / n_layers  # busiest stage's share of the layers
    moe_stage = md[M_NMOE] * sf

    # ---- sizes per device: eq. (1)
    dense_dev = (wb * p_lin * sf + w_ends_stored) / tp
    dense_read_dev = (wb * p_lin * sf + w_read_end) / tp  # the input embedding is only gathered
    experts_dev = moe_stage * (n_exp / ep) * w_expert_one / tp
    weights_dev = dense_dev + experts_dev
    if md[M_KVSH] > 0.5 and md[M_NKV] > 0.0:
        kv_frac = math.ceil(md[M_NKV] / tp) / md[M_NKV]
    else:
        kv_frac = 1.0

    # ---- whole sequences: eq. (2)
    mb = min(batch, pp)  # micro-batches
    b_m = math.ceil(batch / mb)  # sequences in the largest micro-batch
    g_m = math.ceil(b_m / ep)  # ... on the busiest attention group (EP rank)
    g_all = math.ceil(batch / ep)  # sequences whose KV the busiest rank holds
    rounds = max(mb, pp)
    act_per_token_layer = md[M_ACT] / n_layers
    logits_dev = g_all * md[M_V] * 4.0 / tp
    # replica total for eq. (14): weights + KV + activations + logits, summed in this order
    w_replica = md[M_PLIN] * wb + w_head + w_embed + w_experts_all
    logits_replica = batch * md[M_V] * 4.0
    dev_cap = (hw[H_T0C] + hw[H_T1C] + hw[H_T2C]) * hw[H_CAPF]

    # ---- communication on the link each group spans: section 5
    cbytes = max(hw[H_CB], pr[P_AB])  # engines reduce in at least 16 bit; ideal in the act dtype
    bw_tp, lat_tp = link_for(hw, tp)
    bw_ep, lat_ep = link_for(hw, tp * ep)
    on_device = 1.0 - off
    dense_read_on = dense_read_dev * on_device
    stored_on = (dense_dev - dense_read_dev) * on_device
    experts_on = experts_dev * on_device
    host_bytes = (dense_dev + experts_dev) * off
    t_ovh = stage_layers * hw[H_OVL]

    dec = decode_fixed(hw, md, px, pr, ly, 1.0, p_lin, sf, moe_stage, w_read_end, dense_read_dev,
                       experts_dev, dense_read_on, experts_on, stored_on, b_m, g_m, stage_layers,
                       cbytes, bw_tp, lat_tp, bw_ep, lat_ep)
    if hw[H_SPK] > 0.0:
        dec_spec = decode_fixed(hw, md, px, pr, ly, hw[H_SPK] + 1.0, p_lin, sf, moe_stage,
                                w_read_end, dense_read_dev, experts_dev, dense_read_on,
                                experts_on, stored_on, b_m, g_m, stage_layers, cbytes, bw_tp,
                                lat_tp, bw_ep, lat_ep)
    else:
        dec_spec = dec
    return Static(a_pad, p_lin, stage_layers, sf, moe_stage, w_read_end, dense_read_dev,
                  experts_dev, weights_dev, dense_read_on, experts_on, stored_on, host_bytes,
                  kv_frac, mb, b_m, g_m, g_all, rounds, act_per_token_layer, logits_dev,
                  w_replica, logits_replica, dev_cap, cbytes, bw_tp, lat_tp, bw_ep, lat_ep, t_ovh,
                  dec, dec_spec)


@scalar_jit
def stage_prompt(st, hw, md, px, pr, ly, batch, context):
    """Quantities that depend on the prompt length but not the output length (prefill,
    activation sizes)  [model.md sections 3, 8]."""
    tp = ly[L_TP]
    pp = ly[L_PP]
    ep = ly[L_EP]
    off = ly[L_OFF]
    topk = md[M_TOPK]
    win = md[M_WIN]
    chunk = hw[H_CHUNK]

    tokens_chunk = min(st.g_all * context, chunk)
    act_dev = tokens_chunk * st.act_per_token_layer * pr[P_AB] / tp + st.logits_dev
    act_replica = min(batch * context, chunk) * st.act_per_token_layer * pr[P_AB]

    tok = st.b_m * context
    assign = tok * topk
    imb, _ = ep_imbalance(assign, ep)
    u = experts_touched_fraction(tok * imb, topk, md[M_NEXP])
    n_chunks = max(1.0, math.ceil(st.g_m * context / chunk))
    fl_pre = 2.0 * st.g_m * (context * st.p_lin * st.sf + st.w_read_end / pr[P_EB]) / tp
    fl_pre += 2.0 * (assign / ep) * imb * md[M_PEXP] * st.moe_stage / tp
    fl_pre += st.g_m * (md[M_AFP] * window_pairs(context, 0.0, 0.0)
                        + md[M_AWP] * window_pairs(context, win, md[M_CHK])) \
        * st.sf * st.a_pad / tp
    t_comp_pre = fl_pre / (px[X_PEAK] * px[X_EPRE])
    kv_prompt = md[M_KVF] * context + md[M_KVW] * window_capacity(context, win)
    kv_write = st.g_m * kv_prompt * pr[P_KVB] * st.kv_frac * st.sf
    act_pre = 2.0 * st.g_m * context * md[M_ACT] * st.sf * pr[P_AB] / tp
    pre_place = place_begin(hw, st.dense_read_on, st.experts_on, st.dense_read_on * n_chunks,
                            st.experts_on * u * n_chunks, st.stored_on, px[X_GW])
    host_traffic_pre = (st.dense_read_dev + st.experts_dev * u) * off * n_chunks
    msg = st.g_m * context * md[M_D] * st.cbytes
    t_comm_pre = 2.0 * st.stage_layers * ring_allreduce_time(msg, tp, st.bw_tp, st.lat_tp)
    if ep > 1.0:
        a2a = st.g_m * context * topk * md[M_D] * st.cbytes * (ep - 1.0) / ep * imb / tp
        t_comm_pre += 2.0 * st.moe_stage * (a2a / st.bw_ep + (ep - 1.0) * st.lat_ep)
    t_hops_pre = hops_time(hw, pp, tp * ep, msg)
    t_ovh_pre = st.t_ovh * n_chunks
    return Prompt(act_dev, act_replica, fl_pre, t_comp_pre, kv_write, act_pre, pre_place,
                  host_traffic_pre, t_comm_pre, t_hops_pre, t_ovh_pre, n_chunks)


@scalar_jit
def store_infeasible(out, j, code):
    """Metrics of an infeasible point: NaN, fits = 0, bound = infeasible, the reason code."""
    for k in range(out.shape[0]):
        out[k, j] = NAN
    out[O_FITS, j] = 0.0
    out[O_WHY, j] = code
    out[O_BOUND, j] = BOUND_INFEASIBLE


@scalar_jit
def stage_point(st, pt, hw, md, px, pr, ly, batch, context, output_len, inflight, out, j):
    """The rest of one compatible point, stored in ``out[:, j]``; ``st``, ``pt`` are the results
    of :func:`stage_static` and :func:`stage_prompt` for it. ``inflight``: size the KV cache at the
    mean length of in-flight batching (model.md section 11) instead of a static batch's."""
    tp = ly[L_TP]
    pp = ly[L_PP]
    dp = ly[L_DP]
    win = md[M_WIN]
    kvb = pr[P_KVB]
    peak = px[X_PEAK]

    if context + output_len > md[M_CTX]:
        store_infeasible(out, j, R_CONTEXT)
        return

    # ---- sizes that depend on the sequence length: eqs. (3), (14)
    x_cap = context + (0.5 * output_len if inflight else output_len)
    kv_seq_cap = md[M_KVF] * x_cap + md[M_KVW] * window_capacity(x_cap, win)
    kv_dev = st.g_all * kv_seq_cap * kvb * st.kv_frac * st.sf
    mem_dev = st.weights_dev + kv_dev + pt.act_dev
    total_replica = st.w_replica + batch * kv_seq_cap * kvb + pt.act_replica + st.logits_replica
    min_dev = math.ceil(total_replica / st.dev_cap) if st.dev_cap > 0.0 else NAN

    # ---- decode step: section 7
    c_mean = context + 0.5 * output_len
    c_win = window_mean_length(context, output_len, win, md[M_CHK])
    kv_mean = md[M_KVF] * c_mean + md[M_KVW] * c_win
    kv_read = st.g_m * kv_mean * kvb * st.kv_frac * st.sf
    attn1 = st.g_m * (md[M_AFD] * c_mean + md[M_AWD] * c_win) * st.sf * st.a_pad / tp
    d = st.dec
    code, ts, td, th, tpk, host_total = place_end(
        hw, d.place, kv_dev, pt.act_dev, kv_read, d.act_read, st.host_bytes, d.host_traffic,
        ly[L_SPILL] > 0.5, px[X_GKV])
    if code != 0:
        store_infeasible(out, j, code)
        out[O_MEM, j] = mem_dev
        out[O_MIND, j] = min_dev
        out[O_HOSTF, j] = host_total / mem_dev
        return
    flops_dec = d.flops_w + attn1
    t_comp = flops_dec / (peak * px[X_EDEC])
    t_mem = ts + td + th
    ov = hw[H_OV]
    t_stage = stage_time(t_comp, t_mem, d.t_comm, ov, st.t_ovh)
    t_dec = st.rounds * t_stage + d.t_hops + hw[H_OVI]
    tpot = t_dec
    busy_dec = max(t_comp, t_mem) * st.mb  # device busy time per generated token
    flops_tok = flops_dec  # FLOPs and peak-bandwidth time per generated token (mfu, mbu)
    tpk_tok = tpk
    if hw[H_SPK] > 0.0:  # speculative decoding: a round verifies k_s + 1 tokens
        s = st.dec_spec
        _, ts_q, td_q, th_q, tpk_q, _ = place_end(
            hw, s.place, kv_dev, pt.act_dev, kv_read, s.act_read, st.host_bytes, s.host_traffic,
            ly[L_SPILL] > 0.5, px[X_GKV])
        flops_q = s.flops_w + attn1 * s.q
        t_comp_q = flops_q / (peak * px[X_EDEC])
        t_dec_q = (st.rounds * stage_time(t_comp_q, ts_q + td_q + th_q, s.t_comm, ov, st.t_ovh)
                   + s.t_hops + hw[H_OVI])
        alpha = hw[H_SPA]
        if alpha < 1.0:
            tau = (1.0 - alpha ** (hw[H_SPK] + 1.0)) / (1.0 - alpha)
        else:  # every draft accepted: the limit of the series
            tau = hw[H_SPK] + 1.0
        round_time = t_dec_q + hw[H_SPK] * hw[H_SPC] * t_dec
        busy_dec = (max(t_comp_q, ts_q + td_q + th_q)
                    + hw[H_SPK] * hw[H_SPC] * max(t_comp, t_mem)) * st.mb / tau
        tpot = round_time / tau
        flops_tok = (flops_q + hw[H_SPK] * hw[H_SPC] * flops_dec) / tau
        tpk_tok = (tpk_q + hw[H_SPK] * hw[H_SPC] * tpk) / tau

    # ---- prefill (TTFT): section 8
    _, tsp, tdp_, thp, tpk_pre, _ = place_end(
        hw, pt.pre_place, kv_dev, pt.act_dev, pt.kv_write, pt.act_pre, st.host_bytes,
        pt.host_traffic_pre, ly[L_SPILL] > 0.5, px[X_GKV])
    t_mem_pre = tsp + tdp_ + thp
    t_stage_pre = stage_time(pt.t_comp_pre, t_mem_pre, pt.t_comm_pre, ov, pt.t_ovh_pre)
    ttft = ((st.mb + pp - 1.0) * t_stage_pre + pt.t_hops_pre + pt.n_chunks * hw[H_OVI]
            + hw[H_OVR])

    # ---- end to end, throughput, energy, cost: section 9
    e2e = ttft + (output_len - 1.0) * tpot
    devices = tp * pp * ly[L_EP] * dp
    throughput = dp * batch * output_len / e2e
    total_tp = dp * batch * (context + output_len) / e2e
    util_dec = min(1.0, busy_dec / tpot)
    util_pre = min(1.0, max(pt.t_comp_pre, t_mem_pre) * st.mb / ttft)
    p_dec = hw[H_IDLE] + (hw[H_TDP] - hw[H_IDLE]) * util_dec
    p_pre = hw[H_IDLE] + (hw[H_TDP] - hw[H_IDLE]) * util_pre
    energy_dev = p_pre * ttft + p_dec * (output_len - 1.0) * tpot
    power = devices * energy_dev / e2e
    system_power = power + devices * hw[H_HOSTP]
    rate = devices * hw[H_CFIX] + hw[H_CEN] * system_power  # [USD/s]

    # ---- diagnostics of the decode step: section 10
    top = max(t_comp, t_mem)
    exposed = d.t_comm - ov * min(d.t_comm, top) + d.t_hops / st.rounds
    overheads = st.t_ovh + hw[H_OVI] / st.rounds
    if top >= exposed and top >= overheads:
        if t_comp >= t_mem:
            bound = 0.0
        elif ts >= td and ts >= th:
            bound = 1.0
        elif td >= th:
            bound = 2.0
        else:
            bound = 3.0
    elif exposed >= overheads:
        bound = 4.0
    else:
        bound = 5.0
    traffic = st.dense_read_on + d.experts_read + kv_read + d.act_read + d.host_traffic
    # latency variance: device jitter and EP load imbalance, eq. (12)
    t_imb = d.t_a2a
    if t_comp >= t_mem:
        t_imb += t_comp * d.flops_exp / flops_dec
    else:
        t_imb += t_mem * d.experts_read / traffic
    cov_ep = d.r_imb * t_imb / t_stage
    cov = math.sqrt(hw[H_JIT] * hw[H_JIT] + cov_ep * cov_ep)

    out[O_TTFT, j] = ttft
    out[O_TPOT, j] = tpot
    out[O_E2E, j] = e2e
    out[O_THR, j] = throughput
    out[O_TTHR, j] = total_tp
    out[O_THRD, j] = throughput / devices
    out[O_TPJ, j] = throughput / power
    out[O_TPJS, j] = throughput / system_power
    out[O_PWR, j] = power
    out[O_SPWR, j] = system_power
    out[O_CPM, j] = 1e6 * rate / throughput
    out[O_TPD, j] = throughput / rate
    out[O_MEM, j] = mem_dev
    out[O_HOSTF, j] = host_total / mem_dev
    out[O_FITS, j] = 1.0
    out[O_WHY, j] = 0.0
    out[O_BOUND, j] = bound
    out[O_AI, j] = flops_dec / traffic
    out[O_MFU, j] = st.mb * flops_tok / (peak * tpot)
    out[O_MBU, j] = st.mb * tpk_tok / tpot
    out[O_COV, j] = cov
    out[O_MIND, j] = min_dev


@scalar_jit
def evaluate_point(hw, md, px, batch, context, output_len, pr, ly, inflight, out, j):
    """Evaluate every metric of one point and store them in ``out[:, j]`` (see params.METRICS).

    hw, md, pr, ly : rows of the platform, model, precision and layout tables
    px : the platform x precision row (peak and efficiencies of the precision's compute dtype)
    batch, context, output_len : sequences per replica, prompt tokens, generated tokens per sequence
    inflight : size the KV cache for in-flight batching at maximum load (model.md section 11)
    """
    code = static_reason(hw, md, px, ly, batch)
    if code != 0:
        store_infeasible(out, j, code)
        return
    st = stage_static(hw, md, px, batch, pr, ly)
    pt = stage_prompt(st, hw, md, px, pr, ly, batch, context)
    stage_point(st, pt, hw, md, px, pr, ly, batch, context, output_len, inflight, out, j)
