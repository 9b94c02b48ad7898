"""A static batch: ``batch`` sequences prefilled together, then decoded together
[model.md sections 7-11].

What offline benchmarks with a fixed batch run. A batch whose KV cache does not fit runs in waves
of what fits (section 11): the point stays feasible, its ``concurrency`` says how many sequences
ran at once, and its latencies include the waiting of later waves.
"""

from __future__ import annotations

import math
from collections import namedtuple

from kernels.accelerate import called_jit, scalar_jit
from kernels.metrics import decode_bound, max_sequences, store_metrics
from kernels.power import activity_power, compute_energy
from kernels.roofline import (
    H_CHUNK,
    H_OVI,
    H_OVR,
    H_SPC,
    H_SPK,
    L_EP,
    L_PP,
    L_TP,
    M_AFD,
    M_AFP,
    M_AWD,
    M_AWP,
    M_CHK,
    M_KVF,
    M_KVW,
    M_V,
    M_WIN,
    NAN,
    O_HOSTF,
    O_MAXC,
    O_MEM,
    O_MIND,
    P_AB,
    P_KVB,
    X_A16D,
    X_A16P,
    X_EDEC,
    X_EPRE,
    X_PEAK,
    kv_bytes_dev,
    kv_elems,
    pass_fixed,
    pass_time,
    spec_tau,
    sram_only,
    store_infeasible,
    weights_flops_at,
    window_mean_length,
    window_pairs,
)

#: what :func:`static_batch` passes on: per (platform, model, batch, precision, layout)
Static = namedtuple("Static", (
    "geo", "mb", "b_m", "g_m", "g_all", "rounds", "logits_dev", "logits_replica", "dec",
    "dec_spec", "q_spec"))
#: what :func:`static_prompt` passes on: + the prompt length
Prompt = namedtuple("Prompt", ("act_dev", "act_replica", "pre", "attn_pre", "kv_write",
                               "n_chunks"))


@called_jit
def static_batch(geo, hw, md, px, pr, ly, batch):
    """The batch's whole sequences (eq. (2)) and its decode step's KV-independent part
    (section 7; a speculative verification of k_s + 1 tokens per sequence too)."""
    tp = ly[L_TP]
    pp = ly[L_PP]
    ep = ly[L_EP]
    mb = min(batch, pp)  # micro-batches
    b_m = math.ceil(batch / mb)  # sequences in the largest micro-batch
    g_m = math.ceil(b_m / ep)  # ... on the busiest attention group (EP rank)
    g_all = math.ceil(batch / ep)  # sequences whose KV the busiest rank holds
    rounds = max(mb, pp)
    logits_dev = g_all * md[M_V] * 4.0 / tp
    logits_replica = batch * md[M_V] * 4.0
    dec = pass_fixed(geo, hw, md, px, pr, ly, g_m, b_m, g_m, 1.0)
    q = hw[H_SPK] + 1.0
    if hw[H_SPK] > 0.0:
        dec_spec = pass_fixed(geo, hw, md, px, pr, ly, g_m * q, b_m * q, g_m * q, 1.0)
    else:
        dec_spec = dec
    return Static(geo, mb, b_m, g_m, g_all, rounds, logits_dev, logits_replica, dec, dec_spec, q)


@called_jit
def static_prompt(st, hw, md, px, pr, ly, batch, context):
    """The batch's prefill (section 8) and its activation sizes (eq. (4))."""
    geo = st.geo
    tp = ly[L_TP]
    chunk = hw[H_CHUNK]
    if sram_only(hw):
        # the prompt streams through the layer pipeline: a layer holds the rows of the tokens in
        # flight, one per sequence, not a chunk's activations materialised between kernels
        tokens_chunk = st.g_all
        tokens_replica = batch
    else:
        tokens_chunk = min(st.g_all * context, chunk)
        tokens_replica = min(batch * context, chunk)
    act_dev = tokens_chunk * geo.act_per_token_layer * pr[P_AB] / tp + st.logits_dev
    act_replica = tokens_replica * geo.act_per_token_layer * pr[P_AB]
    n_chunks = max(1.0, math.ceil(st.g_m * context / chunk))
    pre = pass_fixed(geo, hw, md, px, pr, ly, st.g_m * context, st.b_m * context, st.g_m,
                     n_chunks)
    attn_pre = st.g_m * (md[M_AFP] * window_pairs(context, 0.0, 0.0)
                         + md[M_AWP] * window_pairs(context, md[M_WIN], md[M_CHK])) \
        * geo.sf * geo.a_pad / tp
    kv_write = st.g_m * kv_bytes_dev(geo, md, pr, context)
    return Prompt(act_dev, act_replica, pre, attn_pre, kv_write, n_chunks)


