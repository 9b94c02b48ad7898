"""Stacks without measurements (issue 20, item 3): a factor an engine file marks ``pooled = true``
is only a prior, replaced by the calibration overlay's cross-engine ``[pooled]`` value, which
``sweep calibrate`` fits on the rows of every engine with measurements at once."""

from __future__ import annotations

import tomllib

import numpy as np
import pandas as pd
import pytest

from grids import engines as E
from grids.engines.parameters import POOLABLE, engine_family
from grids.errors import SpecError
from grids.hardware import load_catalog
from sweep import validate as V
from sweep.validate import calibration as C
from tests.test_engines import parse, src, toy_raw

SHIPPED = V.read_measurements()
USABLE = V.usable_mask(SHIPPED)
FACTORS = ("bandwidth", "prefill_compute.bf16", "decode_compute.bf16")


@pytest.fixture(scope="module")
def devices():
    return load_catalog()


def _toy_pooled() -> E.Engine:
    raw = toy_raw()
    raw["defaults"]["bandwidth"] = src(1.0, pooled=True)
    raw["defaults"]["decode_compute"] = {"bf16": src(1.0, pooled=True)}
    return parse(raw)


def test_a_marked_factor_takes_the_pooled_value(devices):
    eng = _toy_pooled()
    h100 = devices["h100-sxm"]
    pooled = {"pooled": {"bandwidth": 0.7, "decode_compute": {"bf16": 0.55}}}
    p = E.resolve(eng, h100, pooled)
    assert p.bandwidth == 0.7 and p.decode_compute["bf16"] == 0.55
    # dtypes the file does not list fill from the replaced bf16 value, unless the pooled fit has
    # the dtype itself
    assert p.decode_compute["fp8"] == 0.55
    both = {"pooled": {"decode_compute": {"bf16": 0.55, "fp8": 0.4}}}
    q = E.resolve(eng, h100, both)
    assert (q.decode_compute["bf16"], q.decode_compute["fp8"], q.decode_compute["fp4"]) == \
        (0.55, 0.4, 0.55)
    assert "lists no fp8, and its bf16 value is a prior" in q.origin["decode_compute.fp8"]
    assert p.prefill_compute["bf16"] == 0.8  # not marked: the file's value
    assert p.origin["bandwidth"].startswith("overlay [pooled]")
    assert "replaces the prior 1 of toy.toml [defaults]" in p.origin["bandwidth"]
    # without an overlay the prior stands; an overlay without [pooled] leaves it too
    for ov in ({}, {"trtllm": {"defaults": {"bandwidth": 0.5}}}):
        q = E.resolve(eng, h100, ov)
        assert q.bandwidth == 1.0 and q.decode_compute["bf16"] == 1.0


def test_an_engines_own_fit_beats_the_pooled_value_and_unmarked_files_ignore_it(devices):
    gaudi3 = devices["gaudi3"]
    ov = {"pooled": {"bandwidth": 0.7}, "gaudi": {"defaults": {"bandwidth": 0.5}}}
    assert E.resolve("gaudi", gaudi3, ov).bandwidth == 0.5
    assert E.resolve("gaudi", gaudi3, {"pooled": {"bandwidth": 0.7}}).bandwidth == 0.7
    # TensorRT-LLM has measurements: nothing of its file is marked, [pooled] does not reach it
    # (marking its compute factors, so that a held-out NVIDIA took the pooled fit of the other
    # engines, made that held-out error worse: docs/validation.md)
    h100 = devices["h100-sxm"]
    strong = {"pooled": {"bandwidth": 0.3, "prefill_compute": {"bf16": 0.3},
                         "decode_compute": {"bf16": 0.3, "fp8": 0.3}}}
    assert E.resolve("trtllm", h100, strong).to_dict() == E.resolve("trtllm", h100, {}).to_dict()


def test_bad_pooled_markers_and_tables_are_one_clear_error():
    raw = toy_raw()
    raw["defaults"]["iteration_overhead"] = src("2 ms", pooled=True)
    raw["defaults"]["bandwidth"] = src(0.9, pooled="yes")
    with pytest.raises(SpecError) as info:
        parse(raw)
    text = str(info.value)
    assert "iteration_overhead: pooled = true is allowed on bandwidth, prefill_compute, " \
           "decode_compute only" in text
    assert "bandwidth: pooled must be true or false, got 'yes'" in text
    with pytest.raises(SpecError) as info:
        E.check_overlay({"pooled": {"iteration_overhead": 0.002, "bandwidth": 1.7},
                         "poold": {}})
    text = str(info.value)
    assert "[pooled]: iteration_overhead is not one of bandwidth" in text
    assert "bandwidth = 1.7" in text and "did you mean 'pooled'" in text


def _measured_pairs(devices) -> set[tuple[str, str]]:
    """(engine, vendor) of every usable row that names its engine and one catalog device."""
    rows = SHIPPED[USABLE]
    out = set()
    for engine, hw in zip(rows["engine"], rows["hardware"]):
        if isinstance(engine, str) and engine and hw in devices:
            out.add((engine, devices[hw].vendor))
    return out


