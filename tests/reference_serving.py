"""Plain-Python reference of continuous batching (``docs/model.md`` section 13), from the page.

Built on the building blocks of :mod:`tests.reference` (sizes, placement, memory time,
collectives, hops, expert routing), never on ``kernels``. :func:`iteration` times one forward pass
of any mix of decode and prompt tokens from *totals* (decoding requests, prompt tokens, attention
pairs, KV elements read and written), so that the steady state of section 13.2
(:func:`steady_state`) and the discrete-event simulator of ``tests/serving_sim.py`` (which knows
each iteration's real composition) time iterations with the same physics.
"""

from __future__ import annotations

import math

from tests.reference import (
    FEASIBLE,
    MEMORY,
    METRICS,
    NAN,
    SATURATED,
    act_row,
    activity,
    bound,
    busy,
    collectives,
    ep_imbalance,
    kv_elems,
    kv_reads,
    kv_shard_fraction,
    latency_cov,
    max_sequences,
    mean_window_len,
    memory_time,
    pairs_window,
    pass_energy,
    phase_power,
    pipeline_hops,
    place,
    rank_experts_touched,
    sizes,
    stage_pass,
    structural_reason,
)

ERLANG_EXACT_MAX = 2048


# ------------------------------------------------------------------------------ 13.2 capacity
def admission_length(hw: dict, context: float, output_len: float) -> float:
    """Section 13.2: the KV length a request is counted at, rounded up to the KV block."""
    x = context + output_len if hw["kv_reserve"] != 0 else context + output_len / 2
    blk = hw["kv_block"]
    return math.ceil(x / blk) * blk if blk > 1 else x


def serving_sizes(hw: dict, md: dict, pr: dict, ly: dict, conc: float, context: float,
                  output_len: float) -> tuple[dict, float]:
    """Sizes of section 3 for ``conc`` requests in flight, the KV at the admission length and the
    activations of one pass of the budget; and the maximum concurrency (section 13.2)."""
    tp, ep = ly["tp"], ly["ep"]
    sz = sizes(hw, md, pr, ly, 1.0, context, output_len, False)
    x = admission_length(hw, context, output_len)
    budget = hw["prefill_chunk"]
    # eq. (4): a pass of the budget's activations, or on SRAM-only parts one streamed row per
    # request in flight (counted with the request, like its logits)
    act_tok = 0.0 if act_row(hw, md, pr) else (budget if math.isfinite(budget) else context)
    act_nl = act_tok * md["act_elems"] / md["n_layers"] * pr["act_bytes"] / tp
    c_max = max_sequences(hw, md, pr, ly, sz, x, act_nl)
    g = math.ceil(conc / ep)
    sz["kv"] = g * kv_elems(md, x) * pr["kv_bytes"] * kv_shard_fraction(md, tp) * sz["sf"]
    sz["act"] = act_nl + g * (md["vocab_size"] * 4 + act_row(hw, md, pr)) / tp
    sz["memory"] = sz["w_dense"] + sz["w_exp"] + sz["kv"] + sz["act"]
    sz["x_res"] = x
    sz["act_tokens"] = act_tok
    return sz, c_max


