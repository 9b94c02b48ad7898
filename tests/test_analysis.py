"""Analysis layer: variation, winners, frontiers, Pareto fronts, regimes and strategies.

Synthetic result Datasets of the real structure (``make_result``) drive hypothesis properties
against brute-force references; one small real run checks the layer on kernel output.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st

import sweep
from grids.errors import SpecError
from grids.layouts import parse_layout
from sweep.analysis import core as an
from sweep.results.variables import COORDS, DIM_ATTRS, DIRECTION, ONLY_AT_RATE, VARIABLES

DIMS = ("hardware", "model", "batch", "context", "precision", "parallelism")
#: the float metrics of a grid over batch (the latency percentiles exist over request rates only)
FLOAT_METRICS = [n for n, v in VARIABLES.items() if v.dtype == "float32" and n not in ONLY_AT_RATE]


# ------------------------------------------------------------------------------ builders
def make_result(hardware=("hw-a", "hw-b", "hw-c"), models=("dense-8b", "moe-47b"),
                batch=(1, 8, 64), context=(128, 2048), precision=("bf16", "fp8"),
                parallelism=("tp1", "tp2", "tp1-ep2"), output_len=256, seed=0,
                p_infeasible=0.15, values: dict | None = None, fits=None) -> xr.Dataset:
    """A result Dataset with the structure of ``sweep.run``'s output and plausible values.

    ``output_len`` a list makes it a dim. ``values`` overrides metrics with arrays of the full
    shape; ``fits`` overrides the feasibility mask (metrics are NaN where it is 0).
    """
    rng = np.random.default_rng(seed)
    ol_dim = isinstance(output_len, (list, tuple))
    dims = (("hardware", "model", "batch", "context", "output_len", "precision", "parallelism")
            if ol_dim else DIMS)
    sizes = {"hardware": len(hardware), "model": len(models), "batch": len(batch),
             "context": len(context), "output_len": len(output_len) if ol_dim else 1,
             "precision": len(precision), "parallelism": len(parallelism)}
    shape = tuple(sizes[d] for d in dims)
    lays = [parse_layout(x) for x in parallelism]
    n_h, n_m = len(hardware), len(models)
    bw = np.geomspace(1e12, 8e12, n_h) if n_h > 1 else np.array([3e12])
    peak = np.geomspace(2e14, 2e15, n_h)[::-1] if n_h > 1 else np.array([1e15])
    mem = rng.choice([24e9, 80e9, 192e9], n_h)
    total = np.array([8e9 if "moe" not in m else 47e9 for m in models])
    active = np.array([8e9 if "moe" not in m else 13e9 for m in models])

    def axis(name, vals):
        s = [1] * len(dims)
        s[dims.index(name)] = len(vals)
        return np.asarray(vals, dtype=np.float64).reshape(s)

    b, c = axis("batch", batch), axis("context", context)
    tp = axis("parallelism", [x.tp for x in lays])
    ep = axis("parallelism", [x.ep for x in lays])
    dev = axis("parallelism", [x.devices for x in lays])
    wb = axis("precision", [1.0 if "8" in p else 2.0 for p in precision])
    act = axis("model", active)
    noise = rng.lognormal(0, 0.3, shape)
    tpot = (np.maximum(2 * act * b / (axis("hardware", peak) * tp),
                       act * wb / (axis("hardware", bw) * tp)) * (1 + c / 1e5) * noise)
    ttft = tpot * c / 50
    ol = axis("output_len", output_len) if ol_dim else float(output_len)
    e2e = ttft + (ol - 1) * tpot
    thr = b * ol / e2e * np.ones(shape)
    power = 500.0 * dev * rng.uniform(0.6, 1.0, shape)
    memory = axis("model", total) * wb / (tp * ep) + b * c * 1e5
    if fits is None:
        moe = axis("model", [t > a for t, a in zip(total, active)])
        ok = (rng.random(shape) > p_infeasible) & ((ep == 1) | (moe > 0))
    else:
        ok = np.asarray(fits, dtype=bool)
    vals = {
        "ttft": ttft, "tpot": tpot, "e2e_latency": e2e, "throughput": thr,
        "total_throughput": thr * (c + ol) / ol, "throughput_per_device": thr / dev,
        "tokens_per_joule": thr / power, "power": power, "memory_per_device": memory,
        "system_power": power * 1.8, "tokens_per_joule_system": thr / (power * 1.8),
        "cost_per_mtok": 1e6 * (dev * 3.0 / 3600) / thr, "tokens_per_dollar": thr / (dev * 3.0 / 3600),
        "host_fraction": np.zeros(shape),
        "arithmetic_intensity": 2 * b / wb * np.ones(shape),
        "mfu": rng.uniform(0.01, 0.9, shape), "mbu": rng.uniform(0.1, 0.9, shape),
        "latency_cov": (0.02 + 0.1 * (ep > 1)) * rng.uniform(0.5, 1.5, shape),
        "min_devices": np.ceil(memory / 80e9) * np.ones(shape),
        "max_concurrency": np.maximum(b, 4096.0 / axis("model", active) * 1e9 * wb),
        "concurrency": b * np.ones(shape),
    }
    vals.update(values or {})
    data_vars = {}
    for name, var in VARIABLES.items():
        if name in ONLY_AT_RATE:
            continue  # a batch grid: no latency percentiles (docs/model.md section 13.4)
        if name == "fits":
            arr = ok.astype(np.int8)
        elif name == "bound":
            arr = np.where(ok, rng.integers(0, 6, shape), -1).astype(np.int8)
        elif name == "infeasible_reason":
            arr = np.where(ok, 0, 9).astype(np.int8)
        else:
            arr = np.broadcast_to(np.asarray(vals[name], dtype=np.float64), shape)
            keep = ok | (name in ("memory_per_device", "min_devices", "host_fraction"))
            arr = np.where(keep, arr, np.nan).astype(np.float32)
        data_vars[name] = (dims, arr, var.attrs())
    coords: dict = {
        "hardware": ("hardware", np.array(hardware, dtype=object)),
        "model": ("model", np.array(models, dtype=object)),
        "batch": ("batch", np.array(batch, dtype=np.int64)),
        "context": ("context", np.array(context, dtype=np.int64)),
        "precision": ("precision", np.array(precision, dtype=object)),
        "parallelism": ("parallelism", np.array([x.name for x in lays], dtype=object)),
    }
    if ol_dim:
        coords["output_len"] = ("output_len", np.array(output_len, dtype=np.int64))
    else:
        coords["output_len"] = ((), np.int64(output_len))
    per = {
        "hardware_name": [f"Device {h}" for h in hardware],
        "hardware_class": ["gpu"] * n_h, "peak_bf16_flops": peak, "peak_fp8_flops": 2 * peak,
        "hardware_vendor": ["Vendor"] * n_h,
        "dram_bandwidth": bw, "dram_capacity": mem, "sram_capacity": np.zeros(n_h),
        "device_memory": mem, "link_bandwidth": np.full(n_h, 450e9),
        "scaleout_bandwidth": np.full(n_h, 50e9), "scaleout_latency": np.full(n_h, 5e-6),
        "tdp": np.full(n_h, 700.0),
        "host_power": np.full(n_h, 575.0), "tdp_estimated": np.zeros(n_h, dtype=np.int64),
        "host_power_estimated": np.zeros(n_h, dtype=np.int64),
        "price_usd_per_hour": np.full(n_h, 3.0),
        "price_source": np.array(["Cloud offering"] * n_h, dtype=object),
        "release_year": np.full(n_h, 2023),
        "params_total": total, "params_active": active, "n_layers": np.full(n_m, 32),
        "kv_bytes_per_token": np.full(n_m, 131072),
        "kv_window_bytes_per_token": np.zeros(n_m, dtype=np.int64),
        "attention_window": np.zeros(n_m, dtype=np.int64),
        "weight_bits": [8 if "8" in p else 16 for p in precision],
        "act_bits": [8 if "8" in p else 16 for p in precision],
        "kv_bits": [8 if "8" in p else 16 for p in precision],
        "attn_bits": [8 if "8" in p else 16 for p in precision],
        "tp": [x.tp for x in lays], "pp": [x.pp for x in lays], "ep": [x.ep for x in lays],
        "dp": [x.dp for x in lays], "offload": [x.offload for x in lays],
        "spill": [int(x.spill) for x in lays], "devices": [x.devices for x in lays],
    }
    for dim, name, units, long_name in COORDS:
        coords[name] = (dim, np.asarray(per[name]), {"units": units, "long_name": long_name})
    # "source" as every result sweep writes carries it (sweep.open refuses files without it)
    ds = xr.Dataset(data_vars, coords=coords, attrs={"title": "synthetic accel-sweep result",
                                                     "source": "accel-sweep (synthetic test)"})
    for d in DIM_ATTRS:
        if d in ds.coords:
            ds[d].attrs.update(DIM_ATTRS[d])
    return ds


@st.composite
def small_results(draw, max_size=3):
    """Tiny results with integer-valued metrics (frequent ties) and NaN / infeasible points."""
    n = st.integers(1, max_size)
    nh, nb, nc, nl = draw(n), draw(n), draw(n), draw(n)
    nm = draw(st.integers(1, 2))
    shape = (nh, nm, nb, nc, 1, nl)
    size = int(np.prod(shape))
    ints = st.lists(st.integers(1, 4), min_size=size, max_size=size)
    vals = {name: np.array(draw(ints), dtype=np.float64).reshape(shape)
            for name in ("throughput", "tpot", "tokens_per_joule")}
    fits = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size))).reshape(shape)
    nan = np.array(draw(st.lists(st.sampled_from([False, False, False, True]), min_size=size,
                                 max_size=size))).reshape(shape)
    vals["tokens_per_joule"] = np.where(nan, np.nan, vals["tokens_per_joule"])
    ds = make_result(hardware=[f"h{i}" for i in range(nh)],
                     models=["dense-a", "moe-b"][:nm], batch=[2 ** i for i in range(nb)],
                     context=[128 * 4 ** i for i in range(nc)], precision=["bf16"],
                     parallelism=["tp1", "tp2", "tp4"][:nl], values=vals, fits=fits,
                     seed=draw(st.integers(0, 10)))
    return ds


@st.composite
def permuted(draw, ds):
    """``ds`` with every dim's coordinate order shuffled."""
    idx = {d: draw(st.permutations(range(ds.sizes[d]))) for d in ds.dims}
    return ds.isel({d: list(v) for d, v in idx.items()})


