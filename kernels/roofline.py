"""The physics of one forward pass: the one place where the model's equations are written.

Every function here is a numba scalar helper, inlined into both entry points of ``kernels.grid``
(the Cartesian grid and the point list), so the physics exists once. ``docs/model.md`` states every
equation with its source; the comments below name the equation numbers and sections used there.

:func:`stage_geometry` holds what a (platform, model, precision, layout) is: head padding, the
busiest pipeline stage, bytes per device. :func:`pass_fixed` and :func:`pass_time` time
one forward pass of any mix of tokens (a static batch's decode step, its prefill, a continuous
batching iteration that carries both): :mod:`kernels.static` and :mod:`kernels.serving` build the
serving modes from them and :mod:`kernels.point` chains the stages of a point.

Units: bytes [B], bandwidth [B/s], FLOP/s, time [s], power [W], money [USD]; counts are plain
numbers.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from kernels.accelerate import scalar_jit
from kernels.collectives import allreduce_bytes, allreduce_time, alltoall_time, hops_time
from kernels.dataflow import layer_pipeline_times
from kernels.params import BOUND_INFEASIBLE, HW, LY, MD, PR, PX, M, R
from kernels.power import moved_energy

# column indices as module constants (numba freezes globals at compile time)
H_T0C, H_T0B, H_T0E, H_T0K = (HW["tier0_capacity"], HW["tier0_bandwidth"],
                              HW["tier0_efficiency"], HW["tier0_kind"])
H_T1C, H_T1B, H_T1E, H_T1K = (HW["tier1_capacity"], HW["tier1_bandwidth"],
                              HW["tier1_efficiency"], HW["tier1_kind"])
H_T2C, H_T2B, H_T2E, H_T2K = (HW["tier2_capacity"], HW["tier2_bandwidth"],
                              HW["tier2_efficiency"], HW["tier2_kind"])
H_HC, H_HB, H_HE = HW["host_capacity"], HW["host_bandwidth"], HW["host_efficiency"]
H_HOSTP = HW["host_power"]
H_CAPF, H_JIT, H_SPAT = HW["capacity_fraction"], HW["jitter"], HW["spatial_layers"]
H_OVL, H_OVI, H_OVR = HW["layer_overhead"], HW["iteration_overhead"], HW["request_overhead"]
H_CB, H_OV = HW["comm_bytes"], HW["comm_overlap"]
H_BCAP, H_CHUNK, H_PADS = HW["max_batch"], HW["prefill_chunk"], HW["pads_heads"]
H_SPK, H_SPA, H_SPC = HW["spec_tokens"], HW["spec_acceptance"], HW["spec_draft_cost"]
H_SUP, H_CFIX, H_CEN = HW["supported"], HW["cost_fixed"], HW["cost_energy"]
H_CHP, H_MIX, H_BLK, H_RES = (HW["chunked_prefill"], HW["mixed_batching"], HW["kv_block"],
                              HW["kv_reserve"])
H_GQA = HW["gqa_aware"]

X_PEAK, X_EPRE, X_EDEC, X_GKV, X_GW = (PX["peak"], PX["eff_prefill"], PX["eff_decode"],
                                       PX["kv_factor"], PX["weight_factor"])
X_A16P, X_A16D = PX["attn16_ratio_prefill"], PX["attn16_ratio_decode"]

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
P_AWB = PR["attn_weight_bytes"]
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
O_MAXC, O_CONC = M["max_concurrency"], M["concurrency"]
O_T50, O_T90, O_T99 = M["ttft_p50"], M["ttft_p90"], M["ttft_p99"]
O_E50, O_E90, O_E99 = M["e2e_p50"], M["e2e_p90"], M["e2e_p99"]
R_ENGINE, R_DTYPE, R_HEADS, R_EXPERTS, R_LAYERS, R_HOST = (
    R["engine_unsupported"], R["no_compute_dtype"], R["tp_heads"], R["ep_experts"],
    R["pp_layers"], R["no_host_tier"])
R_CONTEXT, R_MEMORY, R_HOSTCAP, R_SATURATED = (R["context_window"], R["memory"],
                                              R["host_capacity"], R["saturated"])

#: per (platform, model, precision, layout), from :func:`stage_geometry`
Geometry = namedtuple("Geometry", (
    "a_pad", "p_lin", "p_att16", "stage_layers", "sf", "moe_stage", "w_read_end",
    "dense_read_dev", "experts_dev", "weights_dev", "dense_read_on", "experts_on", "stored_on",
    "host_bytes", "kv_frac", "kv_reads", "act_per_token_layer", "w_replica", "dev_cap",
    "cbytes", "t_ovh", "place_w1"))
#: the KV-independent parts of forward passes, from :func:`pass_fixed`
Pass = namedtuple("Pass", (
    "flops_w", "flops_exp", "flops_a16", "experts_read", "act_traffic", "host_traffic", "place", "t_comm",
    "t_a2a", "t_hops", "r_imb", "link_bytes"))

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
    sigma pi / sqrt(12 ln ep)  [model.md eq. (12)], and at least ceil(n/ep): loads are whole
    assignments. The factor is capped at ep (all load on one rank).
    Returns (factor >= 1, relative std of the maximum).
    """
    if ep <= 1.0 or assignments <= 0.0:
        return 1.0, 0.0
    mean = assignments / ep
    sigma = math.sqrt(assignments * (1.0 / ep) * (1.0 - 1.0 / ep))
    lg = math.log(ep)
    # loads are whole assignments: the busiest rank holds at least ceil(n / ep) of them (the
    # Gumbel limit falls below one assignment when n < ep)
    emax = max(mean + sigma * math.sqrt(2.0 * lg), math.ceil(mean))
    factor = min(emax / mean, ep)
    smax = sigma * math.pi / math.sqrt(12.0 * lg)
    return factor, smax / (factor * mean)