# ------------------------------------------------------------------------------ 13.1 iteration
def iteration(hw: dict, md: dict, pr: dict, px: dict, ly: dict, sz: dict, placement: dict, *,
              n_dec: float, q: float, c_mean: float, c_win: float, c_tok: float,
              prompts: float, pairs_full: float, pairs_win: float, kv_read_prompt: float,
              kv_write: float) -> dict:
    """Section 13.1: one forward pass through the pipeline with ``n_dec`` decoding requests of
    ``q`` tokens each at mean attended lengths ``c_mean``/``c_win``, and ``c_tok`` prompt tokens
    completing ``prompts`` prompts' worth, with their attention pairs and KV elements read (earlier
    chunks) and written, all per replica and per layer-summed element counts."""
    tp, ep, pp, off = ly["tp"], ly["ep"], ly["pp"], ly["offload"]
    sf, lm_s = sz["sf"], sz["lm_s"]
    m = min(max(n_dec, 1.0), pp)  # a mean number of micro-batches
    # a mean count of decoding requests; under EP the busiest rank holds whole sequences
    b_d = n_dec / m if ep == 1 else math.ceil(n_dec / m)
    g_d = b_d if ep == 1 else math.ceil(b_d / ep)
    c_mb = c_tok / m
    share = 1.0 / m  # the micro-batch's share of the prompt tokens (all on one rank)
    tokens_busy = g_d * q + c_mb
    n = (b_d * q + c_mb) * md["experts_per_token"]
    phi, r = ep_imbalance(n, ep)
    u = rank_experts_touched(md, b_d * q + c_mb, ep, phi)
    heads = g_d * q + prompts * share
    dense = 2 * (tokens_busy * sz["p_lin"] * sf + heads * sz["w_read"] / pr["embed_bytes"]) / tp
    expert = 2 * (n / ep) * phi * md["params_expert"] * lm_s / tp
    scale = sf * sz["a_pad"] / tp
    attn_dec = g_d * q * (md["attn_flops_full_decode"] * c_mean
                          + md["attn_flops_window_decode"] * c_win) * scale
    attn_pre = share * (md["attn_flops_full_prefill"] * pairs_full
                        + md["attn_flops_window_prefill"] * pairs_win) * scale
    w_dec = g_d * q / tokens_busy if tokens_busy > 0 else 1.0
    r_dec, r_pre = px["peak"] * px["eff_decode"], px["peak"] * px["eff_prefill"]
    t_attn = attn_dec / r_dec + attn_pre / r_pre
    # the attention projections a -attn16 scheme keeps at 16 bits run at that rate (section 13.1)
    a16 = 2 * tokens_busy * sz["p_att16"] * sf / tp
    t_comp = (w_dec * (dense + expert + a16 * (px["attn16_ratio_decode"] - 1)) / r_dec
              + (1 - w_dec) * (dense + expert + a16 * (px["attn16_ratio_prefill"] - 1)) / r_pre
              + t_attn)
    t_flops = t_comp  # the FLOPs' time at the engine's rates: it sets their energy (section 9)
    kvf = pr["kv_bytes"] * sz["f_kv"] * sf
    kv_dec = md["kv_elems_full"] * c_mean + md["kv_elems_window"] * c_win
    traffic = {
        "dense": (1 - off) * sz["r_dense"],
        "exp": (1 - off) * sz["w_exp"] * u,
        "kv": (g_d * kv_dec * kv_reads(hw, md, tp) + share * (kv_read_prompt + kv_write)) * kvf,
        "act": 2 * tokens_busy * md["act_elems"] * sf * pr["act_bytes"] / tp,
    }
    host = off * (sz["r_dense"] + sz["w_exp"] * u)
    mem = memory_time(hw, px, placement, traffic, host)
    # a decode-only pass crosses the layer regions of a spatial device in turn (section 7); a
    # pass with prompt tokens fills them, like a static prefill
    t_comp, mem, t_busy = busy(hw, sz, t_comp, t_attn, mem, g_d if c_tok == 0 else 0.0)
    comm = collectives(hw, md, pr, ly, sz, tokens_busy, phi, b_d * q + c_mb)
    t_ovh = sz["l_s"] * hw["layer_overhead"]
    t_s = stage_pass(hw, t_busy, comm["t_comm"], t_ovh)
    t_hop = pipeline_hops(hw, md, pr, ly, tokens_busy)
    flops = dense + expert + attn_dec + attn_pre
    ph = {"flops": flops, "t_flops": t_flops, "t_peak": mem["t_peak"], "moved": mem["moved"],
          "link_bytes": comm["link_bytes"]}
    return {"time": max(m, pp) * t_s + t_hop + hw["iteration_overhead"],
            "energy": pass_energy(hw, activity(ph)) * m, "flops_m": flops * m,
            "traffic_m": mem["traffic"] * m, "t_peak_m": mem["t_peak"] * m, "m": m,
            # the decode diagnostics' inputs (section 10)
            "flops": flops, "expert_flops": expert, "t_comp": t_comp, "t_s": t_s, "busy": t_busy,
            "t_ovh": t_ovh, "t_hop": t_hop, "expert_bytes": traffic["exp"], "r": r, **mem,
            **comm}


def prompt_totals(md: dict, context: float, c_tok: float, k_p: float) -> dict:
    """Section 13.1: the attention pairs and KV elements of ``c_tok`` tokens of prompts of
    ``context`` tokens served in ``k_p`` equal chunks (a prompts' worth of ``c_tok / S``)."""
    s = context
    frac = c_tok / s
    return {"c_tok": c_tok, "prompts": frac, "pairs_full": frac * s * (s + 1) / 2,
            "pairs_win": frac * pairs_window(md, s),
            "kv_read_prompt": frac * k_p * kv_elems(md, s * (k_p - 1) / (2 * k_p)),
            "kv_write": frac * kv_elems(md, s)}


