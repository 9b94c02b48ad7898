"""Plain-Python reference of the fluid model of a finite run (docs/model.md section 13.7), which
:func:`kernels.fluid.fluid_iterations` (``sweep.execute.finite.fluid_run``) is held to: the same
recursion written with NumPy array operations, one iteration per loop."""

from __future__ import annotations

import math

import numpy as np


def fluid_run_reference(steps: np.ndarray, prob: np.ndarray, n_requests: float, conc: float,
              skip_repeats: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Expected decode occupancy and admissions of each iteration of a finite run.

    ``steps``/``prob``: decode iterations per request (whole numbers >= 0) and their
    probabilities; ``n_requests`` queued at time 0, at most ``conc`` in flight. Returns
    (``n``: requests decoding in each iteration, ``a``: requests admitted at its end, ``w``: how
    many iterations the entry stands for, the entry at which the queue empties). Admissions at
    the end of an iteration decode from the next one (their prompt is carried by it: see
    ``sweep.finite_run``); ``a`` leaves out the requests admitted at the start in place of those
    that end with their prompt (one output token), which the first iteration carries with the
    others.

    While the queue lasts the run repeats itself: with spread lengths it settles to a fixed
    point (the same requests by age every iteration), with one length ``D`` to a cycle of ``D``
    iterations. Once the state matches the one a step (or a cycle) before to
    1e-12 of the requests in flight, the repetitions up to the queue's last cycle are counted in
    ``w`` instead of iterated: 10^6 requests through 64 slots take as long as a few cycles
    (``skip_repeats=False`` iterates them all, for the tests)."""
    d_max = int(steps[prob > 0].max())
    period = max(d_max, 1)  # one length D: every slot is refilled each D iterations
    surv = np.zeros(d_max + 2)  # surv[k] = P(D > k)
    pmf = np.zeros(d_max + 2)
    keep = steps <= d_max
    np.add.at(pmf, steps[keep].astype(np.int64), prob[keep])
    surv[:d_max + 1] = 1.0 - np.cumsum(pmf[:d_max + 1])
    surv = np.clip(surv, 0.0, None)
    # hazard of finishing after decoding age+1 tokens, given alive at age
    with np.errstate(invalid="ignore", divide="ignore"):
        fin = np.where(surv[:-1] > 0, (surv[:-1] - surv[1:]) / surv[:-1], 1.0)
    fin = fin[:d_max + 1]
    start = min(n_requests, conc)
    queue = n_requests - start
    alive = np.zeros(d_max + 1)  # expected requests by tokens decoded so far
    # requests with D = 0 finish with their prompt: they never decode
    alive[0] = start * (1.0 - pmf[0])
    done_at_start = start * pmf[0]
    take = min(queue, done_at_start)
    queue -= take
    alive[0] += take * (1.0 - pmf[0])
    occ: list[float] = []
    adm: list[float] = []
    wgt: list[float] = []
    emptied = 0 if queue <= 0 else -1
    total = n_requests
    tol = 1e-12 * max(conc, 1.0)
    cycle_start = alive.copy()
    while True:
        n = float(alive.sum())
        if n < 1e-9 * total:
            break
        before = alive
        occ.append(n)
        wgt.append(1.0)
        out = alive * fin
        freed = float(out.sum())
        alive = np.concatenate([[0.0], (alive - out)[:-1]])
        a = min(queue, freed)
        queue -= a
        alive[0] += a  # the admitted start decoding in the next iteration
        adm.append(a)
        if queue <= 0:
            if emptied < 0:
                emptied = len(occ)
            continue
        if not skip_repeats:
            continue
        # a repeating state with a long queue left: count the repetitions instead
        spans = [(1, before)]
        if len(occ) % period == 0:
            # not the first cycle: its first iteration carries no prompts (the start does)
            if len(occ) >= 2 * period:
                spans.append((period, cycle_start))
            cycle_start = alive.copy()
        for span, ref in spans:
            if np.abs(alive - ref).sum() > tol:
                continue
            per = float(np.sum(adm[-span:]))
            reps = math.floor(queue / per) - 1 if per > 0 else 0
            if reps >= 1:
                for k in range(len(wgt) - span, len(wgt)):
                    wgt[k] += reps
                queue -= reps * per
            break
    return np.asarray(occ), np.asarray(adm), np.asarray(wgt), max(emptied, 0)