# ------------------------------------------------------------------------------ references
def brute_pareto(points: list[tuple[float, ...]], valid: list[bool]) -> list[bool]:
    out = []
    for i, p in enumerate(points):
        if not valid[i]:
            out.append(False)
            continue
        dominated = any(valid[j] and all(q >= v for q, v in zip(points[j], p))
                        and any(q > v for q, v in zip(points[j], p))
                        for j in range(len(points)) if j != i)
        out.append(not dominated)
    return out


def feasible_np(ds, name):
    v = ds[name].values.astype(np.float64)
    return np.where(np.isfinite(v) & (ds["fits"].values == 1), v, np.nan)


# ------------------------------------------------------------------------------ array level
def test_pareto_mask_ties_and_nan():
    x = np.array([[[1, 1], [1, 1], [0, 1], [2, 0], [np.nan, 5], [3, 3]]], dtype=float)
    valid = np.array([[True, True, True, True, True, False]])
    got = an.pareto_mask(x, valid)[0]
    # equal points both stay; [0,1] dominated by [1,1]; NaN and invalid never on the front;
    # the invalid [3,3] does not dominate anything
    assert got.tolist() == [True, True, False, True, False, False]


def test_pareto_large_group_path_matches_pairs():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 6, size=(2, an.LARGE_GROUP + 300, 3)).astype(float)
    x[rng.random(x.shape[:2]) < 0.1, 1] = np.nan
    fast = an.pareto_mask(x)
    pairs = np.stack([_pairs(x[g]) for g in range(2)])
    assert (fast == pairs).all()