def tokens_per_round(hw: dict) -> float:
    """Section 7: tau (1 without speculative decoding)."""
    k = hw["spec_tokens"]
    if k == 0:
        return 1.0
    return sum(hw["spec_acceptance"] ** i for i in range(int(k) + 1))


NO_PROMPT = {"c_tok": 0.0, "prompts": 0.0, "pairs_full": 0.0, "pairs_win": 0.0,
             "kv_read_prompt": 0.0, "kv_write": 0.0}
PARTS = ("time", "energy", "flops_m", "traffic_m", "t_peak_m")


def round_passes(hw, md, pr, px, ly, sz, placement, n_dec, c_mean, c_win,
                 pt: dict | None = None) -> tuple[dict, dict]:
    """Section 13.1-13.2: an iteration of ``n_dec`` decoding requests with the prompt tokens
    ``pt`` (:func:`prompt_totals`) in the same pass; where the engine drafts and requests
    decode, a speculative round (verification of k_s + 1 tokens plus k_s c_d plain steps).
    Returns (the plain decode step, for the diagnostics; the round's totals)."""
    pt = pt or NO_PROMPT
    k = hw["spec_tokens"]
    if k > 0 and n_dec > 0:
        plain = iteration(hw, md, pr, px, ly, sz, placement, n_dec=n_dec, q=1.0, c_mean=c_mean,
                          c_win=c_win, **NO_PROMPT)
        verify = iteration(hw, md, pr, px, ly, sz, placement, n_dec=n_dec, q=k + 1,
                           c_mean=c_mean, c_win=c_win, **pt)
        c = k * hw["spec_draft_cost"]
        return plain, {key: verify[key] + c * plain[key] for key in PARTS}
    it = iteration(hw, md, pr, px, ly, sz, placement, n_dec=n_dec, q=1.0, c_mean=c_mean,
                   c_win=c_win, **pt)
    return it, {key: it[key] for key in PARTS}


# ------------------------------------------------------------------------------ 13.2 steady state
#: step 6: below this share of requests waiting, the steady state is not evaluated again
RETIME_SHARE = 1e-4


