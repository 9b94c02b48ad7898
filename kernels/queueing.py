"""The queueing approximations of continuous batching  [model.md sections 13.2 and 13.4].

Numba scalar helpers inlined into :mod:`kernels.serving`: how many prompts an iteration holds
when they arrive as a Poisson count (:func:`poisson_weights`), how long a prompt waits for the
token budget behind prompts that arrive with it in a closed loop (:func:`collision_wait`,
Kingman's G/D/1 wait in iterations) and behind a saturated budget (:func:`budget_wait`), and the
waits Poisson arrivals add at a request rate (:func:`rate_wait_terms`: the residual iteration, the
budget as an M/D/1 server, the slots as an M/D/c queue through Erlang C, :func:`erlang_c`, and
their quantiles, :func:`tail_quantile`).

Units: times [s], rates [1/s], loads [Erlang]; counts are plain numbers.
"""

from __future__ import annotations

import math

from kernels.accelerate import scalar_jit

#: Halfin-Whitt's approximation of Erlang C is used above this many servers
ERLANG_EXACT_MAX = 2048.0
#: the collision wait's root is bracketed to this width relative to its upper end (a few ulp:
#: below float32's resolution by eight orders of magnitude)
COLLISION_RTOL = 1e-15
#: steps of its safeguarded regula falsi at most (a bisection step halves the bracket, so 64
#: reach the precision of any double bracket; the usual count is 5-10)
COLLISION_MAX_STEPS = 200
#: prompts per iteration above which their Poisson spread is ignored (relative sd < 10%)
POISSON_FLUID = 100.0
#: a cap this far above the Poisson mean (standard deviations, plus a constant) is never reached:
#: its tail probability is below 1e-30 (Chernoff bound) for any mean up to POISSON_FLUID
POISSON_CAP_SD = 12.0
POISSON_CAP_ADD = 40.0


@scalar_jit
def poisson_weights(lam, n_max, shift, anchor):
    """For N ~ Poisson(``lam``) and a quantity linear in ``m = min(N + shift, n_max)`` through
    ``m = anchor`` and ``anchor + 1`` (``x(m) = x_a + (m - anchor) (x_b - x_a)``, ``x(0)``
    apart): the weights (P(m = 0), P(m >= 1), E[(m - anchor) 1{m >= 1}])
    [model.md 13.2 step 3']."""
    if lam > POISSON_FLUID:  # concentrated within a few percent of its mean: the mean itself
        m = min(lam + shift, n_max)
        return 0.0, 1.0, m - anchor
    p = math.exp(-lam)
    if lam >= 0.0 and (shift == 0.0 or shift == 1.0) and \
            n_max - shift >= lam + POISSON_CAP_SD * math.sqrt(lam) + POISSON_CAP_ADD:
        # the cap is out of reach (P(N + shift >= n_max) < 1e-30): the sums in closed form,
        # E[(N + shift - anchor) 1{N + shift >= 1}] = lam + shift - anchor, less P(N = 0)'s
        # term (-anchor p) when shift = 0
        if shift == 0.0:
            return p, 1.0 - p, lam - anchor * (1.0 - p)
        return 0.0, 1.0, lam + 1.0 - anchor
    w0 = p if shift <= 0.0 else 0.0
    w2 = 0.0
    cum = p
    n = 0.0
    while True:
        m = min(n + shift, n_max)
        if m >= 1.0:
            w2 += p * (m - anchor)
        n += 1.0
        if n + shift >= n_max or (n > lam and p < 1e-16):
            break
        p *= lam / n
        cum += p
    # the tail beyond: every term capped at n_max
    if n + shift >= n_max:
        w2 += max(0.0, 1.0 - cum) * (n_max - anchor)
    return w0, 1.0 - w0, w2


@scalar_jit
def _collision_excess(k, conc, r_it, k_p, work):
    """``k - W(k)`` of :func:`collision_wait` [iterations]."""
    lam = conc / (r_it + k_p + k)  # prompts started per iteration
    share = (conc - 1.0) / conc
    rho = share * lam * work
    w = share * rho * work / (2.0 * (1.0 - rho)) if rho < 1.0 else math.inf
    return k - w


@scalar_jit
def collision_wait(conc, r_it, k_p, work):
    """Iterations ``k`` a prompt waits for the budget behind prompts that arrive with it
    (model.md 13.2 step 6), counted in iterations: in a closed loop a prompt arrives when a
    request ends, at the end of an iteration whatever its length, so the budget is a server in
    iteration time that a prompt holds ``work`` iterations (``h / t_mix``). The wait is
    Kingman's G/D/1 ``c_a^2 rho work / (2 (1 - rho))`` with the utilisation
    ``rho = lambda work`` that the other ``conc - 1`` requests cause (the arrival theorem of
    closed networks) and the arrivals' squared coefficient of variation ``c_a^2 = (C - 1) / C``
    of a superposition of ``C`` nearly periodic request cycles (0 for one request, Poisson in
    the limit); waiting requests do not decode, so ``lambda = C / (R + k_p + k)`` prompts per
    iteration: the root of ``k = W(k)`` (the excess rises with ``k``: the wait falls),
    bracketed by doubling and found by regula falsi with the Illinois step, falling back to a
    bisection step whenever the secant leaves the bracket or an end is infinite (``rho >= 1``)."""
    g_lo = _collision_excess(0.0, conc, r_it, k_p, work)
    if g_lo >= 0.0:
        return 0.0
    lo, hi = 0.0, 1.0
    g_hi = _collision_excess(hi, conc, r_it, k_p, work)
    while g_hi < 0.0:
        lo, g_lo = hi, g_hi
        hi = 2.0 * hi
        g_hi = _collision_excess(hi, conc, r_it, k_p, work)
    side = 0
    for _ in range(COLLISION_MAX_STEPS):
        if hi - lo <= COLLISION_RTOL * hi:
            break
        x = 0.5 * (lo + hi)
        if math.isfinite(g_lo) and math.isfinite(g_hi):
            sec = (lo * g_hi - hi * g_lo) / (g_hi - g_lo)
            if lo < sec < hi:
                x = sec
        g = _collision_excess(x, conc, r_it, k_p, work)
        if g == 0.0:
            return x
        if g < 0.0:
            lo, g_lo = x, g
            if side == -1:
                g_hi *= 0.5
            side = -1
        else:
            hi, g_hi = x, g
            if side == 1:
                g_lo *= 0.5
            side = 1
    return 0.5 * (lo + hi)