@called_jit
def static_run(st, pt, hw, md, px, pr, ly, batch, context, output_len):
    """One static batch of ``batch`` sequences that fits at once: (reason code, then ttft, tpot,
    e2e [s], device power in prefill and decode [W], memory per device, host bytes [B], then the
    decode diagnostics: bound, arithmetic intensity, and mfu and mbu times the TPOT). Power
    follows activity (section 9): the energy of the FLOPs and bytes of the busiest stage's
    device over the phase."""
    geo = st.geo
    tp = ly[L_TP]
    pp = ly[L_PP]
    win = md[M_WIN]
    peak = px[X_PEAK]

    # ---- sizes that depend on the sequence length: eqs. (3), (14)
    x_cap = context + output_len
    kv_dev = st.g_all * kv_bytes_dev(geo, md, pr, x_cap)
    mem_dev = geo.weights_dev + kv_dev + pt.act_dev

    # ---- decode step: section 7
    c_mean = context + 0.5 * output_len
    c_win = window_mean_length(context, output_len, win, md[M_CHK])
    kv_mean = md[M_KVF] * c_mean + md[M_KVW] * c_win
    kv_read = st.g_m * kv_mean * pr[P_KVB] * geo.kv_frac * geo.sf * geo.kv_reads
    attn1 = st.g_m * (md[M_AFD] * c_mean + md[M_AWD] * c_win) * geo.sf * geo.a_pad / tp
    d = st.dec
    flops_dec = d.flops_w + attn1
    r_dec = peak * px[X_EDEC]
    # the FLOPs' time at the engine's rate (also their energy); the attention projections a
    # scheme keeps at 16 bits take attn16_ratio times as long (0 FLOPs otherwise: section 7)
    t_flops = (weights_flops_at(d, px[X_A16D]) + attn1) / r_dec
    code, t_stage, t_comp, t_mem, ts, td, th, tpk, host_total, e_move, top = pass_time(
        geo, hw, px, ly, d, kv_dev, pt.act_dev, kv_read, t_flops, attn1 / r_dec, 1.0, st.g_m)
    if code != 0:
        return code, NAN, NAN, NAN, NAN, NAN, mem_dev, host_total, NAN, NAN, NAN, NAN, NAN
    t_dec = st.rounds * t_stage + d.t_hops + hw[H_OVI]
    tpot = t_dec
    e_step = compute_energy(hw, t_flops) + e_move  # a micro-batch's decode pass on the device [J]
    energy_tok = e_step * st.mb  # device energy per generated token [J]
    flops_tok = flops_dec  # FLOPs and peak-bandwidth time per generated token (mfu, mbu)
    tpk_tok = tpk
    if hw[H_SPK] > 0.0:  # speculative decoding: a round verifies k_s + 1 tokens
        s = st.dec_spec
        flops_q = s.flops_w + attn1 * st.q_spec
        t_flops_q = (weights_flops_at(s, px[X_A16D]) + attn1 * st.q_spec) / r_dec
        _, t_stage_q, _, _, _, _, _, tpk_q, _, e_move_q, _ = pass_time(
            geo, hw, px, ly, s, kv_dev, pt.act_dev, kv_read, t_flops_q,
            attn1 * st.q_spec / r_dec, 1.0, st.g_m)
        t_dec_q = st.rounds * t_stage_q + s.t_hops + hw[H_OVI]
        tau = spec_tau(hw)
        drafts = hw[H_SPK] * hw[H_SPC]  # k_s draft steps at c_d of a target step each
        tpot = (t_dec_q + drafts * t_dec) / tau
        energy_tok = (compute_energy(hw, t_flops_q) + e_move_q + drafts * e_step) * st.mb / tau
        flops_tok = (flops_q + drafts * flops_dec) / tau
        tpk_tok = (tpk_q + drafts * tpk) / tau

    # ---- prefill (TTFT): section 8
    p = pt.pre
    r_pre = peak * px[X_EPRE]
    t_flops_pre = (weights_flops_at(p, px[X_A16P]) + pt.attn_pre) / r_pre
    _, t_stage_pre, _, _, _, _, _, _, _, e_move_pre, _ = pass_time(
        geo, hw, px, ly, p, kv_dev, pt.act_dev, pt.kv_write, t_flops_pre,
        pt.attn_pre / r_pre, pt.n_chunks, 0.0)
    ttft = ((st.mb + pp - 1.0) * t_stage_pre + p.t_hops + pt.n_chunks * hw[H_OVI]
            + hw[H_OVR])
    e2e = ttft + (output_len - 1.0) * tpot

    # ---- power of each phase: section 9
    p_pre = activity_power(hw, (compute_energy(hw, t_flops_pre) + e_move_pre) * st.mb, ttft)
    p_dec = activity_power(hw, energy_tok, tpot)

    # ---- diagnostics of the decode step: section 10
    traffic = geo.dense_read_on + d.experts_read + kv_read + d.act_traffic + d.host_traffic
    bound, cov = decode_bound(hw, t_comp, t_mem, top, ts, td, th, d, st.rounds, geo.t_ovh,
                              t_stage, flops_dec, traffic)
    return (0, ttft, tpot, e2e, p_pre, p_dec, mem_dev, host_total, bound, flops_dec / traffic,
            st.mb * flops_tok / peak, st.mb * tpk_tok, cov)