def collision_wait(conc, r_it, k_p, work) -> float:
    """Section 13.2 step 6: the iterations ``k`` with ``k = W(k)`` (bisection), for a prompt
    that holds the budget ``work`` iterations; prompts arrive at the ends of iterations."""
    def excess(k):
        lam = conc / (r_it + k_p + k)  # prompts started per iteration
        share = (conc - 1) / conc  # the others' utilisation; also the arrivals' c_a^2
        rho = share * lam * work
        w = share * rho * work / (2 * (1 - rho)) if rho < 1 else math.inf
        return k - w

    if excess(0.0) >= 0:
        return 0.0
    lo, hi = 0.0, 1.0
    while excess(hi) < 0:
        lo, hi = hi, 2 * hi
    for _ in range(50):
        mid = (lo + hi) / 2
        if excess(mid) < 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def steady_state(hw: dict, md: dict, pr: dict, px: dict, ly: dict, conc: float, context: float,
                 output_len: float, collide: bool = True, reserved: float | None = None) -> dict:
    """Section 13.2 at ``conc`` requests in flight (at most the maximum concurrency);
    ``collide``: the closed loop's wait of prompts arriving together (step 6; not at a rate);
    ``reserved``: the requests whose memory is held (``conc`` if None)."""
    s, o = context, output_len
    budget = hw["prefill_chunk"]
    chunked = hw["chunked_prefill"] != 0
    mixed = hw["mixed_batching"] != 0
    tau = tokens_per_round(hw)
    q = hw["spec_tokens"] + 1
    sz, c_max = serving_sizes(hw, md, pr, ly, conc if reserved is None else reserved, context,
                              output_len)
    placement = place(hw, sz, ly)
    if placement["reason"] != FEASIBLE:
        return {"reason": placement["reason"], "sizes": sz, "c_max": c_max,
                "placement": placement}
    c_mean = s + o / 2
    c_win = mean_window_len(md, s, o)
    r_it = (o - 1) / tau
    saturated = False
    # 1. prompt service
    if r_it <= 0:  # prompts only
        d = 0.0
        c_tok = min(budget, conc * s)
        lam = c_tok / s
        k_p = max(1.0, conc / lam)
        f_m = 1.0
        d_mix = 0.0
    else:
        if chunked:
            left = budget - (conc - 1) * q if mixed else budget
            saturated = left <= 0
            k_p = math.ceil(s / min(s, left)) if left > 0 else 1.0
        else:
            k_p = math.ceil(s / budget) if s > budget else 1.0
            mixed = mixed and s + (conc - 1) * q <= budget
        # 2. Little's law in iterations
        d = conc * r_it / (r_it + k_p)
        lam = d / r_it
        f_m = lam * k_p
        # 3. sparse or dense
        if f_m <= 1 and not saturated:
            c_tok = s / k_p
            d_mix = max(conc - 1, 0.0)
        else:
            f_m = 1.0
            if chunked and mixed and not saturated and budget - d * q > 0:
                k_p = math.ceil(s / min(s, budget - d * q))
                d = conc * r_it / (r_it + k_p)
                lam = d / r_it
            # 4. budget saturation (whole prompts: as many as fit)
            room = budget - d * q if mixed else budget
            if not chunked and s <= budget < math.inf:
                room = math.floor(room / s) * s
            if saturated or lam * s > room:
                saturated = True
                if chunked:
                    d = min(conc, budget * r_it / (s + q * r_it) if mixed
                            else budget * r_it / s)
                    lam = d / r_it
                    if mixed:
                        k_p = math.ceil(s / min(s, max(budget - d * q, 1.0)))
                else:
                    n = math.floor(budget / (r_it * q + s)) if mixed else 0
                    if n < 1:
                        mixed = False
                        n = max(1, math.floor(budget / s))
                    lam = min(n, conc / r_it)
                    d = lam * r_it
            c_tok = lam * s
            d_mix = d
    d_dec = conc if f_m < 1 or d <= 0 else d
    plain, dec = round_passes(hw, md, pr, px, ly, sz, placement, d_dec, c_mean, c_win)

    def prompt_iteration(n_dec, c, kp):
        """An iteration with ``c`` prompt tokens beside ``n_dec`` decodes (or in its own pass
        before theirs); its totals and the time after the prompts' first tokens."""
        pt = prompt_totals(md, s, c, kp)
        if mixed:
            return round_passes(hw, md, pr, px, ly, sz, placement, n_dec, c_mean, c_win, pt)[1], 0.0
        pre = iteration(hw, md, pr, px, ly, sz, placement, n_dec=0.0, q=1.0, c_mean=c_mean,
                        c_win=c_win, **pt)
        if n_dec <= 0:
            return {k: pre[k] for k in PARTS}, 0.0
        # below one decode on average, a fraction n_dec of prompt iterations has a decode pass
        w, n_pass = min(n_dec, 1.0), max(n_dec, 1.0)
        dm = dec if n_pass == d_dec else round_passes(hw, md, pr, px, ly, sz, placement, n_pass,
                                                       c_mean, c_win)[1]
        return {k: pre[k] + w * dm[k] for k in PARTS}, w * dm["time"]

    # 3'. whole prompts beside the decodes: prompts per iteration ~ Poisson(lam), up to n_max
    room1 = budget - (conc - 1) * q if mixed else budget
    n_max = math.floor(room1 / s) if math.isfinite(room1) else 1e9
    whole = k_p == 1 and not saturated and r_it > 0 and n_max >= 1 and lam <= n_max
    # 3''. sparse chunked prompts: k_p - 1 chunks fill the budget, the last takes the rest
    c_full = min(s, room1)
    chunks = not whole and chunked and not saturated and f_m < 1 and k_p > 1 and r_it > 0
    rides = chunked and mixed  # prompts beyond an iteration's room ride the next pass

    def pair(n):
        """Iterations of n and n + 1 whole prompts (the latter a pass of its own in place of a
        decode-only one when it exceeds n_max and does not ride), one prompt's iteration
        through them, and the time after the prompts' first tokens."""
        pn, after = prompt_iteration(max(conc - n, 0.0), n * s, 1.0)
        if n + 1 <= n_max or rides:
            pm = prompt_iteration(max(conc - n - 1, 0.0), (n + 1) * s, 1.0)[0]
            slope = pm["time"] - pn["time"]
        else:
            pm = {k: 2 * pn[k] - dec[k] for k in PARTS}
            slope = (pn["time"] - dec["time"]) / n  # one of the n_max prompts of a pass
        return pn, pm, pn["time"] - (n - 1) * slope, after

    anchor, phi = 1.0, 0.0
    if whole:  # iterations of n prompts beside conc - n decodes, linear through n_a, n_a + 1
        anchor = min(max(1, math.floor(lam)), n_max)
        # blended with the pair one up by lam's fraction past n_a (not toward a pass of its own)
        if lam > anchor and (anchor + 2 <= n_max or rides):
            phi = lam - anchor
        p1, p2, t_mix, t_after = pair(anchor)
        if phi > 0:
            _, p3, t_mix_b, after_b = pair(anchor + 1)
            t_mix = (1 - phi) * t_mix + phi * t_mix_b
            t_after = (1 - phi) * t_after + phi * after_b
        c_tok = s
    elif chunks:
        p1 = prompt_iteration(d_mix, c_full, k_p)[0]
        p2, t_after = prompt_iteration(d_mix, s - (k_p - 1) * c_full, k_p)
        t_mix = ((k_p - 1) * p1["time"] + p2["time"]) / k_p
    else:
        p1, t_after = prompt_iteration(d_mix, c_tok, k_p)
        p2 = p1
        t_mix = p1["time"]
    t_dec = dec["time"]
    room = budget - d_mix * q if mixed else budget
    hold = s * t_mix / max(room, 1.0) if math.isfinite(budget) else 0.0
    # 6. prompts arriving together wait for the budget (closed loop only)
    wait = 0.0
    c_eff = conc
    if collide and not saturated and conc > 1 and r_it > 0 and hold > 0:
        k_w = collision_wait(conc, r_it, k_p, hold / t_mix)
        d = conc * r_it / (r_it + k_p + k_w)
        lam = d / r_it
        f_m = min(1.0, lam * k_p)
        wait = k_w * t_mix  # it waits through iterations that carry the others' prompts
        c_eff = conc * (r_it + k_p) / (r_it + k_p + k_w)  # the requests not waiting
    # 5. per request: the mean iteration, a request's own iterations and those it decodes in
    others = lam * (conc - 1) / conc

    def mixture(x0, x1, x2, weights):
        return weights[0] * x0 + weights[1] * x1 + weights[2] * (x2 - x1)

    def mixtures(n, q1, q2):
        """Weights for a pair through n and n + 1 prompts (whole prompts: the Poisson count);
        the mean iteration's parts, t^2, what a decoding request sees, and the own prompt's
        iteration (whole prompts)."""
        if whole:
            w = poisson_weights(lam, math.inf, 0, n)  # all prompt tokens, some later
            ws = poisson_weights(others, math.inf, 0, n)
            own_extra = poisson_weights(others, n_max, 1, n)[2]  # its own: at most n_max
        else:
            f_s = min(1.0, max(0.0, (f_m * (k_p + r_it) - k_p) / r_it)) if r_it > 0 else 1.0
            last = 1 / k_p if chunks else 0.0
            w = (1 - f_m, f_m, f_m * last)
            ws = (1 - f_s, f_s, f_s * last)
            own_extra = 0.0
        avg = {k: mixture(dec[k], q1[k], q2[k], w) for k in PARTS}
        t_sq = (w[0] * t_dec ** 2 + w[1] * q1["time"] ** 2
                + w[2] * (q2["time"] ** 2 - q1["time"] ** 2))
        seen = mixture(t_dec, q1["time"], q2["time"], ws)
        own = q1["time"] + own_extra * (q2["time"] - q1["time"])
        return avg, t_sq, seen, own, w[1]

    avg, t_sq, t_seen, own_it, f_a = mixtures(anchor, p1, p2)
    if phi > 0:  # blend the results of the two pairs
        avg_b, t_sq_b, seen_b, own_b, f_b = mixtures(anchor + 1, p2, p3)
        avg = {k: (1 - phi) * avg[k] + phi * avg_b[k] for k in PARTS}
        t_sq = (1 - phi) * t_sq + phi * t_sq_b
        t_seen = (1 - phi) * t_seen + phi * seen_b
        own_it = (1 - phi) * own_it + phi * own_b
        f_a = (1 - phi) * f_a + phi * f_b
    if whole:
        f_m = f_a
    t_mean = avg["time"]
    requests = lam / t_mean
    if whole:
        ttft = own_it
    elif chunks:  # the last chunk's iteration may carry others' prompts
        extra = min(others * s, max(room - (s - (k_p - 1) * c_full), 0.0))
        ttft = ((k_p - 1) * p1["time"] + p2["time"]
                + max(p1["time"] - t_dec, 0.0) / c_full * extra)
    else:
        own = min(s / k_p + others * s, max(room, s / k_p))
        ttft = k_p * (t_mix + max(t_mix - t_dec, 0.0) / c_tok * (own - c_tok))
    ttft += wait - t_after + hw["request_overhead"]
    if saturated and d > 0:
        # the backlog, and at least step 6's collision wait where the budget saturates, in
        # one prompt's iterations (whole prompts: linear in their count)
        w_q = max(0.0, (conc - d) * r_it / d - k_p) * t_mix
        c_s = min(conc, d * (r_it + k_p) / r_it) if r_it > 0 else 0.0  # no decode: no loop
        if collide and c_s > 1 and hold > 0:
            t_w = t_dec + (t_mix - t_dec) / lam if k_p == 1 and lam > 1 else t_mix
            w_q = max(w_q, collision_wait(c_s, r_it, k_p, hold / t_mix) * t_w)
        ttft += w_q
    tpot = (t_seen if r_it > 0 else t_dec) / tau
    return {"reason": FEASIBLE, "sizes": sz, "placement": placement, "c_max": c_max,
            "requests": requests, "ttft": ttft, "tpot": tpot, "t_mean": t_mean,
            "t_sq": t_sq, "decode": plain, "avg": avg,
            "rho_b": requests * hold, "hold": hold, "d": d, "f_m": f_m, "k_p": k_p,
            "t_mix": t_mix, "t_dec": t_dec, "saturated": saturated, "c_tok": c_tok,
            "d_mix": d_mix, "mixed": mixed, "whole": whole, "c_eff": c_eff, "wait": wait}


