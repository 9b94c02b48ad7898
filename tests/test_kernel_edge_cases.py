"""Edge cases where the kernel once disagreed with the independent reference (tests/reference.py)
or with docs/model.md: decode power under speculative decoding, the order of the infeasibility
reasons, acceptance 1, and the serving mode of the point entry point. Every point is written out
in full; the expected values come from the reference, not from hard-coded numbers.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import kernels
from kernels.params import METRICS, MODE_CONTINUOUS, R
from tests import strategies as S
from tests.reference import reference_point

pytestmark = pytest.mark.nojit

RTOL = 2e-4
PR_BF16 = {"weight_bytes": 2.0, "act_bytes": 2.0, "kv_bytes": 2.0, "embed_bytes": 2.0,
           "attn_weight_bytes": 2.0}
LY_1 = {"tp": 1.0, "pp": 1.0, "ep": 1.0, "dp": 1.0, "offload": 0.0, "spill": 0.0}

#: Llama-3.1-8B on one H100-like DRAM device (3.35 TB/s, 80 GB, 989 TFLOP/s, 700 W / 100 W
#: idle), ideal engine, bf16, batch 8, prompt 1024, 512 generated tokens
BASE = {"hw": S.simple_device(), "px": S.simple_px(), "md": S.LLAMA_31_8B, "pr": PR_BF16,
        "ly": LY_1, "batch": 8.0, "context": 1024.0, "output_len": 512.0}


def reference(p: dict) -> dict:
    return reference_point(p["hw"], p["md"], p["px"], p["batch"], p["context"], p["output_len"],
                           p["pr"], p["ly"], p.get("mode", 0.0), diagnostics=True)


def kernel(p: dict) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return S.evaluate_one(p)


def test_speculative_decode_power_is_the_rounds_activity():
    """Section 9: with speculative decoding the decode power follows the activity of a round
    (verification and drafts: FLOPs and bytes) over the round's time, i.e. per generated token
    over TPOT (issue 21: activity, before the busy time)."""
    # speculative decoding on, an energy per byte, the compute units' dynamic power, and a host
    # iteration overhead large enough that the power stays below the TDP
    p = S.variant(BASE, hw={"spec_tokens": 4.0, "spec_acceptance": 0.7, "spec_draft_cost": 0.05,
                            "iteration_overhead": 0.02, "energy_dram": 160e-12})
    ref, got = reference(p), kernel(p)
    # the device is busy for part of each round only: the power is between idle and TDP
    hw = p["hw"]
    assert hw["idle"] < ref["power"] < hw["tdp"]
    for name in ("ttft", "tpot", "e2e_latency", "throughput", "mfu", "mbu"):
        assert got[name] == pytest.approx(ref[name], rel=RTOL), name
    assert got["power"] == pytest.approx(ref["power"], rel=RTOL)


def test_batch_above_the_engine_cap_runs_in_waves_and_context_window_still_applies():
    """Sections 2 and 11: a batch above the engine's cap is no longer infeasible (code 7 is
    retired): it runs in waves of at most the cap; the context window (8) still applies."""
    # S + O = 1536 > S_max = 1000: infeasible whatever the cap
    p = S.variant(BASE, md={"max_context": 1000.0}, hw={"max_batch": 4.0})
    assert reference(p)["infeasible_reason"] == R["context_window"]
    assert kernel(p)["infeasible_reason"] == R["context_window"]
    # within the window, B = 8 over a cap of 4: two waves of 4, each as long as a batch of 4
    capped = S.variant(BASE, hw={"max_batch": 4.0})
    four = S.variant(capped, batch=4.0)
    got, ref = kernel(capped), reference(capped)
    assert got["fits"] == ref["fits"] == 1
    assert got["e2e_latency"] == pytest.approx(ref["e2e_latency"], rel=RTOL)
    assert got["throughput"] == pytest.approx(kernel(four)["throughput"], rel=RTOL)


def test_speculative_acceptance_one_gives_the_limit_not_an_exception():
    """Section 7: at alpha = 1 a round yields k_s + 1 tokens (the limit of the closed form)."""
    p = S.variant(BASE, hw={"spec_tokens": 4.0, "spec_acceptance": 1.0, "spec_draft_cost": 0.1})
    ref = reference(p)   # the geometric sum 1 + alpha + ... + alpha^k_s = k_s + 1
    got = kernel(p)
    assert got["tpot"] == pytest.approx(ref["tpot"], rel=RTOL)


def test_scalar_mode_is_broadcast_and_bad_modes_rejected():
    points = [S.variant(BASE, batch=float(b)) for b in (8, 16, 32)]
    n = len(points)
    idx = np.arange(n, dtype=np.int64)
    args = (S.hw_table([p["hw"] for p in points]), S.model_table([p["md"] for p in points]),
            S.px_table([[p["px"]] * n for p in points]), S.precision_table([PR_BF16] * n),
            S.layout_table([LY_1] * n), idx, idx, idx, idx,
            np.array([p["batch"] for p in points]), np.array([p["context"] for p in points]),
            np.array([p["output_len"] for p in points]))
    every = kernels.evaluate_points(*args, mode=np.full(n, float(MODE_CONTINUOUS)))
    scalar = kernels.evaluate_points(*args, mode=MODE_CONTINUOUS)
    np.testing.assert_array_equal(scalar, every)
    static = kernels.evaluate_points(*args)
    mem = METRICS.index("memory_per_device")
    assert (static[mem] > every[mem]).all()  # continuous: KV at S + O/2, not S + O
    with pytest.raises(ValueError, match="one of"):
        kernels.evaluate_points(*args, mode=np.ones(2))
    with pytest.raises(ValueError, match="one of"):
        kernels.evaluate_points(*args, mode=7.0)
