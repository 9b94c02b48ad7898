"""Comparison bases, goodput and the serving front (sweep/analysis/basis.py, goodput.py): each
basis on a hand-computed example, and every analysis against brute force on small synthetic
results (hypothesis)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st

from grids.errors import SpecError
from sweep.analysis.basis import Basis, normalised, parse_basis
from sweep.analysis.choose import best_layout, fewest_devices
from sweep.analysis.goodput import goodput, serving_front
from tests.test_analysis import brute_pareto, make_result

LAYOUTS = ("tp1", "tp2", "tp4")


def tiny() -> xr.Dataset:
    """Two devices x three layouts of 1, 2, 4 devices; B's tp4 does not fit."""
    thr = np.array([[100.0, 180.0, 300.0], [50.0, 120.0, np.nan]])
    spw = np.array([[1000.0, 2000.0, 4000.0], [300.0, 600.0, np.nan]])
    usd_h = np.array([[4.0, 8.0, 16.0], [1.0, 2.0, np.nan]])  # spend rate per replica [USD/h]
    fits = np.isfinite(thr).astype(np.int8)
    dims = ("hardware", "parallelism")
    ds = xr.Dataset({
        "throughput": (dims, thr, {"units": "token/s"}),
        "tpot": (dims, np.array([[0.05, 0.03, 0.02], [0.08, 0.04, np.nan]]), {"units": "s"}),
        "system_power": (dims, spw, {"units": "W"}),
        "power": (dims, spw / 2, {"units": "W"}),
        "tokens_per_dollar": (dims, thr / (usd_h / 3600.0), {"units": "token/USD"}),
        "fits": (dims, fits),
    }, coords={"hardware": ["a", "b"], "parallelism": list(LAYOUTS),
               "devices": ("parallelism", [1, 2, 4])})
    return ds


@pytest.mark.parametrize(("basis", "expect", "layouts"), [
    # per device: a 100/1, 180/2, 300/4 -> 100 (tp1); b 50, 60 -> 60 (tp2)
    ("device", [100.0, 60.0], ["tp1", "tp2"]),
    # 4 devices: a 4x100, 2x180, 1x300 -> 400; b 4x50, 2x120 -> 240
    ("system:4", [400.0, 240.0], ["tp1", "tp2"]),
    # per kW (system): a 100, 90, 75 -> 100; b 166.7, 200 -> 200
    ("power", [100.0, 200.0], ["tp1", "tp2"]),
    # per kW at the accelerator boundary (half the power): twice that
    ("power:accelerator", [200.0, 400.0], ["tp1", "tp2"]),
    # 2 kW budget: a floor(2)=2 x100 = 200, 1 x 180, 0 -> 200; b 6 x 50 = 300, 3 x 120 = 360
    ("power:2kW", [200.0, 360.0], ["tp1", "tp2"]),
    # per dollar: a 100 / (4/3600) = 90000, 81000, 67500; b 180000, 120 / (2/3600) = 216000
    ("cost", [90000.0, 216000.0], ["tp1", "tp2"]),
    # 8 USD/h: a 2x100, 1x180, 0 -> 200; b 8x50 = 400, 4x120 = 480
    ("cost:8", [200.0, 480.0], ["tp1", "tp2"]),
    ("replica", [300.0, 120.0], ["tp4", "tp2"]),
])
def test_each_basis_on_a_hand_computed_example(basis, expect, layouts):
    got = best_layout(tiny(), "throughput", basis)
    np.testing.assert_allclose(got["value"].values, expect, rtol=1e-9)
    assert got["layout"].values.tolist() == layouts
    assert got.attrs["basis"] == parse_basis(basis).label