def poisson_weights(lam: float, n_max: float, shift: float,
                    anchor: float) -> tuple[float, float, float]:
    """Section 13.2 step 3': for N ~ Poisson(lam) and m = min(N + shift, n_max):
    (P(m = 0), P(m >= 1), E[(m - anchor) 1{m >= 1}])."""
    if lam > 100:  # the spread is a few percent: the mean itself
        return 0.0, 1.0, min(lam + shift, n_max) - anchor
    w0 = math.exp(-lam) if shift == 0 else 0.0
    w2 = 0.0
    p = math.exp(-lam)
    n = 0
    total = 0.0
    while True:
        m = min(n + shift, n_max)
        if m >= 1:
            w2 += p * (m - anchor)
        total += p
        n += 1
        if n + shift >= n_max:
            w2 += max(0.0, 1 - total) * (n_max - anchor)
            break
        if n > lam and p < 1e-16:
            break
        p *= lam / n
    return w0, 1 - w0, w2


# ------------------------------------------------------------------------------ 13.4 rate
def erlang_c(c: float, a: float) -> float:
    """Erlang C (Halfin-Whitt's approximation above ERLANG_EXACT_MAX servers)."""
    if a <= 0:
        return 0.0
    if a >= c:
        return 1.0
    if c > ERLANG_EXACT_MAX:
        beta = (c - a) / math.sqrt(a)
        if beta > 30:  # negligible (and the density underflows)
            return 0.0
        phi = math.exp(-beta * beta / 2) / math.sqrt(2 * math.pi)
        big = 0.5 * (1 + math.erf(beta / math.sqrt(2)))
        return 1 / (1 + beta * big / phi)
    n = int(c)
    b = 1.0
    for k in range(1, n + 1):
        b = a * b / (k + a * b)
    return n * b / (n - a * (1 - b))


