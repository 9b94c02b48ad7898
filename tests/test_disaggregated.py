"""Disaggregated prefill and decode (sweep/analysis/disaggregated.py, ``sweep fleet
--disaggregated``): the decode-phase power and cost against the reference's decode power, the KV
transfer by hand, the fleet against brute force over every pair of pool points, its properties
and its errors."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given

import sweep
from grids.errors import SpecError
from grids.hardware import load_device
from grids.layouts import parse_layout
from grids.models import load_model
from grids.precisions import parse_precision
from grids.spec import DEFAULT_SPEC
from sweep.analysis.disaggregated import (
    decode_phase,
    disaggregated_fleet,
    kv_transfer_seconds,
    versus_aggregated,
)
from sweep.cli import main
from tests import strategies as S
from tests.reference import reference_point

SPEC = {"name": "disaggregation test", "hardware": ["h100-sxm", "mi300x", "l40s"],
        "engine": ["native", "vllm"], "model": ["llama-3.1-8b"],
        "batch": [1, 4, 16, 64, 256], "context": [1024], "output_len": [1, 128],
        "precision": ["bf16"], "parallelism": ["tp1", "tp2", "tp4-dp2"]}
OUT = 128


@pytest.fixture(scope="module")
def pools():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        cont = sweep.run({**SPEC, "batching": "continuous"}, progress=False)
        stat = sweep.run({**SPEC, "batching": "static"}, progress=False)
    return cont, stat


# ------------------------------------------------------------------ the decode phase's power
@given(S.fitting_points())
def test_decode_phase_power_and_cost_are_the_kernels_decode_phase(p):
    """The decode phase's system power from a static wave and its prompt pass alone equals the
    reference's decode power (plus the host share) on every device of the layout; its cost rate
    follows from it (docs/model.md section 13.6). Where the KV cache of the whole output moves
    the placement (a tier spills), the prompt pass alone runs on another placement than the
    wave's and the difference is not the decode phase: those points are left out (a draw with
    tiers of 1e10 and 1e9 B/s gave a prefill 5.5% apart and a decode power 0.09% off)."""
    assume(p["output_len"] >= 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        full, prompt = S.evaluate([p, {**p, "output_len": 1.0}])
    assume(full["fits"] == 1 and prompt["fits"] == 1 and full["concurrency"] == p["batch"])
    assume(full["ttft"] == pytest.approx(prompt["ttft"], rel=1e-6))
    ref = reference_point(p["hw"], p["md"], p["px"], p["batch"], p["context"], p["output_len"],
                          p["pr"], p["ly"], 0.0, diagnostics=True)
    assume(not ref["near_fit_edge"] and not ref["near_stage_step"])
    ly, hw = p["ly"], p["hw"]
    devices = ly["tp"] * ly["pp"] * ly["ep"] * ly["dp"]
    power = devices * (ref["p_dec"] + hw["host_power"])
    e2e, e2e1 = full["e2e_latency"], prompt["e2e_latency"]
    # the kernels agree with the reference to 2e-4 (tests/test_kernel_reference.py), and the
    # stored metrics are float32: the difference loses digits as the decode phase shrinks
    tol = 2e-4 * (e2e + e2e1) / (e2e - e2e1)
    got = decode_phase(full["system_power"], e2e, prompt["system_power"], e2e1)
    assert got == pytest.approx(power, rel=tol)
    if math.isfinite(hw["cost_fixed"]):
        usd = [q["cost_per_mtok"] * q["throughput"] / 1e6 for q in (full, prompt)]
        rate = devices * hw["cost_fixed"] + hw["cost_energy"] * power
        assert decode_phase(usd[0], e2e, usd[1], e2e1) == pytest.approx(rate, rel=tol)


# ------------------------------------------------------------------------------ KV transfer
def test_kv_transfer_by_hand():
    # Llama-3.3-70B: 80 layers x 8 KV heads x 128 x (K, V) x 2 B = 327,680 B per token at 16 bit
    md = load_model("llama-3.3-70b")
    assert md.kv_bytes_per_token(16) == 80 * 8 * 128 * 2 * 2
    h100 = load_device("h100-sxm")
    t = kv_transfer_seconds(md.kv_bytes_per_token(16), 0, 0, 8, 2048, 2, h100.scaleout_bandwidth,
                            h100.scaleout_latency)
    assert t == pytest.approx(327_680 * 0.5 * 2048 / (2 * 50e9) + h100.scaleout_latency)
    # windowed layers keep at most the window: half the KV on layers with a 4,096-token window
    full = kv_transfer_seconds(2000.0, 1000.0, 4096, 16, 10_000, 1, 1e9, 0.0)
    assert full == pytest.approx((1000.0 * 10_000 + 1000.0 * 4096) / 1e9)
    assert kv_transfer_seconds(2000.0, 1000.0, 4096, 16, 100, 1, 1e9, 0.0) == pytest.approx(
        2000.0 * 100 / 1e9)


# -------------------------------------------------------------------- the fleet, brute force
def brute_force(cont, stat, rate, ttft, tpot):
    """Fewest devices per device type over every (prefill point, decode point) pair of one
    engine, point by point, the KV transfer from the catalogs."""
    md = load_model("llama-3.1-8b")
    kv_bits = parse_precision("bf16").kv_bits
    cont, stat = cont.squeeze(), stat.squeeze()
    best = {}
    for h in stat["hardware"].values:
        dev = load_device(str(h))
        for e in stat["engine"].values:
            prefill = []
            for lay in cont["parallelism"].values:
                for b in cont["batch"].values:
                    q = cont.sel(hardware=h, engine=e, parallelism=lay, batch=b, output_len=1)
                    if int(q["fits"]) != 1 or (ttft is not None and not float(q["ttft"]) <= ttft):
                        continue
                    x = float(q["throughput"])  # one token per request: requests/s
                    prefill.append((math.ceil(rate / x) * parse_layout(str(lay)).devices,
                                    parse_layout(str(lay))))  # (pool devices, layout)
            for lay in stat["parallelism"].values:
                ly = parse_layout(str(lay))
                for b in stat["batch"].values:
                    q = stat.sel(hardware=h, engine=e, parallelism=lay, batch=b, output_len=OUT)
                    q1 = stat.sel(hardware=h, engine=e, parallelism=lay, batch=b, output_len=1)
                    if (int(q["fits"]) != 1 or int(q1["fits"]) != 1
                            or float(b) > float(q["max_concurrency"])):
                        continue
                    for n_p, lp in prefill:
                        n = min(lp.devices / lp.dp, ly.devices / ly.dp)
                        t_x = (md.kv_bytes_per_token(kv_bits) * 1024 / (n * dev.scaleout_bandwidth)
                               + dev.scaleout_latency)
                        seen = float(q["tpot"]) + t_x / (OUT - 1)
                        if tpot is not None and not seen <= tpot:
                            continue
                        x_d = ly.dp * float(b) / (t_x + (OUT - 1) * float(q["tpot"]))
                        dev_d = math.ceil(rate / x_d) * ly.devices
                        if (rate * md.kv_bytes_per_token(kv_bits) * 1024
                                > min(n_p, dev_d) * dev.scaleout_bandwidth):
                            continue  # the pools' NICs cannot carry the KV of the rate
                        devices = n_p + dev_d
                        if str(h) not in best or devices < best[str(h)]:
                            best[str(h)] = devices
    return best


@pytest.mark.parametrize("rate,ttft,tpot", [(20.0, None, None), (50.0, 0.5, 0.03),
                                            (200.0, 0.2, 0.02)])
def test_disaggregated_fleet_is_the_brute_force_fewest_devices(pools, rate, ttft, tpot):
    cont, stat = pools
    table = disaggregated_fleet(cont, stat, rate, ttft=ttft, tpot=tpot)
    expected = brute_force(cont, stat, rate, ttft, tpot)
    assert dict(zip(table["hardware"], table["devices"])) == expected
    assert table.attrs["unserved"] == [h for h in SPEC["hardware"] if h not in expected]
    assert list(table["rank"]) == list(range(1, len(table) + 1))
    assert (np.diff(table["devices"].to_numpy()) >= 0).all()
    if ttft is not None:
        assert (table["ttft"] <= ttft).all()
    if tpot is not None:
        assert (table["tpot"] <= tpot).all()


def test_disaggregated_fleet_grows_with_the_rate_and_sums_its_pools(pools):
    cont, stat = pools
    last = {}
    for rate in (1.0, 5.0, 25.0, 125.0, 625.0):
        t = disaggregated_fleet(cont, stat, rate, ttft=1.0, tpot=0.05)
        for _, r in t.iterrows():
            p, d = parse_layout(r["prefill_layout"]), parse_layout(r["decode_layout"])
            assert r["devices"] == (r["prefill_replicas"] // p.dp * p.devices
                                    + r["decode_replicas"] // d.dp * d.devices)
            assert r["devices"] >= last.get(r["hardware"], 0)
            last[r["hardware"]] = r["devices"]


def test_by_power_and_by_cost_minimise_those(pools):
    cont, stat = pools
    by_dev = disaggregated_fleet(cont, stat, 80.0, ttft=0.5, tpot=0.05).set_index("hardware")
    for by, col in (("kW", "kW"), ("$", "usd_per_h")):
        t = disaggregated_fleet(cont, stat, 80.0, ttft=0.5, tpot=0.05, by=by).set_index("hardware")
        assert t.attrs["by"] == col
        for h in t.index:
            assert t.loc[h, col] <= by_dev.loc[h, col] * (1 + 1e-9)


def test_versus_aggregated_sets_the_two_fleets_side_by_side(pools):
    cont, stat = pools
    dis = disaggregated_fleet(cont, stat, 50.0, ttft=0.5, tpot=0.03)
    agg = cont.sel(output_len=OUT).sweep.fleet(50.0, ttft=0.5, tpot=0.03)
    both = versus_aggregated(dis, agg)
    for _, r in agg.iterrows():
        row = both[both["hardware"] == r["hardware"]].iloc[0]
        assert row["aggregated_devices"] == r["devices"]
        if np.isfinite(row["devices"]):
            assert row["gain"] == pytest.approx(r["devices"] / row["devices"])
    with pytest.raises(SpecError, match="different figures"):
        versus_aggregated(dis, cont.sel(output_len=OUT).sweep.fleet(50.0, by="kW"))


@pytest.mark.parametrize("change,words", [
    (lambda c, s: (s, s), "batching"),
    (lambda c, s: (c, c), "batching"),
    (lambda c, s: (c.sel(output_len=[OUT]), s), "output_len = 1"),
    (lambda c, s: (c, s.sel(output_len=[1])), "give output_len"),
])
def test_bad_inputs_say_what_is_wrong(pools, change, words):
    cont, stat = pools
    with pytest.raises(SpecError, match=words):
        disaggregated_fleet(*change(cont, stat), 10.0)


def test_bad_arguments(pools):
    cont, stat = pools
    with pytest.raises(SpecError, match="rate"):
        disaggregated_fleet(cont, stat, -1.0)
    with pytest.raises(SpecError, match="by must be"):
        disaggregated_fleet(cont, stat, 1.0, by="watts")
    with pytest.raises(SpecError, match=">= 2"):
        disaggregated_fleet(cont, stat, 1.0, output_len=1)
    with pytest.raises(SpecError, match="request_rate"):
        disaggregated_fleet(cont, stat, 1.0, ttft=1.0, percentile="p90")


def test_two_models_must_be_selected_down_to_one():
    spec = {**SPEC, "model": ["llama-3.1-8b", "mistral-7b"], "hardware": ["h100-sxm"],
            "batch": [1], "parallelism": ["tp1"], "engine": ["native"]}
    cont = sweep.run({**spec, "batching": "continuous"}, progress=False)
    stat = sweep.run({**spec, "batching": "static"}, progress=False)
    with pytest.raises(SpecError, match="select one"):
        disaggregated_fleet(cont, stat, 1.0)
    assert len(disaggregated_fleet(cont.sel(model=["mistral-7b"]),
                                   stat.sel(model=["mistral-7b"]), 1.0)) == 1


def test_cli_json_is_the_api_and_refuses_a_result_file(tmp_path, capsys):
    args = ["fleet", "--disaggregated", "--model", "llama-3.1-8b", "--context", "1024",
            "--output-len", str(OUT), "--rate", "40", "--ttft", "0.5", "--tpot", "0.03",
            "--hardware", "h100-sxm", "--hardware", "l40s"]
    assert main([*args, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    spec = {"hardware": ["h100-sxm", "l40s"], "model": ["llama-3.1-8b"], "context": [1024],
            "output_len": [1, OUT], "precision": ["bf16"], "engine": ["native"],
            "batch": DEFAULT_SPEC["batch"], "parallelism": "auto"}
    cont = sweep.run({**spec, "batching": "continuous"}, progress=False)
    stat = sweep.run({**spec, "batching": "static"}, progress=False)
    dis = disaggregated_fleet(cont, stat, 40.0, ttft=0.5, tpot=0.03)
    assert [r["hardware"] for r in got["rows"]][:len(dis)] == list(dis["hardware"])
    assert [r["devices"] for r in got["rows"]][:len(dis)] == list(dis["devices"])
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "disaggregated fleet: 40 requests/s" in text and "gain" in text
    path = tmp_path / "r.nc"
    path.write_bytes(b"")
    assert main(["fleet", str(path), "--disaggregated", "--rate", "1"]) != 0
    assert "not a result file" in capsys.readouterr().err
    assert main(["fleet", "--disaggregated", "--model", "llama-3.1-8b", "--output-len", "1",
                 "--rate", "1"]) != 0
    assert ">= 2" in capsys.readouterr().err


def test_a_network_that_cannot_carry_the_kv_limits_the_fleet(pools):
    """With the scale-out bandwidth cut 30x, the transfers slow down, and the pairs whose
    smaller pool's NICs cannot carry rate x KV bytes are dropped: fleets grow to carry it."""
    cont, stat = pools
    fast = disaggregated_fleet(cont, stat, 50.0).set_index("hardware")
    slow_stat = stat.assign_coords(scaleout_bandwidth=stat["scaleout_bandwidth"] / 30.0)
    slow = disaggregated_fleet(cont, slow_stat, 50.0).set_index("hardware")
    md = load_model("llama-3.1-8b")
    nbytes = md.kv_bytes_per_token(parse_precision("bf16").kv_bits) * 1024
    for h, r in slow.iterrows():
        assert r["network_load"] <= 1.0
        assert r["devices"] >= fast.loc[h, "devices"]
        assert r["kv_transfer"] > 5 * fast.loc[h, "kv_transfer"]
        bw = float(slow_stat["scaleout_bandwidth"].sel(hardware=h))
        p, d = parse_layout(r["prefill_layout"]), parse_layout(r["decode_layout"])
        smaller = min(r["prefill_replicas"] // p.dp * p.devices,
                      r["decode_replicas"] // d.dp * d.devices)
        assert r["network_load"] == pytest.approx(50.0 * nbytes / (smaller * bw))
    assert len(slow) == len(fast)
    assert (slow["network_load"] > 0.5).all() and (slow["devices"] > fast.loc[slow.index, "devices"]).all()
