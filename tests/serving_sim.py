"""A discrete-event simulator of iteration-level (continuous) batching: the reference the steady
state of ``docs/model.md`` section 13.2 is checked against (``tests/test_serving.py``).

The scheduler is simulated iteration by iteration at a fixed concurrency (a closed loop: a
finished request is replaced at once) with the engine's policy, as section 13 states it:

* admission: at most ``max_concurrency`` requests in flight, first come first served; the others
  queue;
* every iteration, each decoding request decodes (``k_s + 1`` tokens verified, ``tau`` accepted
  on average, with speculative decoding);
* prompt tokens fill the token budget ``T`` first come first served: with ``mixed_batching``
  beside the decodes (``T - n_dec q`` left), else in a prefill pass of its own (``T``); with
  ``chunked_prefill`` a prompt takes what is left and continues in the next iteration, without
  it a prompt goes whole (in passes of ``T`` when longer than ``T``), and one that does not fit
  beside the decodes gets a pass of its own;
* a request's first token comes at the end of the iteration that finishes its prompt, its last
  when ``O`` tokens are out.

Each iteration is timed by :func:`tests.reference_serving.iteration` at its real composition:
the number of decoding requests, the mean of their attended lengths, and the prompt chunks'
exact attention pairs and KV elements read (earlier chunks) and written. Requests start spread
over their life cycle (the steady state an open-loop server reaches; a closed loop started all
at once keeps its waves) and are measured after a warm-up.

:func:`simulate_offline` runs the other case with the same iterations: an offline benchmark's
fixed number of identical requests queued at once and served to the last (its waves, ramp-up and
drain included), as ``trtllm-bench throughput`` reports it (``scripts/maxload_protocol.py``).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from tests.reference import FEASIBLE, kv_elems, pairs_window, place, window_len
from tests.reference_serving import (
    NO_PROMPT,
    iteration,
    serving_sizes,
    steady_state,
    tokens_per_round,
)


@dataclass
class Request:
    arrival: float
    out: float = math.nan  # this request's output tokens
    prefilled: float = 0.0  # prompt tokens done
    generated: float = 0.0  # output tokens out (the first comes with the end of the prompt)
    first_token: float = math.nan
    admitted: bool = False
    measured: bool = True


@dataclass
class SimResult:
    """Steady-state means over the measured requests: TTFT (from arrival, queue included) and
    TPOT [s], requests/s per replica, and the iterations simulated."""

    ttft: float
    tpot: float
    requests: float
    iterations: int
    completed: int
    notes: list[str] = field(default_factory=list)


@dataclass
class OfflineResult:
    """An offline run of identical requests queued at once (:func:`simulate_offline`): output
    tokens/s per replica over the whole run, its time [s], the requests in flight at most, the
    iterations and the requests completed."""

    tokens_per_s: float
    seconds: float
    concurrency: int
    iterations: int
    completed: int
    notes: list[str] = field(default_factory=list)


def _pairs(md: dict, n: float) -> tuple[float, float]:
    """Causal attention pairs of the first ``n`` tokens (full and windowed layers)."""
    return n * (n + 1) / 2, pairs_window(md, n)


def _attended(md: dict, x: float) -> float:
    """Keys a windowed layer attends to for the token at position ``x`` (1-based)."""
    w = md["window"]
    if w == 0:
        return x
    if md["window_chunked"] != 0:
        return (x - 1) % w + 1
    return min(x, w)


def _decode_lengths(md: dict, decoding: list[Request], s: float) -> tuple[float, float]:
    """Mean attended lengths of an iteration's decodes (full and windowed layers): the token
    generated next sits at position ``S + generated + 1``."""
    if not decoding:
        return s, s
    n = len(decoding)
    c_mean = sum(s + r.generated + 1 for r in decoding) / n
    if md["window"] == 0:
        return c_mean, c_mean
    return c_mean, sum(_attended(md, s + r.generated + 1) for r in decoding) / n


def _prompt_chunks(prefilling: list[Request], s: float, budget: float, decode_tokens: float,
                   chunked: bool, mixed: bool) -> tuple[list[tuple[Request, float]], bool]:
    """The prompt tokens of one iteration, first come first served, and whether they take a
    pass of their own: with ``mixed`` beside the decodes (``budget - decode_tokens`` left), else
    in a prefill pass (``budget``); chunked prompts take what is left, whole ones go whole (in
    passes of the budget when longer than it) and one that does not fit beside the decodes
    gets a pass of its own."""
    left = budget - decode_tokens if mixed else budget
    own_pass = not mixed
    chunks: list[tuple[Request, float]] = []
    for r in prefilling:
        need = s - r.prefilled
        if chunked:
            if left <= 0:
                break
            take = min(need, left)
        else:
            if need <= left:
                take = need
            elif not chunks and need > left:
                own_pass = True
                take = min(need, budget)
            else:
                break
        chunks.append((r, take))
        left -= take
        if not chunked and own_pass and mixed:
            break
    return chunks, own_pass


def _iteration_time(hw: dict, md: dict, pr: dict, px: dict, ly: dict, sz: dict, placement: dict,
                    n_dec: int, c_mean: float, c_win: float,
                    chunks: list[tuple[Request, float]], own_pass: bool,
                    s: float) -> tuple[float, float]:
    """One iteration's time [s] at its real composition (a speculative round's draft passes,
    the prompt chunks' exact attention pairs and KV elements), and when within it the prompts
    that finish get their first token (NaN: at its end)."""
    k = hw["spec_tokens"]
    q = k + 1
    tot = dict(NO_PROMPT)
    if chunks:
        pf = pw = rd = wr = 0.0
        for r, c in chunks:
            a0, b0 = _pairs(md, r.prefilled)
            a1, b1 = _pairs(md, r.prefilled + c)
            pf += a1 - a0
            pw += b1 - b0
            rd += kv_elems(md, r.prefilled)
            wr += kv_elems(md, r.prefilled + c) - kv_elems(md, r.prefilled)
        finishing = sum(1 for r, c in chunks if r.prefilled + c >= s)
        tot = {"c_tok": sum(c for _, c in chunks), "prompts": float(finishing),
               "pairs_full": pf, "pairs_win": pw, "kv_read_prompt": rd, "kv_write": wr}
    kw = {"c_mean": c_mean, "c_win": c_win}
    dt = 0.0
    t_first = math.nan
    if n_dec and k > 0:  # a speculative round for the decodes
        plain = iteration(hw, md, pr, px, ly, sz, placement, n_dec=n_dec, q=1.0, **kw,
                          **NO_PROMPT)["time"]
        dt += k * hw["spec_draft_cost"] * plain
    if chunks and not own_pass:
        dt += iteration(hw, md, pr, px, ly, sz, placement, n_dec=n_dec, q=q if n_dec else 1.0,
                        **kw, **tot)["time"]
    else:
        if chunks:
            dt += iteration(hw, md, pr, px, ly, sz, placement, n_dec=0.0, q=1.0, **kw,
                            **tot)["time"]
            t_first = dt  # the prefill pass's prompts have their first token here
        if n_dec:
            dt += iteration(hw, md, pr, px, ly, sz, placement, n_dec=n_dec,
                            q=q if k > 0 else 1.0, **kw, **NO_PROMPT)["time"]
    return dt, t_first


def _in_flight(hw: dict, md: dict, pr: dict, ly: dict, conc: float, s: float, o: float
               ) -> tuple[int, dict, dict]:
    """Requests in flight (``conc`` capped at the maximum concurrency), the sizes and the
    placement at that many; one clear error when not even one request fits."""
    _, c_max = serving_sizes(hw, md, pr, ly, 1.0, s, o)
    running = int(min(conc, c_max))
    if running < 1:
        raise ValueError("not even one request fits")
    sz, _ = serving_sizes(hw, md, pr, ly, running, s, o)
    placement = place(hw, sz, ly)
    if placement["reason"] != FEASIBLE:
        raise ValueError(f"placement fails with reason {placement['reason']}")
    return running, sz, placement


def simulate(hw: dict, md: dict, px: dict, pr: dict, ly: dict, conc: int, context: float,
             output_len: float, *, warmup: int | None = None, measure: int | None = None,
             max_iterations: int = 200_000, seed: int | None = None,
             jitter: float = 0.0) -> SimResult:
    """Simulate ``conc`` requests in flight (closed loop) of ``context`` prompt and
    ``output_len`` generated tokens each; see the module docstring. The requests start evenly
    spread over their life cycle, or at random points of it with ``seed`` (irregular spacing:
    prompts collide, which the steady state of section 13.2 averages over); ``jitter``: each new
    request's output length is drawn uniformly within +/- that fraction of ``output_len`` (same
    mean), so that the requests' phases keep mixing as under real traffic (with fixed lengths
    a random start is one fixed pattern for ever)."""
    s, o = float(context), float(output_len)
    budget = hw["prefill_chunk"]
    chunked = hw["chunked_prefill"] != 0
    mixed = hw["mixed_batching"] != 0
    tau = tokens_per_round(hw)
    k = hw["spec_tokens"]
    q = k + 1
    running, sz, placement = _in_flight(hw, md, pr, ly, conc, s, o)
    est = steady_state(hw, md, pr, px, ly, running, s, o)
    # requests spread over their life cycle, in iterations (the model's estimate of it)
    k_p = est["k_p"]
    r_it = (o - 1) / tau
    life = k_p + r_it
    rng = None if seed is None else random.Random(seed)

    def length() -> float:
        if not jitter or rng is None:
            return o
        return max(2.0, round(o * (1 + jitter * (2 * rng.random() - 1))))

    ages = sorted(life * (rng.random() if rng else (i + 0.5) / running) for i in range(running))
    reqs: list[Request] = []
    for i in range(int(conc)):
        r = Request(arrival=0.0, measured=False, out=length())
        if i < running:
            age = ages[running - 1 - i]  # the oldest first (first come, first served)
            r.admitted = True
            if age < k_p:
                r.prefilled = min(s - 1, math.floor(age / k_p * s))
            else:
                r.prefilled = s
                r.generated = min(r.out - 1, 1 + math.floor((age - k_p) * tau))
                r.first_token = 0.0
        reqs.append(r)
    warmup = 2 * running if warmup is None else warmup
    measure = max(4 * running, 64) if measure is None else measure
    t = 0.0
    done = 0
    t_start = math.nan
    done_start = 0
    tokens = 0.0  # output tokens of the measured completions
    ttfts: list[float] = []
    tpots: list[float] = []
    iterations = 0
    while done < warmup + measure and iterations < max_iterations:
        iterations += 1
        active = [r for r in reqs if r.admitted]
        decoding = [r for r in active if r.prefilled >= s]
        prefilling = [r for r in active if r.prefilled < s]
        n_dec = len(decoding)
        c_mean, c_win = _decode_lengths(md, decoding, s)
        chunks, own_pass = _prompt_chunks(prefilling, s, budget, n_dec * q, chunked, mixed)
        finishing = [r for r, c in chunks if r.prefilled + c >= s]
        dt, t_first = _iteration_time(hw, md, pr, px, ly, sz, placement, n_dec, c_mean, c_win,
                                      chunks, own_pass, s)
        t_first = t + (dt if math.isnan(t_first) else t_first)
        t += dt
        # the iteration's outcome
        for r, c in chunks:
            r.prefilled += c
            if r.prefilled >= s:
                r.first_token = t_first
                r.generated = 1.0
                if r.measured:
                    ttfts.append(t_first - r.arrival + hw["request_overhead"])
        finished = []
        for r in decoding:
            r.generated += tau
            if r.generated >= r.out:
                finished.append(r)
        if o <= 1:
            finished.extend(finishing)
        for r in finished:
            done += 1
            if done == warmup:
                t_start, done_start = t, done
            if r.measured and r.out > 1:
                tpots.append((t - r.first_token) / (r.out - 1))
                tokens += r.out
            reqs.remove(r)
            reqs.append(Request(arrival=t, measured=done >= warmup, out=length()))
        # admission of queued requests into free slots
        n_active = sum(1 for r in reqs if r.admitted)
        for r in reqs:
            if n_active >= running:
                break
            if not r.admitted:
                r.admitted = True
                n_active += 1
    elapsed = t - t_start
    requests = (done - done_start) / elapsed if elapsed > 0 else math.nan
    notes = [] if done >= warmup + measure else [f"stopped after {iterations} iterations"]
    return SimResult(
        ttft=sum(ttfts) / len(ttfts) if ttfts else math.nan,
        tpot=sum(tpots) / len(tpots) if tpots else math.nan,
        requests=requests, iterations=iterations, completed=done, notes=notes)


def simulate_offline(hw: dict, md: dict, px: dict, pr: dict, ly: dict, n_requests: int,
                     context: float, output_len: float, *, conc: int | None = None,
                     max_iterations: int = 2_000_000,
                     outputs: list[float] | None = None) -> OfflineResult:
    """An offline benchmark as ``trtllm-bench throughput`` and vLLM's ``benchmark_throughput``
    run it: ``n_requests`` identical requests (``context`` prompt, ``output_len`` generated
    tokens) all queued at time 0 and served to the last, at most ``conc`` (default: the
    engine's maximum concurrency) in flight, with the scheduler policy of :func:`simulate`.
    What such a benchmark reports is the output tokens over the whole run's time, ramp-up and
    drain included; with identical lengths the requests admitted together finish together, so
    the prompts keep arriving in bunches instead of spread over the decodes (the steady state
    of docs/model.md section 13.2 assumes the latter). ``outputs``: each request's own output
    length instead (``n_requests`` of them, served in that order; their mean stands for
    ``output_len`` in the sizes), the finite run of section 13.7."""
    s, o = float(context), float(output_len)
    if outputs is not None:
        if len(outputs) != n_requests:
            raise ValueError("outputs: one length per request")
        o = sum(outputs) / n_requests
    lengths = list(outputs) if outputs is not None else [o] * int(n_requests)
    budget = hw["prefill_chunk"]
    chunked = hw["chunked_prefill"] != 0
    mixed = hw["mixed_batching"] != 0
    tau = tokens_per_round(hw)
    q = hw["spec_tokens"] + 1
    running, sz, placement = _in_flight(hw, md, pr, ly, min(n_requests, conc or n_requests),
                                        s, o)
    waiting = int(n_requests)
    active: list[Request] = []
    t = 0.0
    done = 0
    iterations = 0
    while (waiting or active) and iterations < max_iterations:
        iterations += 1
        while waiting and len(active) < running:
            active.append(Request(arrival=0.0, out=float(lengths[n_requests - waiting]),
                                  admitted=True))
            waiting -= 1
        decoding = [r for r in active if r.prefilled >= s]
        prefilling = [r for r in active if r.prefilled < s]
        c_mean, c_win = _decode_lengths(md, decoding, s)
        chunks, own_pass = _prompt_chunks(prefilling, s, budget, len(decoding) * q, chunked,
                                          mixed)
        dt, _ = _iteration_time(hw, md, pr, px, ly, sz, placement, len(decoding), c_mean,
                                c_win, chunks, own_pass, s)
        t += dt
        for r, c in chunks:
            r.prefilled += c
            if r.prefilled >= s:
                r.generated = 1.0
        for r in decoding:
            r.generated += tau
        finished = [r for r in active if r.prefilled >= s and r.generated >= r.out]
        done += len(finished)
        active = [r for r in active if not (r.prefilled >= s and r.generated >= r.out)]
    notes = [] if done == n_requests else [f"stopped after {iterations} iterations"]
    return OfflineResult(tokens_per_s=sum(lengths[:done]) / t if t > 0 else math.nan, seconds=t,
                         concurrency=running, iterations=iterations, completed=done,
                         notes=notes)


__all__ = ["OfflineResult", "SimResult", "simulate", "simulate_offline", "window_len"]
