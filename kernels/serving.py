"""Continuous (iteration-level) batching in steady state: per-request TTFT and TPOT under load,
maximum concurrency, request rate to latency percentiles  [model.md section 13].

Engines (vLLM, TensorRT-LLM, SGLang, ...) run one forward pass per *iteration*: every running
sequence decodes one token (``q`` with speculative decoding) and prompt tokens are admitted under a
token budget ``T`` per iteration, chunked across iterations or whole, in the same pass as the
decodes (mixed) or in a pass of their own. At a concurrency of ``C`` requests per replica (a closed
loop: a finished request is replaced at once) the model takes the steady state of that scheduler:

* a request's prompt needs ``k_p = ceil(S / a)`` iterations, ``a`` the budget left to it;
* counted in iterations, Little's law gives the mean decoding sequences ``D = C R / (R + k_p)``
  (``R = (O - 1) / tau`` decode iterations per request) and the prompts started per iteration
  ``lam = D / R``; a fraction ``f_m = lam k_p`` of the iterations carry a prompt chunk;
* with ``f_m < 1`` a mixed iteration holds one prompt's chunk beside ``C - 1`` decoding sequences
  and the others hold ``C``; with ``f_m >= 1`` every iteration is mixed; when the prompts need
  more than the budget leaves (``lam S > T - D q``) the budget saturates: ``D = T R / (S + q R)``
  and the other requests wait for it;
* TTFT = the iterations that carry the request's chunks (+ the wait for the budget, + the wait
  for a slot beyond the maximum concurrency); TPOT = the mean iteration a decoding request sees
  (other requests' prefill included); throughput = ``lam`` requests per mean iteration.

The iteration itself (:mod:`kernels.iteration`) is one :func:`kernels.roofline.pass_fixed`
forward pass (the physics of the static decode step and prefill, with both kinds of tokens). A
request rate ``r`` is turned into the mean concurrency ``N`` that serves it (``X(N) = r``,
Little's law) and the waits of Poisson arrivals are added by the queueing approximations of
:func:`rate_waits`.

The table rows ``hw``, ``md``, ``px``, ``pr`` and ``ly`` reach these functions as pointers
(:func:`kernels.accelerate.row_pointer`), read with the same constant indices as the tuples of
the static batch: numba passes a tuple argument field by field, and the scheduler calls several
non-inlined functions per point.
"""

from __future__ import annotations

import math

from kernels.accelerate import called_jit, scalar_jit
from kernels.iteration import (
    decode_step,
    further_prompt,
    iteration,
    one_prompt,
    prompt_iteration,
    spec_round,
)
from kernels.metrics import decode_bound, max_sequences, store_metrics
from kernels.power import activity_power
from kernels.queueing import (
    budget_wait,
    collision_wait,
    poisson_weights,
    rate_wait_terms,
    rate_waits,
)
from kernels.roofline import (
    H_BLK,
    H_CHP,
    H_CHUNK,
    H_MIX,
    H_OVR,
    H_RES,
    H_SPK,
    L_DP,
    L_EP,
    L_TP,
    M_CHK,
    M_V,
    M_WIN,
    NAN,
    O_E50,
    O_E90,
    O_E99,
    O_HOSTF,
    O_MAXC,
    O_MEM,
    O_MIND,
    O_T50,
    O_T90,
    O_T99,
    P_AB,
    P_KVB,
    R_SATURATED,
    X_PEAK,
    kv_bytes_dev,
    kv_elems,
    spec_tau,
    sram_only,
    store_infeasible,
    window_mean_length,
)

#: the share of requests waiting for the budget below which the iterations are not timed again
#: without them (13.2 step 6): the metrics would move by less than that share
RETIME_SHARE = 1e-4
#: iterations of the request-rate solve (regula falsi, Illinois variant)
RATE_ITERATIONS = 60
RATE_RTOL = 1e-10


