"""The fluid model of a finite run's occupancy, iteration by iteration  [model.md section 13.7].

``N`` requests are queued at once and at most ``C`` run; a request admitted at iteration ``j``
decodes ``D`` tokens, ``D`` drawn from a distribution; a slot freed at the end of an iteration is
refilled from the queue at once. :func:`fluid_iterations` tracks the expected requests by tokens
decoded so far (expected values, so a request is a fraction where the distribution splits it) and
returns each iteration's decoding requests and admissions. While the queue lasts the state
repeats (a fixed point with spread lengths, a cycle of ``D`` iterations with one length ``D``);
the repetitions are counted in a weight instead of iterated.

Called by ``sweep.execute.finite`` (which builds the distribution and times the iterations);
the plain-Python reference the tests hold it to is ``tests/reference_finite.py``.

Units: requests and iterations are plain counts.
"""

from __future__ import annotations

import math

import numpy as np

from kernels.accelerate import serial_jit

#: two states are the same repetition when they differ by at most this many requests per
#: request in flight
REPEAT_TOL = 1e-12


@serial_jit
def _grow(a, n):
    """``a`` with room for at least ``n`` entries (the first ``len(a)`` kept)."""
    if n <= a.shape[0]:
        return a
    b = np.zeros(max(2 * a.shape[0], n))
    b[:a.shape[0]] = a
    return b


@serial_jit
def fluid_iterations(pmf, n_requests, conc, skip_repeats):
    """Expected decode occupancy and admissions of each iteration of a finite run.

    ``pmf[d]``: the probability that a request decodes ``d`` tokens (``d = 0 .. d_max``, summing
    to 1); ``n_requests`` queued at time 0, at most ``conc`` in flight. Returns (``n``: requests
    decoding in each iteration, ``a``: requests admitted at its end, ``w``: how many iterations
    the entry stands for, the entry at which the queue empties). Admissions at the end of an
    iteration decode from the next one; ``a`` leaves out the requests admitted at the start in
    place of those that end with their prompt (``d = 0``), which the first iteration carries.
    ``skip_repeats``: count a repeating state's repetitions instead of iterating them."""
    d_max = pmf.shape[0] - 1
    period = max(d_max, 1)  # one length D: every slot is refilled each D iterations
    surv = np.zeros(d_max + 2)  # surv[k] = P(D > k)
    acc = 0.0
    for k in range(d_max + 1):
        acc += pmf[k]
        surv[k] = max(1.0 - acc, 0.0)
    # hazard of finishing after decoding age + 1 tokens, given alive at age
    fin = np.ones(d_max + 1)
    for k in range(d_max + 1):
        if surv[k] > 0.0:
            fin[k] = (surv[k] - surv[k + 1]) / surv[k]
    start = min(n_requests, conc)
    queue = n_requests - start
    alive = np.zeros(d_max + 1)  # expected requests by tokens decoded so far
    alive[0] = start * (1.0 - pmf[0])  # requests with D = 0 finish with their prompt
    take = min(queue, start * pmf[0])
    queue -= take
    alive[0] += take * (1.0 - pmf[0])
    occ = np.zeros(1024)
    adm = np.zeros(1024)
    wgt = np.zeros(1024)
    count = 0
    emptied = 0 if queue <= 0.0 else -1
    tol = REPEAT_TOL * max(conc, 1.0)
    cycle_start = alive.copy()
    ref_cycle = alive.copy()
    nxt = np.zeros(d_max + 1)
    top = 0  # ages above this hold no request yet (every request starts at age 0)
    n = 0.0
    for k in range(d_max + 1):
        n += alive[k]
    while True:
        if n < 1e-9 * n_requests:
            break
        occ = _grow(occ, count + 1)
        adm = _grow(adm, count + 1)
        wgt = _grow(wgt, count + 1)
        occ[count] = n
        wgt[count] = 1.0
        # one pass: finish, age by one token, and the state's total and change
        freed = 0.0
        n_next = 0.0
        nxt[0] = 0.0
        for k in range(top + 1):
            out = alive[k] * fin[k]
            freed += out
            if k < d_max:
                nxt[k + 1] = alive[k] - out
                n_next += nxt[k + 1]
        a = min(queue, freed)
        queue -= a
        nxt[0] += a  # the admitted start decoding in the next iteration
        n_next += a
        adm[count] = a
        count += 1
        top = min(top + 1, d_max)
        diff = 0.0
        if queue > 0.0 and skip_repeats:
            for k in range(top + 1):
                diff += abs(nxt[k] - alive[k])
        alive, nxt = nxt, alive
        n = n_next
        if queue <= 0.0:
            if emptied < 0:
                emptied = count
            continue
        if not skip_repeats:
            continue
        # a repeating state with a long queue left: count the repetitions instead
        check_cycle = False
        if count % period == 0:
            # not the first cycle: its first iteration carries no prompts (the start does)
            check_cycle = count >= 2 * period
            ref_cycle[:] = cycle_start
            cycle_start[:] = alive
        span = 0
        if diff <= tol:
            span = 1
        elif check_cycle:
            diff = 0.0
            for k in range(d_max + 1):
                diff += abs(alive[k] - ref_cycle[k])
            if diff <= tol:
                span = period
        if span > 0:
            per = 0.0
            for k in range(count - span, count):
                per += adm[k]
            reps = math.floor(queue / per) - 1 if per > 0.0 else 0
            if reps >= 1:
                for k in range(count - span, count):
                    wgt[k] += reps
                queue -= reps * per
    return occ[:count].copy(), adm[:count].copy(), wgt[:count].copy(), max(emptied, 0)