def quantile(mean: float, p_wait: float, p: float) -> float:
    """A wait that is 0 with probability 1 - p_wait, else exponential with mean mean / p_wait."""
    if mean <= 0 or p_wait <= 1 - p:
        return 0.0
    return mean / p_wait * math.log(p_wait / (1 - p))


def waits(st: dict, conc: float, c_max: float, e2e: float, p: float | None) -> float:
    """Section 13.4: mean (``p`` None) or ``p``-quantile of the waits of Poisson arrivals."""
    residual = st["t_sq"] / (2 * st["t_mean"])
    rho, h = st["rho_b"], st["hold"]
    w_b = rho * h / (2 * (1 - rho)) if rho < 1 else math.inf
    pw = erlang_c(c_max, conc)
    w_s = pw * e2e / (c_max - conc) / 2 if conc < c_max else math.inf
    if p is None:
        return residual + w_b + w_s
    return 2 * p * residual + quantile(w_b, min(rho, 1.0), p) + quantile(w_s, pw, p)


def solve_rate(hw, md, pr, px, ly, rate: float, context, output_len, c_max) -> float | None:
    """The smallest real-valued concurrency N with X(N) = rate, or None when saturated (13.4):
    the first of N = 1, 2, 4, ..., c_max with X(N) above the rate closes the bracket with the
    one before (X(0) = 0), then bisection."""
    lo, hi = 0.0, 1.0
    while True:
        top = steady_state(hw, md, pr, px, ly, hi, context, output_len, False)
        if top["reason"] != FEASIBLE:
            return None
        if top["requests"] > rate:
            break
        if hi >= c_max:
            return None
        lo, hi = hi, min(2.0 * hi, c_max)
    for _ in range(200):
        mid = (lo + hi) / 2
        x = steady_state(hw, md, pr, px, ly, mid, context, output_len, False)["requests"]
        if abs(x / rate - 1) <= 1e-12:
            return mid
        if x < rate:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    return (lo + hi) / 2