def test_latencies_keep_their_values_and_budgets_remove_layouts():
    ds = tiny()
    # tpot is not a throughput: per unit bases leave it, the best layout is the fastest
    assert best_layout(ds, "tpot", "power")["value"].values.tolist() == [0.02, 0.04]
    # a 2-device budget removes tp4: a's best tpot is then tp2's
    got = best_layout(ds, "tpot", "system:2")
    assert got["value"].values.tolist() == [0.03, 0.04]
    assert got["layout"].values.tolist() == ["tp2", "tp2"]
    # a budget smaller than every layout: nothing
    assert np.isnan(best_layout(ds, "tpot", "power:100W")["value"].values).all()


def test_parse_basis_round_trips_and_rejects_nonsense():
    for text in ("device", "system", "system:16", "power", "power:accelerator", "power:20kW",
                 "power:500W:accelerator", "cost", "cost:100", "replica"):
        b = parse_basis(text)
        assert parse_basis(b.spec) == b and b.label
    assert parse_basis(None) == Basis("power", None, "system")
    assert parse_basis("system").budget == 8
    for bad, why in (("watts", "unknown kind"), ("system:0", "whole number"),
                     ("system:2.5", "whole number"), ("power:10kg", "power such as"),
                     ("cost:-1", "positive"), ("device:4", "cannot read")):
        with pytest.raises(SpecError, match=why):
            parse_basis(bad)


def test_a_basis_needs_its_variables():
    ds = tiny().drop_vars("system_power")
    with pytest.raises(SpecError, match="system_power"):
        normalised(ds, "throughput", "power")
    normalised(ds, "throughput", "power:accelerator")  # the accelerator boundary is there


# ------------------------------------------------------------------------------ properties
def _brute_basis(ds: xr.Dataset, metric: str, basis: Basis) -> np.ndarray:
    """Per (hardware, ...) the best value over layouts, from the definitions, point by point."""
    lay = list(ds["parallelism"].values)
    devices = dict(zip(lay, ds["devices"].values.tolist()))
    dims = [d for d in ds[metric].dims if d != "parallelism"]
    out = np.full([ds.sizes[d] for d in dims], np.nan)
    for idx in itertools.product(*(range(ds.sizes[d]) for d in dims)):
        at = dict(zip(dims, idx))
        best = math.nan
        for p in lay:
            pt = ds.isel(at).sel(parallelism=p)
            if int(pt["fits"]) != 1 or not np.isfinite(float(pt[metric])):
                continue
            v = float(pt[metric])
            d = devices[p]
            spw = float(pt["system_power"])
            if basis.kind == "device":
                v /= d
            elif basis.kind == "power" and basis.budget is None:
                v = 1e3 * v / spw
            elif basis.kind == "power":
                n = math.floor(basis.budget / spw)
                v = v * n if n >= 1 else math.nan
            elif basis.kind == "system":
                n = math.floor(basis.budget / d)
                v = v * n if n >= 1 else math.nan
            if np.isfinite(v) and not (v <= best):
                best = v
        out[idx] = best
    return out


@given(st.integers(0, 10_000), st.sampled_from(["device", "power", "system:4", "power:5kW"]))
def test_best_layout_equals_brute_force(seed, basis):
    ds = make_result(seed=seed, hardware=("a", "b"), models=("dense-8b",), batch=(1, 64),
                     context=(128,), precision=("bf16",),
                     parallelism=("tp1", "tp2", "tp4", "tp2-dp2"))
    got = best_layout(ds, "throughput", basis)
    want = _brute_basis(ds, "throughput", parse_basis(basis))
    dims = [d for d in ds["throughput"].dims if d != "parallelism"]
    np.testing.assert_allclose(got["value"].transpose(*dims).values, want, rtol=1e-6)
    # the layout reported gives that value
    vals = normalised(ds, "throughput", basis)
    for idx in np.ndindex(got["layout"].shape):
        lab = got["layout"].values[idx]
        if lab:
            v = float(vals.isel(dict(zip(got["layout"].dims, idx))).sel(parallelism=lab))
            assert v == pytest.approx(float(got["value"].values[idx]))


