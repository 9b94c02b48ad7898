"""Per-point roofline physics: the one place where the model's equations are written.

Every function here is a numba scalar helper, inlined into both entry points of ``kernels.grid``
(the Cartesian grid and the point list), so the physics exists once. ``docs/model.md`` states every
equation with its source; the comments below name the equation numbers used there.

Units: bytes [B], bandwidth [B/s], FLOP/s, time [s], power [W]; counts are plain numbers.
"""

from __future__ import annotations

import math

import numpy as np

from kernels.accelerate import scalar_jit
from kernels.params import BOUND_INFEASIBLE, HW, LY, MD, PR, M

# column indices as module constants (numba freezes globals at compile time)
T_CAP = (HW["tier0_capacity"], HW["tier1_capacity"], HW["tier2_capacity"])
H_T0C, H_T0B, H_T0E, H_T0K = (HW["tier0_capacity"], HW["tier0_bandwidth"],
                              HW["tier0_efficiency"], HW["tier0_kind"])
H_T1C, H_T1B, H_T1E, H_T1K = (HW["tier1_capacity"], HW["tier1_bandwidth"],
                              HW["tier1_efficiency"], HW["tier1_kind"])
H_T2C, H_T2B, H_T2E, H_T2K = (HW["tier2_capacity"], HW["tier2_bandwidth"],
                              HW["tier2_efficiency"], HW["tier2_kind"])
H_HC, H_HB, H_HE = HW["host_capacity"], HW["host_bandwidth"], HW["host_efficiency"]
H_LBW, H_LLAT, H_DOM = HW["link_bandwidth"], HW["link_latency"], HW["domain_size"]
H_SBW, H_SLAT = HW["scaleout_bandwidth"], HW["scaleout_latency"]
H_TDP, H_IDLE = HW["tdp"], HW["idle"]
H_FEFF, H_OVH, H_JIT, H_CAPF = (HW["flops_efficiency"], HW["layer_overhead"], HW["jitter"],
                                HW["capacity_fraction"])

M_L, M_D, M_V = MD["n_layers"], MD["d_model"], MD["vocab_size"]
M_PLIN, M_PHEAD, M_PEMB, M_PEXP = (MD["params_linear"], MD["params_head"],
                                   MD["params_embed_only"], MD["params_expert"])
M_NMOE, M_NEXP, M_TOPK = MD["n_moe_layers"], MD["n_experts"], MD["experts_per_token"]
M_KVF, M_KVW, M_WIN = MD["kv_elems_full"], MD["kv_elems_window"], MD["window"]
M_KVSH, M_NKV = MD["kv_tp_shardable"], MD["n_kv_heads"]
M_AFD, M_AWD, M_AFP, M_AWP = (MD["attn_flops_full_decode"], MD["attn_flops_window_decode"],
                              MD["attn_flops_full_prefill"], MD["attn_flops_window_prefill"])
M_ACT, M_TPDIV = MD["act_elems"], MD["tp_divisor"]

P_WB, P_AB, P_KVB, P_EB = PR["weight_bytes"], PR["act_bytes"], PR["kv_bytes"], PR["embed_bytes"]
L_TP, L_PP, L_EP, L_DP, L_OFF = LY["tp"], LY["pp"], LY["ep"], LY["dp"], LY["offload"]

NAN = np.nan
O_TTFT, O_TPOT, O_E2E, O_THR, O_TTHR, O_THRD = (M["ttft"], M["tpot"], M["e2e_latency"],
                                                M["throughput"], M["total_throughput"],
                                                M["throughput_per_device"])
O_TPJ, O_PWR, O_MEM, O_FITS, O_BOUND = (M["tokens_per_joule"], M["power"],
                                        M["memory_per_device"], M["fits"], M["bound"])
O_AI, O_MFU, O_MBU, O_COV, O_MIND = (M["arithmetic_intensity"], M["mfu"], M["mbu"],
                                     M["latency_cov"], M["min_devices"])


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
def causal_pairs(s, w):
    """Number of (query, key) pairs of causal attention over s tokens, window w (0 = none).

    sum_{i=1..s} min(i, w)  [model.md eq. (5)].
    """
    if w <= 0.0 or s <= w:
        return 0.5 * s * (s + 1.0)
    return 0.5 * w * (w + 1.0) + (s - w) * w