# ------------------------------------------------------------------------------ the point
def _saturated(out: dict, hw, md, pr, px, ly, c_max, context, output_len) -> dict:
    """Code 11 (13.4): what says why, at the maximum concurrency the replica would run."""
    sz = steady_state(hw, md, pr, px, ly, c_max, context, output_len, False)["sizes"]
    out.update(infeasible_reason=float(SATURATED), max_concurrency=c_max,
               memory_per_device=sz["memory"],
               host_fraction=ly["offload"] * (sz["w_dense"] + sz["w_exp"]) / sz["memory"])
    return out


def continuous_point(hw: dict, md: dict, px: dict, batch, context, output_len, pr: dict,
                     ly: dict, at_rate: bool, *, diagnostics: bool = False,
                     rate_concurrency: float | None = None) -> dict:
    """Every metric of a continuous-batching point (section 13), ``{metric: float}``.
    ``rate_concurrency``: at a rate, the concurrency to serve it at instead of the one
    bisection finds (X(N) need not be monotone, so a rate can have several; the caller checks
    that this one serves the rate: diagnostics' ``rate_served``)."""
    batch, context, output_len = float(batch), float(context), float(output_len)
    out = dict.fromkeys(METRICS, NAN)
    out.update(fits=0.0, bound=-1.0)
    extra = {"near_fit_edge": False, "near_bound_tie": False, "near_cov_tie": False,
             "near_min_devices": False, "near_stage_step": False, "near_rate_jump": False}

    def done(res: dict) -> dict:
        return {**res, **extra} if diagnostics else res

    reason = structural_reason(hw, md, px, ly, 1.0, context, output_len)
    if reason != FEASIBLE:
        out["infeasible_reason"] = float(reason)
        return done(out)
    tp, ep, pp, dp = ly["tp"], ly["ep"], ly["pp"], ly["dp"]
    _, c_max = serving_sizes(hw, md, pr, ly, 1.0, context, output_len)
    conc = 1.0 if at_rate or c_max < 1 else min(batch, c_max)
    st = steady_state(hw, md, pr, px, ly, conc, context, output_len, not at_rate)
    if st["reason"] == FEASIBLE and st["c_eff"] < conc * (1 - RETIME_SHARE):
        # step 6: the iterations are those of the requests not waiting for the budget
        st = {**steady_state(hw, md, pr, px, ly, st["c_eff"], context, output_len, False,
                             reserved=conc), "wait_budget": st["wait"]}
    n_seq = batch if not at_rate and math.isfinite(batch) else conc
    x = admission_length(hw, context, output_len)
    out["min_devices"], extra["near_min_devices"] = _min_devices(hw, md, pr, n_seq, x, context)
    extra["near_stage_step"] = st["sizes"]["near_stage_step"]
    extra["near_fit_edge"] = st["placement"]["near_edge"]
    if st["reason"] != FEASIBLE or c_max < 1:
        sz = st["sizes"]
        out.update(infeasible_reason=float(st["reason"] if st["reason"] != FEASIBLE else MEMORY),
                   memory_per_device=sz["memory"], max_concurrency=max(c_max, 0.0),
                   host_fraction=ly["offload"] * (sz["w_dense"] + sz["w_exp"]) / sz["memory"])
        return done(out)
    wait = 0.0
    if at_rate:
        n = solve_rate(hw, md, pr, px, ly, batch / dp, context, output_len, c_max)
        if n is not None and rate_concurrency is not None:
            n = rate_concurrency
        if n is None:
            return done(_saturated(out, hw, md, pr, px, ly, c_max, context, output_len))
        conc = n
        st = steady_state(hw, md, pr, px, ly, conc, context, output_len, False)
        # X(N) jumps where a ceiling steps (the chunks of a prompt, whole sequences under EP):
        # a rate inside a jump has no exact solution, either side is an answer
        # and under EP X(N) is a sawtooth (the busiest rank gains whole sequences), so a rate
        # may be served at several concurrencies: either is an answer
        extra["rate_served"] = abs(st["requests"] * dp / batch - 1) <= 1e-6
        extra["near_rate_jump"] = not extra["rate_served"] or ep > 1
        out["min_devices"], extra["near_min_devices"] = _min_devices(hw, md, pr, conc, x,
                                                                     context)
    elif conc < batch < math.inf:
        wait = (batch - conc) / st["requests"]

    ttft = st["ttft"] + wait + st.get("wait_budget", 0.0)
    tpot = st["tpot"]
    e2e = ttft + (output_len - 1) * tpot
    if at_rate:
        mean = waits(st, conc, c_max, e2e, None)
        if not math.isfinite(mean):
            return done(_saturated(out, hw, md, pr, px, ly, c_max, context, output_len))
        for p, tag in ((0.5, "p50"), (0.9, "p90"), (0.99, "p99")):
            w = waits(st, conc, c_max, e2e, p)
            out[f"ttft_{tag}"] = ttft + w
            out[f"e2e_{tag}"] = e2e + w
        ttft += mean
        e2e += mean
    devices = tp * pp * ep * dp
    throughput = dp * st["requests"] * output_len
    avg = st["avg"]
    p_dev = phase_power(hw, avg["energy"], st["t_mean"])
    power = devices * p_dev
    system_power = power + devices * hw["host_power"]
    rate = devices * hw["cost_fixed"] + hw["cost_energy"] * system_power
    dec = st["decode"]
    b, near_tie = bound(dec, dec["m"], pp, hw["iteration_overhead"])
    cov, near_cov = latency_cov(hw, dec)
    sz = st["sizes"]
    out.update(
        ttft=ttft, tpot=tpot, e2e_latency=e2e, throughput=throughput,
        total_throughput=dp * st["requests"] * (context + output_len),
        throughput_per_device=throughput / devices,
        tokens_per_joule=throughput / power, tokens_per_joule_system=throughput / system_power,
        power=power, system_power=system_power,
        cost_per_mtok=1e6 * rate / throughput, tokens_per_dollar=throughput / rate,
        memory_per_device=sz["memory"], host_fraction=st["placement"]["host_fraction"],
        fits=1.0, infeasible_reason=0.0, bound=float(b),
        arithmetic_intensity=avg["flops_m"] / avg["traffic_m"],
        mfu=avg["flops_m"] / (px["peak"] * st["t_mean"]), mbu=avg["t_peak_m"] / st["t_mean"],
        latency_cov=cov, max_concurrency=c_max, concurrency=conc,
    )
    extra.update(near_bound_tie=near_tie, near_cov_tie=near_cov)
    if diagnostics:
        extra["steady"] = st
    return done(out)


