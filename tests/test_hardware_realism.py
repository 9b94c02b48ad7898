"""Pins of the hardware-realism fixes of the catalog, the results and the analysis (issue 21),
on catalog devices. Every test states the figure or the behaviour before the fix, which made it
fail."""

from __future__ import annotations

import pandas as pd

from tests.test_physics_fixes import point as fixed_batch_point
from tests.test_physics_fixes import run


def point(hw: str, model: str, precision: str, layout: str, batch: int, context: int,
          output_len: int, **extra) -> dict:
    """A fixed batch (as the fixes were stated), with extra columns (e.g. ``engine``)."""
    return {**fixed_batch_point(hw, model, precision, layout, batch, context, output_len),
            **extra}


# ------------------------------------------------------------------------------ estimated power
def test_per_kw_answers_name_the_devices_whose_power_is_an_estimate():
    """TPU v7's 600 W is an estimate (Google publishes no chip TDP) and it is the per-kW winner
    of Llama-3.1-8B at batch 1 among these devices; the result marks it (coordinates
    ``tdp_estimated``, ``host_power_estimated``) and the per-kW variation names it, so the
    answer carries the estimate's uncertainty. Before, nothing in the result said so."""
    import sweep

    ds = sweep.run({"hardware": ["h100-sxm", "tpu-v7", "cs-3"], "model": ["llama-3.1-8b"],
                    "batch": [1], "context": [1024], "precision": ["bf16"],
                    "parallelism": ["tp1"]})
    assert ds["tdp_estimated"].sel(hardware="tpu-v7").item() == 1
    assert ds["tdp_estimated"].sel(hardware="h100-sxm").item() == 0
    assert ds["host_power_estimated"].sel(hardware="h100-sxm").item() == 0
    mv = ds.sweep.max_variation("throughput", basis="power")
    assert set(mv["estimated_power"]) == {mv["best"], mv["worst"]} & {"tpu-v7", "cs-3"}
    assert mv["estimated_power"]
    assert ds.sweep.max_variation("throughput", basis="device")["estimated_power"] == []
