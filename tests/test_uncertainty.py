"""Uncertainty bands (issue 20, item 4): the rules that pick a device's band, the band of a ratio,
what results carry, ties in ``margin``, the band of the headline variation, and the bands file
``sweep bands`` writes."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sweep
from grids import tomlio
from grids.bands import BANDS_FILE, Band, Bands, load_bands, parse_bands, shipped_bands
from grids.engines import calibration_path
from grids.errors import SpecError
from sweep.analysis.uncertainty import pair_band, ratio_band
from sweep.validate import bands as B
from sweep.validate import measurements as V

SMALL = {"hardware": ["h100-sxm", "h200-sxm", "mi300x", "gaudi3", "tpu-v6e"],
         "engine": ["native", "ideal", "vllm"], "model": ["llama-3.1-8b", "llama-3.1-70b"],
         "batch": [1, 64], "context": [1024], "precision": ["bf16"],
         "parallelism": ["tp1", "tp8"]}


def synthetic(min_rows: int = 10) -> Bands:
    groups = {("vllm", "AMD"): Band(1.5, 40, 0.1, "engine x vendor", True),
              ("sglang", "NVIDIA"): Band(1.2, 3, 0.0, "engine x vendor", True),
              ("neuron", "AWS"): Band(2.5, 12, -0.4, "engine x vendor", True)}
    return Bands(groups, no_data=2.0, same_group_ratio=1.25, min_rows=min_rows, quantile=0.68,
                 provenance={})


def test_a_device_gets_its_groups_band_or_the_wider_band_of_no_data():
    b = synthetic()
    assert b.band("vllm", "AMD") == Band(1.5, 40, 0.1, "engine x vendor", True)
    thin = b.band("sglang", "NVIDIA")  # 3 rows < 10: never narrower than a vendor without data
    assert (thin.factor, thin.level, thin.calibrated) == (2.0, "thin", True)
    none = b.band("vllm", "Intel (Habana)")
    assert (none.factor, none.rows, none.level, none.calibrated) == (2.0, 0, "no data", False)
    ideal = b.band("ideal", "NVIDIA")
    assert math.isnan(ideal.factor) and ideal.level == "bound" and not ideal.calibrated
    assert synthetic(min_rows=3).band("sglang", "NVIDIA").factor == 1.2


def test_the_band_of_a_ratio():
    b = synthetic()
    assert b.ratio_factor(("vllm", "AMD"), ("vllm", "AMD")) == 1.25  # one group: measured
    want = math.exp(math.hypot(math.log(1.5), math.log(2.5)))
    assert b.ratio_factor(("vllm", "AMD"), ("neuron", "AWS")) == pytest.approx(want, rel=1e-15)
    assert math.isnan(b.ratio_factor(("ideal", "AMD"), ("vllm", "AMD")))
    # without a measured same-group band, one group combines like two
    no_pairs = Bands(b.groups, 2.0, math.nan, 10, 0.68, {})
    assert no_pairs.ratio_factor(("vllm", "AMD"), ("vllm", "AMD")) == pytest.approx(
        math.exp(math.hypot(math.log(1.5), math.log(1.5))))


@given(st.floats(1.0, 20.0), st.floats(1.0, 20.0), st.floats(1.0, 5.0))
def test_pair_band_is_never_narrower_than_either_band_across_groups(fa, fb, same):
    band = float(pair_band(fa, fb, False, same))
    assert band >= max(fa, fb) * (1 - 1e-12)
    assert band <= fa * fb * (1 + 1e-12)  # the errors add in quadrature, not linearly
    assert float(pair_band(fa, fb, True, same)) == same
    assert math.isnan(float(pair_band(fa, math.nan, True, same)))


@given(st.lists(st.floats(0.0, 5.0), min_size=1, max_size=40), st.floats(0.05, 0.95))
def test_factor_is_the_inverted_cdf_quantile(values, q):
    a = np.array(values)
    assert B.factor(a, q) == pytest.approx(math.exp(np.quantile(a, q, method="inverted_cdf")))
    # weights: a value counted twice as often moves the quantile as a duplicate row would
    w = np.ones(a.size)
    w[0] = 2.0
    assert B.factor(a, q, w) == pytest.approx(
        math.exp(np.quantile(np.append(a, a[0]), q, method="inverted_cdf")))


def test_malformed_bands_are_one_clear_error(tmp_path):
    raw = {"settings": {"min_rows": 0, "quantile": 0.68, "no_data": 0.5},
           "groups": {"vllm": {"AMD": {"factor": "wide", "rows": -1}, "NVIDIA": 3}}}
    with pytest.raises(SpecError) as err:
        parse_bands(raw, "my-bands.toml")
    text = str(err.value)
    for what in ("min_rows", "no_data", "rows must be an integer", "NVIDIA"):
        assert what in text
    bad = tmp_path / "b.toml"
    bad.write_text("[settings\n")
    with pytest.raises(SpecError):
        load_bands(bad)


def test_the_shipped_bands_match_the_shipped_measurements():
    b = shipped_bands()
    assert b is not None and BANDS_FILE.is_file()
    assert b.provenance["tool"] == "sweep bands"
    assert b.provenance["data_sha256"] == V.file_sha256(V.MEASUREMENTS_CSV)
    assert b.no_data >= 1 and b.same_group_ratio >= 1 and 0 < b.quantile < 1
    assert b.groups and all(g.factor >= 1 and g.rows > 0 for g in b.groups.values())
    # measured with the calibration method that fitted the shipped overlay
    overlay = tomlio.load(calibration_path())["provenance"]
    assert ("--floor-dtypes" in b.provenance["command"]) == overlay["dtype_floors_applied"]


@pytest.fixture(scope="module")
def small():
    return sweep.run(SMALL)


def test_results_carry_each_devices_band_and_calibrated_flag(small):
    bands = shipped_bands()
    for h in small.hardware.values:
        vendor = str(small.hardware_vendor.sel(hardware=h).values)
        for e in small.engine.values:
            got = float(small.band_factor.sel(hardware=h, engine=e))
            used = str(small.engine_used.sel(hardware=h, engine=e).values)
            if e == "ideal" or used == "":
                assert math.isnan(got)
                assert int(small.calibrated.sel(hardware=h, engine=e)) == 0
                continue
            want = bands.band(used, vendor)
            assert got == want.factor
            assert int(small.calibrated.sel(hardware=h, engine=e)) == int(want.calibrated)
    assert small.band_factor.attrs["same_group_ratio"] == bands.same_group_ratio


def test_a_margin_within_its_band_is_a_tie(small):
    m = small.sweep.margin("throughput")
    bands = shipped_bands()
    checked = ties = 0
    for e in m.engine.values:
        for mod in m.model.values:
            for bt in m.batch.values:
                p = m.sel(engine=e, model=mod, batch=bt, context=1024, precision="bf16")
                w, r = str(p.winner.values), str(p.runner_up.values)
                if not w or not r:
                    continue
                group = {h: (str(small.engine_used.sel(hardware=h, engine=e).values),
                             str(small.hardware_vendor.sel(hardware=h).values)) for h in (w, r)}
                want = bands.ratio_factor(group[w], group[r])
                got = float(p.margin_band)
                assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want)
                tie = bool(float(p.margin) <= want) if not math.isnan(want) else False
                assert int(p.tie) == int(tie)
                checked += 1
                ties += tie
    assert checked >= 6 and ties >= 1  # the 8B point at batch 1: H200 over H100 by 1.18x


def test_the_headline_states_its_band(small):
    mv = small.sweep.max_variation("throughput")
    want = ratio_band(small, "hardware", mv["best"], mv["worst"], mv["where"], ["parallelism"])
    assert mv["band"] == want or (math.isnan(want) and math.isnan(mv["band"]))
    native = small.sel(engine=["native"])
    nv = native.sweep.max_variation("throughput")
    assert nv["band"] > 1 and nv["ratio_low"] == pytest.approx(nv["ratio"] / nv["band"])
    assert nv["ratio_high"] == pytest.approx(nv["ratio"] * nv["band"])
    # (the run's figure from its chunks equals max_variation's, band included:
    # tests/test_headline.py compares the whole dicts)
    from sweep.cli.summary import band_text

    assert band_text(nv).startswith(" (uncertainty band ")
    assert band_text({**nv, "ratio_low": math.nan}) == ""


def test_bands_from_residuals(monkeypatch):
    rng = np.random.default_rng(1)

    def frame(groups):
        rows = []
        for (engine, vendor, n, scale) in groups:
            for k in range(n):
                rows.append({"publisher": f"p{k % 2}", "source": "s", "engine": engine,
                             "model": "m", "precision": "bf16", "parallelism": "tp1",
                             "load": "fixed", "batch": k % 5, "context": 128, "output_len": 1,
                             "metric": "tpot", "scope": "device", "statistic": "mean",
                             "hardware": f"{vendor}-{k % 3}", "status": "used",
                             "log_error": float(rng.normal(0, scale)),
                             "group_engine": engine, "group_vendor": vendor})
        return pd.DataFrame(rows)

    held = frame([("vllm", "AMD", 60, 0.3), ("trtllm", "NVIDIA", 90, 0.1),
                  ("ideal", "NVIDIA", 5, 0.0)])
    lovo = frame([("vllm", "AMD", 60, 0.5), ("trtllm", "NVIDIA", 900, 0.2),
                  ("gaudi", "Intel", 4, 3.0)])
    floors = []
    monkeypatch.setattr(B, "held_out_by_publisher",
                        lambda df, progress=None, floor_dtypes=False: floors.append(floor_dtypes)
                        or held)
    monkeypatch.setattr(B, "held_out_by_vendor",
                        lambda df, progress=None, floor_dtypes=False: floors.append(floor_dtypes)
                        or lovo)
    t = B.compute_bands(pd.DataFrame(), quantile=0.68, min_rows=10)
    assert floors == [False, False]
    B.compute_bands(pd.DataFrame(), quantile=0.68, min_rows=10, floor_dtypes=True)
    assert floors[2:] == [True, True]  # both held-out calibrations fit as the overlay was
    g = t["groups"]
    assert set(g) == {"vllm", "trtllm"}  # the physics bound has no band
    amd = held[held.group_engine.eq("vllm")]["log_error"].abs().to_numpy()
    assert g["vllm"]["AMD"]["factor"] == B.factor(amd, 0.68)
    assert g["vllm"]["AMD"]["rows"] == 60 and g["vllm"]["AMD"]["publishers"] == 2
    # a vendor without data: the two vendors with >= 10 rows, weighted equally (not by rows)
    s = t["settings"]
    assert set(s["no_data_vendors"]) == {"AMD", "NVIDIA"}
    kept = lovo[lovo.group_vendor.isin(["AMD", "NVIDIA"])]
    w = np.where(kept.group_vendor.eq("AMD"), 1 / 60, 1 / 900)
    assert s["no_data"] == B.factor(kept["log_error"].abs().to_numpy(), 0.68, w)
    assert s["no_data"] > B.factor(kept["log_error"].abs().to_numpy(), 0.68)
    assert s["same_group_pairs"] == len(B.pair_differences(held)) > 0
    with pytest.raises(SpecError, match="quantile"):
        B.compute_bands(pd.DataFrame(), quantile=1.5)


def test_pairs_differ_only_in_the_device():
    base = {"publisher": "p", "source": "s", "engine": "vllm", "model": "m",
            "precision": "bf16", "parallelism": "tp1", "load": "fixed", "batch": 1,
            "context": 128, "output_len": 1, "metric": "tpot", "scope": "device",
            "statistic": "mean", "group_engine": "vllm", "group_vendor": "AMD"}
    held = pd.DataFrame([{**base, "hardware": "a", "log_error": 0.5},
                         {**base, "hardware": "b", "log_error": 0.2},
                         {**base, "hardware": "c", "batch": 2, "log_error": -1.0},
                         {**base, "hardware": "d", "group_vendor": "X", "log_error": 3.0}])
    assert B.pair_differences(held).tolist() == pytest.approx([0.3])


def test_sweep_bands_refuses_bad_output_before_any_work(tmp_path):
    from sweep.cli import main

    assert main(["bands", "-o", str(tmp_path / "bands.txt")]) == 2
    other = tmp_path / "mine.toml"
    other.write_text("x = 1\n")
    assert main(["bands", "-o", str(other)]) == 2
    assert other.read_text() == "x = 1\n"


def test_points_carry_the_band_of_their_grid_twin(small):
    rows = [{"hardware": h, "engine": e, "model": "llama-3.1-8b", "precision": "bf16",
             "parallelism": "tp1", "batch": 64, "context": 1024, "output_len": 256}
            for h in ("h100-sxm", "mi300x", "gaudi3") for e in ("native", "ideal", "vllm")]
    got = sweep.evaluate(pd.DataFrame(rows))
    for r, band in zip(rows, got["band_factor"]):
        want = float(small.band_factor.sel(hardware=r["hardware"], engine=r["engine"]))
        assert band == want or (math.isnan(band) and math.isnan(want))
        one = sweep.evaluate_point(**{k: v for k, v in r.items() if k not in ("hardware",
                                      "model", "precision", "parallelism")},
                                   hardware=r["hardware"], model=r["model"],
                                   precision=r["precision"], parallelism=r["parallelism"])
        assert one["band_factor"] == band or (math.isnan(band) and math.isnan(one["band_factor"]))


def test_flips_between_ideal_and_native_are_counted_pair_by_pair(small):
    from scripts.engine_flips import flips
    from sweep.analysis.basis import parse_basis
    from sweep.analysis.select import candidates

    ds = small.sel(engine=["native", "ideal"])
    rows, total = flips(ds, "power")
    c = candidates(ds, "throughput", ("parallelism",), basis=parse_basis("power"))
    want = {}
    hw = list(ds.hardware.values)
    for a, b in itertools.combinations(hw, 2):
        n = k = 0
        for mod in ds.model.values:
            for bt in ds.batch.values:
                v = {(h, e): float(c.sel(hardware=h, engine=e, model=mod, batch=bt).squeeze())
                     for h in (a, b) for e in ("native", "ideal")}
                if not all(np.isfinite(list(v.values()))):
                    continue
                n += 1
                k += (v[a, "ideal"] - v[b, "ideal"]) * (v[a, "native"] - v[b, "native"]) < 0
        if k:
            want[(a, b)] = k
    assert want and {(r["a"], r["b"]): r["flips"] for r in rows} == want
    assert total["flips"] == sum(want.values()) and 0 <= total["within_band"] <= total["flips"]


def test_bands_follow_a_selection_that_drops_the_engine_dim(small):
    one = small.sel(engine="native")  # engine becomes a scalar coordinate
    mv = one.sweep.max_variation("throughput")
    full = small.sel(engine=["native"]).sweep.max_variation("throughput")
    assert mv["band"] == full["band"] and mv["ratio"] == full["ratio"]
    m = one.sweep.margin("throughput")
    assert (m["margin_band"].values == small.sel(engine=["native"]).sweep.margin(
        "throughput")["margin_band"].squeeze("engine").values).all()
