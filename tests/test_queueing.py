"""The collision wait of continuous batching (docs/model.md section 13.2 step 6): the kernel's
root finder (safeguarded regula falsi, :func:`kernels.queueing.collision_wait`) against the plain
bisection of the NumPy/Python reference (``tests/reference_serving.py``), and the root itself.

The two solve the same equation ``k = W(k)`` (iterations) by different steps, so they agree to
the precision of the root (both bracket it to ~1e-15 of its size), not bit for bit; the
results are stored as float32, whose resolution is ~6e-8.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernels.queueing import _collision_excess, collision_wait, poisson_weights
from tests.reference_serving import collision_wait as reference_collision_wait
from tests.reference_serving import poisson_weights as reference_poisson_weights

pytestmark = pytest.mark.nojit

#: agreement of the two solvers, relative to the wait (absolute near a zero wait)
RTOL = 1e-12

waits = st.fixed_dictionaries({
    "conc": st.floats(1.01, 4096.0),
    "r_it": st.floats(1.0, 20000.0),
    "k_p": st.integers(1, 64).map(float),
    "work": st.floats(1e-3, 64.0),  # iterations a prompt holds the budget (h / t_mix)
})


def _args(w: dict) -> tuple[float, ...]:
    return (w["conc"], w["r_it"], w["k_p"], w["work"])


@given(waits)
def test_collision_wait_matches_the_reference_bisection(w):
    args = _args(w)
    k = collision_wait(*args)
    ref = reference_collision_wait(*args)
    assert k >= 0.0 and math.isfinite(k)
    assert k == pytest.approx(ref, rel=RTOL, abs=RTOL)


@given(waits)
def test_collision_wait_is_the_root(w):
    """Zero when the budget is free at once; else the excess changes sign across the result
    (at a relative step of 1e-9 either side)."""
    args = _args(w)
    k = collision_wait(*args)
    if k == 0.0:
        assert _collision_excess(0.0, *args) >= 0.0
        return
    assert _collision_excess(k * (1.0 - 1e-9), *args) <= 0.0
    assert _collision_excess(k * (1.0 + 1e-9), *args) >= 0.0


def test_collision_wait_without_collisions_is_zero():
    """One request in flight never waits behind another's prompt."""
    assert collision_wait(1.0, 100.0, 1.0, 1.0) == 0.0


# ------------------------------------------------------------------------------ Poisson weights
#: the kernel sums the Poisson series in closed form where the cap is out of reach and term by
#: term otherwise; the reference always term by term: they agree to rounding
POISSON_RTOL = 1e-12

poisson_args = st.fixed_dictionaries({
    "lam": st.floats(0.0, 120.0),
    "n_max": st.one_of(st.just(math.inf), st.integers(1, 400).map(float)),
    "shift": st.sampled_from([0.0, 1.0]),
    "anchor": st.integers(1, 100).map(float),
})


@given(poisson_args)
def test_poisson_weights_match_the_reference_series(a):
    """docs/model.md 13.2 step 3': (P(m = 0), P(m >= 1), E[(m - anchor) 1{m >= 1}]) for
    m = min(N + shift, n_max), N ~ Poisson(lam), against the reference's term-by-term sum."""
    got = poisson_weights(a["lam"], a["n_max"], a["shift"], a["anchor"])
    want = reference_poisson_weights(a["lam"], a["n_max"], a["shift"], a["anchor"])
    for g, w in zip(got, want):
        assert math.isclose(g, w, rel_tol=POISSON_RTOL, abs_tol=POISSON_RTOL * (1 + a["anchor"]))


def test_poisson_weights_closed_form_where_the_cap_is_out_of_reach():
    """Without a cap the weights are exact closed forms: E[N] = lam, P(N = 0) = exp(-lam)."""
    lam, anchor = 3.5, 2.0
    p0 = math.exp(-lam)
    assert poisson_weights(lam, math.inf, 0.0, anchor) == pytest.approx(
        (p0, 1 - p0, lam - anchor * (1 - p0)), rel=1e-15)
    assert poisson_weights(lam, math.inf, 1.0, anchor) == pytest.approx(
        (0.0, 1.0, lam + 1 - anchor), rel=1e-15)
    # a cap within reach bends the mean below lam + 1: every N >= 2 counts as 3
    assert poisson_weights(lam, 3.0, 1.0, anchor)[2] < lam + 1 - anchor