@scalar_jit
def budget_wait(conc, d, r_it, k_p, lam, t_mix, t_dec, hold, collide):
    """Wait [s] for a saturated token budget (model.md 13.2 step 4): the backlog beyond what it
    serves, ``(C - D) R / D - k_p`` iterations of ``t_mix``, and with ``collide`` at least the
    collision wait of step 6 at the concurrency where the budget saturates, ``D (R + k_p) / R``
    (at most ``C``), in iterations of one prompt as step 6 counts them (several whole prompts
    per iteration: ``t_dec + (t_mix - t_dec) / lam``, linear in their count, step 3')."""
    w = max(0.0, (conc - d) * r_it / d - k_p) * t_mix
    c_s = min(conc, d * (r_it + k_p) / r_it) if r_it > 0.0 else 0.0  # no decode: no loop
    if collide and c_s > 1.0 and hold > 0.0:
        t_w = t_dec + (t_mix - t_dec) / lam if k_p == 1.0 and lam > 1.0 else t_mix
        w = max(w, collision_wait(c_s, r_it, k_p, hold / t_mix) * t_w)
    return w


@scalar_jit
def erlang_c(c, a):
    """Probability that an arrival waits in an M/M/c queue with offered load ``a`` [Erlang]
    (Erlang's C formula through the Erlang B recursion; Halfin-Whitt's approximation
    1 / (1 + beta Phi(beta) / phi(beta)), beta = (c - a) / sqrt(a), above ERLANG_EXACT_MAX
    servers)."""
    if a <= 0.0:
        return 0.0
    if a >= c:
        return 1.0
    if c > ERLANG_EXACT_MAX:
        beta = (c - a) / math.sqrt(a)
        if beta > 30.0:  # the density underflows; the probability is below 1e-190
            return 0.0
        phi = math.exp(-0.5 * beta * beta) / math.sqrt(2.0 * math.pi)
        big_phi = 0.5 * (1.0 + math.erf(beta / math.sqrt(2.0)))
        return 1.0 / (1.0 + beta * big_phi / phi)
    b = 1.0
    n = int(c)
    for k in range(1, n + 1):
        b = a * b / (k + a * b)
    return n * b / (n - a * (1.0 - b))


@scalar_jit
def tail_quantile(mean, p_wait, p):
    """The ``p``-quantile of a wait that is 0 with probability 1 - ``p_wait`` and else
    exponential with mean ``mean / p_wait`` (the mean wait is ``mean``)."""
    if mean <= 0.0 or p_wait <= 1.0 - p:
        return 0.0
    return (mean / p_wait) * math.log(p_wait / (1.0 - p))


@scalar_jit
def rate_wait_terms(t_mean, t_sq, rho_b, hold, conc, c_max, e2e):
    """The waits Poisson arrivals add before a request's first iteration [model.md section
    13.4], as (residual iteration, budget wait, probability of waiting for a slot, slot wait)
    [s, s, 1, s]: the rest of the running iteration (renewal theory: E[t^2] / (2 E[t])), the
    token budget as an M/D/1 server of prompts (Pollaczek-Khinchine: rho h / (2 (1 - rho))), and
    the slots (maximum concurrency) as an M/D/c queue (Erlang C with the M/M/c wait halved for
    deterministic service, Allen-Cunneen). Computed once per point: Erlang C's recursion runs
    over every slot; :func:`rate_waits` reads the mean and the quantiles from them."""
    residual = t_sq / (2.0 * t_mean)
    w_b = rho_b * hold / (2.0 * (1.0 - rho_b)) if rho_b < 1.0 else math.inf
    pw_s = erlang_c(c_max, conc)
    w_s = 0.5 * pw_s * e2e / (c_max - conc) if conc < c_max else math.inf
    return residual, w_b, pw_s, w_s


@scalar_jit
def rate_waits(terms, rho_b, p):
    """Mean (``p`` <= 0) or ``p``-quantile [s] of the waits of :func:`rate_wait_terms`
    (``terms``): the residual iteration taken uniform on twice its mean for quantiles, the
    budget and slot waits 0 or exponential; the quantiles are added (an upper bound of the
    sum's quantile)."""
    residual, w_b, pw_s, w_s = terms
    mean = residual + w_b + w_s
    if p <= 0.0:
        return mean
    return 2.0 * p * residual + tail_quantile(w_b, min(rho_b, 1.0), p) + \
        tail_quantile(w_s, pw_s, p)