@scalar_jit
def whole_weights(lam, others, n_max, anchor, phi):
    """Weights of (the decode iteration, t(n_a), t(n_a + 1), t(n_a + 2)) in the mean iteration and
    in the one a decoding request sees, and of (t(n_a), t(n_a + 1), t(n_a + 2)) in a request's
    own prompt iteration, for Poisson(``lam``) prompts per iteration (``others``: those of the
    other requests) with the time linear through n_a and n_a + 1, blended by ``phi`` with the
    pair one prompt up (13.2 step 3')."""
    a0, a1, a2 = poisson_weights(lam, math.inf, 0.0, anchor)
    s0, s1, s2 = poisson_weights(others, math.inf, 0.0, anchor)
    oe = poisson_weights(others, n_max, 1.0, anchor)[2]
    mean = (a0, (1.0 - phi) * (a1 - a2), (1.0 - phi) * a2, 0.0)
    seen = (s0, (1.0 - phi) * (s1 - s2), (1.0 - phi) * s2, 0.0)
    own = ((1.0 - phi) * (1.0 - oe), (1.0 - phi) * oe, 0.0)
    if phi > 0.0:
        b0, b1, b2 = poisson_weights(lam, math.inf, 0.0, anchor + 1.0)
        r0, r1, r2 = poisson_weights(others, math.inf, 0.0, anchor + 1.0)
        ob = poisson_weights(others, n_max, 1.0, anchor + 1.0)[2]
        mean = (mean[0], mean[1], mean[2] + phi * (b1 - b2), phi * b2)
        seen = (seen[0], seen[1], seen[2] + phi * (r1 - r2), phi * r2)
        own = (own[0], own[1] + phi * (1.0 - ob), phi * ob)
    return mean, seen, own