@scalar_jit
def static_point(st, pt, hw, md, px, pr, ly, batch, context, output_len, out, j):
    """Every metric of a static-batch point, stored in ``out[:, j]``; ``st``, ``pt`` are
    :func:`static_batch` and :func:`static_prompt` of it. A batch beyond what the memory (or the
    engine's batch cap) holds at once runs in ``n_w`` equal waves of ``b_w`` sequences
    [model.md section 11]."""
    geo = st.geo
    tp = ly[L_TP]
    x_cap = context + output_len
    # eq. (14): the whole replica with every sequence of the batch at once
    total_replica = (geo.w_replica + batch * kv_elems(md, x_cap) * pr[P_KVB] + pt.act_replica
                     + st.logits_replica)
    min_dev = math.ceil(total_replica / geo.dev_cap) if geo.dev_cap > 0.0 else NAN
    # ---- the largest batch that runs at once: section 11
    per_seq = kv_bytes_dev(geo, md, pr, x_cap) + md[M_V] * 4.0 / tp
    act_fixed = pt.act_dev - st.logits_dev
    if sram_only(hw):  # eq. (4): one activation row per sequence, streamed
        per_seq += geo.act_per_token_layer * pr[P_AB] / tp
        act_fixed = 0.0
    b_fit = max_sequences(geo, hw, ly, per_seq, act_fixed)
    n_w = 1.0
    b_run = batch
    if batch > b_fit and b_fit >= 1.0:
        n_w = math.ceil(batch / b_fit)
        b_run = math.ceil(batch / n_w)
        st = static_batch(geo, hw, md, px, pr, ly, b_run)
        pt = static_prompt(st, hw, md, px, pr, ly, b_run, context)
    (code, ttft, tpot, e2e, p_pre, p_dec, mem_dev, host_total, bound, ai, mfu_t, mbu_t,
     cov) = static_run(st, pt, hw, md, px, pr, ly, b_run, context, output_len)
    if code != 0:
        store_infeasible(out, j, code)
        out[O_MEM, j] = mem_dev
        out[O_MIND, j] = min_dev
        out[O_HOSTF, j] = host_total / mem_dev
        out[O_MAXC, j] = max(b_fit, 0.0)
        return
    energy_dev = p_pre * ttft + p_dec * (output_len - 1.0) * tpot  # one wave [J per device]
    # wave i starts after i whole waves: a sequence waits (n_w - 1) / 2 waves on average
    e2e_wave = e2e
    wait = 0.5 * (n_w - 1.0) * e2e_wave
    store_metrics(out, j, hw, ly, ttft + wait, tpot, e2e + wait, batch / (n_w * e2e_wave),
                  energy_dev / e2e_wave, output_len, context, mem_dev, host_total, bound, ai,
                  mfu_t / tpot, mbu_t / tpot, cov, min_dev, b_fit, b_run)