def _pairs(x):
    ok = np.isfinite(x).all(axis=-1)
    ge = np.all(x[:, None, :] >= x[None, :, :], axis=-1)
    dom = ge & ~ge.T & ok[:, None]
    return ok & ~dom.any(axis=0)


def test_variation_and_extreme_index():
    v = np.array([[2.0, np.nan, 0.0], [4.0, 3.0, 0.0], [1.0, np.nan, 5.0]])
    ok = np.isfinite(v)
    ratio, hi, lo, count = an.variation(v, ok, axis=0)
    assert ratio[0] == 4.0 and np.isnan(ratio[1]) and np.isinf(ratio[2])
    assert count.tolist() == [3, 1, 3] and hi[1] == 3.0 and lo[1] == 3.0
    same = an.variation(np.zeros((2, 1)), np.ones((2, 1), bool), axis=0)[0]
    assert same[0] == 1.0
    idx = an.extreme_index(np.array([[1.0, 3.0, 3.0, np.nan]]), np.ones((1, 4), bool), "max",
                           order=np.array([2, 1, 0, 3]))
    assert idx.tolist() == [2]  # tie between 1 and 2 goes to the first in `order`
    assert an.extreme_index(np.full((1, 2), np.nan), np.ones((1, 2), bool), "min")[0] == -1