@scalar_jit
def ring_allreduce_time(nbytes, n, bw, lat):
    """Ring all-reduce of ``nbytes`` over n devices: 2 (n-1)/n bytes/bw + 2 (n-1) lat  [eq. (9)]."""
    if n <= 1.0:
        return 0.0
    return 2.0 * (n - 1.0) / n * nbytes / bw + 2.0 * (n - 1.0) * lat


@scalar_jit
def _put_segment(hw, size, traffic, st):
    """Place one segment of ``size`` bytes (``traffic`` bytes of it moved) fastest tier first,
    continuing the placement state ``st`` (see :func:`place_begin`)."""
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
            t_sram += moved / (bw * eff)
        else:
            t_dram += moved / (bw * eff)
    if remaining > 0.0:
        spill += remaining
        spill_traffic += remaining * rate
    return free0, free1, free2, t_sram, t_dram, t_peak, spill, spill_traffic


@scalar_jit
def place_begin(hw, seg0, seg1, tr0, tr1, seg_stored):
    """Placement of the resident segments fastest tier first, first half  [model.md eq. (8)].

    The weight segments, which do not depend on the prompt or output length (so the grid kernel
    places them once per hardware x model x batch x precision x layout): ``seg0`` dense weights
    read every pass, ``seg1`` expert weights, then ``seg_stored`` bytes of weights held but not
    read (the input embedding). ``tr0``/``tr1`` are the bytes of each segment moved in the phase,
    spread over the tiers in proportion to where the segment lies. Returns the placement state
    (free bytes per tier, times so far, spill so far) for :func:`place_end`."""
    capf = hw[H_CAPF]
    st = (hw[H_T0C] * capf, hw[H_T1C] * capf, hw[H_T2C] * capf, 0.0, 0.0, 0.0, 0.0, 0.0)
    st = _put_segment(hw, seg0, tr0, st)
    st = _put_segment(hw, seg1, tr1, st)
    return _put_segment(hw, seg_stored, 0.0, st)


@scalar_jit
def place_end(hw, st, seg2, seg3, tr2, tr3, host_bytes, host_traffic, allow_spill):
    """Second half of the placement: KV cache (``seg2``) and activations (``seg3``), then the host
    tier. Bytes that do not fit the device tiers spill to the host tier when ``allow_spill`` (the
    layout offloads), else the point does not fit; ``host_bytes`` / ``host_traffic`` are bytes
    placed in the host tier by the offload fraction. Returns (fits, t_sram, t_dram, t_host,
    time_at_peak): times at achievable bandwidth per tier kind, and sum(bytes / peak bandwidth)
    for utilisation."""
    st = _put_segment(hw, seg2, tr2, st)
    st = _put_segment(hw, seg3, tr3, st)
    _, _, _, t_sram, t_dram, t_peak, spill, spill_traffic = st
    fits = True
    t_host = 0.0
    total_host = host_bytes + spill
    if spill > 0.0 and not allow_spill:
        fits = False
    if total_host > 0.0:
        if hw[H_HC] <= 0.0 or total_host > hw[H_HC]:
            fits = False
        else:
            moved = host_traffic + spill_traffic
            t_host = moved / (hw[H_HB] * hw[H_HE])
            t_peak += moved / hw[H_HB]
    return fits, t_sram, t_dram, t_host, t_peak


# ------------------------------------------------------------------------------------------------
# One point, in three stages by the axes each quantity depends on, so that the Cartesian kernel can
# compute each quantity once per distinct value of its axes (``kernels.grid``) while the point-list
# kernel chains the stages per point. Every expression is the same as when written in one piece,
# operand for operand, so the results are bit-identical whichever way the stages are called.


@scalar_jit
def is_compatible(hw, md, peak, ly):
    """Compatibility of (hardware, model, precision, layout): model.md section 2."""
    tp = ly[L_TP]
    ep = ly[L_EP]
    n_exp = md[M_NEXP]
    compatible = peak > 0.0
    if md[M_TPDIV] % tp != 0.0:
        compatible = False
    if ep > 1.0 and (n_exp <= 0.0 or n_exp % ep != 0.0):
        compatible = False
    if ly[L_PP] > md[M_L]:
        compatible = False
    if ly[L_OFF] > 0.0 and hw[H_HC] <= 0.0:
        compatible = False
    return compatible


