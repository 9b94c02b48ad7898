"""Continuous batching (docs/model.md section 13): the steady state against a discrete-event
simulation of the scheduler, and the properties of the serving metrics.

The simulator (``tests/serving_sim.py``) times every iteration with the reference physics at its
real composition and starts the requests at random points of their life cycle; the kernels'
steady state must agree with it within the tolerances below on catalog devices, models and
engines drawn by hypothesis. Measured spread (docs/model.md section 13.3, ``python -m
scripts.serving_check``) over 67 feasible points: throughput within 10% at every one (median
0.5%, worst 4.7%), TPOT at every one (median 0.2%, worst 5.4%), TTFT within 10% at 92.5% of them
(median 0.5%, worst 21.8%: prompts that arrive together are averaged over in the model).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import sweep
from kernels.params import (
    HW_FIELDS,
    LAYOUT_FIELDS,
    METRICS,
    MODE_CONTINUOUS,
    MODE_RATE,
    MODE_STATIC,
    MODEL_FIELDS,
    PRECISION_FIELDS,
    PX_FIELDS,
)
from sweep.execute.points import evaluate_rows, resolve_points
from tests import strategies as S
from tests.serving_sim import simulate, simulate_offline

M = {name: i for i, name in enumerate(METRICS)}
#: (hardware, model, layout, precision) that fit and cover GPUs, MoE, TP and a systolic part
COMBOS = (("h100-sxm", "llama-3.1-8b", "tp1", "bf16"), ("h100-sxm", "llama-3.3-70b", "tp4", "fp8"),
          ("mi300x", "llama-3.1-8b", "tp1", "bf16"), ("b200", "mixtral-8x7b", "tp2", "fp8"),
          ("gaudi3", "llama-3.1-8b", "tp1", "bf16"), ("l40s", "llama-3.1-8b", "tp1", "fp8"),
          ("h200-sxm", "llama-3.3-70b", "tp8", "fp8"), ("tpu-v6e", "llama-3.1-8b", "tp1", "bf16"))
ENGINES = ("vllm", "trtllm", "sglang", "ideal", "native")
#: agreement with the simulator (relative): TPOT and throughput at every point with outputs of
#: 64 tokens or more (the issue's target, 10%); with 16-token outputs prompts dominate and
#: arrive bunched, and an iteration's time is convex in its prompt tokens (the roofline's max),
#: which the steady state's mean composition misses: 150 draws with 16-token outputs (135
#: feasible) reach 10.0% (throughput) and 9.6% (TPOT) since the collision wait is counted in
#: iterations (13.2 step 6; hypothesis had found 23% before it)
RTOL_TPOT = RTOL_THROUGHPUT = 0.10
RTOL_SHORT = 0.15
RTOL_TTFT = 0.10
#: one wave of identical requests against the static batch: the simulator times each decode
#: step at its real KV length, the static batch at the mean length (docs/model.md section 7)
RTOL_WAVE = 0.02
#: output lengths of the simulated requests vary by +/- this fraction (same mean): phases mix
JITTER = 0.2


def _table(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows)


def _rows(pt, i: int) -> tuple[dict, dict, dict, dict, dict]:
    t = pt.tables
    h, mi = pt.platform[i], pt.index["model"][i]
    pi, li = pt.index["precision"][i], pt.index["parallelism"][i]

    def row(table, j, fields):
        return {f: float(v) for f, v in zip(fields, table[j])}

    return (row(t.hw, h, HW_FIELDS), row(t.md, mi, MODEL_FIELDS),
            {f: float(v) for f, v in zip(PX_FIELDS, t.px[h, pi])},
            row(t.pr, pi, PRECISION_FIELDS), row(t.ly, li, LAYOUT_FIELDS))


def _evaluate(df: pd.DataFrame, mode: float, load: str = "batch"):
    pt = resolve_points(df)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = evaluate_rows(pt, np.arange(len(df)), df[load].to_numpy(float),
                            df["context"].to_numpy(float), df["output_len"].to_numpy(float),
                            mode=mode)
    return pt, out


workloads = st.fixed_dictionaries({
    "combo": st.sampled_from(COMBOS), "engine": st.sampled_from(ENGINES),
    "batch": st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128, 256, 512]),
    "context": st.sampled_from([128, 512, 1024, 2048, 4096, 8192]),
    "output_len": st.sampled_from([16, 64, 256, 512]),
    "seed": st.integers(0, 2**16)})


def _df(w: dict) -> pd.DataFrame:
    h, m, lay, p = w["combo"]
    return _table([{"hardware": h, "model": m, "parallelism": lay, "precision": p,
                    "engine": w["engine"], "batch": w["batch"], "context": w["context"],
                    "output_len": w["output_len"]}])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads)
def test_steady_state_agrees_with_the_simulator(w):
    df = _df(w)
    pt, out = _evaluate(df, MODE_CONTINUOUS)
    if out[M["fits"], 0] != 1:
        return  # the engine does not run there, or the model does not fit
    hw, md, px, pr, ly = _rows(pt, 0)
    conc = int(min(w["batch"], out[M["max_concurrency"], 0]))
    sim = simulate(hw, md, px, pr, ly, conc, w["context"], w["output_len"], seed=w["seed"],
                   jitter=JITTER)
    assert not sim.notes, sim.notes
    requests = out[M["throughput"], 0] / ly["dp"] / w["output_len"]
    queue = (w["batch"] - conc) / requests  # beyond the maximum concurrency, in both
    short = w["output_len"] < 64
    assert requests == pytest.approx(sim.requests, rel=RTOL_SHORT if short
                                     else RTOL_THROUGHPUT), w
    assert out[M["tpot"], 0] == pytest.approx(sim.tpot, rel=RTOL_SHORT if short
                                              else RTOL_TPOT), w
    assert np.isfinite(sim.ttft) and np.isfinite(queue)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries({
    "combo": st.sampled_from(COMBOS), "engine": st.sampled_from(ENGINES),
    "batch": st.sampled_from([1, 2, 4, 8, 16]), "context": st.sampled_from([128, 512, 1024]),
    "output_len": st.sampled_from([16, 64, 256])}))
def test_one_offline_wave_is_the_static_batch(w):
    """An offline benchmark whose requests all fit at once in one pass of prompts is one static
    batch: the offline simulation (identical requests queued together, served to the last) and
    the kernels' static-batch throughput agree, but for the request's host time."""
    df = _df(w)
    pt, out = _evaluate(df, MODE_STATIC)
    if out[M["fits"], 0] != 1:
        return
    hw, md, px, pr, ly = _rows(pt, 0)
    assume(w["batch"] * w["context"] <= hw["prefill_chunk"] and hw["spec_tokens"] == 0)
    _, cont = _evaluate(df, MODE_CONTINUOUS)
    assume(cont[M["fits"], 0] == 1 and cont[M["max_concurrency"], 0] >= w["batch"])
    run = simulate_offline(hw, md, px, pr, ly, w["batch"], w["context"], w["output_len"])
    assert not run.notes and run.completed == w["batch"] and run.concurrency == w["batch"]
    # the static batch's end-to-end time less the request's host time, which an iteration
    # does not carry (section 13.2: a latency, overlapped with the other requests' passes)
    tokens = w["batch"] * w["output_len"]
    static = tokens / (tokens / (out[M["throughput"], 0] / ly["dp"]) - hw["request_overhead"])
    assert run.tokens_per_s == pytest.approx(static, rel=RTOL_WAVE), w


def test_ttft_agrees_with_the_simulator_on_most_points():
    """TTFT depends on how prompts that arrive together queue for the budget, which the
    steady state averages (13.2 step 6) and the simulator plays out: over the fixed sample of
    docs/model.md section 13.3 (``scripts/serving_check.py``, seed 7, 80 draws) the median
    error stays within 5%, 85% of the points within 10% and none beyond 30% (measured on its 67
    feasible points: median 0.5%, 92.5% within 10%, worst 21.8%; with the wait counted in
    seconds, before, whole prompts as long as the budget colliding reached 159%)."""
    from scripts.serving_check import compare

    errors = compare(7, 80)["ttft"].abs().to_numpy()
    assert len(errors) >= 48
    assert np.median(errors) <= 0.05, np.sort(errors)
    assert (errors <= RTOL_TTFT).mean() >= 0.85, np.sort(errors)
    assert errors.max() <= 0.30, np.sort(errors)


@pytest.mark.parametrize("combo, engine, batch, context, output_len", [
    (("b200", "mixtral-8x7b", "tp2", "fp8"), "trtllm", 32, 8192, 64),
    (("h200-sxm", "llama-3.3-70b", "tp8", "fp8"), "native", 16, 8192, 256),
    (("h100-sxm", "llama-3.3-70b", "tp4", "fp8"), "sglang", 4, 8192, 16)])
def test_prompts_arrive_at_the_ends_of_iterations(combo, engine, batch, context, output_len):
    """Whole prompts as long as the budget, each in a pass far longer than the decode step: in
    a closed loop a prompt arrives only when an iteration ends, so the wait for the budget is
    counted in iterations (13.2 step 6). TTFT within 10% of the simulator for three seeds (with
    the wait counted in seconds, before, it came out +155%, +62% and +56% above it)."""
    w = {"combo": combo, "engine": engine, "batch": batch, "context": context,
         "output_len": output_len}
    pt, out = _evaluate(_df(w), MODE_CONTINUOUS)
    assert out[M["fits"], 0] == 1
    hw, md, px, pr, ly = _rows(pt, 0)
    for seed in (1, 2, 3):
        sim = simulate(hw, md, px, pr, ly, batch, context, output_len, seed=seed,
                       jitter=JITTER)
        assert out[M["ttft"], 0] == pytest.approx(sim.ttft, rel=RTOL_TTFT), (seed, sim.ttft)


def test_one_request_is_the_static_batch_of_one():
    """At concurrency 1 a request runs alone: TTFT and TPOT are the static batch's."""
    rows = [{"hardware": h, "model": m, "parallelism": lay, "precision": p, "engine": e,
             "batch": 1, "context": s, "output_len": 128}
            for h, m, lay, p in COMBOS for e in ("ideal", "vllm") for s in (128, 4096)]
    df = _table(rows)
    _, cont = _evaluate(df, MODE_CONTINUOUS)
    _, stat = _evaluate(df, MODE_STATIC)
    ok = (cont[M["fits"]] == 1) & (stat[M["fits"]] == 1)
    assert ok.sum() > 10
    np.testing.assert_allclose(cont[M["tpot"], ok], stat[M["tpot"], ok], rtol=1e-6)
    # the prompt chunking of a continuous iteration and of a static prefill coincide at batch 1
    np.testing.assert_allclose(cont[M["ttft"], ok], stat[M["ttft"], ok], rtol=1e-6)