def test_change_points_and_nearest():
    codes = np.array([0, 0, 1, -1, 1, 2])
    assert an.change_points(codes).tolist() == [False, True, False, False, True]
    assert an.nearest_log(np.array([128, 2048, 512]), 1024, 512, 4096) == 2  # tie -> smaller
    assert an.nearest_log(np.array([128, 256]), 1024, 512, 4096) == -1


# ------------------------------------------------------------------------------ properties
@given(small_results(), st.sampled_from([["hardware"], ["hardware", "parallelism"],
                                         ["batch", "context"], []]))
def test_pareto_equals_brute_force(ds, over):
    objs = {"tpot": "min", "throughput": "max", "tokens_per_joule": "max"}
    mask = ds.sweep.pareto(objs, over=over, basis=None)  # grid values (bases: test_basis.py)
    assert mask.dims == ds["tpot"].dims and mask.dtype == bool
    rest = [d for d in ds["tpot"].dims if d not in over]
    arrs = {n: ds[n].transpose(*rest, *over).values for n in objs}
    fits = ds["fits"].transpose(*rest, *over).values
    got = mask.transpose(*rest, *over).values
    lead = got.shape[:len(rest)]
    for g in itertools.product(*(range(s) for s in lead)):
        pts = [tuple(float(arrs[n][g].ravel()[i]) * (1 if d == "max" else -1)
                     for n, d in objs.items()) for i in range(got[g].size)]
        valid = [bool(fits[g].ravel()[i]) and all(np.isfinite(x) for x in pts[i])
                 for i in range(len(pts))]
        assert got[g].ravel().tolist() == brute_pareto(pts, valid)


@given(small_results(), st.sampled_from(["throughput", "tpot", "tokens_per_joule"]),
       st.sampled_from(["hardware", "parallelism", "batch"]))
def test_variation_at_least_one_and_brute_force(ds, metric, over):
    v = ds.sweep.variation(metric, over=over, best_over=(), basis=None)
    r = v["ratio"].values
    assert np.all(r[np.isfinite(r)] >= 1.0)
    vals = feasible_np(ds, metric)
    axis = ds[metric].dims.index(over)
    count = np.isfinite(vals).sum(axis=axis)
    np.testing.assert_array_equal(np.isnan(r), count < 2)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        expect = np.nanmax(vals, axis=axis) / np.nanmin(vals, axis=axis)
    np.testing.assert_allclose(r[count >= 2], expect[count >= 2])
    best = v["best"].values
    assert ((best == "") == (count == 0)).all()


@given(small_results(), st.sampled_from(["throughput", "tpot", "tokens_per_joule"]),
       st.sampled_from([(), ("parallelism",)]))
def test_winner_attains_the_extreme(ds, metric, best_over):
    w = ds.sweep.winner(metric, best_over=best_over, basis=None)
    cand = ds.sweep.best(metric, over=best_over) if best_over else ds[metric].where(
        ds["fits"] == 1)
    direction = DIRECTION[metric]
    ext = cand.max("hardware") if direction == "max" else cand.min("hardware")
    labels = [str(x) for x in ds["hardware"].values]
    wv = w.values
    cv = cand.transpose("hardware", *w.dims).values
    for idx in np.ndindex(wv.shape):
        e = float(ext.values[idx])
        if wv[idx] == "":
            assert np.isnan(e)
        else:
            assert cv[(labels.index(wv[idx]), *idx)] == e
            # ties go to the label that sorts first
            tied = [lab for i, lab in enumerate(labels) if cv[(i, *idx)] == e]
            assert wv[idx] == min(tied)


@given(small_results(), st.sampled_from(["throughput", "tpot"]))
def test_frontier_is_exactly_where_the_winner_changes(ds, metric):
    table = ds.sweep.frontier(metric, along=("batch", "context"))
    w = ds.sweep.winner(metric).sortby(["batch", "context"])  # both: default basis, best layout
    expected = set()
    for d in ("batch", "context"):
        other = [x for x in w.dims if x != d]
        for idx in itertools.product(*(range(w.sizes[x]) for x in other)):
            line = w.isel(dict(zip(other, idx)))
            for i in range(w.sizes[d] - 1):
                a, b = str(line.values[i]), str(line.values[i + 1])
                if a and b and a != b:
                    fixed = tuple(str(line[x].values) for x in other)
                    expected.add((d, fixed, int(line[d].values[i]), int(line[d].values[i + 1]),
                                  a, b))
    got = set()
    for _, row in table.iterrows():
        other = [x for x in w.dims if x != row["dim"]]
        got.add((row["dim"], tuple(str(row[x]) for x in other), int(row["value_before"]),
                 int(row["value_after"]), row["winner_before"], row["winner_after"]))
    assert got == expected