@scalar_jit
def stage_static(hw, md, peak, batch, pr, ly):
    """Quantities of one compatible (hardware, model, batch, precision, layout): everything that
    depends on neither the prompt nor the output length. Returns a tuple read by the next stages."""
    tp = ly[L_TP]
    pp = ly[L_PP]
    ep = ly[L_EP]
    off = ly[L_OFF]
    n_layers = md[M_L]
    d_model = md[M_D]
    n_exp = md[M_NEXP]
    topk = md[M_TOPK]
    wb = pr[P_WB]
    ab = pr[P_AB]
    eb = pr[P_EB]

    # ---- sizes per replica and per device: eqs. (1)-(4)
    stage_layers = math.ceil(n_layers / pp)
    sf = stage_layers / n_layers  # busiest stage's share of the layers
    moe_stage = md[M_NMOE] * sf
    w_linear = md[M_PLIN] * wb
    w_head = md[M_PHEAD] * eb
    w_embed = md[M_PEMB] * eb
    w_expert_one = md[M_PEXP] * wb  # one expert, one layer
    w_experts_all = md[M_NMOE] * n_exp * w_expert_one
    if pp > 1.0:
        w_ends = max(w_head, w_embed)
    else:
        w_ends = w_head + w_embed
    dense_dev = (w_linear * sf + w_ends) / tp
    # bytes of the dense segment read per pass: the input embedding is stored, only gathered
    dense_read_dev = (w_linear * sf + w_head) / tp
    experts_dev = moe_stage * (n_exp / ep) * w_expert_one / tp
    weights_dev = dense_dev + experts_dev
    if md[M_KVSH] > 0.5 and md[M_NKV] > 0.0:
        kv_frac = math.ceil(md[M_NKV] / tp) / md[M_NKV]
    else:
        kv_frac = 1.0
    b_group = batch / ep  # sequences per attention group
    act_per_token_layer = md[M_ACT] / n_layers
    logits_dev = b_group * md[M_V] * 4.0
    # replica total for eq. (14): weights + KV + activations + logits, summed in this order
    w_replica = w_linear + w_head + w_embed + w_experts_all
    logits_replica = batch * md[M_V] * 4.0
    dev_cap = (hw[H_T0C] + hw[H_T1C] + hw[H_T2C]) * hw[H_CAPF]

    # interconnect: scale-up inside the domain, scale-out beyond it (model.md section 5)
    devs_rep = tp * pp * ep
    if devs_rep <= hw[H_DOM]:
        bw = hw[H_LBW]
        lat = hw[H_LLAT]
    else:
        bw = hw[H_SBW]
        lat = hw[H_SLAT]
    eff_peak = peak * hw[H_FEFF]
    ovh = hw[H_OVH]
    mb = min(batch, pp)  # micro-batches
    b_micro = batch / mb
    bg_micro = b_micro / ep
    rounds = max(mb, pp)
    on_device = 1.0 - off
    dense_read_on = dense_read_dev * on_device
    stored_on = (dense_dev - dense_read_dev) * on_device  # input embedding: held, not read
    experts_on = experts_dev * on_device
    host_bytes = (dense_dev + experts_dev) * off

    # ---------------- decode step, the parts without the KV length: eqs. (6)-(11)
    u_dec = experts_touched_fraction(b_micro, topk, n_exp)
    assign_dec = b_micro * topk
    imb_dec, imb_std_dec = ep_imbalance(assign_dec, ep)
    flops_dense = 2.0 * bg_micro * (md[M_PLIN] * sf + md[M_PHEAD]) / tp
    flops_exp = 2.0 * assign_dec * md[M_PEXP] * moe_stage * imb_dec / (ep * tp)
    flops_w = flops_dense + flops_exp
    experts_on_u = experts_on * u_dec
    weights_read = dense_read_on + experts_on_u
    act_read_dec = 2.0 * bg_micro * md[M_ACT] * sf * ab / tp
    host_traffic_dec = (dense_read_dev + experts_dev * u_dec) * off
    dec_place = place_begin(hw, dense_read_on, experts_on, dense_read_on, experts_on_u,
                            stored_on)

    msg = bg_micro * d_model * ab
    t_tp = 2.0 * stage_layers * ring_allreduce_time(msg, tp, bw, lat)
    t_a2a = 0.0
    if ep > 1.0:
        a2a_bytes = bg_micro * topk * d_model * ab * (ep - 1.0) / ep * imb_dec / tp
        t_a2a = 2.0 * moe_stage * (a2a_bytes / bw + (ep - 1.0) * lat)
    t_comm = t_tp + t_a2a
    t_hop = msg / bw + lat if pp > 1.0 else 0.0
    t_ovh = stage_layers * ovh
    t_hops_share = (pp - 1.0) * t_hop / rounds
    c_all = t_comm + t_hops_share

    return (stage_layers, sf, moe_stage, dense_read_on, experts_on, weights_dev, kv_frac, b_group,
            act_per_token_layer, logits_dev, w_replica, logits_replica, dev_cap, bw, lat,
            eff_peak, ovh, mb, b_micro, bg_micro, rounds, host_bytes, imb_dec, imb_std_dec,
            flops_exp, flops_w, weights_read, act_read_dec, host_traffic_dec, dec_place, t_a2a,
            t_comm, t_hop, t_ovh, c_all, dense_read_dev, experts_dev, stored_on)


