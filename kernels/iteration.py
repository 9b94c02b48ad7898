"""One iteration of the continuous-batching scheduler: a forward pass of decoding requests and
prompt tokens, a speculative round, and the prompt iterations the steady state of
:mod:`kernels.serving` weighs  [model.md section 13.2].

The table rows ``hw``, ``md``, ``px``, ``pr`` and ``ly`` arrive as pointers
(:func:`kernels.accelerate.row_pointer`). :func:`iteration` and :func:`prompt_iteration` are
called, not inlined, and return only what their callers read: numba clears every call's result
slot when the calling function starts, so large results inlined many times made the callers'
stack frames large (16 KB) and slow to start.
"""

from __future__ import annotations

import math

from kernels.accelerate import called_jit, scalar_jit
from kernels.power import compute_energy
from kernels.roofline import (
    H_OVI,
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
    M_WIN,
    P_KVB,
    X_EDEC,
    X_EPRE,
    X_PEAK,
    kv_bytes_dev,
    pass_fixed,
    pass_time,
    weights_flops_time,
    window_pairs,
)


@scalar_jit
def _iteration(geo, hw, md, px, pr, ly, n_dec, q, c_tok, context, k_p, c_mean, c_win, kv_dev,
               act_dev):
    """One iteration: ``n_dec`` decoding sequences verifying ``q`` tokens each and ``c_tok``
    prompt tokens (chunks of prompts of ``context`` tokens served in ``k_p`` iterations each) in
    one forward pass through the pipeline. Returns (reason code, iteration time [s], then per
    iteration on the busiest device: energy [J] (section 9), FLOPs, bytes moved [B], time at
    peak bandwidth [s]; then per micro-batch pass the FLOPs and bytes, t_comp, t_mem,
    SRAM/DRAM/host times, the stage pass time, the pass tuple and the micro-batch rounds: the
    decode diagnostics' inputs; then the host-resident bytes and the busy time of the pass,
    :func:`kernels.roofline.busy_time`). A decode-only pass on a device
    with ``spatial_layers`` crosses its layer regions in turn (section 7); a pass that carries
    prompt tokens fills the regions with them, like a static prefill."""
    tp = ly[L_TP]
    pp = ly[L_PP]
    ep = ly[L_EP]
    m = min(max(n_dec, 1.0), pp)  # micro-batches (a mean: at most one per decoding request)
    # decoding requests per micro-batch and on its busiest EP rank: a mean, except that under
    # EP the busiest rank holds whole sequences (section 3, eq. (2))
    b_d = n_dec / m if ep <= 1.0 else math.ceil(n_dec / m)
    g_d = b_d if ep <= 1.0 else math.ceil(b_d / ep)
    c_mb = c_tok / m  # prompt tokens of a micro-batch, on one rank (a sequence is whole)
    frac = c_mb / context  # prompts' worth of tokens in the micro-batch
    g_tok = g_d * q + c_mb
    p = pass_fixed(geo, hw, md, px, pr, ly, g_tok, b_d * q + c_mb, g_d * q + frac, 1.0)
    scale = geo.sf * geo.a_pad / tp
    attn_dec = g_d * q * (md[M_AFD] * c_mean + md[M_AWD] * c_win) * scale
    attn_pre = frac * (md[M_AFP] * window_pairs(context, 0.0, 0.0)
                       + md[M_AWP] * window_pairs(context, md[M_WIN], md[M_CHK])) * scale
    kv_read = (g_d * (md[M_KVF] * c_mean + md[M_KVW] * c_win) * pr[P_KVB] * geo.kv_frac * geo.sf
               * geo.kv_reads)
    # a chunk attends to the prompt's earlier chunks: their KV is read, its own written
    prefix = context * (k_p - 1.0) / (2.0 * k_p)
    kv_traffic = (kv_read + frac * k_p * kv_bytes_dev(geo, md, pr, prefix)
                  + frac * kv_bytes_dev(geo, md, pr, context))
    share_dec = g_d * q / g_tok if g_tok > 0.0 else 1.0
    peak = px[X_PEAK]
    r_dec = peak * px[X_EDEC]
    r_pre = peak * px[X_EPRE]
    t_attn = attn_dec / r_dec + attn_pre / r_pre
    t_comp = weights_flops_time(p, px, share_dec, r_dec, r_pre) + t_attn
    t_flops = t_comp  # the FLOPs' time at the engine's rates, which sets their energy
    seqs = g_d if c_tok <= 0.0 else 0.0
    code, t_stage, t_comp, t_mem, ts, td, th, tpk, host, e_move, top = pass_time(
        geo, hw, px, ly, p, kv_dev, act_dev, kv_traffic, t_comp, t_attn, 1.0, seqs)
    rounds = max(m, pp)
    t_it = rounds * t_stage + p.t_hops + hw[H_OVI]
    flops = p.flops_w + attn_dec + attn_pre
    traffic = geo.dense_read_on + p.experts_read + kv_traffic + p.act_traffic + p.host_traffic
    energy = compute_energy(hw, t_flops) + e_move
    return (code, t_it, energy * m, flops * m, traffic * m, tpk * m, flops, traffic,
            t_comp, t_mem, ts, td, th, t_stage, p, rounds, host, top)


@called_jit
def iteration(geo, hw, md, px, pr, ly, n_dec, q, c_tok, context, k_p, c_mean, c_win, kv_dev,
              act_dev):
    """:func:`_iteration` without the diagnostics: (reason code, iteration time [s], energy [J],
    FLOPs, bytes moved [B] and time at peak bandwidth [s], per iteration on the busiest
    device). A small result keeps the callers' stack frames small (numba clears each call's
    result slot)."""
    v = _iteration(geo, hw, md, px, pr, ly, n_dec, q, c_tok, context, k_p, c_mean, c_win, kv_dev,
                   act_dev)
    return v[0], v[1], v[2], v[3], v[4], v[5]