@given(st.data(), st.sampled_from(["throughput", "tpot"]),
       st.sampled_from(["pareto", "variation", "winner", "frontier", "max_variation"]))
def test_results_invariant_under_reordering(data, metric, what):
    ds = data.draw(small_results())
    shuffled = data.draw(permuted(ds))
    if what == "pareto":
        objs = ["tpot", "throughput", "tokens_per_joule"]
        a, b = ds.sweep.pareto(objs), shuffled.sweep.pareto(objs)
        xr.testing.assert_equal(a.sortby(list(a.dims)).reset_coords(drop=True),
                                b.sortby(list(a.dims)).reset_coords(drop=True))
    elif what == "variation":
        rest = ["model", "batch", "context"]  # each device at its best layout
        va = ds.sweep.variation(metric).sortby(rest)
        vb = shuffled.sweep.variation(metric).sortby(rest)
        for k in ("ratio", "best", "worst", "n_feasible"):
            np.testing.assert_array_equal(va[k].values, vb[k].values)
    elif what == "winner":
        wa, wb = ds.sweep.winner(metric), shuffled.sweep.winner(metric)
        np.testing.assert_array_equal(wa.sortby(list(wa.dims)).values,
                                      wb.sortby(list(wa.dims)).values)
    elif what == "frontier":
        pd.testing.assert_frame_equal(ds.sweep.frontier(metric, best_over="parallelism"),
                                      shuffled.sweep.frontier(metric, best_over="parallelism"))
    else:
        ma, mb = ds.sweep.max_variation(metric), shuffled.sweep.max_variation(metric)
        assert (ma is None) == (mb is None)
        if ma is not None:
            assert ma["ratio"] == pytest.approx(mb["ratio"])


def test_regimes_and_strategies_invariant_under_reordering():
    ds = make_result(batch=(1, 8, 16, 64), context=(128, 1024, 2048, 32768), seed=12)
    rng = np.random.default_rng(0)
    shuffled = ds.isel({d: rng.permutation(n) for d, n in ds.sizes.items()})
    ra = ds.sweep.regimes()
    rb = shuffled.sweep.regimes().sel(hardware=ra["hardware"])
    np.testing.assert_allclose(ra["score"].values, rb["score"].values, equal_nan=True)
    np.testing.assert_array_equal(ra["winner"].values, rb["winner"].values)
    sa, sb = ds.sweep.strategies(), shuffled.sweep.strategies()
    for k in ("ep_vs_tp_param_compute", "ep_vs_tp_latency_cov", "ep_vs_tp_throughput_per_device"):
        assert float(sa[k]) == pytest.approx(float(sb[k]))
    xr.testing.assert_allclose(sa["latency_cov"], sb["latency_cov"].sel(
        parallelism=sa["parallelism"]))


# ------------------------------------------------------------------------------ unit tests
def test_variation_lower_is_better_and_max_variation():
    ds = make_result(seed=3)
    v = ds.sweep.variation("tpot", best_over=(), basis=None)
    assert v.attrs["direction"] == "min"
    tp = ds["tpot"].where(ds["fits"] == 1)
    i = (v["n_feasible"] >= 1)
    best_val = tp.min("hardware").where(i)
    # the best of a lower-is-better metric is the minimum
    for idx in np.ndindex(v["best"].shape):
        if v["best"].values[idx]:
            lab = v["best"].values[idx]
            sel = dict(zip(v["best"].dims, idx))
            assert float(tp.isel(sel).sel(hardware=lab)) == float(best_val.isel(sel))
    mv = ds.sweep.max_variation("tpot", best_over=(), basis=None)
    assert mv["ratio"] == pytest.approx(float(v["ratio"].max()))
    assert mv["best_value"] <= mv["worst_value"]
    pt = tp.sel(mv["where"])
    assert float(pt.sel(hardware=mv["best"])) == pytest.approx(mv["best_value"])
    assert float(pt.sel(hardware=mv["worst"])) == pytest.approx(mv["worst_value"])
    mt = ds.sweep.max_variation("throughput", best_over="parallelism")
    assert mt["best_value"] >= mt["worst_value"] and "parallelism" not in mt["where"]