@scalar_jit
def stage_prompt(st, hw, md, pr, ly, batch, context, prefill_chunk):
    """Quantities that depend on the prompt length but not the output length (prefill,
    activation sizes). ``st`` is :func:`stage_static`'s tuple for the same point."""
    (stage_layers, sf, moe_stage, dense_read_on, experts_on, weights_dev, kv_frac, b_group,
     act_per_token_layer, logits_dev, w_replica, logits_replica, dev_cap, bw, lat,
     eff_peak, ovh, mb, b_micro, bg_micro, rounds, host_bytes, imb_dec, imb_std_dec,
     flops_exp, flops_w, weights_read, act_read_dec, host_traffic_dec, dec_place, t_a2a,
     t_comm, t_hop, t_ovh, c_all, dense_read_dev, experts_dev, stored_on) = st
    tp = ly[L_TP]
    pp = ly[L_PP]
    ep = ly[L_EP]
    off = ly[L_OFF]
    d_model = md[M_D]
    n_exp = md[M_NEXP]
    topk = md[M_TOPK]
    win = md[M_WIN]
    ab = pr[P_AB]
    kvb = pr[P_KVB]

    kv_seq_prompt = md[M_KVF] * context + md[M_KVW] * (min(context, win) if win > 0.0 else context)
    tokens_chunk = min(b_group * context, prefill_chunk)
    act_dev = (tokens_chunk * act_per_token_layer * ab + logits_dev) / tp
    act_replica = min(batch * context, prefill_chunk) * act_per_token_layer * ab

    # ---------------- prefill (TTFT): eqs. (4)-(5), same roofline
    tok_micro = b_micro * context
    u_pre = experts_touched_fraction(tok_micro, topk, n_exp)
    assign_pre = tok_micro * topk
    imb_pre, imb_std_pre = ep_imbalance(assign_pre, ep)
    n_chunks = math.ceil(bg_micro * context / prefill_chunk)
    fl_pre = (2.0 * bg_micro * context * md[M_PLIN] * sf + 2.0 * bg_micro * md[M_PHEAD]) / tp
    fl_pre += 2.0 * assign_pre * md[M_PEXP] * moe_stage * imb_pre / (ep * tp)
    fl_pre += bg_micro * (md[M_AFP] * causal_pairs(context, 0.0)
                          + md[M_AWP] * causal_pairs(context, win)) * sf / tp
    t_comp_pre = fl_pre / eff_peak
    kv_write = bg_micro * kv_seq_prompt * kvb * kv_frac * sf
    act_pre = 2.0 * bg_micro * context * md[M_ACT] * sf * ab / tp
    pre_place = place_begin(hw, dense_read_on, experts_on, dense_read_on * n_chunks,
                            experts_on * u_pre * n_chunks, stored_on)
    host_traffic_pre = (dense_read_dev + experts_dev * u_pre) * off * n_chunks
    msg_pre = bg_micro * context * d_model * ab
    t_comm_pre = 2.0 * stage_layers * ring_allreduce_time(msg_pre, tp, bw, lat)
    if ep > 1.0:
        a2a_pre = bg_micro * context * topk * d_model * ab * (ep - 1.0) / ep * imb_pre / tp
        t_comm_pre += 2.0 * moe_stage * (a2a_pre / bw + (ep - 1.0) * lat)
    t_hop_pre = msg_pre / bw + lat if pp > 1.0 else 0.0
    t_ovh_pre = stage_layers * ovh * n_chunks
    return (act_dev, act_replica, fl_pre, t_comp_pre, kv_write, act_pre, pre_place,
            host_traffic_pre, t_comm_pre, t_hop_pre, t_ovh_pre)


