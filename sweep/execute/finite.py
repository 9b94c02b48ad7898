"""Finite runs: a data set of requests queued at once and served to the last one
(:func:`finite_run`, ``sweep.finite_run``; docs/model.md section 13.7).

Offline benchmarks (vLLM's ``benchmark_throughput``, ``trtllm-bench throughput``, a serving
benchmark at an unlimited request rate, seed 004's "whole data set as a batch workload") report
the output tokens of a fixed set of requests over the time from the first prompt to the last
token. The steady state of section 13.2 keeps its concurrency for ever; a finite run does not:

1. **start**: the first ``C = min(N, max in flight)`` prompts are prefilled together (the
   static batch's prefill of ``C`` prompts, with its host time);
2. **saturated**: each finished request is replaced by a queued one while the queue lasts;
3. **tail**: once the queue is empty the requests still running finish one by one and the
   iterations run ever fewer sequences. With output lengths spread like a chat data set's, the
   longest requests decode almost alone for hundreds of iterations.

The occupancy of every decode iteration comes from a fluid model of the admissions (expected
values, iteration by iteration): a request admitted at iteration ``j`` decodes for ``D`` tokens
(``D + 1`` output tokens, the first comes with its prompt), ``D`` drawn from the output-length
distribution; a slot freed at the end of an iteration is refilled from the queue at once. An
iteration with ``n`` requests decoding and ``a`` admissions costs

    t(n, a) = max(t_dec(n) + a / a_ss(n) * (t_cont(n) - t_dec(n)), a * t_p)

``t_dec(n)``: the decode step of ``n`` sequences alone (the static batch's TPOT at batch
``n``); ``t_cont(n)``: the steady state's TPOT at concurrency ``n`` (section 13.2), whose
iterations carry prompts at the steady rate ``a_ss(n) = X(n) t_cont(n) / O`` (its requests per
second times its iteration); ``t_p``: one prompt's share of the static prefill of ``C`` prompts
(a bunch of prompts admitted together costs at least their prefill). ``t_dec`` and ``t_cont``
come from the kernels at a dozen occupancies and are interpolated between them. Where fewer
than one request is expected to run (the last iterations) an iteration takes place with the
probability that any does, ``1 - exp(-n)`` (Poisson), at the occupancy given that one does.

Output lengths: the mean is the row's ``output_len``; ``output_cv`` (default 0: every request
the same length) is the coefficient of variation of a log-normal distribution, cut at
``output_max`` when given, its location set so that the cut distribution keeps the mean.
Prompts keep their mean length (``context``) for every request, as in section 13.2.

Energy: the start costs the static prefill's power over its time; each decode iteration the
decode-only step's power (the static point's energy less its prefill's, over its decode steps)
and the steady step's, mixed as the times are. ``run_power`` is the run's energy over its time:
the board power a meter averages over a benchmark, tail included.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from grids.errors import SpecError
from grids.layouts import parse_layout
from grids.spec import DEFAULT_PREFILL_CHUNK
from sweep.execute.points import as_table
from sweep.execute.points import evaluate as evaluate_table

#: the columns :func:`finite_run` reads beyond :func:`sweep.evaluate`'s
RUN_COLUMNS = ("requests", "output_cv", "output_max")
#: occupancies (per replica) the kernels are evaluated at, geometric from 1 to the concurrency
LEVELS = 14
#: the largest output length considered when ``output_max`` is not given: the log-normal's
#: quantile at ``Z_TOP`` standard deviations of the log (probability 2.9e-7 beyond it)
Z_TOP = 5.0


def length_pmf(mean: float, cv: float, most: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    """Output lengths [token] and their probabilities: ``mean`` exactly, a log-normal of
    coefficient of variation ``cv`` (before the cut) discretised to whole tokens >= 1 and cut
    at ``most``; ``cv = 0`` gives the two whole lengths around ``mean`` with that mean."""
    from scipy.special import ndtr  # on use: ``import sweep`` stays light

    if cv <= 0:
        lo = max(1.0, math.floor(mean))
        hi = lo + 1.0
        w_hi = min(max(mean - lo, 0.0), 1.0)
        return np.array([lo, hi]), np.array([1.0 - w_hi, w_hi])
    s2 = math.log1p(cv * cv)
    sig = math.sqrt(s2)
    top = most if math.isfinite(most) else mean * math.exp(sig * Z_TOP - s2 / 2.0)
    top = max(top, math.ceil(mean))  # whole tokens: a cut below the mean rounded up cannot keep it
    lengths = np.arange(1.0, math.floor(top) + 1.0)
    edges = np.log(np.concatenate([[0.5], lengths + 0.5]))

    def pmf(mu: float) -> np.ndarray:
        c = ndtr((edges - mu) / sig)
        p = np.diff(c)
        total = p.sum()
        if not total > 0:  # mu far beyond an end (a mean at 1 token or at the cut): all there
            p = np.zeros_like(lengths)
            p[-1 if mu > edges[-1] else 0] = 1.0
            return p
        return p / total

    # the location whose cut, discretised distribution has the asked mean (bisection on mu)
    # (bracketed wide enough for a mean at 1 token or at the cut, whose roots are far out)
    lo_mu, hi_mu = -40.0 * sig - 10.0, math.log(top + 0.5) + 40.0 * sig + 10.0
    for _ in range(100):
        mid = 0.5 * (lo_mu + hi_mu)
        if float(pmf(mid) @ lengths) < mean:
            lo_mu = mid
        else:
            hi_mu = mid
    p = pmf(0.5 * (lo_mu + hi_mu))
    # a mean at an end (1 token, or the cut) is a limit the bisection nears but does not reach
    # in floating point: the missing mass goes to that end, so the mean is kept exactly
    got = float(p @ lengths)
    end = lengths[-1] if got < mean else lengths[0]
    if got != mean and end != got:
        w = (mean - got) / (end - got)
        p = (1.0 - w) * p
        p[-1 if got < mean else 0] += w
    return lengths, p


def fluid_run(steps: np.ndarray, prob: np.ndarray, n_requests: float, conc: float,
              skip_repeats: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Expected decode occupancy and admissions of each iteration of a finite run.

    ``steps``/``prob``: decode iterations per request (whole numbers >= 0) and their
    probabilities; ``n_requests`` queued at time 0, at most ``conc`` in flight. Returns (``n``:
    requests decoding in each iteration, ``a``: requests admitted at its end, ``w``: how many
    iterations the entry stands for, the entry at which the queue empties): the numba kernel
    :func:`kernels.fluid.fluid_iterations` (its docstring says how admissions are counted and
    how the repetitions of a long queue are counted instead of iterated; ``skip_repeats=False``
    iterates them all, for the tests)."""
    from kernels.fluid import fluid_iterations  # lazy: importing sweep does not load numba

    steps = np.asarray(steps, dtype=np.float64)
    prob = np.asarray(prob, dtype=np.float64)
    d_max = int(steps[prob > 0].max())
    pmf = np.zeros(d_max + 1)
    keep = steps <= d_max
    np.add.at(pmf, steps[keep].astype(np.int64), prob[keep])
    occ, adm, wgt, emptied = fluid_iterations(pmf, float(n_requests), float(conc),
                                              bool(skip_repeats))
    return occ, adm, wgt, int(emptied)