@scalar_jit
def rank_experts_fraction(tokens, k, e, ep, imb):
    """Expected fraction of the busiest EP rank's experts that ``tokens`` tokens (each routed to
    k of the E experts) touch, the rank receiving ``imb`` times its mean share of assignments.

    ep = 1: the whole model's fraction u(T) of eq. (7). ep > 1: the rank holds e_r = E/ep experts
    and receives n_max = imb T k / ep assignments, each to one of them uniformly, so it touches
    e_r (1 - (1 - 1/e_r)^n_max) of them [model.md section 6]; with one expert per rank any
    assignment reads it whole.
    """
    if ep <= 1.0:
        return experts_touched_fraction(tokens, k, e)
    if e <= 0.0 or tokens <= 0.0:
        return 0.0
    per_rank = e / ep
    if per_rank <= 1.0:
        return 1.0
    n_max = imb * tokens * k / ep
    return 1.0 - math.exp(n_max * math.log1p(-1.0 / per_rank))


@scalar_jit
def alltoall_bytes(own_tokens, all_tokens, k, d, cbytes, ep, tp, imb):
    """Bytes the busiest EP rank moves in one all-to-all (dispatch or combine) [model.md eq. (10)].

    A rank sends the k assignments of its own ``own_tokens`` tokens, (ep-1)/ep of them to other
    ranks, and receives the ``imb`` x mean share of all ``all_tokens`` tokens' assignments routed
    to it, (ep-1)/ep of them from other ranks; links are full duplex, so the larger of the two
    sets the time. Each element is ``cbytes`` wide, hidden size ``d``, split over ``tp``.
    """
    off_rank = (ep - 1.0) / ep
    sent = own_tokens * k * off_rank
    received = imb * all_tokens * k / ep * off_rank
    return max(sent, received) * d * cbytes / tp


