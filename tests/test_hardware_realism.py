"""Pins of the hardware-realism fixes of the catalog, the results and the analysis (issue 21),
on catalog devices. Every test states the figure or the behaviour before the fix, which made it
fail."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from grids.hardware import load_device
from grids.models import load_model
from sweep.execute.points import evaluate
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
    from sweep.cli.summary import headline_lines

    printed = "\n".join(headline_lines(ds, "power"))
    assert f"estimated power: {', '.join(mv['estimated_power'])}" in printed


def test_gh200_host_share_is_a_single_node_not_a_switched_block():
    """GH200's host share was 1,125 W, a DGX GH200 block's (8 superchips with 3 NVLink switch
    trays, ~15 kW): per kW of system power it came out 0.71x H100 though 8% faster.
    A single-GH200 node (seed 004's) has Grace and its LPDDR5X (~250 W) and a server's NICs,
    fans and PSU losses (~490 W, the DGX H100 per-GPU remainder): 740 W. Llama-3.1-8B fp8 at
    batch 64 under the native stack: GH200 now 0.93x H100 per kW."""
    dev = load_device("gh200")
    assert dev.host_power == pytest.approx(740.0)
    assert dev.sources["power.host_power"].estimate
    r = run([point(h, "llama-3.1-8b", "fp8", "tp1", 64, 1024, 256) for h in ("h100-sxm", "gh200")],
            engine="native")
    per_kw = (r.throughput / r.system_power).to_numpy()
    assert per_kw[1] / per_kw[0] > 0.85   # 0.71 with the 1,125 W share


# ------------------------------------------------------------------------- memory as reported
@pytest.mark.parametrize("dev,mib", [("h100-sxm", 81_559), ("a100-sxm-80g", 81_920),
                                     ("h200-sxm", 143_771), ("b200", 183_359), ("l40s", 46_068)])
def test_device_memory_is_what_the_driver_reports(dev, mib):
    """GPU memory was entered in decimal GB of the marketing name (H100 80e9 B) while the driver
    reports 81,559 MiB = 85.52e9 B, and TPUs/Trainium were entered in GiB: the capacities are now
    the driver-reported totals (shared reference engines.md section 4)."""
    assert load_device(dev).tiers[0].capacity == mib * 2**20
    assert load_device("mi300x").tiers[0].capacity == 206_141_652_992


def test_llama70b_fp8_fits_one_h100_under_tensorrt_llm():
    """NVIDIA's own TensorRT-LLM tables run Llama-3.3-70B and Llama-3.1-70B fp8 on one H100 80GB;
    with 80e9 B the model never fit them (13 published rows skipped as infeasible)."""
    r = run([point("h100-sxm", "llama-3.3-70b", "fp8", "tp1", 1, 128, 128)], engine="trtllm")
    assert int(r.fits.iloc[0]) == 1
    assert float(r.memory_per_device.iloc[0]) > 80e9 * 0.95 * 0.9   # more than the old budget


def test_catalog_details_of_the_second_review():
    """B200 bandwidth is the shipping part's 7.67 TB/s (3,996 MHz x 7,680-bit bus; was the spec
    sheet's 8 TB/s); TPU v5p and L40S have int8 peaks (were missing, so int8 schemes were
    infeasible); the CS-3 keeps the dense derived peak and names the 125 PF sparse headline."""
    assert load_device("b200").tiers[0].bandwidth == pytest.approx(7.67e12)
    assert load_device("tpu-v5p").peak_flops["int8"] == pytest.approx(918e12)
    assert load_device("l40s").peak_flops["int8"] == pytest.approx(732.86e12)
    cs3 = load_device("cs-3")
    assert cs3.peak_flops["fp16"] == pytest.approx(12.24e15)
    assert "125" in cs3.sources["peak_flops.fp16"].note
    r = run([point(h, "llama-3.1-8b", "int8", "tp1", 1, 128, 128) for h in ("tpu-v5p", "l40s")])
    assert r.fits.tolist() == [1, 1]


# ------------------------------------------------------------------------------ auto layouts
def test_auto_layouts_offer_tensor_parallelism_over_pcie():
    """L40S (scale-up domain 1): ``auto`` offered no TP at all, so Llama-3.1-70B ran
    pipeline-only under vLLM at 268 ms TPOT against 71 ms for tp4 over PCIe. Devices whose
    domain is one device now get tp up to 8 over their host fabric, as PCIe servers run them."""
    from grids.auto_layouts import family
    from grids.precisions import parse_precision

    lays = family(load_device("l40s"), load_model("llama-3.1-70b"), parse_precision("bf16"))
    assert {x.tp for x in lays} >= {2, 4, 8}
    r = run([point("l40s", "llama-3.1-70b", "bf16", lay, 1, 1024, 256)
             for lay in ("tp1-pp4", "tp4")], engine="vllm")
    assert float(r.tpot.iloc[1]) < 0.5 * float(r.tpot.iloc[0])


# ----------------------------------------------------------------------------------- cost basis
def test_cost_basis_can_name_one_provider_and_says_which_price_each_device_got():
    """H100 SXM was priced at Lambda's 3.99 USD/h and H200 at AWS's 7.91 (Lambda does not list
    it): H200's cost per million tokens came out 1.84x H100's though it is faster. On one
    provider (AWS: 6.88 and 7.91 USD/h) it is 1.07x; a device that provider does not list is
    unpriced, and the result names the price each device got."""
    import sweep
    from grids.prices import parse_cost_spec

    rows = pd.DataFrame([point(h, "llama-3.1-70b", "fp8", "tp4", 64, 2048, 256, engine="trtllm")
                         for h in ("h100-sxm", "h200-sxm", "mi300x")])
    mixed = evaluate(rows)
    aws = evaluate(rows, cost=parse_cost_spec({"cloud_provider": "AWS",
                                               "cloud_price": "provider"}))
    assert mixed.cost_per_mtok.iloc[1] / mixed.cost_per_mtok.iloc[0] > 1.7
    assert aws.cost_per_mtok.iloc[1] / aws.cost_per_mtok.iloc[0] < 1.15
    assert np.isnan(aws.cost_per_mtok.iloc[2])            # AWS lists no MI300X
    median = parse_cost_spec({"cloud_price": "median"})
    assert evaluate(rows, cost=median).cost_per_mtok.iloc[0] > mixed.cost_per_mtok.iloc[0]
    ds = sweep.run({"hardware": ["h100-sxm", "h200-sxm"], "model": ["llama-3.1-8b"],
                    "batch": [1], "context": [128], "precision": ["bf16"], "parallelism": ["tp1"],
                    "cost": {"cloud_provider": "AWS", "cloud_price": "provider"}})
    assert list(ds["price_source"].values) == ["AWS p5.48xlarge", "AWS p5en.48xlarge"]
