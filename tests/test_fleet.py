"""Fleet sizing (sweep/analysis/fleet.py, ``sweep fleet``): against brute force over the points
of a real result, monotone in the rate, at request rates with percentile targets, and its
errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import sweep
from grids.errors import SpecError
from grids.layouts import parse_layout
from sweep.cli import main
from sweep.results.files import write_dataset

SPEC = {"name": "fleet test", "hardware": ["h100-sxm", "b200", "mi300x", "l40s"],
        "engine": ["native", "vllm"], "model": ["llama-3.1-8b"],
        "batch": [1, 4, 16, 64, 256], "context": [1024], "output_len": 128,
        "precision": ["bf16"], "parallelism": ["tp1", "tp2", "tp4-dp2"]}
RATE_SPEC = {**{k: v for k, v in SPEC.items() if k != "batch"},
             "request_rate": [1.0, 10.0, 40.0, 160.0]}


@pytest.fixture(scope="module")
def ds():
    return sweep.run(SPEC, progress=False)


@pytest.fixture(scope="module")
def rated():
    return sweep.run(RATE_SPEC, progress=False)


def brute_force(ds, rate, ttft, tpot, ttft_var="ttft", load="batch"):
    """Fewest devices per device type, point by point."""
    best = {}
    out_len = float(ds["output_len"].values)
    for h in ds["hardware"].values:
        for e in ds["engine"].values:
            for lay in ds["parallelism"].values:
                layout = parse_layout(str(lay))
                for x in ds[load].values:
                    p = ds.sel(hardware=h, engine=e, parallelism=lay, **{load: x})
                    if int(p["fits"]) != 1:
                        continue
                    if ttft is not None and not float(p[ttft_var]) <= ttft:
                        continue
                    if tpot is not None and not float(p["tpot"]) <= tpot:
                        continue
                    served = float(x) if load == "request_rate" else \
                        float(p["throughput"]) / out_len
                    devices = math.ceil(rate / served) * layout.devices
                    kw = math.ceil(rate / served) * float(p["system_power"]) / 1e3
                    key = (devices, kw)
                    if str(h) not in best or key < best[str(h)][0]:
                        best[str(h)] = (key, str(e), str(lay), float(x))
    return best


@pytest.mark.parametrize("rate, ttft, tpot", [(50.0, 2.0, 0.05), (400.0, 0.5, 0.03),
                                              (5.0, None, 0.02), (1000.0, 5.0, None)])
def test_fleet_is_the_brute_force_fewest_devices(ds, rate, ttft, tpot):
    table = ds.sel(context=1024, model="llama-3.1-8b", precision="bf16").sweep.fleet(
        rate, ttft=ttft, tpot=tpot)
    want = brute_force(ds.sel(context=1024, model="llama-3.1-8b", precision="bf16"), rate,
                       ttft, tpot)
    assert set(table["hardware"]) == set(want)
    for _, row in table.iterrows():
        (devices, kw), engine, lay, batch = want[row["hardware"]]
        assert row["devices"] == devices and row["kW"] == pytest.approx(kw, rel=1e-6)
        assert (row["engine"], row["parallelism"], row["batch"]) == (engine, lay, batch)
    assert list(table["devices"]) == sorted(table["devices"])
    assert list(table["rank"]) == list(range(1, len(table) + 1))
    d = table["devices"].to_numpy(float)
    np.testing.assert_allclose(table["margin"].to_numpy()[:-1], d[1:] / d[:-1])
    assert set(table.attrs["unserved"]) == set(map(str, ds["hardware"].values)) - set(want)


def test_fleet_size_does_not_fall_as_the_rate_grows(ds):
    sub = ds.sel(context=1024, model="llama-3.1-8b", precision="bf16")
    last = {}
    for rate in (1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0):
        t = sub.sweep.fleet(rate, ttft=2.0, tpot=0.05).set_index("hardware")
        for h, row in t.iterrows():
            assert row["devices"] >= last.get(h, 0), (h, rate)
            last[h] = row["devices"]


def test_fleet_by_power_and_by_cost_minimise_those(ds):
    sub = ds.sel(context=1024, model="llama-3.1-8b", precision="bf16")
    kw = sub.sweep.fleet(100.0, ttft=2.0, tpot=0.05, by="kW")
    usd = sub.sweep.fleet(100.0, ttft=2.0, tpot=0.05, by="$")
    dev = sub.sweep.fleet(100.0, ttft=2.0, tpot=0.05).set_index("hardware")
    assert list(kw["kW"]) == sorted(kw["kW"]) and list(usd["usd_per_h"]) == sorted(usd["usd_per_h"])
    for _, row in kw.iterrows():
        assert row["kW"] <= dev.loc[row["hardware"], "kW"] * (1 + 1e-9)
    assert np.isfinite(usd["usd_per_h"]).all()


def test_fleet_at_request_rates_reads_the_percentile_targets(rated):
    sub = rated.sel(context=1024, model="llama-3.1-8b", precision="bf16")
    t = sub.sweep.fleet(500.0, ttft=1.0, tpot=0.05, percentile="p90")
    want = brute_force(sub, 500.0, 1.0, 0.05, ttft_var="ttft_p90", load="request_rate")
    assert set(t["hardware"]) == set(want) and len(t) > 0
    for _, row in t.iterrows():
        assert row["devices"] == want[row["hardware"]][0][0]
        assert row["ttft_p90"] <= 1.0
    # the p99 target is at least as hard as the p90 one
    t99 = sub.sweep.fleet(500.0, ttft=1.0, tpot=0.05, percentile="p99").set_index("hardware")
    for _, row in t.iterrows():
        if row["hardware"] in t99.index:
            assert t99.loc[row["hardware"], "devices"] >= row["devices"]


@pytest.mark.parametrize("kwargs, words", [
    ({"rate": 0.0}, "positive number of requests"),
    ({"rate": -3.0}, "positive number of requests"),
    ({"rate": 10.0, "ttft": -1.0}, "positive number of seconds"),
    ({"rate": 10.0, "by": "speed"}, "by must be one of"),
    ({"rate": 10.0, "ttft": 1.0, "percentile": "p90"}, "request_rate"),
    ({"rate": 10.0, "percentile": "p95"}, "percentile must be one of"),
    ({"rate": 10.0, "over": ["hardware"]}, "cannot be chosen over"),
])
def test_fleet_bad_input(ds, kwargs, words):
    with pytest.raises(SpecError, match=words):
        ds.sel(context=1024).sweep.fleet(**kwargs)


def test_fleet_cli_on_a_result_and_its_errors(ds, tmp_path, capsys):
    path = tmp_path / "r.nc"
    write_dataset(ds, path, "netcdf")
    assert main(["fleet", str(path), "--rate", "100", "--ttft", "2", "--tpot", "0.05",
                 "--sel", "context=1024", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    api = ds.sel(context=1024).sweep.fleet(100.0, ttft=2.0, tpot=0.05)
    assert [r["hardware"] for r in out["rows"]] == list(api["hardware"])
    assert [r["devices"] for r in out["rows"]] == list(api["devices"])
    assert main(["fleet", str(path), "--rate", "100", "--sel", "context=1024"]) == 0
    assert "fleet: 100 requests/s with no targets" in capsys.readouterr().out
    assert main(["fleet", "--rate", "100"]) == 2  # neither a result nor --model
    assert "give a result file, or --model" in capsys.readouterr().err


def test_goodput_over_request_rates_reads_the_percentile(rated):
    """Goodput on a result over request rates: over rate and layout by default, the TTFT target
    against the chosen percentile, equal to brute force over the points."""
    sub = rated.sel(context=1024, model="llama-3.1-8b", precision="bf16", engine="native")
    g = sub.sweep.goodput(ttft=1.0, tpot=0.05, percentile="p90")
    assert set(g.data_vars) >= {"goodput", "request_rate", "parallelism", "ttft_p90_at"}
    per_dev = sub["throughput_per_device"]
    ok = (sub["fits"] == 1) & (sub["ttft_p90"] <= 1.0) & (sub["tpot"] <= 0.05)
    want = per_dev.where(ok).max(["request_rate", "parallelism"])
    np.testing.assert_allclose(g["goodput"].values, want.values, rtol=1e-6)



def test_goodput_percentile_needs_request_rates(ds):
    with pytest.raises(SpecError, match="request_rate"):
        ds.sweep.goodput(ttft=1.0, percentile="p90")