@given(st.integers(0, 10_000))
def test_variation_on_a_basis_is_max_over_min_of_the_best_layouts(seed):
    ds = make_result(seed=seed, hardware=("a", "b", "c"), models=("dense-8b",), batch=(1, 8),
                     context=(128, 2048), precision=("bf16",), parallelism=("tp1", "tp2"))
    v = ds.sweep.variation("throughput", basis="device")
    best = best_layout(ds, "throughput", "device")["value"]
    n = best.count("hardware")
    ratio = (best.max("hardware") / best.min("hardware")).where(n >= 2)
    np.testing.assert_allclose(v["ratio"].values, ratio.transpose(*v["ratio"].dims).values)
    mv = ds.sweep.max_variation("throughput", basis="device")
    if mv is not None:
        assert mv["ratio"] == pytest.approx(float(ratio.max()))
        assert mv["median_ratio"] == pytest.approx(float(ratio.median()))
        at = best_layout(ds.sel(mv["where"]), "throughput", "device")
        assert at["layout"].sel(hardware=mv["best"]).item() == mv["best_layout"]
        assert at["layout"].sel(hardware=mv["worst"]).item() == mv["worst_layout"]
        assert mv["basis"] == "per device"


def test_winner_and_frontier_use_the_basis():
    ds = tiny().expand_dims(batch=[1])
    assert ds.sweep.winner("throughput", basis="replica").values.tolist() == ["a"]
    assert ds.sweep.winner("throughput", basis="power").values.tolist() == ["b"]
    assert ds.sweep.winner("throughput").attrs["basis"] == "per kW (system boundary)"


# ------------------------------------------------------------------------------ goodput
def _brute_goodput(ds, ttft, tpot, basis):
    vals = normalised(ds, "throughput", basis)
    rest = [d for d in vals.dims if d not in ("batch", "parallelism")]
    out = {}
    for idx in itertools.product(*(range(vals.sizes[d]) for d in rest)):
        at = dict(zip(rest, idx))
        best, arg = math.nan, None
        for b, p in itertools.product(ds["batch"].values, ds["parallelism"].values):
            pt = ds.isel(at).sel(batch=b, parallelism=p)
            v = float(vals.isel(at).sel(batch=b, parallelism=p))
            if not np.isfinite(v) or int(pt["fits"]) != 1:
                continue
            if ttft is not None and not float(pt["ttft"]) <= ttft:
                continue
            if tpot is not None and not float(pt["tpot"]) <= tpot:
                continue
            if not (v <= best):
                best, arg = v, (b, p)
        out[idx] = (best, arg)
    return rest, out


@given(st.integers(0, 10_000), st.sampled_from([(None, 0.05), (2.0, None), (1.0, 0.02)]),
       st.sampled_from(["device", "kW", "$", "system:8"]))
def test_goodput_equals_brute_force(seed, targets, per):
    ds = make_result(seed=seed, hardware=("a", "b"), models=("dense-8b",), batch=(1, 8, 64),
                     context=(128, 2048), precision=("bf16",), parallelism=("tp1", "tp2"))
    ttft, tpot = targets
    g = goodput(ds, ttft=ttft, tpot=tpot, per=per)
    from sweep.analysis.goodput import per_basis

    rest, want = _brute_goodput(ds, ttft, tpot, per_basis(per))
    for idx, (best, arg) in want.items():
        at = dict(zip(rest, idx))
        got = g.isel(at)
        if arg is None:
            assert np.isnan(float(got["goodput"])) and got["parallelism"].item() == ""
        else:
            assert float(got["goodput"]) == pytest.approx(best, rel=1e-6)
            # the batch and layout reported achieve it and meet the targets
            b, p = float(got["batch"]), got["parallelism"].item()
            v = float(normalised(ds, "throughput", per_basis(per)).isel(at).sel(
                batch=int(b), parallelism=p))
            assert v == pytest.approx(best, rel=1e-6)
            if tpot is not None:
                assert float(got["tpot_at"]) <= tpot