#: the concurrencies of the ladder tests
LADDER = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
#: a fine ladder of concurrencies (80 from 1 to 4,096) for the throughput's monotonicity
FINE = np.unique(np.round(np.geomspace(1, 4096, 80)))


def _ladder(e: str, s: int, o: int = 256, batches=LADDER) -> pd.DataFrame:
    """Every combination of ``COMBOS`` at each of ``batches``, in that order."""
    rows = [{"hardware": h, "model": m, "parallelism": lay, "precision": p, "engine": e,
             "batch": b, "context": s, "output_len": o}
            for h, m, lay, p in COMBOS for b in batches]
    return _table(rows)


#: a fall of the throughput smaller than this is taken as flat (relative; the largest on the fine
#: ladder is 1.2e-4, docs/model.md 13.3)
FLAT = 1e-3


def _falls(thr: np.ndarray, fits: np.ndarray) -> list[int]:
    """Rows of ``thr`` (series x concurrencies) whose feasible throughputs fall somewhere."""
    return [i for i, (row, ok) in enumerate(zip(thr, fits))
            if not np.all(np.diff(row[ok]) >= -FLAT * row[ok][1:])]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("context", [128, 2048, 8192])
def test_ttft_below_the_static_batch_and_throughput_grows_with_concurrency(engine, context):
    """Up to the maximum concurrency, a request's TTFT under continuous batching is at most the
    static batch's (which prefills every prompt before the first token) at the same
    concurrency, and the throughput does not fall as the concurrency grows (up to the maximum
    load, where it stays)."""
    df = _ladder(engine, context)
    _, cont = _evaluate(df, MODE_CONTINUOUS)
    _, stat = _evaluate(df, MODE_STATIC)
    b = df["batch"].to_numpy(float)
    within = (cont[M["fits"]] == 1) & (stat[M["fits"]] == 1) & (b <= cont[M["max_concurrency"]])
    within &= stat[M["concurrency"]] == b  # the static batch fits at once (no waves)
    bad = within & (cont[M["ttft"]] > stat[M["ttft"]] * (1 + 1e-6))
    assert not bad.any(), df[bad]
    thr = cont[M["throughput"]].reshape(len(COMBOS), -1)
    fits = (cont[M["fits"]] == 1).reshape(len(COMBOS), -1)
    assert not _falls(thr, fits), thr[_falls(thr, fits)]


