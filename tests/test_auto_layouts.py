"""Automatic layouts (grids/auto_layouts.py, ``parallelism = "auto"``) and the choice of a layout
per point (fewest devices, best on a budget) against brute force over the same layouts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sweep
from grids.auto_layouts import (
    HEADROOM,
    HOST_FABRIC_TP,
    MAX_TP,
    PP_LADDER,
    auto_layouts,
    family,
    weights_floor,
)
from grids.errors import SpecError
from grids.hardware import catalog_ids, load_device
from grids.models import catalog_models, load_model
from grids.precisions import parse_precision
from grids.spec import load_spec
from sweep.execute.points import evaluate

MODELS = [m.id for m in catalog_models()]


@given(st.sampled_from(catalog_ids()), st.sampled_from(MODELS),
       st.sampled_from(["bf16", "fp8", "w4a16", "int8"]), st.sampled_from([16, 256, 1024]))
@settings(max_examples=60)
def test_family_respects_its_rules(hw, model, prec, budget):
    dev, m, p = load_device(hw), load_model(model), parse_precision(prec)
    n0 = weights_floor(dev, m, p)
    # the floor: the fewest devices whose usable memory holds the weights (embedding and an
    # untied LM head at their 16-bit width)
    cap = sum(t.capacity for t in dev.tiers) * dev.efficiency.capacity_fraction
    ends = m.params_embed + (0 if m.lm_head_tied else m.params_lm_head)
    weights = (m.params_total - ends) * p.weight_bits / 8 + ends * p.embed_bits / 8
    assert (n0 - 1) * cap < weights <= n0 * cap or (n0 == 1 and weights <= cap)
    lays = family(dev, m, p, budget)
    names = [x.name for x in lays]
    assert len(names) == len(set(names))
    # the largest tp x ep group: the scale-up domain, or the host fabric's when it is one device
    group = dev.domain_size if dev.domain_size > 1 else HOST_FABRIC_TP
    top = max(HEADROOM * n0, group)
    for x in lays:
        assert n0 <= x.devices <= min(top, budget)
        assert x.tp & (x.tp - 1) == 0 and x.tp <= max(1, min(group, MAX_TP))
        assert m.tp_divisor % x.tp == 0
        assert x.pp in PP_LADDER and x.pp <= m.n_layers
        assert x.ep == 1 or (m.n_experts % x.ep == 0 and x.tp * x.ep <= group)
        assert x.dp == 1 and x.offload == 0 and not x.spill


def test_sram_parts_reach_hundreds_of_chips():
    """A 70B model in 8 bits on 230 MB Groq chips needs ~370 of them: auto goes there."""
    lays = family(load_device("groq-lpu"), load_model("llama-3.1-70b"), parse_precision("int8"))
    assert lays and min(x.devices for x in lays) >= 300
    assert max(x.devices for x in lays) <= 1024


def test_spec_auto_forms_and_errors():
    base = {"hardware": ["h100-sxm", "l40s"], "model": ["llama-3.1-8b"], "precision": ["bf16"]}
    a = load_spec({**base, "parallelism": "auto"})
    b = load_spec({**base, "parallelism": {"auto": True, "max_devices": 4}})
    assert [x.name for x in a.layouts] == [x.name for x in auto_layouts(
        a.hardware, a.models, a.precisions)]
    assert all(x.devices <= 4 for x in b.layouts) and len(b.layouts) < len(a.layouts)
    devs = [x.devices for x in a.layouts]
    assert devs == sorted(devs)
    for bad, why in (({"auto": False}, "must be true"), ({"auto": True, "max_devices": 0},
                                                          "max_devices"),
                     ({"auto": True, "tp": [1]}, "only other key")):
        with pytest.raises(SpecError, match=why):
            load_spec({**base, "parallelism": bad})


@pytest.fixture(scope="module")
def auto_run():
    spec = {"hardware": ["h100-sxm", "l40s", "groq-lpu"], "engine": ["ideal"],
            "model": ["llama-3.1-8b", "mixtral-8x7b"], "batch": [1, 64],
            "context": [1024, 8192], "output_len": 128, "precision": ["bf16", "int8"],
            "parallelism": {"auto": True, "max_devices": 512}}
    return load_spec(spec), sweep.run(spec, progress=False)


def _brute(spec, ds):
    """Every (point, layout) of the result evaluated again through sweep.evaluate."""
    rows = []
    for h in ds["hardware"].values:
        for m in ds["model"].values:
            for p in ds["precision"].values:
                for b in ds["batch"].values:
                    for s in ds["context"].values:
                        for lay in ds["parallelism"].values:
                            rows.append({"hardware": h, "engine": "ideal", "model": m,
                                         "precision": p, "batch": int(b), "context": int(s),
                                         "output_len": 128, "parallelism": lay})
    return evaluate(pd.DataFrame(rows))


def test_fewest_devices_and_best_on_a_budget_equal_brute_force(auto_run):
    spec, ds = auto_run
    out = _brute(spec, ds)
    devices = {x.display: x.devices for x in spec.layouts}
    out["devices"] = out["parallelism"].map(devices)
    keys = ["hardware", "model", "precision", "batch", "context"]
    ok = out[out["fits"] == 1].copy()
    # fewest devices: the minimum over the layouts that fit; the layout: the best throughput
    # among those (a tie may pick either)
    fewest = ds.sweep.fewest_devices().squeeze("engine", drop=True)
    got = fewest.to_dataframe()[["devices", "layout"]].reset_index()
    n = ok.groupby(keys)["devices"].min().rename("want").reset_index()
    m = got.merge(n, on=keys, how="left")
    assert m["want"].notna().sum() > 20
    np.testing.assert_array_equal(m["devices"].to_numpy(), m["want"].to_numpy())
    assert (m.loc[m["want"].isna(), "layout"] == "").all()
    tied = ok.merge(n, on=keys)
    tied = tied[tied["devices"] == tied["want"]]
    top = tied.groupby(keys)["throughput"].transform("max")
    allowed = set(map(tuple, tied.loc[tied["throughput"] == top, [*keys, "parallelism"]]
                      .astype(str).to_numpy()))
    for row in m[m["want"].notna()].itertuples():
        assert (*(str(getattr(row, k)) for k in keys), row.layout) in allowed
    # the best throughput on an 8-device budget: floor(8 / d) replicas of each layout
    ok["on8"] = ok["throughput"] * np.floor(8 / ok["devices"])
    ok.loc[ok["devices"] > 8, "on8"] = np.nan
    want8 = ok.groupby(keys)["on8"].max().rename("want").reset_index()
    best8 = ds.sweep.best_layout("throughput", basis="system:8").squeeze("engine", drop=True)
    g8 = best8["value"].to_dataframe().reset_index().merge(want8, on=keys, how="left")
    np.testing.assert_allclose(g8["value"].to_numpy(), g8["want"].to_numpy(), rtol=1e-5)


def test_fewest_within_the_family_bounds_the_union(auto_run):
    """The result holds the union of every (device, model, precision)'s family: the fewest
    devices found there is never more than within that point's own family."""
    spec, ds = auto_run
    fewest = ds.sweep.fewest_devices()
    for dev in spec.hardware:
        for m in spec.models:
            for p in spec.precisions:
                own = {x.name for x in family(dev, m, p, 512)}
                sub = ds.sel(hardware=dev.id, model=m.id, precision=p.name)
                fits = sub["fits"].sel(parallelism=[x for x in sub["parallelism"].values
                                                    if x in own])
                if not own:
                    continue
                d = sub["devices"].sel(parallelism=fits["parallelism"])
                in_family = d.where(fits == 1).min("parallelism")
                f = fewest["devices"].sel(hardware=dev.id, model=m.id, precision=p.name)
                both = np.isfinite(in_family.values)
                assert (f.values[both] <= in_family.values[both]).all()