def test_max_variation_none_when_never_two_feasible():
    ds = make_result(hardware=("only",))
    assert ds.sweep.max_variation("throughput") is None
    assert np.isnan(ds.sweep.variation("throughput")["ratio"].values).all()


def test_bad_input_is_a_spec_error():
    ds = make_result()
    with pytest.raises(SpecError, match="unknown metric"):
        ds.sweep.variation("speed")
    with pytest.raises(SpecError, match="not a dim"):
        ds.sweep.winner("throughput", over="device")
    with pytest.raises(SpecError, match="no better direction"):
        ds.sweep.winner("arithmetic_intensity")
    with pytest.raises(SpecError, match="two or more"):
        ds.sweep.pareto(["tpot"])
    with pytest.raises(SpecError, match="must be 'max' or 'min'"):
        ds.sweep.pareto({"tpot": "low", "throughput": "max"})
    with pytest.raises(SpecError, match="given twice"):
        ds.sweep.pareto(["tpot", "tpot:min"])
    with pytest.raises(SpecError, match="best_over"):
        ds.sweep.variation("throughput", best_over="hardware")


def test_pareto_objective_forms_agree():
    ds = make_result(seed=5)
    a = ds.sweep.pareto({"tpot": "min", "throughput": "max"})
    b = ds.sweep.pareto(["tpot", "throughput"])
    c = ds.sweep.pareto("tpot:min,throughput")
    xr.testing.assert_equal(a, b)
    xr.testing.assert_equal(a, c)
    assert a.sum() > 0 and not (a & (ds["fits"] == 0)).any()


def test_works_with_output_len_dim_size_one_dims_and_scalar_coords():
    ds = make_result(output_len=[64, 256], batch=(8,), precision=("bf16",))
    assert "output_len" in ds.dims and ds.sizes["batch"] == 1
    v = ds.sweep.variation("throughput")
    assert "output_len" in v.dims
    f = ds.sweep.frontier("throughput")
    assert set(f["dim"]) <= {"context"}
    m = ds.sweep.pareto(["tpot", "throughput"], over=["hardware", "parallelism", "output_len"])
    assert m.dims == ds["tpot"].dims
    sub = ds.sel(model="dense-8b", context=2048)  # dims selected away -> scalar coords
    assert sub.sweep.winner("throughput").dims == ("batch", "output_len", "precision")
    assert sub.sweep.winner("throughput", best_over=()).dims == (
        "batch", "output_len", "precision", "parallelism")
    assert isinstance(sub.sweep.frontier("throughput"), pd.DataFrame)
    assert sub.sweep.pareto(["tpot", "throughput"], over=["hardware", "context"]).ndim == 5
    r = sub.sweep.regimes()
    assert set(r["regime"].values) >= {"low_latency", "moe"}


def test_dask_backed_results_agree():
    ds = make_result(seed=7, batch=(1, 2, 4, 8), context=(128, 1024, 8192))
    dk = ds.chunk({"hardware": 1, "batch": 2, "parallelism": 1})
    objs = ["tpot", "throughput", "tokens_per_joule"]
    lazy = dk.sweep.pareto(objs)
    assert lazy.chunks is not None
    xr.testing.assert_equal(lazy.compute(), ds.sweep.pareto(objs))
    for k in ("ratio", "best", "worst"):
        np.testing.assert_array_equal(dk.sweep.variation("throughput")[k].values,
                                      ds.sweep.variation("throughput")[k].values)
    np.testing.assert_array_equal(dk.sweep.winner("tpot").values, ds.sweep.winner("tpot").values)
    pd.testing.assert_frame_equal(dk.sweep.frontier("throughput"),
                                  ds.sweep.frontier("throughput"))
    assert dk.sweep.max_variation("tpot") == ds.sweep.max_variation("tpot")
    xr.testing.assert_allclose(dk.sweep.regimes()["score"], ds.sweep.regimes()["score"])
    assert float(dk.sweep.strategies()["ep_vs_tp_latency_cov"]) == pytest.approx(
        float(ds.sweep.strategies()["ep_vs_tp_latency_cov"]))