@called_jit
def steady_state(geo, hw, md, px, pr, ly, conc, context, output_len, kv_dev, act_dev, collide):
    """The scheduler's steady state at ``conc`` requests in flight (at most the maximum
    concurrency); ``collide``: include the wait of prompts that arrive together (a closed loop;
    at a request rate the Poisson waits of :func:`rate_waits` replace it). Returns (code,
    requests per second, TTFT without queueing [s], TPOT [s], mean iteration [s], E[t^2] of the
    iterations [s^2], energy [J], FLOPs, time at peak bandwidth and bytes per mean iteration on
    the busiest device, the decode step's bound and latency_cov, the budget's utilisation and
    the time a prompt holds the budget [s], 1 if the budget saturates (else 0), the
    host-resident bytes, the requests not waiting for the budget and their wait [s])."""
    s = context
    q_tok = hw[H_SPK] + 1.0  # tokens a decoding request puts in an iteration's budget
    tau = spec_tau(hw)
    c_mean = context + 0.5 * output_len
    c_win = window_mean_length(context, output_len, md[M_WIN], md[M_CHK])
    budget = hw[H_CHUNK]
    chunked = hw[H_CHP] > 0.5
    mixed = hw[H_MIX] > 0.5
    r_it = (output_len - 1.0) / tau  # decode iterations per request

    # ---- prompt service: chunk size and iterations per prompt (model.md 13.2)
    saturated = False
    if r_it <= 0.0:  # one generated token: prompts only
        d = 0.0
        c_tok = min(budget, conc * s)
        lam = c_tok / s
        k_p = max(1.0, conc / lam)
        f_m = 1.0
        d_mix = 0.0
    else:
        if chunked:  # chunks of the budget left beside the others' decodes (or a pass's own)
            left = budget - (conc - 1.0) * q_tok if mixed else budget
            k_p = math.ceil(s / min(s, left)) if left > 0.0 else 1.0
            saturated = left <= 0.0
        else:  # a whole prompt per pass (in passes of the budget if beyond it), beside the
            # decodes only if it fits the budget with them
            k_p = math.ceil(s / budget) if s > budget else 1.0
            mixed = mixed and s + (conc - 1.0) * q_tok <= budget
        d = conc * r_it / (r_it + k_p)
        lam = d / r_it
        f_m = lam * k_p
        if f_m <= 1.0 and not saturated:  # sparse: one prompt's chunk beside the others
            c_tok = s / k_p
            d_mix = max(conc - 1.0, 0.0)
        else:  # every iteration carries prompt tokens
            f_m = 1.0
            if chunked and mixed and not saturated:
                left = budget - d * q_tok
                if left > 0.0:
                    k_p = math.ceil(s / min(s, left))
                    d = conc * r_it / (r_it + k_p)
                    lam = d / r_it
            # prompt tokens an iteration can take: beside the decodes, or a pass of their own;
            # whole prompts (no chunking) only as many as fit
            room = budget - d * q_tok if mixed else budget
            if not chunked and s <= budget < math.inf:
                room = math.floor(room / s) * s
            if saturated or lam * s > room:  # the budget limits the prompts: the rest wait
                saturated = True
                if chunked:
                    if mixed:
                        d = min(conc, budget * r_it / (s + q_tok * r_it))
                    else:
                        d = min(conc, budget * r_it / s)
                    lam = d / r_it
                    if mixed:
                        k_p = math.ceil(s / min(s, max(budget - d * q_tok, 1.0)))
                else:  # n whole prompts per iteration beside the n R decodes they feed
                    n = math.floor(budget / (r_it * q_tok + s)) if mixed else 0.0
                    if n < 1.0:
                        mixed = False  # a prompt does not fit beside them: a pass of its own
                        n = max(1.0, math.floor(budget / s))
                    lam = min(n, conc / r_it)
                    d = lam * r_it
            c_tok = lam * s
            d_mix = d
    # decoding requests in a decode-only iteration (with one output token there is none: the
    # diagnostics describe a decode step of the concurrency)
    d_dec = conc if f_m < 1.0 or d <= 0.0 else d

    # ---- the iterations
    dit = decode_step(geo, hw, md, px, pr, ly, d_dec, context, c_mean, c_win, kv_dev, act_dev)
    if dit[0] != 0:
        return (dit[0], NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
                NAN, NAN, NAN)
    if hw[H_SPK] > 0.0:  # a speculative round (d_dec >= 1 here), its plain step ``dit``
        dec = spec_round(hw, dit, iteration(geo, hw, md, px, pr, ly, d_dec, q_tok, 0.0, context,
                                            1.0, c_mean, c_win, kv_dev, act_dev))
    else:
        dec = (dit[0], dit[1], dit[2], dit[3], dit[4], dit[5])
    t_dec, en_dec, fl_dec, tr_dec, pk_dec = dec[1], dec[2], dec[3], dec[4], dec[5]
    # whole prompts beside the decodes: how many fit an iteration
    room1 = budget - (conc - 1.0) * q_tok if mixed else budget
    n_max = math.floor(room1 / s) if room1 < math.inf else 1e9
    whole = k_p == 1.0 and not saturated and r_it > 0.0 and n_max >= 1.0 and lam <= n_max
    # sparse chunked prompts: k_p - 1 chunks fill the budget, the last takes the rest
    c_full = min(s, room1)
    chunks = (not whole and chunked and not saturated and f_m < 1.0 and k_p > 1.0
              and r_it > 0.0)
    anchor = 1.0
    phi = 0.0  # the weight of the pair one prompt up (whole prompts)
    if whole:  # prompts per iteration ~ Poisson(lam) (13.2 step 3'): iterations of n prompts
        # (beside conc - n decodes), linear in n through n_a = max(1, floor(lam)) and n_a + 1,
        # blended with the pair (n_a + 1, n_a + 2) by the fraction of lam past n_a
        anchor = min(max(1.0, math.floor(lam)), n_max)
        if lam > anchor and (anchor + 2.0 <= n_max or (chunked and mixed)):
            phi = lam - anchor  # (not toward a pair whose upper count takes a pass of its own)
        p1 = prompt_iteration(geo, hw, md, px, pr, ly, mixed, max(conc - anchor, 0.0),
                              anchor * s, context, 1.0, c_mean, c_win, kv_dev, act_dev, dec,
                              d_dec)
        p2 = further_prompt(geo, hw, md, px, pr, ly, mixed, chunked, conc, anchor, n_max, s,
                            context, c_mean, c_win, kv_dev, act_dev, dec, d_dec, p1)
        t_mix = one_prompt(p1[1], p2[1], t_dec, anchor, n_max, chunked and mixed)
        t_after = p1[6]
        p3 = p2
        if phi > 0.0:
            p3 = further_prompt(geo, hw, md, px, pr, ly, mixed, chunked, conc, anchor + 1.0,
                                n_max, s, context, c_mean, c_win, kv_dev, act_dev, dec, d_dec,
                                p2)
            t_mix = (1.0 - phi) * t_mix + phi * one_prompt(p2[1], p3[1], t_dec, anchor + 1.0,
                                                          n_max, chunked and mixed)
            t_after = (1.0 - phi) * t_after + phi * p2[6]
        code = p1[0] if p1[0] != 0 else (p2[0] if p2[0] != 0 else p3[0])
        c_tok = s
    elif chunks:  # a prompt in k_p chunks of the budget: k_p - 1 full ones and the rest
        p1 = prompt_iteration(geo, hw, md, px, pr, ly, mixed, d_mix, c_full, context, k_p,
                              c_mean, c_win, kv_dev, act_dev, dec, d_dec)
        p2 = prompt_iteration(geo, hw, md, px, pr, ly, mixed, d_mix, s - (k_p - 1.0) * c_full,
                              context, k_p, c_mean, c_win, kv_dev, act_dev, dec, d_dec)
        p3 = p2
        code = p1[0] if p1[0] != 0 else p2[0]
        t_mix = ((k_p - 1.0) * p1[1] + p2[1]) / k_p  # the mean of a prompt's iterations
        t_after = p2[6]
    else:
        p1 = prompt_iteration(geo, hw, md, px, pr, ly, mixed, d_mix, c_tok, context, k_p,
                              c_mean, c_win, kv_dev, act_dev, dec, d_dec)
        p2 = p1
        p3 = p1
        code = p1[0]
        t_mix = p1[1]
        t_after = p1[6]
    if code != 0:
        return (code, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
                NAN, NAN, NAN)

    # ---- the budget as a server of prompts: the time one prompt holds it (13.4)
    room = budget - d_mix * q_tok if mixed else budget
    hold = s * t_mix / max(room, 1.0) if budget < math.inf else 0.0
    # ---- prompts that arrive together wait for the budget (closed loop, 13.2 step 6)
    wait = 0.0
    c_eff = conc
    if collide and not saturated and conc > 1.0 and r_it > 0.0 and hold > 0.0:
        k_w = collision_wait(conc, r_it, k_p, hold / t_mix)
        d = conc * r_it / (r_it + k_p + k_w)
        lam = d / r_it
        f_m = min(1.0, lam * k_p)
        wait = k_w * t_mix  # the iterations it waits through carry the others' prompts
        c_eff = conc * (r_it + k_p) / (r_it + k_p + k_w)

    # ---- the mean iteration, the own iterations of a request and those it decodes in: weights
    # of the decode iteration and of p1, p2, p3
    if whole:
        # every iteration and those a request decodes in carry all the prompt tokens that
        # arrive (what one cannot take, a later one does: no cap); its own at most n_max
        others = lam * (conc - 1.0) / conc
        w = whole_weights(lam, others, n_max, anchor, phi)
        f_m = w[0][1] + w[0][2] + w[0][3]
        c0, c1, c2, c3 = w[0]
        s0, s1, s2, s3 = w[1]
        o1, o2, o3 = w[2]
    else:
        if r_it > 0.0:
            f_seen = min(1.0, max(0.0, (f_m * (k_p + r_it) - k_p) / r_it))
        else:
            f_seen = 1.0
        last = 1.0 / k_p if chunks else 0.0  # the share of a prompt's iterations that is last
        c0, c1, c2, c3 = 1.0 - f_m, f_m * (1.0 - last), f_m * last, 0.0
        s0, s1, s2, s3 = 1.0 - f_seen, f_seen * (1.0 - last), f_seen * last, 0.0
        o1, o2, o3 = 1.0, 0.0, 0.0
    t1, t2, t3 = p1[1], p2[1], p3[1]
    t_mean = c0 * t_dec + c1 * t1 + c2 * t2 + c3 * t3
    t_sq = c0 * t_dec * t_dec + c1 * t1 * t1 + c2 * t2 * t2 + c3 * t3 * t3
    energy = c0 * en_dec + c1 * p1[2] + c2 * p2[2] + c3 * p3[2]
    flops = c0 * fl_dec + c1 * p1[3] + c2 * p2[3] + c3 * p3[3]
    traffic = c0 * tr_dec + c1 * p1[4] + c2 * p2[4] + c3 * p3[4]
    peak_t = c0 * pk_dec + c1 * p1[5] + c2 * p2[5] + c3 * p3[5]
    t_seen = s0 * t_dec + s1 * t1 + s2 * t2 + s3 * t3
    requests = lam / t_mean  # [1/s] per replica
    if whole:
        ttft = o1 * t1 + o2 * t2 + o3 * t3
    elif chunks:
        # the full chunks leave no room; the last chunk's iteration also carries the prompts of
        # others that arrive with it where the budget leaves room, at their marginal time
        c_last = s - (k_p - 1.0) * c_full
        extra = min(lam * (conc - 1.0) / conc * s, max(room - c_last, 0.0))
        ttft = (k_p - 1.0) * t1 + t2 + max(t1 - t_dec, 0.0) / c_full * extra
    else:
        own = min(s / k_p + lam * (conc - 1.0) / conc * s, max(room, s / k_p))
        ttft = k_p * (t_mix + max(t_mix - t_dec, 0.0) / c_tok * (own - c_tok))
    ttft += wait - t_after + hw[H_OVR]  # a prefill pass of its own ends a slot
    if saturated and d > 0.0:  # waiting for the budget (13.2 step 4)
        ttft += budget_wait(conc, d, r_it, k_p, lam, t_mix, t_dec, hold, collide)
    tpot = (t_seen if r_it > 0.0 else t_dec) / tau
    # the decode step's diagnostics (model.md section 10)
    bound, cov = decode_bound(hw, dit[8], dit[9], dit[17], dit[10], dit[11], dit[12], dit[14],
                              dit[15], geo.t_ovh, dit[13], dit[6], dit[7])
    rho_b = requests * hold
    return (0, requests, ttft, tpot, t_mean, t_sq, energy, flops, peak_t, traffic, bound, cov,
            rho_b, hold, 1.0 if saturated else 0.0, dit[16], c_eff, wait)