@called_jit
def decode_step(geo, hw, md, px, pr, ly, n_dec, context, c_mean, c_win, kv_dev, act_dev):
    """A plain decode step of ``n_dec`` requests: :func:`_iteration` with its diagnostics."""
    return _iteration(geo, hw, md, px, pr, ly, n_dec, 1.0, 0.0, context, 1.0, c_mean, c_win,
                      kv_dev, act_dev)


@scalar_jit
def spec_round(hw, plain, v):
    """A speculative round from its plain decode step and its verification (both
    :func:`iteration` tuples): the verification of k_s + 1 tokens per request plus k_s draft
    steps of c_d plain decode steps. Returns the tuple of :func:`iteration` (the plain step's
    code)."""
    c = hw[H_SPK] * hw[H_SPC]  # k draft steps, each c_d of a plain step
    return (plain[0], v[1] + c * plain[1], v[2] + c * plain[2], v[3] + c * plain[3],
            v[4] + c * plain[4], v[5] + c * plain[5])


@scalar_jit
def round_passes(geo, hw, md, px, pr, ly, n_dec, c_tok, context, k_p, c_mean, c_win, kv_dev,
                 act_dev):
    """An iteration of ``n_dec`` decoding requests beside ``c_tok`` prompt tokens in one pass; where
    the engine drafts (and requests decode), a speculative round (:func:`spec_round`). Returns
    the tuple of :func:`iteration`."""
    k = hw[H_SPK]
    if k > 0.0 and n_dec > 0.0:
        plain = iteration(geo, hw, md, px, pr, ly, n_dec, 1.0, 0.0, context, 1.0, c_mean, c_win,
                          kv_dev, act_dev)
        v = iteration(geo, hw, md, px, pr, ly, n_dec, k + 1.0, c_tok, context, k_p, c_mean,
                      c_win, kv_dev, act_dev)
        return spec_round(hw, plain, v)
    return iteration(geo, hw, md, px, pr, ly, n_dec, 1.0, c_tok, context, k_p, c_mean, c_win,
                     kv_dev, act_dev)


@called_jit
def prompt_iteration(geo, hw, md, px, pr, ly, mixed, n_dec, c_tok, context, k_p, c_mean, c_win,
                     kv_dev, act_dev, dec, d_dec):
    """An iteration that carries ``c_tok`` prompt tokens beside ``n_dec`` decoding requests:
    one pass (``mixed``), or a prefill pass of its own then the decode pass (``dec`` when it is
    of ``d_dec`` requests). Returns (code, time, energy, FLOPs, bytes, peak time, the time after
    the prompts' first tokens)."""
    if mixed:
        v = round_passes(geo, hw, md, px, pr, ly, n_dec, c_tok, context, k_p, c_mean, c_win,
                         kv_dev, act_dev)
        return v[0], v[1], v[2], v[3], v[4], v[5], 0.0
    pre = iteration(geo, hw, md, px, pr, ly, 0.0, 1.0, c_tok, context, k_p, c_mean, c_win,
                    kv_dev, act_dev)
    if n_dec <= 0.0:
        return pre[0], pre[1], pre[2], pre[3], pre[4], pre[5], 0.0
    # fewer than one decode on average (a request rate below two requests in flight): a
    # fraction n_dec of the prompt iterations has one decode pass after it, the others none,
    # so the time is continuous in n_dec instead of a whole weight read at any n_dec > 0
    w = min(n_dec, 1.0)
    n_pass = max(n_dec, 1.0)
    dm = dec if n_pass == d_dec else round_passes(geo, hw, md, px, pr, ly, n_pass, 0.0, context,
                                                  1.0, c_mean, c_win, kv_dev, act_dev)
    return (pre[0], pre[1] + w * dm[1], pre[2] + w * dm[2], pre[3] + w * dm[3],
            pre[4] + w * dm[4], pre[5] + w * dm[5], w * dm[1])


@scalar_jit
def further_prompt(geo, hw, md, px, pr, ly, mixed, chunked, conc, n, n_max, s, context, c_mean,
                   c_win, kv_dev, act_dev, dec, d_dec, pn):
    """The iteration of ``n + 1`` whole prompts (13.2 step 3') given ``pn``, that of ``n``: timed,
    or where ``n + 1`` exceed what an iteration holds and the rest does not ride the next mixed
    pass, a prompt iteration in place of a decode-only one (``t(n + 1) = 2 t(n) - t_dec``)."""
    if n + 1.0 <= n_max or (chunked and mixed):
        return prompt_iteration(geo, hw, md, px, pr, ly, mixed, max(conc - n - 1.0, 0.0),
                                (n + 1.0) * s, context, 1.0, c_mean, c_win, kv_dev, act_dev,
                                dec, d_dec)
    return (pn[0], 2.0 * pn[1] - dec[1], 2.0 * pn[2] - dec[2], 2.0 * pn[3] - dec[3],
            2.0 * pn[4] - dec[4], 2.0 * pn[5] - dec[5], pn[6])


@scalar_jit
def one_prompt(t_n, t_next, t_dec, n, n_max, rides):
    """An iteration of one whole prompt, from those of ``n`` and ``n + 1`` (13.2 step 3'):
    linear through them, or where the ``n + 1``-th takes an iteration of its own, with the slope
    of the full iteration's prompts ``(t(n) - t_dec) / n``."""
    if n + 1.0 <= n_max or rides:
        return t_n - (n - 1.0) * (t_next - t_n)
    return t_n - (n - 1.0) * (t_n - t_dec) / n