def test_goodput_bad_input():
    ds = make_result()
    with pytest.raises(SpecError, match="ttft or tpot"):
        goodput(ds)
    with pytest.raises(SpecError, match="positive"):
        goodput(ds, tpot=-1)
    with pytest.raises(SpecError, match="throughput"):
        goodput(ds, tpot=0.1, metric="tpot")
    with pytest.raises(SpecError, match="unknown kind"):
        goodput(ds, tpot=0.1, per="watt")


@given(st.integers(0, 10_000), st.sampled_from(["device", "kW"]))
def test_serving_front_is_the_pareto_front_of_user_and_unit_throughput(seed, per):
    ds = make_result(seed=seed, hardware=("a", "b"), models=("dense-8b",), batch=(1, 8, 64),
                     context=(128,), precision=("bf16",), parallelism=("tp1", "tp2"))
    table = serving_front(ds, per=per)
    from sweep.analysis.goodput import per_basis

    y = normalised(ds, "throughput", per_basis(per))
    for h in ds["hardware"].values:
        sub = ds.sel(hardware=h)
        cands = [(b, p) for b in sub["batch"].values for p in sub["parallelism"].values]
        pts, valid = [], []
        for b, p in cands:
            pt = sub.sel(batch=b, parallelism=p).squeeze()
            t = float(pt["tpot"])
            v = float(y.sel(hardware=h, batch=b, parallelism=p).squeeze())
            pts.append((1 / t if np.isfinite(t) else math.nan, v))
            valid.append(int(pt["fits"].max()) == 1 and np.isfinite(t) and np.isfinite(v))
        keep = brute_pareto(pts, valid)
        want = {c for c, k in zip(cands, keep) if k}
        rows = table[table["hardware"] == h]
        assert {(r.batch, r.parallelism) for r in rows.itertuples()} == want


# ------------------------------------------------------------------------------ fewest devices
@given(st.integers(0, 10_000))
def test_fewest_devices_equals_brute_force(seed):
    ds = make_result(seed=seed, hardware=("a", "b"), models=("dense-8b",), batch=(1, 64),
                     context=(128, 2048), precision=("bf16",),
                     parallelism=("tp1", "tp2", "tp1-pp2", "tp4"), p_infeasible=0.5)
    got = fewest_devices(ds)
    devices = dict(zip(ds["parallelism"].values, ds["devices"].values.tolist()))
    dims = list(got["layout"].dims)
    for idx in np.ndindex(got["layout"].shape):
        pt = ds.isel(dict(zip(dims, idx)))
        ok = [p for p in ds["parallelism"].values if int(pt["fits"].sel(parallelism=p)) == 1]
        if not ok:
            assert got["layout"].values[idx] == "" and np.isnan(got["devices"].values[idx])
            continue
        n = min(devices[p] for p in ok)
        tied = [p for p in ok if devices[p] == n]
        thr = {p: float(pt["throughput"].sel(parallelism=p)) for p in tied}
        top = max(thr.values())
        assert got["devices"].values[idx] == n
        assert got["layout"].values[idx] == min(p for p in tied if thr[p] == top)


def test_run_headline_names_the_basis_the_devices_and_their_layouts():
    import sweep
    from sweep.cli.summary import headline_lines

    ds = sweep.run({"hardware": ["h100-sxm", "mi300x", "l40s"], "model": ["llama-3.1-8b"],
                    "batch": [1, 64], "context": [1024], "precision": ["bf16"],
                    "parallelism": ["tp1", "tp2", "tp4"]}, progress=False)
    text = "\n".join(headline_lines(ds))
    mv = ds.sweep.max_variation("throughput")
    assert mv["basis"] == "per kW (system boundary)" and mv["basis"] in text
    for key in ("best", "worst", "best_layout", "worst_layout"):
        assert mv[key] and mv[key] in text
    assert f"{mv['ratio']:.3g}x" in text and f"{mv['median_ratio']:.2f}x" in text
    device = "\n".join(headline_lines(ds, "device"))
    assert "per device" in device