@scalar_jit
def store_saturated(out, j, geo, c_max, kv_seq, logit_seq, act_fixed, ep, min_dev):
    """A request rate the replica cannot serve (code 11): NaN metrics, and what says why, at
    the maximum concurrency it would run: memory per device, host share, devices needed and
    ``max_concurrency`` [model.md sections 2 and 13.4]."""
    store_infeasible(out, j, R_SATURATED)
    g = math.ceil(c_max / ep)
    mem = geo.weights_dev + g * kv_seq + act_fixed + g * logit_seq
    out[O_MEM, j] = mem
    out[O_HOSTF, j] = geo.host_bytes / mem
    out[O_MIND, j] = min_dev
    out[O_MAXC, j] = c_max


@called_jit
def continuous_point(geo, hw, md, px, pr, ly, batch, context, output_len, rate_mode, out, j):
    """Every metric of a continuous-batching point, stored in ``out[:, j]``: ``batch`` is the
    concurrency per replica, or with ``rate_mode`` the request rate of the layout [1/s]
    [model.md section 13]."""
    tp = ly[L_TP]
    ep = ly[L_EP]
    dp = ly[L_DP]
    # ---- capacity: the maximum concurrency the scheduler and the KV cache admit (13.2)
    x_res = context + output_len if hw[H_RES] > 0.5 else context + 0.5 * output_len
    blk = hw[H_BLK]
    if blk > 1.0:
        x_res = math.ceil(x_res / blk) * blk
    kv_seq = kv_bytes_dev(geo, md, pr, x_res)
    logit_seq = md[M_V] * 4.0 / tp
    act_tok = hw[H_CHUNK] if hw[H_CHUNK] < math.inf else context
    row = 0.0
    if sram_only(hw):
        # eq. (4): the prompt streams through the layer pipeline, a layer holds one row per
        # sequence in flight instead of a pass's activations (counted with each sequence)
        row = geo.act_per_token_layer * pr[P_AB]
        logit_seq += row / tp
        act_tok = 0.0
    act_fixed = act_tok * geo.act_per_token_layer * pr[P_AB] / tp
    c_max = max_sequences(geo, hw, ly, kv_seq + logit_seq, act_fixed)
    # eq. (14) per request in flight, and once for the weights and one pass's activations
    replica_seq = kv_elems(md, x_res) * pr[P_KVB] + md[M_V] * 4.0 + row
    replica_fix = geo.w_replica + act_tok * geo.act_per_token_layer * pr[P_AB]
    conc = min(batch, c_max) if not rate_mode else 1.0
    n_seq = batch if not rate_mode and batch < math.inf else conc
    min_dev = math.ceil((replica_fix + n_seq * replica_seq) / geo.dev_cap) \
        if geo.dev_cap > 0.0 else NAN
    if c_max < 1.0:
        conc = 1.0  # not even one request fits: placement says why (memory or host capacity)
    g_all = math.ceil(conc / ep)
    kv_dev = g_all * kv_seq
    act_dev = act_fixed + g_all * logit_seq
    st = steady_state(geo, hw, md, px, pr, ly, conc, context, output_len, kv_dev, act_dev,
                      not rate_mode)
    wait_b = 0.0
    if st[0] == 0 and st[16] < conc * (1.0 - RETIME_SHARE):
        # the requests that wait for the budget are not in the iterations: those run the steady
        # state of the others (13.2 step 6), their memory stays reserved
        wait_b = st[17]
        st = steady_state(geo, hw, md, px, pr, ly, st[16], context, output_len, kv_dev, act_dev,
                          False)
    if st[0] != 0 or c_max < 1.0:
        code = st[0] if st[0] != 0 else 9.0
        mem = geo.weights_dev + kv_dev + act_dev
        store_infeasible(out, j, code)
        out[O_MEM, j] = mem
        out[O_MIND, j] = min_dev
        out[O_MAXC, j] = max(c_max, 0.0)
        out[O_HOSTF, j] = geo.host_bytes / mem
        return
    wait = 0.0
    if rate_mode:
        rate = batch / dp  # per replica
        # the smallest concurrency that serves the rate (13.4): X(N) need not be monotone (a
        # KV cache that spills to the host tier, ceilings that step), and a replica that starts
        # empty settles at the first N where X(N) reaches the arrival rate. X is taken at N = 1
        # (``st``), 2, 4, ... up to c_max; the first that exceeds the rate closes the bracket
        lo, f_lo = 0.0, -rate
        hi = 1.0
        top = st
        while top[1] <= rate:
            if hi >= c_max:
                store_saturated(out, j, geo, c_max, kv_seq, logit_seq, act_fixed, ep, min_dev)
                return
            lo, f_lo = hi, top[1] - rate
            hi = min(2.0 * hi, c_max)
            g_hi = math.ceil(hi / ep)
            top = steady_state(geo, hw, md, px, pr, ly, hi, context, output_len, g_hi * kv_seq,
                               act_fixed + g_hi * logit_seq, False)
            if top[0] != 0:
                store_saturated(out, j, geo, c_max, kv_seq, logit_seq, act_fixed, ep, min_dev)
                return
        # then regula falsi (Illinois) on X(N) - rate in the bracket
        f_hi = top[1] - rate
        side = 0
        conc = hi
        st = top
        f = f_hi
        g_hi = math.ceil(hi / ep)
        st_hi, kv_hi, act_hi = top, g_hi * kv_seq, act_fixed + g_hi * logit_seq
        for _ in range(RATE_ITERATIONS):
            conc = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
            g_all = math.ceil(conc / ep)
            kv_dev = g_all * kv_seq
            act_dev = act_fixed + g_all * logit_seq
            st = steady_state(geo, hw, md, px, pr, ly, conc, context, output_len, kv_dev,
                              act_dev, False)
            f = st[1] - rate
            if abs(f) <= RATE_RTOL * rate:
                break
            if f > 0.0:
                hi, f_hi = conc, f
                st_hi, kv_hi, act_hi = st, kv_dev, act_dev
                if side == 1:
                    f_lo *= 0.5
                side = 1
            else:
                lo, f_lo = conc, f
                if side == -1:
                    f_hi *= 0.5
                side = -1
        if f < -RATE_RTOL * rate:
            # X(N) steps over the rate (a sequence more per rank, a tier more of memory): no N
            # serves it exactly, and the bracket has closed on the step. A replica settles at
            # the first N that serves it, the step's upper side, whichever side the last
            # iterate fell on
            conc, st, kv_dev, act_dev = hi, st_hi, kv_hi, act_hi
        if geo.dev_cap > 0.0:
            min_dev = math.ceil((replica_fix + conc * replica_seq) / geo.dev_cap)
    elif conc < batch < math.inf:  # requests beyond the maximum concurrency wait for a slot
        wait = (batch - conc) / st[1]  # (batch = inf asks for the maximum load itself)
    (_, requests, ttft, tpot, t_mean, t_sq, energy, flops, peak_t, traffic, bound, cov, rho_b,
     hold, saturated, host_total, _, _) = st
    ttft += wait + wait_b
    e2e = ttft + (output_len - 1.0) * tpot
    if rate_mode:
        waits = rate_wait_terms(t_mean, t_sq, rho_b, hold, conc, c_max, e2e)
        extra = rate_waits(waits, rho_b, 0.0)
        if extra == math.inf:
            store_saturated(out, j, geo, c_max, kv_seq, logit_seq, act_fixed, ep, min_dev)
            return
        for o_t, o_e, p in ((O_T50, O_E50, 0.5), (O_T90, O_E90, 0.9), (O_T99, O_E99, 0.99)):
            w = rate_waits(waits, rho_b, p)
            out[o_t, j] = ttft + w
            out[o_e, j] = e2e + w
        ttft += extra
        e2e += extra
    power_dev = activity_power(hw, energy, t_mean)
    mem = geo.weights_dev + kv_dev + act_dev
    peak = px[X_PEAK]
    store_metrics(out, j, hw, ly, ttft, tpot, e2e, requests, power_dev, output_len, context,
                  mem, host_total, bound, flops / traffic, flops / (peak * t_mean),
                  peak_t / t_mean, cov, min_dev, c_max, conc)