def test_no_stack_without_measurements_is_assumed_perfect(devices):
    """Issue 20: an engine x vendor without usable measurements never runs at factor 1 of the
    hardware's achievable rates under the shipped calibration: its factors are its engine's own
    fit over other vendors, the cross-engine [pooled] fit, or an estimate below 1 with its rule."""
    measured = _measured_pairs(devices)
    checked = 0
    for engine in E.catalog_engines():
        if engine == "ideal":
            continue
        for dev in devices.values():
            p = E.resolve(engine, dev)
            if not p.supported or (engine_family(p.delegate), dev.vendor) in measured:
                continue
            checked += 1
            for key in FACTORS:
                name, _, dtype = key.partition(".")
                value = getattr(p, name)[dtype] if dtype else getattr(p, name)
                assert value < 1.0, (engine, dev.id, key, p.origin[key])
    assert checked > 30


def test_shipped_pooled_table_is_fitted_and_in_bounds(devices):
    """The shipped overlay carries the cross-engine fit (factors only), every value inside the
    fit's bounds, and Gaudi 3 under its vendor's stack takes it."""
    pooled = E.shipped_overlay()["pooled"]
    assert set(pooled) <= set(POOLABLE) and "decode_compute" in pooled
    p = E.resolve("native", devices["gaudi3"])
    assert p.delegate == "gaudi"
    assert p.bandwidth == pytest.approx(pooled["bandwidth"])
    assert p.decode_compute["bf16"] == pytest.approx(pooled["decode_compute"]["bf16"])
    for name, v in pooled.items():
        lo, hi, _ = C._bounds_of(name)
        for x in (v.values() if isinstance(v, dict) else [v]):
            assert lo < x < hi, (name, x)


def test_the_pooled_unit_recovers_shared_parameters():
    """Synthetic rows of two engines (TensorRT-LLM on H100, vLLM on AMD) made by the model with
    one shared parameter set are fitted back by the pooled unit."""
    use = USABLE & SHIPPED["load"].eq("static").to_numpy()
    nv = SHIPPED[use & SHIPPED["engine"].eq("trtllm").to_numpy()
                 & SHIPPED["hardware"].eq("h100-sxm").to_numpy()].sample(30, random_state=3)
    amd = SHIPPED[use & SHIPPED["engine"].eq("vllm").to_numpy()
                  & SHIPPED["publisher"].eq("AMD").to_numpy()].sample(30, random_state=3)
    rows = pd.concat([nv, amd]).reset_index(drop=True)
    ev = V.Evaluator(rows, overlay={})
    unit = C.plan_pooled(ev, 10)
    assert unit is not None and len(unit.rows) == len(rows)
    truth_values = dict.fromkeys(unit.params, 0.6)
    truth_values.update({"bandwidth": 0.75, "iteration_overhead": 2e-3,
                         "request_overhead": 12e-3})
    truth: dict = {}
    for p, v in truth_values.items():
        C._apply(truth, unit, C._unit_pairs(ev, unit), p, v)
    synth = V.compare(rows, overlay=truth)
    ok = synth["status"].eq("used").to_numpy()
    assert ok.sum() >= 40
    data = rows[ok].assign(value=synth.loc[ok, "predicted"].to_numpy())
    ev = V.Evaluator(data.reset_index(drop=True), overlay={})
    fit, table = C.fit_pooled(ev, 10, prior_weight=0.0, max_nfev=80)
    assert not fit.reverted
    for p, v in fit.values.items():
        assert v == pytest.approx(truth_values[p], rel=0.03), p
    assert table["bandwidth"] == pytest.approx(0.75, rel=0.03)
    assert set(table) <= set(POOLABLE)
    assert fit.after < 0.005 < fit.before
    # one engine alone is not a pooled value
    assert C.plan_pooled(V.Evaluator(nv.reset_index(drop=True), overlay={}), 10) is None


def test_one_vendors_information_sets_that_vendor_not_the_engine():
    """A parameter of an engine's defaults that one vendor's rows alone inform (>= 90% of the
    squared Jacobian) is found, and in the shipped overlay it stays off the engine level: it is
    set for that vendor (or fitted by the vendor's own unit), never inherited by the others."""
    jac = np.array([[1.0, 0.1], [2.0, 0.0], [0.0, 3.0], [0.1, 3.0]])
    shares = C._vendor_shares(jac, np.array(["A", "A", "B", "B"]), ["x", "y"])
    assert shares["x"]["A"] == pytest.approx(5.0 / 5.01)
    assert shares["y"]["B"] == pytest.approx(18.0 / 18.01)
    fit = C.UnitFit(unit=C.Unit("vllm", "defaults", "", np.arange(4), ["x", "y"]), start={},
                    values={"x": 0.3, "y": 0.5}, stderr={}, at_bound=[], rows=4, before=0.0,
                    after=0.0, male_before=0.0, male_after=0.0, success=True,
                    vendor_share={"x": {"A": 0.95, "B": 0.05}, "y": {"A": 0.5, "B": 0.5}})
    assert C.single_vendor_params(fit) == {"x": ("A", 0.3)}
    # the shipped overlay
    with open(C.default_output(), "rb") as fh:
        shipped = tomllib.load(fh)
    units = shipped["provenance"]["unit"]
    moved = 0
    for name, rec in units.items():
        for entry, value in zip(rec.get("single_vendor", []), rec.get("single_vendor_value", [])):
            param, vendor = entry.split(" -> ")
            engine = name.split(".")[0]
            base, _, dtype = param.partition(".")
            table = shipped[engine].get("defaults", {})
            assert (dtype not in table.get(base, {})) if dtype else (base not in table), entry
            if f"{engine}.vendor.{vendor}" not in units:
                got = shipped[engine]["vendor"][vendor]
                got = got[base][dtype] if dtype else got[base]
                assert got == pytest.approx(value), entry
            moved += 1
    assert moved >= 1
