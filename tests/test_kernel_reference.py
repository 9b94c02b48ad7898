"""Kernels against the independent reference (tests/reference.py, written from docs/model.md).

Every test here is marked ``nojit``: it also runs under ``NUMBA_DISABLE_JIT=1`` so that coverage
sees inside the kernels, hence the tiny grids. Agreement means: identical NaN pattern, identical
``fits``, ``infeasible_reason``, ``bound`` and ``min_devices`` (except where the reference flags
the decision as sitting within a relative 1e-9 of its threshold), and every other value within
rtol 2e-4 (the kernels store float32).
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kernels
from kernels.params import METRICS, MODE_CONTINUOUS, MODE_RATE, RATE_METRICS, R
from tests import strategies as S
from tests.reference import reference_grid, reference_point, reference_points

pytestmark = pytest.mark.nojit

RTOL = 2e-4
EXACT = ("fits", "infeasible_reason", "bound", "min_devices")


def assert_agrees(got: np.ndarray, ref: dict, where: str) -> None:
    """``got``: the kernel's metric vector of one point; ``ref``: reference_point(diagnostics)."""
    if ref["near_stage_step"]:
        return  # L_s = ceil(x) with x within 1e-9 of an integer: either stage is right
    if ref["near_fit_edge"] and got[METRICS.index("fits")] != ref["fits"]:
        return  # the point sits on the capacity edge: either answer is right
    if ref.get("near_rate_jump"):
        return  # the request rate falls in a jump of X(N): no concurrency serves it exactly
    for i, name in enumerate(METRICS):
        g, r = float(got[i]), float(np.float32(ref[name]))
        if ((name == "bound" and ref["near_bound_tie"])
                or (name == "latency_cov" and ref["near_cov_tie"])
                or (name == "min_devices" and ref["near_min_devices"])):
            continue
        if math.isnan(r) or math.isnan(g):
            assert math.isnan(r) and math.isnan(g), f"{where}: {name} kernel={g} reference={r}"
        elif name in EXACT:
            assert g == r, f"{where}: {name} kernel={g} reference={r}"
        else:
            assert g == pytest.approx(r, rel=RTOL, abs=0.0), f"{where}: {name} kernel={g} ref={r}"


def check_point(got: np.ndarray, p: dict, where: str) -> dict:
    """Compare the kernel's output ``got`` at point dict ``p`` with the reference; returns it."""
    args = (p["hw"], p["md"], p["px"], p["batch"], p["context"], p["output_len"], p["pr"],
            p["ly"], p.get("mode", 0.0))
    ref = reference_point(*args, diagnostics=True)
    n_k = float(got[METRICS.index("concurrency")])
    if (p.get("mode", 0.0) == MODE_RATE and ref["fits"] == 1 and math.isfinite(n_k)
            and n_k != pytest.approx(ref["concurrency"], rel=RTOL)):
        # X(N) need not be monotone, so a rate may be served at several concurrencies: the
        # kernel's must serve it too, and every metric must agree there
        at_k = reference_point(*args, diagnostics=True, rate_concurrency=n_k)
        assert at_k["rate_served"], (f"{where}: the kernel's concurrency {n_k} does not serve "
                                     f"the rate (reference: {ref['concurrency']})")
        ref = at_k
    assert_agrees(got, ref, where)
    return ref


def _tables(sc):
    return (S.hw_table(sc["hw"]), S.model_table(sc["md"]), S.px_table(sc["px"]),
            S.precision_table(sc["pr"]), S.layout_table(sc["ly"]))