@scalar_jit
def sram_only(hw):
    """True when every placement tier of the device (capacity > 0) is on-chip SRAM (Groq LPU,
    Cerebras wafer, Graphcore IPU): such parts run the layers as a statically scheduled spatial
    pipeline and stream the prompt through it [model.md section 3 (4)]."""
    dram0 = hw[H_T0C] > 0.0 and hw[H_T0K] > 0.5
    dram1 = hw[H_T1C] > 0.0 and hw[H_T1K] > 0.5
    dram2 = hw[H_T2C] > 0.0 and hw[H_T2K] > 0.5
    return not (dram0 or dram1 or dram2)


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
def busy_time(t_comp, t_mem, t_comp_kv, t_mem_kv):
    """The busy time T of a pass whose attention (``t_comp_kv`` of its compute time, ``t_mem_kv``
    of its memory time: the KV cache it reads and writes) runs as kernels of its own between the
    GEMMs: each phase is its own roofline, T = max(t_comp_kv, t_mem_kv) + max(t_comp -
    t_comp_kv, t_mem - t_mem_kv) >= max(t_comp, t_mem)  [model.md section 5]."""
    return max(t_comp_kv, t_mem_kv) + max(t_comp - t_comp_kv, t_mem - t_mem_kv)


@scalar_jit
def stage_time(top, t_comm, overlap, t_ovh):
    """One stage pass: T + t_comm - ov min(t_comm, T) + overheads, T the busy time of
    :func:`busy_time`  [model.md section 5]."""
    return top + t_comm - overlap * min(t_comm, top) + t_ovh


# ------------------------------------------------------------------------------------------------
# placement fastest tier first: model.md eq. (8)


@scalar_jit
def _put_segment(hw, size, traffic, factor, st):
    """Place one segment of ``size`` bytes (``traffic`` bytes of it moved, at ``factor`` of the
    tiers' achievable bandwidth) fastest tier first, continuing the placement state ``st``."""
    free0, free1, free2, t_sram, t_dram, t_peak, spill, spill_traffic, b_sram, b_dram = st
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
            b_sram += moved
        else:
            t_dram += moved / (bw * eff * factor)
            b_dram += moved
    if remaining > 0.0:
        spill += remaining
        spill_traffic += remaining * rate
    return free0, free1, free2, t_sram, t_dram, t_peak, spill, spill_traffic, b_sram, b_dram