def test_from_disk(tmp_path):
    from sweep.results.files import open_result, write_dataset

    ds = make_result(seed=11)
    path = write_dataset(ds, tmp_path / "r.nc")
    disk = open_result(path)
    request_close = disk.close
    xr.testing.assert_equal(disk.sweep.pareto(["tpot", "throughput"]).reset_coords(drop=True),
                            ds.sweep.pareto(["tpot", "throughput"]).reset_coords(drop=True))
    assert disk.sweep.max_variation("throughput") == ds.sweep.max_variation("throughput")
    pd.testing.assert_frame_equal(disk.sweep.frontier("tpot"), ds.sweep.frontier("tpot"),
                                  check_dtype=False)
    request_close()


# ------------------------------------------------------------------------------ regimes
def test_regimes_structure_and_normalisation():
    ds = make_result(batch=(1, 8, 16, 64), context=(128, 1024, 2048, 32768), seed=2)
    r = ds.sweep.regimes()
    assert r["score"].dims == ("regime", "hardware")
    assert list(r["regime"].values) == ["low_latency", "moderate_batch", "high_throughput",
                                        "long_context", "multi_model", "moe"]
    for i in range(r.sizes["regime"]):
        s = r["score"].isel(regime=i).values
        assert r["reason"].values[i] == ""
        assert np.nanmax(s) == pytest.approx(1.0) and np.all((s >= 0) & (s <= 1))
        assert r["winner"].values[i] == str(r["hardware"].values[int(np.argmax(s))])


def test_regime_low_latency_matches_hand_computation():
    ds = make_result(batch=(1, 8), context=(1024, 4096), seed=4, p_infeasible=0.0)
    r = ds.sweep.regimes()
    e2e = ds["e2e_latency"].sel(batch=1, context=1024).min(["parallelism", "precision"])
    rel = (e2e.min("hardware") / e2e).mean("model")
    expect = (rel / rel.max()).values
    np.testing.assert_allclose(r["score"].sel(regime="low_latency").values, expect, rtol=1e-6)


def test_regimes_degrade_gracefully():
    ds = make_result(models=("dense-8b",), batch=(64, 128), context=(128, 256))
    r = ds.sweep.regimes()
    reasons = dict(zip(r["regime"].values, r["reason"].values))
    assert "batch" in reasons["low_latency"]
    assert "context" in reasons["long_context"]
    assert "mixture-of-experts" in reasons["moe"]
    assert np.isnan(r["score"].sel(regime="moe")).all()
    nofit = make_result(fits=np.zeros((3, 2, 3, 2, 2, 3), bool))
    rr = nofit.sweep.regimes()
    assert all(rr["reason"].values) and np.isnan(rr["score"].values).all()
    assert "feasible" in str(rr["reason"].sel(regime="high_throughput").values)


def test_moderate_batch_slo_excludes_slow_points():
    ds = make_result(batch=(8, 16), context=(1024,), seed=9, p_infeasible=0.0)
    slow = ds.copy()
    slow["tpot"] = ds["tpot"].where(ds["hardware"] != "hw-a", 1.0)
    r = slow.sweep.regimes()
    assert float(r["score"].sel(regime="moderate_batch", hardware="hw-a")) == 0.0
    assert float(r["coverage"].sel(regime="moderate_batch", hardware="hw-a")) == 0.0


# ------------------------------------------------------------------------------ strategies
def test_strategies_ep_vs_tp():
    ds = make_result(parallelism=("tp1", "tp2", "tp1-ep2"), seed=6, p_infeasible=0.0)
    cov = xr.where(ds["ep"] > 1, 0.2, 0.1) * xr.ones_like(ds["latency_cov"])
    ds["latency_cov"] = cov.where(ds["fits"] == 1).astype(np.float32)
    s = ds.sweep.strategies()
    assert list(s["strategy"].values) == ["single", "tensor", "expert"]
    assert float(s["ep_vs_tp_latency_cov"]) == pytest.approx(2.0)
    # EP serves only the MoE model (47/13); TP serves the dense (1) and the MoE model
    assert float(s["ep_param_compute"]) == pytest.approx(47 / 13)
    assert float(s["tp_param_compute"]) == pytest.approx((1 + 47 / 13) / 2)
    assert float(s["ep_vs_tp_param_compute"]) == pytest.approx(2 * (47 / 13) / (1 + 47 / 13))
    assert s["params_per_device"].sel(parallelism="tp2") == pytest.approx((8e9 + 47e9) / 4)
    assert int(s["matched_points"]) > 0