def _grid(sc):
    hw, md, px, pr, ly = _tables(sc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return kernels.evaluate_grid(hw, md, px, sc["batch"], sc["context"], sc["output_len"],
                                     pr, ly)


def _grid_point(sc, h, m, b, s, o, p, la) -> dict:
    return {"hw": sc["hw"][h], "md": sc["md"][m], "px": sc["px"][h][p], "pr": sc["pr"][p],
            "ly": sc["ly"][la], "batch": float(sc["batch"][b]), "context": float(sc["context"][s]),
            "output_len": float(sc["output_len"][o])}


# ------------------------------------------------------------------------ kernels vs reference
@given(S.scenario(max_axis=2))
def test_grid_matches_reference(sc):
    out = _grid(sc)
    shape = (len(METRICS), len(sc["hw"]), len(sc["md"]), len(sc["batch"]), len(sc["context"]),
             len(sc["output_len"]), len(sc["pr"]), len(sc["ly"]))
    assert out.shape == shape
    assert out.dtype == np.float32
    for ix in itertools.product(*(range(n) for n in shape[1:])):
        check_point(out[(slice(None), *ix)], _grid_point(sc, *ix), f"grid point {ix}")


@given(st.lists(S.point(raw=True), min_size=1, max_size=6), st.randoms(use_true_random=False))
def test_points_match_reference(points, rnd):
    """Arbitrary points (including corner-rule models and every serving mode), gathered from
    the tables in a shuffled order with repeats; the px table has decoys off the diagonal."""
    n = len(points)
    order = list(range(n)) + [rnd.randrange(n) for _ in range(rnd.randrange(3))]
    rnd.shuffle(order)
    idx = np.array(order, dtype=np.int64)
    decoy = {"peak": 3.0e14, "eff_prefill": 0.3, "eff_decode": 0.2, "kv_factor": 0.6,
             "weight_factor": 0.8, "attn16_ratio_prefill": 1.7, "attn16_ratio_decode": 0.9}
    px = S.px_table([[p["px"] if i == j else decoy for j in range(n)]
                     for i, p in enumerate(points)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = kernels.evaluate_points(
            S.hw_table([p["hw"] for p in points]), S.model_table([p["md"] for p in points]), px,
            S.precision_table([p["pr"] for p in points]), S.layout_table([p["ly"] for p in points]),
            idx, idx, idx, idx,
            np.array([points[i]["batch"] for i in order], dtype=np.float64),
            np.array([points[i]["context"] for i in order], dtype=np.float64),
            np.array([points[i]["output_len"] for i in order], dtype=np.float64),
            mode=np.array([points[i]["mode"] for i in order], dtype=np.float64))
    assert out.shape == (len(METRICS), len(order))
    assert out.dtype == np.float32
    for j, i in enumerate(order):
        check_point(out[:, j], points[i], f"point {j} (row {i})")


@given(st.lists(S.fitting_points(), min_size=1, max_size=4))
def test_feasible_points_match_reference(points):
    """Points sized to fit (spilling, offloading, pipelines, EP, padded heads, speculative
    decoding, in-flight sizing...): every metric is a number and both sides agree on it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        outs = S.evaluate(points)
    for j, (p, got) in enumerate(zip(points, outs)):
        vec = np.array([got[name] for name in METRICS], dtype=np.float32)
        ref = check_point(vec, p, f"feasible point {j}")
        if not ref["near_fit_edge"]:
            assert ref["fits"] == 1 and got["fits"] == 1, (j, ref["infeasible_reason"])
            assert got["infeasible_reason"] == 0


@given(S.scenario(max_axis=2))
def test_grid_and_points_kernels_identical(sc):
    """evaluate_points on every grid point reproduces evaluate_grid bit for bit, in each serving
    mode (the mode absent from evaluate_points means static)."""
    hw, md, px, pr, ly = _tables(sc)
    grid = _grid(sc)
    dims = grid.shape[1:]
    h, m, b, s, o, p, la = (a.reshape(-1) for a in np.indices(dims))
    args = (hw, md, px, pr, ly, h, m, p, la, sc["batch"][b], sc["context"][s],
            sc["output_len"][o])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        pts = kernels.evaluate_points(*args)
        static = kernels.evaluate_points(*args, mode=np.zeros(h.shape[0]))
        for mode in (MODE_CONTINUOUS, MODE_RATE):
            g = kernels.evaluate_grid(hw, md, px, sc["batch"], sc["context"], sc["output_len"],
                                      pr, ly, mode=mode).reshape(len(METRICS), -1)
            k = kernels.evaluate_points(*args, mode=mode)
            rows = [i for i, m in enumerate(METRICS) if mode == MODE_RATE
                    or m not in RATE_METRICS]  # the grid leaves those rows unwritten
            np.testing.assert_array_equal(k[rows], g[rows])
    np.testing.assert_array_equal(pts, grid.reshape(len(METRICS), -1))
    np.testing.assert_array_equal(static, pts)


@given(S.scenario(max_axis=2), st.randoms(use_true_random=False))
def test_reference_grid_and_points_agree_with_kernel(sc, rnd):
    """The table-level reference entry points (the benchmark baselines) agree with each other,
    with reference_point, and with the kernels, serving modes included."""
    hw, md, px, pr, ly = _tables(sc)
    grid = _grid(sc)
    ref = reference_grid(hw, md, px, sc["batch"], sc["context"], sc["output_len"], pr, ly)
    assert ref.shape == grid.shape
    assert ref.dtype == np.float32
    dims = grid.shape[1:]
    h, m, b, s, o, p, la = (a.reshape(-1) for a in np.indices(dims))
    args = (hw, md, px, pr, ly, h, m, p, la, sc["batch"][b], sc["context"][s],
            sc["output_len"][o])
    np.testing.assert_array_equal(reference_points(*args), ref.reshape(len(METRICS), -1))
    flags = np.array([float(rnd.randrange(3)) for _ in range(h.shape[0])])
    ref_pts = reference_points(*args, mode=flags)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        k_pts = kernels.evaluate_points(*args, mode=flags)
    for j in range(h.shape[0]):
        pt = {**_grid_point(sc, h[j], m[j], b[j], s[j], o[j], p[j], la[j]),
              "mode": float(flags[j])}
        check_point(k_pts[:, j], pt, f"point {j}")
        # the table-level reference is reference_point itself (at a request rate, at the
        # reference's own concurrency: check_point may have moved to the kernel's, another root)
        own = reference_point(pt["hw"], pt["md"], pt["px"], pt["batch"], pt["context"],
                              pt["output_len"], pt["pr"], pt["ly"], pt["mode"])
        assert [float(x) for x in ref_pts[:, j]] == pytest.approx(
            [float(np.float32(own[name])) for name in METRICS], nan_ok=True, rel=0, abs=0)


# --------------------------------------------------------------------------- section 2, codes
PR_BF16 = {"weight_bytes": 2.0, "act_bytes": 2.0, "kv_bytes": 2.0, "embed_bytes": 2.0,
           "attn_weight_bytes": 2.0}
LY_1 = {"tp": 1.0, "pp": 1.0, "ep": 1.0, "dp": 1.0, "offload": 0.0, "spill": 0.0}
MOE = {**S.LLAMA_31_8B, "n_experts": 8.0, "n_moe_layers": 4.0, "experts_per_token": 2.0,
       "params_expert": 1.0e6}
BASE = {"hw": S.simple_device(capacity=1e12, host_capacity=1e12, host_bandwidth=64e9),
        "px": S.simple_px(), "md": MOE, "pr": PR_BF16, "ly": LY_1,
        "batch": 4.0, "context": 1000.0, "output_len": 100.0}

#: one change per rule of section 2 that breaks it (and only it) at BASE
BREAKS = {
    "engine_unsupported": {"hw": {"supported": 0.0}},
    "no_compute_dtype": {"px": {"peak": 0.0}},
    "tp_heads": {"hw": {"pads_heads": 0.0}, "ly": {"tp": 3.0}},
    "ep_experts": {"ly": {"ep": 3.0}},
    "pp_layers": {"ly": {"pp": 64.0}},
    "no_host_tier": {"hw": {"host_capacity": 0.0}, "ly": {"offload": 0.5}},
    "context_window": {"md": {"max_context": 500.0}},
    "memory": {"hw": {"tier0_capacity": 1e9}},
    "host_capacity": {"hw": {"host_capacity": 1e9}, "ly": {"offload": 0.5}},
}


def broken(*reasons: str) -> dict:
    p = BASE
    for reason in reasons:
        p = S.variant(p, **BREAKS[reason])
    return p


def test_every_reason_alone_and_first_reason_wins():
    """Each rule of section 2 alone gives its code; when two apply, both sides give the code of
    the first in the table."""
    def fields(reason):
        return {(table, f) for table, changes in BREAKS[reason].items() for f in changes}

    cases = [((), 0)] + [((r,), R[r]) for r in BREAKS]
    cases += [((a, b), R[a]) for a, b in itertools.combinations(BREAKS, 2)
              if not fields(a) & fields(b)]
    assert len(cases) > 40
    points = [broken(*rs) for rs, _ in cases]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        outs = S.evaluate(points)
    for (rs, code), p, got in zip(cases, points, outs):
        ref = reference_point(p["hw"], p["md"], p["px"], p["batch"], p["context"],
                              p["output_len"], p["pr"], p["ly"])
        assert ref["infeasible_reason"] == code, rs
        assert got["infeasible_reason"] == code, (rs, got["infeasible_reason"])
        assert got["fits"] == (1.0 if code == 0 else 0.0)
        assert got["bound"] == (-1.0 if code else ref["bound"])
        kept = ("memory_per_device", "min_devices", "host_fraction", "max_concurrency")
        for name in METRICS:
            if name in ("fits", "infeasible_reason", "bound"):
                continue
            if code == 0 or (code >= R["memory"] and name in kept):
                assert got[name] == pytest.approx(ref[name], rel=RTOL, nan_ok=True), (rs, name)
            else:
                assert math.isnan(got[name]) and math.isnan(ref[name]), (rs, name)