@scalar_jit
def place_begin(hw, seg0, seg1, tr0, tr1, seg_stored, g_w):
    """First half of the placement: the weight segments, which do not depend on the prompt or
    output length (so the grid kernel places them once per platform x model x batch x precision x
    layout): ``seg0`` dense weights read every pass, ``seg1`` expert weights, then ``seg_stored``
    bytes held but not read (the input embedding). ``tr0``/``tr1`` are the bytes of each segment
    moved in the phase; weights stream at ``g_w`` of the tiers' bandwidth. Returns the placement
    state (free bytes per tier, times so far, spill so far) for :func:`place_end`."""
    capf = hw[H_CAPF]
    st = (hw[H_T0C] * capf, hw[H_T1C] * capf, hw[H_T2C] * capf, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
          0.0)
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
    bandwidth, host-resident bytes, bytes moved in SRAM tiers, in DRAM tiers, over the host
    link; the time of the KV bytes, on the device tiers and, spilled, over the host link)."""
    t_before = st[3] + st[4]
    spill_before = st[7]
    st = _put_segment(hw, seg_kv, tr_kv, g_kv, st)
    t_kv = st[3] + st[4] - t_before
    kv_spill_traffic = st[7] - spill_before
    st = _put_segment(hw, seg_act, tr_act, 1.0, st)
    _, _, _, t_sram, t_dram, t_peak, spill, spill_traffic, b_sram, b_dram = st
    code = 0
    t_host = 0.0
    b_host = 0.0
    total_host = host_bytes + spill
    if spill > 0.0 and not allow_spill:
        code = R_MEMORY
    elif total_host > 0.0:
        if hw[H_HC] <= 0.0 or total_host > hw[H_HC]:
            code = R_HOSTCAP
        else:
            b_host = host_traffic + spill_traffic
            t_host = b_host / (hw[H_HB] * hw[H_HE])
            t_peak += b_host / hw[H_HB]
            t_kv += kv_spill_traffic / (hw[H_HB] * hw[H_HE])
    return code, t_sram, t_dram, t_host, t_peak, total_host, b_sram, b_dram, b_host, t_kv


# ------------------------------------------------------------------------------------------------
# compatibility and the geometry of a replica


@scalar_jit
def static_reason(hw, md, px, ly):
    """Why a (platform, model, precision, layout) cannot run the model at all (model.md section
    2: codes 1-6), or 0."""
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
    return 0


@scalar_jit
def stage_geometry(hw, md, pr, ly, g_w):
    """Everything about one compatible (platform, model, precision, layout) that depends on no
    workload: head padding, the busiest pipeline stage, the bytes each device holds and reads
    every pass, the bytes per element of its collectives, and (``g_w``: the platform x
    precision's weight-streaming factor) the weights' placement on the memory tiers for one pass
    of a model without routed experts  [model.md sections 3, 5, eq. (8)]."""
    tp = ly[L_TP]
    pp = ly[L_PP]
    ep = ly[L_EP]
    off = ly[L_OFF]
    n_layers = md[M_L]
    n_exp = md[M_NEXP]
    wb = pr[P_WB]
    eb = pr[P_EB]
    d_awb = pr[P_AWB] - wb  # attention projections kept wider than the other weights: section 3

    # ---- head padding and pipeline stages with balanced ends: section 3
    heads = md[M_H]
    a_pad = math.ceil(heads / tp) * tp / heads
    p_lin = md[M_PLIN] + (a_pad - 1.0) * md[M_PATT]
    # the attention projections held at 16 bits (the scheme's -attn16), 0 otherwise
    p_att16 = a_pad * md[M_PATT] if d_awb > 0.0 else 0.0
    w_lin = wb * p_lin + d_awb * p_att16  # bytes of the layers' dense weights
    w_expert_one = md[M_PEXP] * wb  # one expert, one layer
    w_experts_all = md[M_NMOE] * n_exp * w_expert_one
    w_head = md[M_PHEAD] * eb
    w_embed = md[M_PEMB] * eb
    if pp > 1.0:
        # a layer unit in the bytes one device of the stage holds (before tp, which divides every
        # part alike): the routed experts are split over ep, the ends are not  [rule P]
        w_layer = (w_lin + w_experts_all / ep) / n_layers
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
    dense_dev = (w_lin * sf + w_ends_stored) / tp
    dense_read_dev = (w_lin * sf + w_read_end) / tp  # the input embedding is only gathered
    experts_dev = moe_stage * (n_exp / ep) * w_expert_one / tp
    weights_dev = dense_dev + experts_dev
    if md[M_KVSH] > 0.5 and md[M_NKV] > 0.0:
        kv_frac = math.ceil(md[M_NKV] / tp) / md[M_NKV]
    else:
        kv_frac = 1.0
    # a decode attention kernel that is not GQA-aware reads a KV head once per query head it
    # serves: the device's query heads over its KV heads [model.md eq. (3b)]; MLA's latent cache
    # (not sharded by tp) is outside this rule
    kv_reads = 1.0
    if hw[H_GQA] < 0.5 and md[M_KVSH] > 0.5 and md[M_NKV] > 0.0:
        kv_reads = max(1.0, math.ceil(heads / tp) / math.ceil(md[M_NKV] / tp))
    act_per_token_layer = md[M_ACT] / n_layers
    # replica total for eq. (14): the weights (KV, activations and logits are added per point)
    w_replica = md[M_PLIN] * wb + d_awb * md[M_PATT] + w_head + w_embed + w_experts_all
    dev_cap = (hw[H_T0C] + hw[H_T1C] + hw[H_T2C]) * hw[H_CAPF]

    # ---- bytes per element of the collectives (timed by kernels.collectives): section 5
    cbytes = max(hw[H_CB], pr[P_AB])  # engines reduce in at least 16 bit; ideal in the act dtype
    on_device = 1.0 - off
    dense_read_on = dense_read_dev * on_device
    stored_on = (dense_dev - dense_read_dev) * on_device
    experts_on = experts_dev * on_device
    host_bytes = (dense_dev + experts_dev) * off
    t_ovh = stage_layers * hw[H_OVL]
    # the weights' placement for one pass of a model without routed experts (:func:`pass_fixed`
    # reads it instead of placing the same bytes again at every iteration)
    place_w1 = place_begin(hw, dense_read_on, experts_on, dense_read_on, 0.0, stored_on, g_w)
    return Geometry(a_pad, p_lin, p_att16, stage_layers, sf, moe_stage, w_read_end,
                    dense_read_dev, experts_dev, weights_dev, dense_read_on, experts_on, stored_on,
                    host_bytes, kv_frac, kv_reads, act_per_token_layer, w_replica, dev_cap, cbytes, t_ovh,
                    place_w1)


@scalar_jit
def kv_elems(md, x):
    """KV elements of one sequence at length ``x`` (over every layer): kv(x) = kv_full x +
    kv_win w(x)  [model.md eq. (3)]."""
    return md[M_KVF] * x + md[M_KVW] * window_capacity(x, md[M_WIN])


@scalar_jit
def kv_bytes_dev(geo, md, pr, x):
    """Bytes of one sequence's KV cache at length ``x`` on a device of its stage and EP rank
    [model.md eq. (3)]."""
    return kv_elems(md, x) * pr[P_KVB] * geo.kv_frac * geo.sf


# ------------------------------------------------------------------------------------------------
# one forward pass: the physics shared by decode steps, prefill passes and mixed iterations


@scalar_jit
def pass_fixed(geo, hw, md, px, pr, ly, g_tok, b_tok, g_heads, n_pass):
    """The parts of ``n_pass`` forward passes of one micro-batch that do not depend on the KV
    cache: ``b_tok`` tokens over all expert-parallel ranks, ``g_tok`` of them on the busiest rank,
    ``g_heads`` of those producing logits. A decode step of ``g`` sequences verifying ``q`` tokens
    each has ``g_tok = g q``; a prompt of ``S`` tokens ``g_tok = S``, ``g_heads = 1``; a mixed
    iteration the sum  [model.md sections 6-8]. The weights are read once per pass, the tokens
    are those of all passes together, and each pass runs its own collectives on its share of the
    tokens (the bytes add up, the per-call costs and latencies are paid per pass)."""
    tp = ly[L_TP]
    pp = ly[L_PP]
    ep = ly[L_EP]
    off = ly[L_OFF]
    topk = md[M_TOPK]
    assign = b_tok * topk
    imb, r_imb = ep_imbalance(assign, ep)
    u = rank_experts_fraction(b_tok, topk, md[M_NEXP], ep, imb)
    flops_dense = 2.0 * (g_tok * geo.p_lin * geo.sf + g_heads * geo.w_read_end / pr[P_EB]) / tp
    flops_exp = 2.0 * (assign / ep) * imb * md[M_PEXP] * geo.moe_stage / tp
    flops_a16 = 2.0 * g_tok * geo.p_att16 * geo.sf / tp  # part of flops_dense, at 16 bits
    experts_read = geo.experts_on * u * n_pass
    act_traffic = 2.0 * g_tok * md[M_ACT] * geo.sf * pr[P_AB] / tp
    host_traffic = (geo.dense_read_dev + geo.experts_dev * u) * off * n_pass
    if n_pass == 1.0 and geo.experts_on <= 0.0:  # the same placement, done once per geometry
        place = geo.place_w1
    else:
        place = place_begin(hw, geo.dense_read_on, geo.experts_on, geo.dense_read_on * n_pass,
                            experts_read, geo.stored_on, px[X_GW])
    msg = g_tok * md[M_D] * geo.cbytes
    t_ar, alg = allreduce_time(hw, tp, msg / n_pass)
    # bytes the device sends (section 9's link energy): its all-reduces, all-to-alls and the hop
    # of the micro-batch's activations to the next stage
    link_bytes = 2.0 * geo.stage_layers * n_pass * allreduce_bytes(alg, tp, msg / n_pass)
    t_a2a = 0.0
    if ep > 1.0:
        a2a = alltoall_bytes(g_tok, b_tok, topk, md[M_D], geo.cbytes, ep, tp, imb)
        t_a2a = 2.0 * geo.moe_stage * n_pass * alltoall_time(hw, tp * ep, ep, a2a / n_pass)
        link_bytes += 2.0 * geo.moe_stage * a2a
    t_comm = 2.0 * geo.stage_layers * n_pass * t_ar + t_a2a
    t_hops = hops_time(hw, pp, tp * ep, msg)
    if pp > 1.0:
        link_bytes += msg
    return Pass(flops_dense + flops_exp, flops_exp, flops_a16, experts_read, act_traffic,
                host_traffic, place, t_comm, t_a2a, t_hops, r_imb, link_bytes)


@scalar_jit
def weights_flops_at(p, ratio):
    """The weights' FLOPs of passes ``p`` (:func:`pass_fixed`) as FLOPs at the scheme's rate: the
    attention projections a scheme keeps at 16 bits (``p.flops_a16``) run at the 16-bit rate,
    ``ratio`` (the phase's ``attn16_ratio``) times slower; ``p.flops_w`` itself when there are
    none  [model.md sections 7, 8, 13.1]."""
    return p.flops_w + p.flops_a16 * (ratio - 1.0)


@scalar_jit
def weights_flops_time(p, px, share_dec, r_dec, r_pre):
    """Time [s] of the weights' FLOPs of passes ``p`` at the scheme's rates ``r_dec``/``r_pre``
    [FLOP/s], ``share_dec`` of the tokens decoding (:func:`weights_flops_at`)."""
    return (weights_flops_at(p, px[X_A16D]) * share_dec / r_dec
            + weights_flops_at(p, px[X_A16P]) * (1.0 - share_dec) / r_pre)


@scalar_jit
def pass_time(geo, hw, px, ly, p, kv_dev, act_dev, kv_traffic, t_comp, t_comp_kv, n_pass, seqs):
    """Time of the passes ``p`` (:func:`pass_fixed`) on the busiest stage, given the resident KV
    cache and activations [B], the KV bytes moved, the compute time [s] and the part of it that
    attention takes: placement and memory time (eq. (8)), the busy time of the GEMM and attention
    phases (:func:`busy_time`), then the stage pass (section 5). ``seqs`` > 0: a decode pass of
    that many sequences, which on a device with ``spatial_layers`` crosses the stage's layer
    regions in turn (section 7). Returns (reason code: 0, memory or host_capacity; stage time,
    compute and memory time, SRAM, DRAM and host-link times, time at peak bandwidth,
    host-resident bytes, energy of the bytes the passes move on the device [J]: section 9; the
    busy time)."""
    code, ts, td, th, tpk, host_total, b_sram, b_dram, b_host, t_kv = place_end(
        hw, p.place, kv_dev, act_dev, kv_traffic, p.act_traffic, geo.host_bytes,
        p.host_traffic, ly[L_SPILL] > 0.5, px[X_GKV])
    t_mem = ts + td + th
    if hw[H_SPAT] > 0.5 and seqs > 0.0:  # a weight-stationary layer pipeline: section 7
        t_comp_kv, t_kv = layer_pipeline_times(t_comp_kv, t_kv, 0.0, geo.stage_layers, seqs)
        t_comp, t_mem = layer_pipeline_times(t_comp, t_mem, p.place[3] + p.place[4],
                                             geo.stage_layers, seqs)
    top = busy_time(t_comp, t_mem, t_comp_kv, t_kv)
    t_stage = stage_time(top, p.t_comm, hw[H_OV], geo.t_ovh * n_pass)
    e_move = moved_energy(hw, b_sram, b_dram, b_host, p.link_bytes)
    return code, t_stage, t_comp, t_mem, ts, td, th, tpk, host_total, e_move, top


@scalar_jit
def spec_tau(hw):
    """Tokens a speculative round yields per sequence on average: (1 - a^(k+1)) / (1 - a), k + 1
    at a = 1, 1 without speculation  [model.md section 7]."""
    k = hw[H_SPK]
    if k <= 0.0:
        return 1.0
    alpha = hw[H_SPA]
    if alpha < 1.0:
        return (1.0 - alpha ** (k + 1.0)) / (1.0 - alpha)
    return k + 1.0  # every draft accepted: the limit of the series


@scalar_jit
def store_infeasible(out, j, code):
    """Metrics of an infeasible point: NaN, fits = 0, bound = infeasible, the reason code."""
    for k in range(out.shape[0]):
        out[k, j] = NAN
    out[O_FITS, j] = 0.0
    out[O_WHY, j] = code
    out[O_BOUND, j] = BOUND_INFEASIBLE