def test_strategies_without_ep_or_params():
    ds = make_result(parallelism=("tp1", "tp2"))
    s = ds.sweep.strategies()
    assert np.isnan(float(s["ep_vs_tp_latency_cov"]))
    assert "no expert-parallel layout" in s.attrs["notes"]
    bare = ds.drop_vars(["params_total", "params_active", "tp", "pp", "ep", "dp", "offload"])
    s2 = bare.sweep.strategies()  # degrees parsed from layout names
    assert list(s2["tp"].values) == [1, 2] and np.isnan(float(s2["ep_vs_tp_param_compute"]))


# ------------------------------------------------------------------------------ scale + real
@pytest.mark.slow
def test_pareto_on_default_grid_size():
    """The Pareto filter on a default-grid-sized array (its speed is measured in benchmarks/)."""
    shape = (25, 15, 11, 11, 3, 9)  # the default grid: 225 candidates per group
    rng = np.random.default_rng(0)
    coords = {"hardware": [f"h{i}" for i in range(25)], "model": [f"m{i}" for i in range(15)],
              "batch": 2 ** np.arange(11), "context": 128 * 2 ** np.arange(11),
              "precision": ["a", "b", "c"], "parallelism": [f"l{i}" for i in range(9)]}
    fits = (rng.random(shape) > 0.3).astype(np.int8)
    ds = xr.Dataset({n: (DIMS, rng.lognormal(0, 1, shape).astype(np.float32))
                     for n in ("tpot", "throughput", "tokens_per_joule")}, coords=coords)
    ds["fits"] = (DIMS, fits)
    objs = {"tpot": "min", "throughput": "max", "tokens_per_joule": "max"}
    mask = ds.sweep.pareto(objs, basis=None)
    assert mask.shape == shape and 0 < int(mask.sum()) < mask.size
    # one group against brute force
    g = {"model": 3, "batch": 4, "context": 5, "precision": 1}
    sub = ds.isel(g)
    pts = [tuple(float(sub[n].values[h, p]) * (1 if d == "max" else -1) for n, d in objs.items())
           for h in range(25) for p in range(9)]
    valid = [bool(sub["fits"].values[h, p]) for h in range(25) for p in range(9)]
    got = mask.isel(g).transpose("hardware", "parallelism").values.ravel()
    assert got.tolist() == brute_pareto(pts, valid)


@pytest.fixture(scope="module")
def real_small():
    try:
        return sweep.run({"hardware": ["h100-sxm", "mi300x", "groq-lpu"],
                          "model": ["llama-3.1-8b", "mixtral-8x7b"], "batch": [1, 8, 64],
                          "context": [128, 2048], "precision": ["bf16", "fp8"],
                          "parallelism": ["tp1", "tp2", "ep2"]}, progress=False)
    except SpecError as exc:  # pragma: no cover - catalog not available
        pytest.skip(f"real run unavailable: {exc}")


def test_real_result(real_small):
    ds = real_small
    v = ds.sweep.variation("throughput", best_over="parallelism")
    r = v["ratio"].values
    assert np.all(r[np.isfinite(r)] >= 1)
    assert ds.sweep.max_variation("tpot")["best_value"] > 0
    mask = ds.sweep.pareto({"tpot": "min", "throughput": "max", "tokens_per_joule": "max"})
    assert int(mask.sum()) > 0 and not bool((mask & (ds["fits"] == 0)).any())
    reg = ds.sweep.regimes()
    assert "long_context" in reg["regime"].values
    assert "32768" in str(reg["reason"].sel(regime="long_context").values)
    s = ds.sweep.strategies()
    assert float(s["ep_param_compute"]) > 1.0
    assert isinstance(ds.sweep.frontier("throughput", best_over="parallelism"), pd.DataFrame)
    for m in FLOAT_METRICS:
        if DIRECTION[m] in ("max", "min"):
            ds.sweep.winner(m)


@given(st.integers(1, 5), st.integers(2, 40), st.integers(0, 2**31 - 1))
def test_two_objective_front_matches_brute_force(groups, n, seed):
    """The sorted two-objective path equals the definition, with ties, NaN, -inf and invalid
    points (which never dominate)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, size=(groups, n, 2)).astype(float)
    x[rng.random((groups, n)) < 0.15, rng.integers(0, 2)] = np.nan
    x[rng.random((groups, n)) < 0.05, 0] = -np.inf
    valid = rng.random((groups, n)) > 0.1
    got = an.pareto_mask(x, valid)
    for gi in range(groups):
        pts = [tuple(p) for p in x[gi]]
        ok = [bool(v) and bool(np.isfinite(p).all()) for v, p in zip(valid[gi], x[gi])]
        assert got[gi].tolist() == brute_pareto(pts, ok)