def run_costs(occ: np.ndarray, adm: np.ndarray, levels: np.ndarray, t_dec: np.ndarray,
              t_cont: np.ndarray, a_cont: np.ndarray, prompt: float,
              powers: tuple[np.ndarray, np.ndarray, float] | None = None
              ) -> tuple[np.ndarray, np.ndarray | None]:
    """Time [s] and energy [J] of each decode iteration of a fluid run (:func:`fluid_run`)
    from the decode-only and steady-state step times at the occupancies ``levels``, the steady
    state's admissions per iteration there (``a_cont``) and the time ``prompt`` [s] that one
    prompt takes in a static batch's prefill (see the module docstring).

    ``powers`` = (decode-only power at ``levels``, steady-state power at ``levels``, the static
    prefill's power) [W]: an iteration's energy mixes the decode-only and steady steps' energies
    as its time mixes their times (a bunch of prompts that outlasts the mix costs the prefill's
    power over its time), its mean power kept between the powers it mixes. Without ``powers``
    the energy is None."""
    # expected iterations where fewer than one request runs: Poisson chance that any does
    p_any = np.where(occ >= 8.0, 1.0, -np.expm1(-occ))
    n_given = occ / np.maximum(p_any, 1e-300)
    n_at = np.clip(n_given, levels[0], levels[-1])
    dec = np.interp(n_at, levels, t_dec)
    cont = np.interp(n_at, levels, t_cont)
    steady_adm = np.maximum(np.interp(n_at, levels, a_cont), 1e-12)
    # admissions happen at the end of iteration k and their prompts ride iteration k + 1
    a_next = np.concatenate([[0.0], adm[:-1]]) / np.maximum(p_any, 1e-300)
    share = np.clip(a_next / steady_adm, 0.0, None)
    extra = cont > dec
    mixed = dec + np.where(extra, share * (cont - dec), 0.0)
    bunch = a_next * prompt
    time = p_any * np.maximum(mixed, bunch)
    if powers is None:
        return time, None
    p_dec = np.interp(n_at, levels, powers[0])
    p_cont = np.interp(n_at, levels, powers[1])
    e_mixed = p_dec * dec + np.where(extra, share * (p_cont * cont - p_dec * dec), 0.0)
    e_mixed = np.clip(e_mixed, np.minimum(p_dec, p_cont) * mixed,
                      np.maximum(np.maximum(p_dec, p_cont), powers[2]) * mixed)
    energy = p_any * np.where(mixed >= bunch, e_mixed, bunch * powers[2])
    return time, energy