def test_throughput_does_not_fall_with_concurrency_on_a_fine_ladder():
    """Every combination x engine x prompt of 128, 2,048 and 8,192 tokens over 80
    concurrencies: the closed loop's throughput never falls as requests are added (a scheduler
    could always leave the extra request waiting)."""
    df = pd.concat([_ladder(e, s, batches=FINE) for e in ENGINES for s in (128, 2048, 8192)],
                   ignore_index=True)
    _, cont = _evaluate(df, MODE_CONTINUOUS)
    thr = cont[M["throughput"]].reshape(-1, len(FINE))
    fits = (cont[M["fits"]] == 1).reshape(-1, len(FINE))
    assert (fits.sum(axis=1) >= 10).sum() >= 100  # of 120 series (some never fit)
    keys = df.iloc[::len(FINE)]
    falls = keys.iloc[_falls(thr, fits)]
    assert falls.empty, falls[["engine", "context", "hardware", "model"]]


def test_ttft_does_not_fall_where_the_budget_saturates():
    """More requests in flight never shorten the mean TTFT: where the budget saturates (step
    4) the wait is at least step 6's collision wait there, not the backlog alone, which is
    about zero at the boundary (before: 1.27 s at 510 requests, 0.59 s at 515). SGLang (whole
    prompts in passes of their own), H200 tp8 Llama-3.3-70B fp8, 4,096 + 256 tokens; at 515
    requests within 10% of the DES (1.37-1.43 s for two seeds)."""
    rows = [{"hardware": "h200-sxm", "model": "llama-3.3-70b", "parallelism": "tp8",
             "precision": "fp8", "engine": "sglang", "batch": b, "context": 4096,
             "output_len": 256} for b in (500, 510, 515, 530)]
    pt, cont = _evaluate(_table(rows), MODE_CONTINUOUS)
    assert (cont[M["fits"]] == 1).all()
    assert np.all(np.diff(cont[M["ttft"]]) >= 0.0), cont[M["ttft"]]
    hw, md, px, pr, ly = _rows(pt, 2)
    sim = simulate(hw, md, px, pr, ly, 515, 4096, 256, seed=1, jitter=JITTER)
    assert cont[M["ttft"], 2] == pytest.approx(sim.ttft, rel=RTOL_TTFT), sim.ttft


