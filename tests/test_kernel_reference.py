"""Kernels against the independent reference (tests/reference.py, written from docs/model.md).

Every test here is marked ``nojit``: it also runs under ``NUMBA_DISABLE_JIT=1`` so that coverage
sees inside the kernels, hence the tiny grids. Agreement means: identical NaN pattern, identical
``fits`` and ``bound`` (except where the reference flags the decision as sitting within a relative
1e-9 of its threshold), and every float within rtol 2e-4 (the kernels store float32).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kernels
from kernels.params import METRICS
from tests import strategies as S
from tests.reference import reference_grid, reference_point, reference_points

pytestmark = pytest.mark.nojit

RTOL = 2e-4
FITS, BOUND = METRICS.index("fits"), METRICS.index("bound")


def assert_agrees(got: np.ndarray, ref: dict, where: str) -> None:
    """``got``: the kernel's metric vector of one point; ``ref``: reference_point(diagnostics)."""
    if ref["near_fit_edge"] and got[FITS] != ref["fits"]:
        return  # the point sits on the capacity edge: either answer is right
    for i, name in enumerate(METRICS):
        g, r = float(got[i]), float(np.float32(ref[name]))
        if name == "bound" and ref["near_bound_tie"]:
            continue
        if np.isnan(r) or np.isnan(g):
            assert np.isnan(r) and np.isnan(g), f"{where}: {name} kernel={g} reference={r}"
        elif name in ("fits", "bound", "min_devices"):
            assert g == r, f"{where}: {name} kernel={g} reference={r}"
        else:
            assert g == pytest.approx(r, rel=RTOL, abs=0.0), f"{where}: {name} kernel={g} ref={r}"


def _tables(sc):
    return (S.hw_table(sc["hw"]), S.model_table(sc["md"]), S.precision_table(sc["pr"]),
            S.layout_table(sc["ly"]))


def _grid(sc):
    hw, md, pr, ly = _tables(sc)
    return kernels.evaluate_grid(hw, md, sc["peak"], sc["batch"], sc["context"], sc["output_len"],
                                 pr, ly, prefill_chunk=sc["prefill_chunk"])


@given(S.scenario(max_axis=2))
def test_grid_matches_reference(sc):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = _grid(sc)
    shape = (len(METRICS), len(sc["hw"]), len(sc["md"]), len(sc["batch"]), len(sc["context"]),
             len(sc["output_len"]), len(sc["pr"]), len(sc["ly"]))
    assert out.shape == shape
    assert out.dtype == np.float32
    for h, m, b, s, o, p, la in itertools.product(*(range(n) for n in shape[1:])):
        ref = reference_point(sc["hw"][h], sc["md"][m], sc["peak"][h, p], sc["batch"][b],
                              sc["context"][s], sc["output_len"][o], sc["pr"][p], sc["ly"][la],
                              sc["prefill_chunk"], diagnostics=True)
        assert_agrees(out[:, h, m, b, s, o, p, la], ref, f"grid point {(h, m, b, s, o, p, la)}")


@given(st.lists(S.point(raw=True), min_size=1, max_size=6), st.randoms(use_true_random=False),
       st.booleans())
def test_points_match_reference(points, rnd, default_chunk):
    """Arbitrary points (including corner-rule models), gathered in a shuffled order."""
    n = len(points)
    chunk = None if default_chunk else points[0]["prefill_chunk"]
    order = list(range(n)) + [rnd.randrange(n) for _ in range(rnd.randrange(3))]
    rnd.shuffle(order)
    idx = np.array(order, dtype=np.int64)
    peak = np.full((n, n), 3.0e14)
    for i, p in enumerate(points):
        peak[i, i] = p["peak"]
    kw = {"prefill_chunk": 8192.0 if chunk is None else chunk}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = kernels.evaluate_points(
            S.hw_table([p["hw"] for p in points]), S.model_table([p["md"] for p in points]), peak,
            S.precision_table([p["pr"] for p in points]), S.layout_table([p["ly"] for p in points]),
            idx, idx, idx, idx,
            np.array([points[i]["batch"] for i in order], dtype=np.float64),
            np.array([points[i]["context"] for i in order], dtype=np.float64),
            np.array([points[i]["output_len"] for i in order], dtype=np.float64), **kw)
    assert out.shape == (len(METRICS), len(order))
    assert out.dtype == np.float32
    for j, i in enumerate(order):
        p = points[i]
        ref = reference_point(p["hw"], p["md"], p["peak"], p["batch"], p["context"],
                              p["output_len"], p["pr"], p["ly"],
                              8192.0 if chunk is None else chunk, diagnostics=True)
        assert_agrees(out[:, j], ref, f"point {j} (row {i})")


@given(S.scenario(max_axis=2))
def test_grid_and_points_kernels_identical(sc):
    """evaluate_points on every grid point reproduces evaluate_grid bit for bit."""
    hw, md, pr, ly = _tables(sc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        grid = _grid(sc)
        dims = grid.shape[1:]
        h, m, b, s, o, p, la = (a.reshape(-1) for a in np.indices(dims))
        pts = kernels.evaluate_points(hw, md, sc["peak"], pr, ly, h, m, p, la, sc["batch"][b],
                                      sc["context"][s], sc["output_len"][o],
                                      prefill_chunk=sc["prefill_chunk"])
    np.testing.assert_array_equal(pts, grid.reshape(len(METRICS), -1))


@given(S.scenario(max_axis=2))
def test_reference_grid_and_points_agree_with_kernel(sc):
    """The vectorised reference entry points (the benchmark baselines) agree with the kernels."""
    hw, md, pr, ly = _tables(sc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        grid = _grid(sc)
    ref = reference_grid(hw, md, sc["peak"], sc["batch"], sc["context"], sc["output_len"], pr, ly,
                         prefill_chunk=sc["prefill_chunk"])
    assert ref.shape == grid.shape
    assert ref.dtype == np.float32
    dims = grid.shape[1:]
    h, m, b, s, o, p, la = (a.reshape(-1) for a in np.indices(dims))
    ref_pts = reference_points(hw, md, sc["peak"], pr, ly, h, m, p, la, sc["batch"][b],
                               sc["context"][s], sc["output_len"][o],
                               prefill_chunk=sc["prefill_chunk"])
    np.testing.assert_array_equal(ref_pts, ref.reshape(len(METRICS), -1))
    flat_k, flat_r = grid.reshape(len(METRICS), -1), ref.reshape(len(METRICS), -1)
    for j in range(flat_k.shape[1]):
        diag = reference_point(sc["hw"][h[j]], sc["md"][m[j]], sc["peak"][h[j], p[j]],
                               sc["batch"][b[j]], sc["context"][s[j]], sc["output_len"][o[j]],
                               sc["pr"][p[j]], sc["ly"][la[j]], sc["prefill_chunk"],
                               diagnostics=True)
        assert [float(x) for x in flat_r[:, j]] == pytest.approx(
            [float(np.float32(diag[name])) for name in METRICS], nan_ok=True, rel=0, abs=0)
        assert_agrees(flat_k[:, j], diag, f"point {j}")