def _min_devices(hw: dict, md: dict, pr: dict, n_seq: float, x: float,
                 context: float) -> tuple[float, bool]:
    """(14) for continuous batching: ``n_seq`` requests at the admission length ``x``, with the
    activations of one pass of the budget (of the prompt when the budget is unlimited)."""
    wb, ab, kvb, eb = pr["weight_bytes"], pr["act_bytes"], pr["kv_bytes"], pr["embed_bytes"]
    budget = hw["prefill_chunk"]
    row = act_row(hw, md, pr)
    act_tok = 0.0 if row else (budget if math.isfinite(budget) else context)
    replica = (wb * md["params_linear"] + (pr["attn_weight_bytes"] - wb) * md["params_attention"]
               + eb * (md["params_head"] + md["params_embed_only"])
               + wb * md["n_moe_layers"] * md["n_experts"] * md["params_expert"]
               + n_seq * (kv_elems(md, x) * kvb + md["vocab_size"] * 4 + row)
               + act_tok * md["act_elems"] / md["n_layers"] * ab)
    usable = hw["capacity_fraction"] * sum(hw[f"tier{i}_capacity"] for i in range(3))
    q = replica / usable
    return float(math.ceil(q)), abs(q - round(q)) <= 1e-9 * max(q, 1.0)