@scalar_jit
def store_incompatible(out, j):
    """Metrics of an incompatible point: NaN, fits = 0, bound = infeasible."""
    for k in range(out.shape[0]):
        out[k, j] = NAN
    out[O_FITS, j] = 0.0
    out[O_BOUND, j] = BOUND_INFEASIBLE


@scalar_jit
def stage_point(st, pt, hw, md, peak, pr, ly, batch, context, output_len, out, j):
    """The rest of one compatible point, stored in ``out[:, j]``; ``st``, ``pt`` are the tuples of
    :func:`stage_static` and :func:`stage_prompt` for it."""
    (stage_layers, sf, moe_stage, dense_read_on, experts_on, weights_dev, kv_frac, b_group,
     act_per_token_layer, logits_dev, w_replica, logits_replica, dev_cap, bw, lat,
     eff_peak, ovh, mb, b_micro, bg_micro, rounds, host_bytes, imb_dec, imb_std_dec,
     flops_exp, flops_w, weights_read, act_read_dec, host_traffic_dec, dec_place, t_a2a,
     t_comm, t_hop, t_ovh, c_all, dense_read_dev, experts_dev, stored_on) = st
    (act_dev, act_replica, fl_pre, t_comp_pre, kv_write, act_pre, pre_place,
     host_traffic_pre, t_comm_pre, t_hop_pre, t_ovh_pre) = pt
    tp = ly[L_TP]
    pp = ly[L_PP]
    dp = ly[L_DP]
    off = ly[L_OFF]
    win = md[M_WIN]
    kvb = pr[P_KVB]

    # ---- sizes that depend on the sequence length: eqs. (1)-(4), (6), (14)
    l_max = context + output_len
    c_mean = context + 0.5 * output_len  # mean KV length over generation, eq. (6)
    kv_seq_cap = md[M_KVF] * l_max + md[M_KVW] * (min(l_max, win) if win > 0.0 else l_max)
    kv_seq_mean = md[M_KVF] * c_mean + md[M_KVW] * (min(c_mean, win) if win > 0.0 else c_mean)
    kv_dev = b_group * kv_seq_cap * kvb * kv_frac * sf
    mem_dev = weights_dev + kv_dev + act_dev
    total_replica = w_replica + batch * kv_seq_cap * kvb + act_replica + logits_replica
    min_dev = math.ceil(total_replica / dev_cap) if dev_cap > 0.0 else NAN

    # ---------------- decode step: eqs. (6)-(11)
    win_c = min(c_mean, win) if win > 0.0 else c_mean
    flops_attn = bg_micro * (md[M_AFD] * c_mean + md[M_AWD] * win_c) * sf / tp
    flops_dec = flops_w + flops_attn
    t_comp = flops_dec / eff_peak
    kv_read = bg_micro * kv_seq_mean * kvb * kv_frac * sf
    fits, ts, td, th, tpk = place_end(hw, dec_place, kv_dev, act_dev, kv_read, act_read_dec,
                                      host_bytes, host_traffic_dec, off > 0.0)
    if not fits:
        for k in range(out.shape[0]):
            out[k, j] = NAN
        out[O_FITS, j] = 0.0
        out[O_BOUND, j] = BOUND_INFEASIBLE
        out[O_MEM, j] = mem_dev
        out[O_MIND, j] = min_dev
        return
    t_mem = ts + td + th
    t_stage = max(t_comp, t_mem) + t_comm + t_ovh
    tpot = rounds * t_stage + (pp - 1.0) * t_hop

    # ---------------- prefill (TTFT): eqs. (4)-(5), same roofline
    _, tsp, tdp_, thp, tpk_pre = place_end(hw, pre_place, kv_dev, act_dev, kv_write, act_pre,
                                           host_bytes, host_traffic_pre, off > 0.0)
    t_mem_pre = tsp + tdp_ + thp
    t_stage_pre = max(t_comp_pre, t_mem_pre) + t_comm_pre + t_ovh_pre
    ttft = (mb + pp - 1.0) * t_stage_pre + (pp - 1.0) * t_hop_pre

    # ---------------- end to end, throughput, energy: eqs. (13)
    e2e = ttft + (output_len - 1.0) * tpot
    devices = tp * pp * ly[L_EP] * dp
    throughput = dp * batch * output_len / e2e
    total_tp = dp * batch * (context + output_len) / e2e
    busy_dec = mb * t_stage / tpot  # fraction of the round a stage is working
    util_dec = max(flops_dec / (peak * t_stage), tpk / t_stage) * busy_dec
    busy_pre = mb * t_stage_pre / ttft
    util_pre = max(fl_pre / (peak * t_stage_pre), tpk_pre / t_stage_pre) * busy_pre
    p_dec = hw[H_IDLE] + (hw[H_TDP] - hw[H_IDLE]) * min(util_dec, 1.0)
    p_pre = hw[H_IDLE] + (hw[H_TDP] - hw[H_IDLE]) * min(util_pre, 1.0)
    energy_dev = p_pre * ttft + p_dec * (output_len - 1.0) * tpot
    power = devices * energy_dev / e2e

    # binding resource of the decode step
    top = max(t_comp, t_mem)
    if top >= c_all and top >= t_ovh:
        if t_comp >= t_mem:
            bound = 0.0
        elif ts >= td and ts >= th:
            bound = 1.0
        elif td >= th:
            bound = 2.0
        else:
            bound = 3.0
    elif c_all >= t_ovh:
        bound = 4.0
    else:
        bound = 5.0

    # latency variance: device jitter and EP load imbalance, eq. (12)
    t_imb = t_a2a
    if t_comp >= t_mem:
        t_imb += t_comp * flops_exp / flops_dec
    cov_ep = imb_std_dec * t_imb / t_stage
    cov = math.sqrt(hw[H_JIT] * hw[H_JIT] + cov_ep * cov_ep)

    out[O_TTFT, j] = ttft
    out[O_TPOT, j] = tpot
    out[O_E2E, j] = e2e
    out[O_THR, j] = throughput
    out[O_TTHR, j] = total_tp
    out[O_THRD, j] = throughput / devices
    out[O_TPJ, j] = throughput / power
    out[O_PWR, j] = power
    out[O_MEM, j] = mem_dev
    out[O_FITS, j] = 1.0
    out[O_BOUND, j] = bound
    out[O_AI, j] = flops_dec / (weights_read + kv_read + act_read_dec + host_traffic_dec)
    out[O_MFU, j] = mb * flops_dec / (peak * tpot)
    out[O_MBU, j] = mb * tpk / tpot
    out[O_COV, j] = cov
    out[O_MIND, j] = min_dev


@scalar_jit
def evaluate_point(hw, md, peak, batch, context, output_len, pr, ly, prefill_chunk, out, j):
    """Evaluate every metric of one grid point and store them in ``out[:, j]`` (see params.METRICS).

    hw, md, pr, ly : rows of the hardware, model, precision and layout tables
    peak : dense peak FLOP/s of this hardware for this precision's compute dtype (0 = none)
    batch, context, output_len : sequences per replica, prompt tokens, generated tokens per sequence
    prefill_chunk : tokens per prefill forward pass (activation memory, weight re-reads)
    """
    if not is_compatible(hw, md, peak, ly):
        store_incompatible(out, j)
        return
    st = stage_static(hw, md, peak, batch, pr, ly)
    pt = stage_prompt(st, hw, md, pr, ly, batch, context, prefill_chunk)
    stage_point(st, pt, hw, md, peak, pr, ly, batch, context, output_len, out, j)