def test_maximum_load_is_the_throughput_at_the_maximum_concurrency():
    df = _ladder("vllm", 1024)
    _, cont = _evaluate(df, MODE_CONTINUOUS)
    at_max = df.assign(batch=np.where(cont[M["fits"]] == 1, cont[M["max_concurrency"]], 1))
    _, top = _evaluate(at_max, MODE_CONTINUOUS)
    ok = cont[M["fits"]] == 1
    assert (cont[M["throughput"], ok] <= top[M["throughput"], ok] * (1 + 1e-6)).all()
    # beyond it the throughput is the maximum load's and TTFT carries the queue
    beyond = ok & (df["batch"].to_numpy() > cont[M["max_concurrency"]])
    assert beyond.any()
    np.testing.assert_allclose(cont[M["throughput"], beyond], top[M["throughput"], beyond],
                               rtol=1e-5)
    assert (cont[M["ttft"], beyond] > top[M["ttft"], beyond]).all()


def _rates(engine: str, context: int, fractions) -> tuple[pd.DataFrame, np.ndarray]:
    df = _ladder(engine, context).query("batch == 2048").reset_index(drop=True)
    _, top = _evaluate(df.assign(batch=np.inf), MODE_CONTINUOUS)
    rows = []
    for i, r in df.iterrows():
        x = top[M["throughput"], i] / r["output_len"]  # requests/s of the layout at max load
        if np.isfinite(x):
            rows += [{**r.drop("batch").to_dict(), "request_rate": f * x} for f in fractions]
    return _table(rows), top


