"""Price catalog (grids/data/prices.toml), cost parameters and the cost of a device-hour (grids.prices).

Expected numbers are computed here by hand from the published inputs (offering price / accelerators,
purchase / (years x 8760 h) + USD/kW/month x kW / 730 h), never copied from the program's output.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grids.errors import SpecError
from grids.hardware import catalog_ids, derive_device, load_device
from grids.prices import (
    BASES,
    MONEY_UNITS,
    PARAMETERS,
    STRENGTHS,
    CostSpec,
    device_cost,
    device_costs,
    load_prices,
    missing_entries,
    parse_cost_spec,
    parse_money,
    parse_price_catalog,
)

REPO = Path(__file__).resolve().parents[1]
PRICES_TOML = REPO / "grids" / "data" / "prices.toml"
DOCS = REPO / "docs" / "prices.md"


@pytest.fixture(scope="module")
def cat():
    return load_prices()


def raw_file() -> dict:
    with open(PRICES_TOML, "rb") as fh:
        return tomllib.load(fh)


def fake_device(dev_id="toy", tdp=1000.0, **extra):
    return SimpleNamespace(id=dev_id, tdp=tdp, **extra)


# ----------------------------------------------------------------------------- catalog content


def test_every_catalog_device_has_an_entry(cat):
    """Every hardware id is priced or explicitly unpriced: "missing" is never silent."""
    assert missing_entries(catalog_ids(), cat) == []
    assert set(cat.pending) <= set(cat.devices), "pending_hardware ids need entries too"
    # the devices being added in parallel (brief) are all covered
    assert {"a100-sxm-40g", "l40s", "h100-pcie", "h100-nvl", "rtx-pro-6000", "mi250",
            "trainium1"} <= set(cat.devices)


def test_missing_entries_reports_unknown_ids(cat):
    assert missing_entries(["h100-sxm", "no-such-gpu"], cat) == ["no-such-gpu"]


def test_priced_and_unpriced_are_explicit(cat):
    for dev_id, p in cat.devices.items():
        if p.priced:
            assert p.cloud or p.capex, dev_id
        else:
            assert p.reason.strip(), f"{dev_id}: unpriced without a reason"
            assert not (p.cloud or p.capex or p.reserved), dev_id
            assert "not estimated" in p.reason.lower(), dev_id
    # the devices prices.md lists as having no public price
    for dev_id in ("mi250x", "mi325x", "max1550", "tpu-v7", "cs-3", "sn40l", "groq-lpu", "gc200",
                   "mtia-v2", "maia-100", "trainium2", "gaudi2"):
        assert not cat.devices[dev_id].priced, dev_id


def _walk(node, path=""):
    if isinstance(node, dict):
        if "value" in node:
            yield path, node
            return
        for k, v in node.items():
            yield from _walk(v, f"{path}.{k}" if path else k)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, f"{path}[{i}]")
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield path, node


def test_every_number_in_the_file_has_a_source():
    leaves = list(_walk(raw_file()))
    assert len(leaves) > 60
    for path, leaf in leaves:
        assert isinstance(leaf, dict), f"{path}: bare number {leaf!r}; write {{ value, source }}"
        assert str(leaf.get("source", "")).strip(), f"{path}: no source"
        if leaf.get("estimate"):
            assert str(leaf.get("rule", "")).strip(), f"{path}: estimate without rule"


def test_loaded_rows_keep_their_sources(cat):
    n = 0
    for p in cat.devices.values():
        for row in (*p.cloud, *p.reserved, *p.capex):
            assert row.sources["price"].source.strip()
            assert row.sources["accelerators"].source.strip()
            assert row.as_of.strip()
            n += 1
    assert n >= 30


def test_parameters_are_sourced_and_flagged(cat):
    params = cat.parameters
    assert set(params.sources) == set(PARAMETERS)
    for name, s in params.sources.items():
        assert s.source.strip(), name
    # utilisation is a rule, not a published figure: it must say so
    assert params.sources["utilisation"].estimate and params.sources["utilisation"].rule
    # the energy figure is old and must say so; the hosting figure names its year
    assert "old" in params.sources["energy_usd_per_kwh"].note.lower()
    assert "2023" in params.sources["hosting_usd_per_kw_month"].source


def test_preferred_rows_follow_the_documented_rules(cat):
    """[rules]: lowest full-instance on-demand price; strongest purchase evidence, then lowest."""
    for dev_id, p in cat.devices.items():
        if p.cloud:
            full = [c for c in p.cloud if c.includes_host]
            pref = p.preferred_cloud
            assert pref is not None and pref.includes_host, dev_id
            assert pref.usd_per_accelerator_hour == min(c.usd_per_accelerator_hour for c in full)
        if p.capex:
            best = min(p.capex, key=lambda c: (STRENGTHS.index(c.strength),
                                               c.usd_per_accelerator))
            assert p.preferred_capex == best, dev_id
        assert all(not r.preferred for r in p.reserved), dev_id


def test_gpu_component_price_is_not_preferred(cat):
    gcp = [c for c in cat.devices["h100-sxm"].cloud if c.provider == "Google Cloud"]
    assert gcp and not gcp[0].includes_host and not gcp[0].preferred


def test_per_accelerator_division_by_hand(cat):
    def row(dev, offering):
        return next(c for c in (*cat.devices[dev].cloud, *cat.devices[dev].reserved)
                    if c.offering.startswith(offering))

    assert row("h100-sxm", "p5.48xlarge").usd_per_accelerator_hour == pytest.approx(55.04 / 8)
    assert row("tpu-v5p", "tpu-v5p-8").usd_per_accelerator_hour == pytest.approx(16.8 / 4)
    assert row("gb200", "BM.GPU.GB200.4").usd_per_accelerator_hour == pytest.approx(64.0 / 4)
    assert row("inferentia2", "inf2.24xlarge").usd_per_accelerator_hour == pytest.approx(
        6.49063 / 6)
    cb = row("h100-sxm", "p5.48xlarge (EC2 Capacity Block)")
    assert cb.usd_per_accelerator_hour == pytest.approx(39.33 / 8)
    gaudi = cat.devices["gaudi3"].preferred_capex
    assert gaudi.usd_per_accelerator == pytest.approx(125000 / 8)


# ----------------------------------------------------------------------------- cost per hour


def test_cloud_basis_h100(cat):
    c = device_cost(load_device("h100-sxm"), prices=cat)
    assert c.basis == c.basis_used == "cloud" and c.priced and not c.fallback
    assert c.fixed_usd_per_hour == pytest.approx(31.92 / 8)  # Lambda 8x H100 SXM
    assert c.fixed_usd_per_second == pytest.approx(31.92 / 8 / 3600)
    assert not c.energy_billed and c.energy_usd_per_joule == 0.0
    assert "Lambda" in c.source and "skypilot-catalog" in c.source


def test_capex_basis_h100_by_hand(cat):
    dev = load_device("h100-sxm")
    c = device_cost(dev, CostSpec(basis="capex"), prices=cat)
    # host_power: the host share per accelerator, once the hardware catalog has the field
    power_kw = (dev.tdp + getattr(dev, "host_power", 0.0)) / 1000  # 700 W TDP today
    purchase_h = 199000 / 8 / (5 * 8760)  # DGX H100 reported list / 8 GPUs over 5 years
    hosting_h = 163.44 * power_kw / 730  # CBRE 2023 x (700 W TDP + host share)
    assert c.purchase_usd_per_hour == pytest.approx(purchase_h)
    assert c.hosting_usd_per_hour == pytest.approx(hosting_h)
    assert c.fixed_usd_per_hour == pytest.approx(purchase_h + hosting_h)
    assert c.hosting_power_w == pytest.approx(1000 * power_kw)
    assert c.energy_billed
    assert c.energy_usd_per_joule == pytest.approx(0.1107 * 1.58 / 3.6e6)
    boundary = "host_power" if hasattr(dev, "host_power") else "accelerator boundary only"
    assert boundary in c.source
    assert "supercluster.blog" in c.source


def _toy_catalog(purchase=43800.0, hourly=3.6):
    raw = raw_file()
    raw["devices"]["h100-sxm"]["capex"] = [{
        "seller": "test", "item": "toy", "accelerators": {"value": 1, "source": "t"},
        "price": {"value": purchase, "source": "t"}, "strength": "vendor_list",
        "includes_host": False, "includes": "toy", "as_of": "now", "preferred": True}]
    raw["devices"]["h100-sxm"]["cloud"] = [{
        "provider": "Toy", "offering": "toy1", "accelerators": {"value": 1, "source": "t"},
        "price": {"value": hourly, "source": "t"}, "region": "r", "as_of": "now",
        "includes_host": True, "preferred": True}]
    raw["devices"]["h100-sxm"].pop("reserved")
    return parse_price_catalog(raw)


def test_basis_can_be_given_by_name(cat):
    dev = load_device("h100-sxm")
    assert device_cost(dev, "capex", prices=cat) == device_cost(dev, CostSpec(basis="capex"),
                                                                 prices=cat)
    with pytest.raises(SpecError, match="not a price basis"):
        device_cost(dev, "lease", prices=cat)


def test_capex_formula_on_round_numbers():
    """43800 USD over 5 y = 1 USD/h; 730 USD/kW/month on 1 kW = 1 USD/h; + host_power 0.5 kW."""
    cat = _toy_catalog()
    spec = parse_cost_spec({"basis": "capex", "hosting_usd_per_kw_month": 730,
                            "amortisation_years": 5}, prices=cat)
    c = device_cost(fake_device("h100-sxm", tdp=1000.0), spec, prices=cat)
    assert c.purchase_usd_per_hour == pytest.approx(1.0)
    assert c.hosting_usd_per_hour == pytest.approx(1.0)
    c2 = device_cost(fake_device("h100-sxm", tdp=1000.0, host_power=500.0), spec, prices=cat)
    assert c2.hosting_power_w == pytest.approx(1500.0)
    assert c2.fixed_usd_per_hour == pytest.approx(2.5)
    assert "host_power 500 W" in c2.source


def test_cost_per_token_by_hand():
    cat = _toy_catalog(hourly=3.6)
    cloud = device_cost(fake_device("h100-sxm"), prices=cat)
    # 3.6 USD/h = 0.001 USD/s; 1000 token/s -> 1e-6 USD/token -> 1 USD per million tokens
    assert cloud.cost_per_mtok(1000.0, 700.0) == pytest.approx(1.0)
    assert cloud.tokens_per_dollar(1000.0, 700.0) == pytest.approx(1e6)
    half = device_cost(fake_device("h100-sxm"), parse_cost_spec({"utilisation": 0.5}, prices=cat),
                       prices=cat)
    assert half.cost_per_mtok(1000.0, 700.0) == pytest.approx(2.0)
    # capex energy: 0.36 USD/kWh, pue 1 -> 1e-7 USD/J; 1000 W -> 1e-4 USD/s on top of 1 USD/h
    spec = parse_cost_spec({"basis": "capex", "energy_usd_per_kwh": 0.36, "pue": 1.0,
                            "hosting_usd_per_kw_month": 0.0}, prices=cat)
    capex = device_cost(fake_device("h100-sxm", tdp=1000.0), spec, prices=cat)
    per_s = 1.0 / 3600 + 1e-4
    assert capex.usd_per_token(100.0, 1000.0) == pytest.approx(per_s / 100.0)
    # arrays in, arrays out (the kernels' integration will pass whole grids)
    tps = np.array([10.0, 100.0, 1000.0])
    np.testing.assert_allclose(capex.cost_per_mtok(tps, 1000.0), 1e6 * per_s / tps)


def test_pue_scales_only_the_energy_term():
    cat = _toy_catalog()
    a = device_cost(fake_device("h100-sxm"), parse_cost_spec({"basis": "capex", "pue": 1.0},
                                                              prices=cat), prices=cat)
    b = device_cost(fake_device("h100-sxm"), parse_cost_spec({"basis": "capex", "pue": 2.0},
                                                              prices=cat), prices=cat)
    assert b.energy_usd_per_joule == pytest.approx(2 * a.energy_usd_per_joule)
    assert b.fixed_usd_per_hour == pytest.approx(a.fixed_usd_per_hour)


def test_fallback_is_off_by_default_and_visible_when_on(cat):
    gaudi3 = load_device("gaudi3")  # purchase price only
    plain = device_cost(gaudi3, prices=cat)
    assert not plain.priced and math.isnan(plain.cost_per_mtok(100.0, 900.0))
    assert "fallback" in plain.source and "capex" in plain.source
    fb = device_cost(gaudi3, parse_cost_spec({"fallback": "capex"}, prices=cat), prices=cat)
    assert fb.priced and fb.basis == "cloud" and fb.basis_used == "capex" and fb.fallback
    assert fb.source.startswith("FALLBACK to capex")
    power_kw = (gaudi3.tdp + getattr(gaudi3, "host_power", 0.0)) / 1000  # 900 W TDP + host
    assert fb.fixed_usd_per_hour == pytest.approx(125000 / 8 / (5 * 8760) + 163.44 * power_kw / 730)
    # a device with a price on the requested basis does not fall back
    h100 = device_cost(load_device("h100-sxm"), parse_cost_spec({"fallback": True}, prices=cat),
                       prices=cat)
    assert h100.basis_used == "cloud" and not h100.fallback


def test_unpriced_and_missing_devices(cat):
    cs3 = device_cost(load_device("cs-3"), prices=cat)
    assert not cs3.priced and "CS-1" in cs3.source
    with pytest.raises(SpecError, match="no entry in the price catalog"):
        device_cost(fake_device("my-gpu"), prices=cat)
    nan = device_cost(fake_device("my-gpu"), prices=cat, missing="nan")
    assert not nan.priced
    with pytest.raises(SpecError) as exc:
        device_costs([fake_device("gpu-a"), fake_device("gpu-b")], prices=cat, missing="error")
    assert len(exc.value.problems) == 2


def test_spec_override_prices_an_unpriced_or_unknown_device(cat):
    spec = parse_cost_spec({"basis": "capex", "device": {"my-gpu": {"purchase_usd": "43800 USD"}},
                            "hosting_usd_per_kw_month": 0}, prices=cat)
    c = device_cost(fake_device("my-gpu"), spec, prices=cat)
    assert c.fixed_usd_per_hour == pytest.approx(1.0)
    assert "grid spec" in c.source
    spec = parse_cost_spec({"device": {"cs-3": {"cloud_usd_per_hour": "2 USD/h"}}}, prices=cat)
    assert device_cost(load_device("cs-3"), spec, prices=cat).fixed_usd_per_hour == 2.0


def test_hypothetical_device_is_priced_as_its_base(cat):
    base = load_device("h100-sxm")
    hypo = derive_device(base, "h100-fast", {"hbm_bandwidth": 8e12})
    c = device_cost(hypo, prices=cat)
    assert c.fixed_usd_per_hour == device_cost(base, prices=cat).fixed_usd_per_hour
    assert "base device 'h100-sxm'" in c.source


def test_cloud_provider_preference(cat):
    spec = parse_cost_spec({"cloud_provider": ["AWS", "Lambda"]}, prices=cat)
    assert device_cost(load_device("h100-sxm"), spec, prices=cat).fixed_usd_per_hour == (
        pytest.approx(55.04 / 8))
    # a device AWS does not list falls back to its preferred row
    assert device_cost(load_device("mi300x"), spec, prices=cat).fixed_usd_per_hour == (
        pytest.approx(48.0 / 8))


def test_every_priced_device_costs_something_on_some_basis(cat):
    for dev_id in catalog_ids():
        p = cat.devices[dev_id]
        costs = [device_cost(load_device(dev_id), CostSpec(basis=b), prices=cat) for b in BASES]
        assert any(c.priced for c in costs) == p.priced, dev_id
        for c in costs:
            if c.priced:
                assert 0.05 < c.fixed_usd_per_hour < 100.0, (dev_id, c.fixed_usd_per_hour)


# ----------------------------------------------------------------------------- units


@given(x=st.floats(1e-6, 1e9), kind=st.sampled_from([k for k in MONEY_UNITS if k != "fraction"]),
       data=st.data())
def test_money_units_convert(x, kind, data):
    unit = data.draw(st.sampled_from(sorted(MONEY_UNITS[kind][1])))
    factor = MONEY_UNITS[kind][1][unit]
    assert parse_money(f"{x!r} {unit}", kind) == pytest.approx(x * factor)
    assert parse_money(x, kind) == x


def test_money_unit_examples():
    assert parse_money("1 USD/s", "usd_per_hour") == 3600.0
    assert parse_money("60 months", "years") == pytest.approx(5.0)
    assert parse_money("120 USD/MWh", "usd_per_kwh") == pytest.approx(0.12)
    assert parse_money("11.07 cents/kWh", "usd_per_kwh") == pytest.approx(0.1107)
    assert parse_money("0.16344 USD/W/month", "usd_per_kw_month") == pytest.approx(163.44)


@pytest.mark.parametrize("value, kind, fragment", [
    ("3 USD/kWh", "usd_per_hour", "usd_per_kwh unit"),
    ("3 TB/s", "usd_per_hour", "unknown unit 'TB/s'"),
    ("three USD", "usd", "cannot read"),
    (True, "usd", "boolean"),
    (float("nan"), "usd", "not a finite"),
    ("1e999 USD", "usd", "not a finite"),
    ([1], "usd", "got list"),
    ("0.5 %", "fraction", "plain number"),
])
def test_money_unit_errors(value, kind, fragment):
    with pytest.raises(SpecError, match=fragment):
        parse_money(value, kind, "here")


# ----------------------------------------------------------------------------- bad price files

DELETE = object()
H100 = ("devices", "h100-sxm")
#: (group, path, new value or DELETE, fragment of the expected problem); mutations of one group
#: touch the same rows (one can hide another), mutations of different groups are independent
BAD_TABLES = [
    ("h100.cloud", (*H100, "cloud", 0, "price", "source"), DELETE, "missing 'source'"),
    ("h100.cloud", (*H100, "cloud", 0, "price", "value"), -55.04, "must be > 0"),
    ("h100.cloud", (*H100, "cloud", 0, "price", "value"), "55 USD/kWh", "usd_per_kwh unit"),
    ("h100.cloud", (*H100, "cloud", 0, "price", "value"), "55 EUR/h", "unknown unit"),
    ("h100.cloud", (*H100, "cloud", 0, "price"), 55.04, "every catalog number needs a source"),
    ("h100.cloud", (*H100, "cloud", 0, "accelerators", "value"), 2.5, "whole number"),
    ("h100.cloud", (*H100, "cloud", 0, "preferred"), True, "exactly one row must have preferred"),
    ("h100.cloud", (*H100, "cloud", 3, "preferred"), DELETE, "exactly one row must have preferred"),
    ("h100.cloud", (*H100, "cloud", 0, "includes_host"), "yes", "must be true or false"),
    ("h100.cloud", (*H100, "cloud", 0, "colour"), "red", "unknown key 'colour'"),
    ("h100.capex", (*H100, "capex", 0, "price", "value"), 0, "must be > 0"),
    ("h100.capex", (*H100, "capex", 0, "strength"), "rumour", "not one of vendor_list"),
    ("h100.reserved", (*H100, "reserved", 0, "preferred"), True, "never preferred"),
    ("h100.status", (*H100, "status"), "unpriced", "price rows are given"),
    ("h100.status", (*H100, "status"), "maybe", "must be \"priced\" or \"unpriced\""),
    ("cs-3", ("devices", "cs-3", "reason"), DELETE, "missing text field 'reason'"),
    ("unknown", ("devices", "h100-sxn"), {"status": "unpriced", "reason": "x"},
     "unknown device id"),
    ("b200", ("devices", "b200", "cloud"), [], "needs at least one"),
    ("energy", ("parameters", "energy_usd_per_kwh", "value"), "0.1 USD/h", "usd_per_hour unit"),
    ("utilisation", ("parameters", "utilisation", "value"), 1.5, "outside (0, 1]"),
    ("pue", ("parameters", "pue", "value"), 0.8, "outside [1, 5]"),
    ("amortisation", ("parameters", "amortisation_years"), DELETE, "missing amortisation_years"),
    ("amortisation", ("parameters", "amortisation_years", "estimate"), True, "needs a 'rule'"),
    ("rules", ("rules", "cloud_preferred"), DELETE, "cloud_preferred"),
]


def mutate(raw: dict, path: tuple, value) -> None:
    node = raw
    for k in path[:-1]:
        node = node[k]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value


@pytest.mark.parametrize("group, path, value, fragment", BAD_TABLES)
def test_bad_price_tables(group, path, value, fragment):
    raw = raw_file()
    mutate(raw, path, value)
    with pytest.raises(SpecError) as exc:
        parse_price_catalog(raw)
    assert any(fragment in p for p in exc.value.problems), exc.value.problems
    assert str(exc.value).startswith("price catalog")


@given(st.lists(st.sampled_from(range(len(BAD_TABLES))), min_size=2, max_size=8, unique=True))
def test_every_problem_is_reported_at_once(indices):
    """Independent mistakes (one per group) are all listed in one SpecError, each named."""
    chosen = {}
    for i in indices:
        chosen.setdefault(BAD_TABLES[i][0], BAD_TABLES[i])
    raw = raw_file()
    for _, path, value, _ in chosen.values():
        mutate(raw, path, value)
    with pytest.raises(SpecError) as exc:
        parse_price_catalog(raw)
    for *_, fragment in chosen.values():
        assert any(fragment in p for p in exc.value.problems), (fragment, exc.value.problems)


_not_a_number = st.text(alphabet=st.characters(categories=["L", "P", "Zs"]), max_size=12)
_wrong_unit = st.builds(lambda x, u: f"{x:g} {u}", st.floats(0.01, 1e4),
                        st.sampled_from(["USD", "USD/kWh", "USD/kW/month", "W", "TB/s", "EUR/h",
                                         "years"]))


@given(price=st.one_of(st.floats(max_value=0.0, allow_nan=False, allow_infinity=False),
                       st.floats(allow_nan=True).filter(lambda x: not math.isfinite(x)),
                       _not_a_number, _wrong_unit, st.booleans(), st.none(),
                       st.lists(st.integers(), max_size=2)))
def test_generated_bad_prices_are_rejected(price):
    raw = raw_file()
    raw["devices"]["l40s"]["cloud"][0]["price"]["value"] = price
    with pytest.raises(SpecError) as exc:
        parse_price_catalog(raw)
    assert any("l40s.cloud[0].price" in p for p in exc.value.problems), exc.value.problems


def test_the_shipped_file_parses_from_its_raw_form():
    cat = parse_price_catalog(raw_file())
    assert cat.devices.keys() == load_prices().devices.keys()


# ----------------------------------------------------------------------------- spec [cost]


def test_cost_spec_defaults(cat):
    spec = parse_cost_spec(None, prices=cat)
    assert spec == CostSpec() and spec.basis == "cloud" and spec.fallback == ""
    assert spec.resolve_parameters(cat) == cat.parameters


def test_cost_spec_overrides_with_units(cat):
    spec = parse_cost_spec({"basis": "capex", "energy_usd_per_kwh": "120 USD/MWh",
                            "amortisation_years": "48 months", "hosting_usd_per_kw_month": 150,
                            "utilisation": 0.6, "pue": 1.2, "fallback": "cloud"}, prices=cat)
    p = spec.resolve_parameters(cat)
    assert p.energy_usd_per_kwh == pytest.approx(0.12)
    assert p.amortisation_years == pytest.approx(4.0)
    assert p.amortisation_seconds == pytest.approx(4 * 8760 * 3600)
    assert p.hosting_usd_per_kw_month == 150 and p.utilisation == 0.6 and p.pue == 1.2
    assert p.sources["pue"].source == "grid spec [cost]"
    assert spec.fallback == "cloud"
    assert spec.to_dict()["basis"] == "capex"


@pytest.mark.parametrize("table, fragment", [
    ({"basis": "rental"}, "not a price basis"),
    ({"basis": "capx"}, "did you mean 'capex'"),
    ({"fallback": "cloud"}, "is the basis itself"),
    ({"fallback": "spot"}, "must be \"none\""),
    ({"energy_usd_per_kwh": "0.1 USD/h"}, "usd_per_hour unit"),
    ({"energy_usd_per_kwh": "0.1 GW"}, "unknown unit"),
    ({"energy_usd_per_kwh": -0.1}, "outside [0, 10]"),
    ({"utilisation": 0}, "outside (0, 1]"),
    ({"amortisation_year": 4}, "did you mean 'amortisation_years'"),
    ({"cloud_provider": "Azur"}, "unknown provider"),
    ({"device": {"h100-sxm": {"purchase_usd": -5}}}, "must be > 0"),
    ({"device": {"h100-sxm": {"price": 5}}}, "unknown key 'price'"),
    ({"device": {"h100-sxm": {}}}, "empty"),
    ({"device": {"b300": {"purchase_usd": 5}}}, "no such device in this grid"),
    ({"device": 5}, "must hold [cost.device.<id>] tables"),
])
def test_bad_cost_specs(cat, table, fragment):
    with pytest.raises(SpecError) as exc:
        parse_cost_spec(table, device_ids=["h100-sxm", "mi300x"], prices=cat)
    assert any(fragment in p for p in exc.value.problems), exc.value.problems
    assert "[cost]" in str(exc.value)


def test_cost_spec_reports_every_problem_at_once(cat):
    with pytest.raises(SpecError) as exc:
        parse_cost_spec({"basis": "rent", "utilisation": 2, "pue": "x", "colour": 1},
                        prices=cat)
    assert len(exc.value.problems) == 4


def test_cost_spec_must_be_a_table(cat):
    with pytest.raises(SpecError, match="must be a table"):
        parse_cost_spec("cloud", prices=cat)


# ----------------------------------------------------------------------------- docs


def test_docs_list_every_unpriced_device(cat):
    text = DOCS.read_text(encoding="utf-8")
    for dev_id in cat.unpriced():
        assert f"`{dev_id}`" in text, f"docs/prices.md does not list unpriced {dev_id}"
    for name in PARAMETERS:
        assert name in text


def test_cloud_price_rules(cat):
    """cloud_price (issue 21): median of the listed whole-instance offers, the cheapest, or only
    the named providers (others unpriced); each DeviceCost says which price it got."""
    from grids.hardware import load_device

    h100 = load_device("h100-sxm")
    whole = sorted(c.usd_per_accelerator_hour for c in cat.devices["h100-sxm"].cloud
                   if c.includes_host)
    median = device_cost(h100, parse_cost_spec({"cloud_price": "median"}, prices=cat), prices=cat)
    mid = len(whole) // 2
    want = whole[mid] if len(whole) % 2 else 0.5 * (whole[mid - 1] + whole[mid])
    assert median.fixed_usd_per_hour == pytest.approx(want)
    assert median.label.startswith("median of")
    cheap = device_cost(h100, parse_cost_spec({"cloud_price": "cheapest"}, prices=cat), prices=cat)
    assert cheap.fixed_usd_per_hour == pytest.approx(whole[0])
    only = parse_cost_spec({"cloud_provider": "AWS", "cloud_price": "provider"}, prices=cat)
    assert device_cost(h100, only, prices=cat).label.startswith("AWS")
    mi300x = device_cost(load_device("mi300x"), only, prices=cat)
    assert not mi300x.priced and "none of cost.cloud_provider" in mi300x.source
    with pytest.raises(SpecError, match="needs cloud_provider"):
        parse_cost_spec({"cloud_price": "provider"}, prices=cat)
    with pytest.raises(SpecError, match="cloud_price"):
        parse_cost_spec({"cloud_price": "cheapst"}, prices=cat)