def _column(table: pd.DataFrame, col: str, default: float) -> np.ndarray:
    if col not in table.columns:
        return np.full(len(table), default)
    return pd.to_numeric(table[col], errors="coerce").to_numpy(float)


def finite_run(table: Any, *, prefill_chunk: int = DEFAULT_PREFILL_CHUNK,
               calibration: dict[str, Any] | str | Path | None = None,
               cost: Any = None) -> pd.DataFrame:
    """The throughput of a finite run: ``requests`` queued at once and served to the last
    (docs/model.md section 13.7), as offline benchmarks and serving benchmarks at an unlimited
    request rate measure it.

    Parameters
    ----------
    table : pandas.DataFrame (or what :func:`sweep.evaluate` accepts)
        :func:`sweep.evaluate`'s columns with ``batch`` the most requests a replica runs at once
        (the engine's ``max_num_seqs``; ``"max"``: the maximum load) and continuous batching,
        plus ``requests`` (how many requests the run serves, over all the layout's replicas;
        > 0), optionally ``output_cv`` (coefficient of variation of the output lengths, >= 0;
        default 0: all ``output_len`` long) and ``output_max`` (the longest output [token],
        >= ``output_len``; default: no cut).
    prefill_chunk, calibration, cost
        As :func:`sweep.evaluate`.

    Returns
    -------
    pandas.DataFrame
        A copy of ``table`` with ``run_time`` [s] (first prompt to last token),
        ``run_throughput`` [token/s] (output tokens over ``run_time``, all replicas),
        ``run_total_throughput`` [token/s] (prompt and output tokens), ``tail_time`` [s] (from
        the queue emptying to the last token), ``run_energy`` [J] (all the layout's devices
        over the run), ``run_power`` [W] (its mean board power: ``run_energy / run_time``, the
        counterpart of :func:`sweep.evaluate`'s ``power``), ``run_system_power`` [W] (with the
        host and system share, as ``system_power``), ``steady_throughput`` [token/s] (the
        steady state's output tokens per second at the same load, :func:`sweep.evaluate`'s
        ``throughput``) and ``batch_used`` (requests in flight per replica while the queue
        lasts), and ``fits``; NaN where the point does not fit (``fits`` 0).
    """
    table = as_table(table).reset_index(drop=True)
    missing = [c for c in ("requests", "batch") if c not in table.columns]
    if missing:
        raise SpecError(f"finite_run: the table lacks columns {missing} (requests: how many "
                        f"requests the run serves; batch: the most a replica runs at once, or "
                        f"'max')")
    if "request_rate" in table.columns:
        raise SpecError("finite_run: a finite run queues every request at once; drop the "
                        "request_rate column")
    if "batching" in table.columns and not table["batching"].isin(["continuous"]).all():
        raise SpecError("finite_run: batching must be 'continuous' (the engines' iteration-level"
                        " scheduler serves the run)")
    n_req = _column(table, "requests", math.nan)
    cv = _column(table, "output_cv", 0.0)
    most = _column(table, "output_max", math.inf)
    most = np.where(np.isnan(most), math.inf, most)  # an empty cell: no cut
    out_len = pd.to_numeric(table["output_len"], errors="coerce").to_numpy(float)
    problems = []
    for col, bad in (("requests", ~(n_req > 0) | ~np.isfinite(n_req)),
                     ("output_cv", ~(cv >= 0) | ~np.isfinite(cv)),
                     ("output_max", ~(most >= out_len))):
        if bad.any():
            rows = np.flatnonzero(bad)[:5].tolist()
            need = {"requests": "a finite number > 0", "output_cv": "a finite number >= 0",
                    "output_max": "a number >= output_len (or absent for no cut)"}[col]
            problems.append(f"{col}: rows {rows} are not {need}")
    if problems:
        raise SpecError(f"finite_run: {'; '.join(problems)}")
    inputs = table.drop(columns=[c for c in RUN_COLUMNS if c in table.columns])
    steady = evaluate_table(inputs, prefill_chunk=prefill_chunk, calibration=calibration,
                            cost=cost)
    dp = _replicas(table["parallelism"])
    per_replica = n_req / dp
    conc = np.minimum(steady["batch_used"].to_numpy(float), per_replica)
    fits = steady["fits"].to_numpy() == 1
    # the kernels at each row's occupancy levels: decode alone (static) and steady (continuous)
    lv = [np.unique(np.round(np.geomspace(1.0, c, LEVELS))) if f and c >= 1 else np.array([1.0])
          for c, f in zip(conc, fits)]
    rep = np.repeat(np.arange(len(table)), [len(x) for x in lv])
    at = inputs.iloc[rep].reset_index(drop=True)
    at["batch"] = np.concatenate(lv)
    start = inputs.copy()
    start["batch"] = np.where(fits, np.maximum(np.floor(conc), 1.0), 1.0)
    # the same static points with one output token: their power is the prefill's alone
    both = pd.concat([at.assign(batching="static"), at.assign(batching="continuous"),
                      start.assign(batching="static"),
                      at.assign(batching="static", output_len=1),
                      start.assign(batching="static", output_len=1)], ignore_index=True)
    ev = evaluate_table(both, prefill_chunk=prefill_chunk, calibration=calibration, cost=cost)
    m, n = len(at), len(table)
    tpot = ev["tpot"].to_numpy(float)
    t_dec, t_cont = tpot[:m], tpot[m:2 * m]
    thr_cont = ev["throughput"].to_numpy(float)[m:2 * m]
    ttft_start = ev["ttft"].to_numpy(float)[2 * m:2 * m + n]
    power = ev["power"].to_numpy(float)
    p_cont, p_start = power[m:2 * m], power[3 * m + n:]
    # decode-only power at each level: the static point's energy less its prefill's, over
    # its decode steps (all the layout's devices, as every power column)
    steps = (at["output_len"].to_numpy(float) - 1.0) * t_dec
    e_pre = power[2 * m + n:3 * m + n] * ev["ttft"].to_numpy(float)[2 * m + n:3 * m + n]
    with np.errstate(invalid="ignore", divide="ignore"):
        p_dec = np.where(steps > 0, (power[:m] * ev["e2e_latency"].to_numpy(float)[:m] - e_pre)
                         / steps, power[:m])
    host_share = steady["system_power"].to_numpy(float) - steady["power"].to_numpy(float)
    bounds = np.concatenate([[0], np.cumsum([len(x) for x in lv])])
    res = {k: np.full(len(table), math.nan) for k in
           ("run_time", "run_throughput", "run_total_throughput", "tail_time", "run_energy",
            "run_power", "run_system_power")}
    ctx = pd.to_numeric(table["context"], errors="coerce").to_numpy(float)
    for i in range(len(table)):
        sl = slice(bounds[i], bounds[i + 1])
        if not fits[i] or not (np.isfinite(t_dec[sl]).all() and np.isfinite(t_cont[sl]).all()):
            continue
        lengths, prob = length_pmf(out_len[i], cv[i], most[i])
        occ, adm, wgt, emptied = fluid_run(lengths - 1.0, prob, per_replica[i], conc[i])
        # the steady state's admissions per iteration: its request rate x its iteration time
        a_cont = thr_cont[sl] / dp[i] / out_len[i] * t_cont[sl]
        dt, de = run_costs(occ, adm, lv[i], t_dec[sl], t_cont[sl], a_cont,
                           ttft_start[i] / max(math.floor(conc[i]), 1.0),
                           (p_dec[sl], p_cont[sl], p_start[i]))
        dt, de = wgt * dt, wgt * de
        total = ttft_start[i] + dt.sum()
        energy = p_start[i] * ttft_start[i] + de.sum()
        res["run_energy"][i] = energy
        res["run_power"][i] = energy / total
        res["run_system_power"][i] = energy / total + host_share[i]
        res["run_time"][i] = total
        res["tail_time"][i] = dt[emptied:].sum()
        res["run_throughput"][i] = n_req[i] * out_len[i] / total
        res["run_total_throughput"][i] = n_req[i] * (out_len[i] + ctx[i]) / total
    out = table.copy()
    for k, v in res.items():
        out[k] = v
    out["steady_throughput"] = np.where(fits, steady["throughput"].to_numpy(float), math.nan)
    out["batch_used"] = np.where(fits, conc, math.nan)
    out["fits"] = steady["fits"].to_numpy()
    return out


def _replicas(layouts: pd.Series) -> np.ndarray:
    """Data-parallel replicas of each layout id."""
    return np.array([float(parse_layout(str(x)).dp) for x in layouts])