@pytest.mark.parametrize("engine", ["vllm", "trtllm", "sglang"])
def test_rate_percentiles_are_ordered_and_saturate_at_maximum_load(engine):
    # fractions of the closed loop's maximum load (whose requests also wait for each other's
    # prompts, so Poisson arrivals saturate a little above it)
    fractions = (0.05, 0.3, 0.6, 0.9, 1.5)
    df, _ = _rates(engine, 1024, fractions)
    _, out = _evaluate(df, MODE_RATE, "request_rate")
    f = np.tile(fractions, len(df) // len(fractions))
    ok = out[M["fits"]] == 1
    assert ok[f < 0.95].all()
    assert (out[M["infeasible_reason"], f > 1.2] == 11).all()  # saturated
    t50, t90, t99 = out[M["ttft_p50"], ok], out[M["ttft_p90"], ok], out[M["ttft_p99"], ok]
    assert (t50 <= t90).all() and (t90 <= t99).all()
    assert (out[M["e2e_p50"], ok] <= out[M["e2e_p99"], ok]).all()
    # the rate is served: throughput = rate x output tokens, except where X(N) jumps over the
    # rate (docs/model.md section 13.4: either side of a jump is an answer). Besides the steps of
    # a prompt's chunks, the collectives make such jumps: an engine's custom all-reduce stops at
    # its size limit and the library's algorithm takes over (SGLang on 8 H200 at 8 MiB: 514
    # requests in flight). A row off the rate must show its jump within 0.1% of its concurrency.
    want = df["request_rate"].to_numpy() * df["output_len"].to_numpy()
    off = np.flatnonzero(ok & ~np.isclose(out[M["throughput"]], want, rtol=1e-4, atol=0.0))
    assert len(off) <= 0.1 * ok.sum()
    for i in off:
        conc = out[M["concurrency"], i]
        side = df.iloc[[i, i]].drop(columns="request_rate").assign(batch=[conc * 0.999,
                                                                          conc * 1.001])
        _, x = _evaluate(side, MODE_CONTINUOUS)
        below, above = x[M["throughput"]]
        assert below < want[i] < above, (df.iloc[i].to_dict(), below, want[i], above)
        # a jump, not the slope: X(N) = N / cycle, the cycle never shorter at more requests, so
        # a continuous X grows at most by 1.001 / 0.999 across the two sides
        assert above > 1.003 * below, (df.iloc[i].to_dict(), below, above)
    # more load, longer waits; the mean concurrency grows
    per = ok.reshape(-1, len(fractions))
    for name in ("ttft", "ttft_p99", "concurrency"):
        v = out[M[name]].reshape(-1, len(fractions))
        for row, good in zip(v, per):
            vals = row[good]
            assert np.all(np.diff(vals) >= -1e-6 * np.abs(vals[1:])), (name, vals)


def test_static_batch_beyond_memory_runs_in_waves():
    """A static batch that does not fit at once runs in waves: feasible, its concurrency the
    wave, its throughput that of the waves, its TTFT including the wait of earlier waves."""
    df = _table([{"hardware": "h100-sxm", "model": "llama-3.3-70b", "parallelism": "tp2",
                  "precision": "fp8", "engine": "ideal", "batch": b, "context": 8192,
                  "output_len": 256} for b in (1, 64, 1024)])
    _, out = _evaluate(df, MODE_STATIC)
    assert (out[M["fits"]] == 1).all()
    fit = out[M["max_concurrency"], 0]
    assert 1 <= fit < 64
    wave = out[M["concurrency"]]
    assert wave[0] == 1 and wave[1] <= fit and wave[2] <= fit
    n_w = math.ceil(1024 / fit)
    one = _evaluate(df.assign(batch=math.ceil(1024 / n_w)), MODE_STATIC)[1][:, 2]
    assert out[M["throughput"], 2] == pytest.approx(one[M["throughput"]] * 1024
                                                    / (n_w * math.ceil(1024 / n_w)), rel=1e-5)
    assert out[M["ttft"], 2] == pytest.approx(one[M["ttft"]] + (n_w - 1) / 2
                                              * one[M["e2e_latency"]], rel=1e-5)


@given(S.fitting_points(modes=(MODE_CONTINUOUS,), n_tiers=1, offload=0.0, spill=0.0))
def test_throughput_is_continuous_through_one_request_in_flight(p):
    """An engine that runs prompts in a pass of their own: a mean concurrency just above one
    adds a decode pass to a fraction of the prompt iterations, not to all of them (docs/model.md
    13.4), so throughput and TPOT are continuous there: what 1 + 1e-6 requests change is about
    a thousandth of what 1 + 1e-3 change, not all of it (a rate is solved at real-valued
    concurrencies: a step here gave a rate two solutions). Without EP: its busiest rank holds
    whole sequences, a step by design (section 3). One memory tier: the KV of ceil(N)
    sequences is placed, so where it spills to a slower tier the time steps with N by design.
    With decodes (at least 2 output tokens): the
    decode pass is what is asked about."""
    p = S.variant(p, hw={"mixed_batching": 0.0, "max_batch": math.inf}, ly={"ep": 1.0},
                  batch=1.0, output_len=max(p["output_len"], 2))
    one, near, far = S.evaluate([p, {**p, "batch": 1.0 + 1e-6}, {**p, "batch": 1.0 + 1e-3}])
    assume(one["fits"] == 1 and far["fits"] == 1 and near["concurrency"] > 1.0)
    for name in ("throughput", "tpot"):
        step_near, step_far = abs(near[name] - one[name]), abs(far[name] - one[name])
        # (1e-3 of the value: other ceilings step by ~1e-4; the decode pass added whole
        # stepped by a third)
        assert step_near <= 1e-2 * step_far + 1e-3 * abs(one[name]), (name, step_near, step_far)


def test_a_rate_is_served_at_the_smallest_concurrency_that_reaches_it():
    """Section 13.4: where the KV cache of many requests moves from a fast tier into a slow one,
    X(N) rises then falls, so a rate below X at small N but above X at the maximum concurrency has a root a
    replica reaches from empty. The solver bracketed (0, max_concurrency] and called it saturated
    (and the reference's bisection found a root ~10^8 requests deep, TTFT 10^13 s); it now scans
    N = 1, 2, 4, ... for the first N that serves the rate. Found by hypothesis (a device with a
    fast 32 GB tier and slow 370 GB tiers of 1.3 GB/s)."""
    from tests.reference import reference_point

    hw = S.simple_device(bw=1e15, capacity=1e8, tier1_capacity=4e11, tier1_bandwidth=1.3e9,
                         prefill_chunk=8192.0)
    md = S.build_model(n_layers=4, d_model=512, n_heads=8, n_kv_heads=1, head_dim=64,
                       ffn=1024, vocab=256)
    ly = {"tp": 1.0, "pp": 1.0, "ep": 1.0, "dp": 1.0, "offload": 0.0, "spill": 0.0}
    pr = {"weight_bytes": 2.0, "act_bytes": 2.0, "kv_bytes": 2.0, "embed_bytes": 2.0,
          "attn_weight_bytes": 2.0}
    p = {"hw": hw, "md": md, "pr": pr, "ly": ly, "px": S.simple_px(1e15), "context": 10,
         "output_len": 14}
    at = {n: S.evaluate_one({**p, "batch": n, "mode": MODE_CONTINUOUS}) for n in (1.0, 2.0)}
    c_max = at[1.0]["max_concurrency"]
    top = S.evaluate_one({**p, "batch": c_max, "mode": MODE_CONTINUOUS})
    x = {n: r["throughput"] / p["output_len"] for n, r in at.items()}
    x_max = top["throughput"] / p["output_len"]
    assert x_max < x[1.0], (x, x_max)            # X falls at large N (the slow tier)
    rate = 0.5 * (x[1.0] + x_max) if x_max > 0.5 * x[1.0] else 0.5 * x[1.0]
    got = S.evaluate_one({**p, "batch": rate, "mode": MODE_RATE})
    assert got["fits"] == 1
    assert got["concurrency"] <= 1.0            # the root below N = 1, not one deep in the spill
    ref = reference_point(hw, md, S.simple_px(1e15), rate, 10, 14, pr, ly, MODE_RATE)
    assert ref["concurrency"] == pytest.approx(got["concurrency"], rel=1e-6)
    assert ref["ttft"] == pytest.approx(got["ttft"], rel=1e-5)


def test_a_rate_is_served_by_the_state_reported_even_inside_a_jump_of_x():
    """Section 13.4: the state reported at a request rate serves it, X(N) >= rate. Where X(N)
    steps over the rate no concurrency serves it exactly and the solver's bracket closes on the
    step; the point is then the state just above it, the first N that serves the rate. It was the
    last iterate, on either side: found by ``benchmarks/check_identical.py`` at vLLM on H100,
    Llama-3.1-8B fp8 tp2, 100 requests/s of 128 + 256 tokens (a step at 643 requests in flight),
    where a 2e-16 change of a weight moved TPOT by 3.5% and the state served 98.6 requests/s."""
    row = {"hardware": "h100-sxm", "engine": "vllm", "model": "llama-3.1-8b", "precision": "fp8",
           "parallelism": "tp2", "context": 128, "output_len": 256}
    rates = [10.0, 30.0, 99.9, 100.0, 100.0 * (1 + 1e-12), 100.1]
    out = sweep.evaluate(pd.DataFrame([{**row, "request_rate": r} for r in rates]))
    assert out["fits"].eq(1).all()
    served = out["throughput"].to_numpy() / row["output_len"]
    assert np.all(served >= np.array(rates) * (1 - 1e-6)), served
    # a negligible change of the rate lands on the same side of a step
    tpot = out["tpot"].to_numpy()
    assert tpot[3] == tpot[4]
