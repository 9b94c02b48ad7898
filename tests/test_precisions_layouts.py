"""Precision schemes (grids.precisions) and parallel layouts (grids.layouts)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grids.errors import SpecError
from grids.hardware import load_device
from grids.layouts import CATALOG_LAYOUTS, Layout, expand_degrees, parse_layout
from grids.models import load_model
from grids.precisions import KV_BITS_ALLOWED, NAMED, catalog_precisions, parse_precision

BASES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "w8a16", "w4a16", "fp4", "int4")

# ------------------------------------------------------------------------------ precisions


@pytest.mark.parametrize("name,w,a,kv,dtypes", [
    ("bf16", 16, 16, 16, ("bf16", "fp16")),
    ("fp16", 16, 16, 16, ("fp16", "bf16")),
    ("fp8", 8, 8, 16, ("fp8",)),
    ("int8", 8, 8, 16, ("int8",)),
    ("w8a16", 8, 16, 16, ("bf16", "fp16")),
    ("w4a16", 4, 16, 16, ("bf16", "fp16")),
    ("fp4", 4, 4, 16, ("fp4",)),
    ("fp32", 32, 32, 32, ("fp32",)),
    ("fp8-kv8", 8, 8, 8, ("fp8",)),
    ("w4a16-kv8", 4, 16, 8, ("bf16", "fp16")),
    ("bf16-kv4", 16, 16, 4, ("bf16", "fp16")),
])
def test_precision_table(name, w, a, kv, dtypes):
    p = parse_precision(name)
    assert (p.name, p.weight_bits, p.act_bits, p.kv_bits, p.compute_dtypes) == (name, w, a, kv,
                                                                                dtypes)


def test_precision_names_normalised():
    assert parse_precision("BF16").name == "bf16"
    assert parse_precision("  FP8-KV8 ").name == "fp8-kv8"
    assert parse_precision("W4A16") == parse_precision("w4a16")


def test_embed_bits():
    assert parse_precision("w4a16").embed_bits == 16
    assert parse_precision("fp32").embed_bits == 32


def test_catalog_precisions_all_parse():
    names = [p.name for p in catalog_precisions()]
    assert names == list(NAMED) and len(set(names)) == len(names)
    assert set(BASES) <= set(names)


@pytest.mark.parametrize("name,needle", [
    ("bf17", "did you mean 'bf16'"),
    ("fp9", "unknown precision"),
    ("", "unknown precision"),
    ("fp8-kv3", "KV bits must be one of"),
    ("fp8-kv", "unknown precision"),
    ("fp8_kv8", "unknown precision"),
])
def test_precision_errors(name, needle):
    with pytest.raises(SpecError) as exc:
        parse_precision(name)
    assert needle in str(exc.value)
    assert len(exc.value.problems) == 1


def test_unknown_precision_lists_the_accepted_form():
    with pytest.raises(SpecError) as exc:
        parse_precision("q4")
    assert "-kv<bits>" in str(exc.value) and "w4a16" in str(exc.value)


@given(base=st.sampled_from(BASES), kv=st.sampled_from((None, *KV_BITS_ALLOWED)),
       upper=st.booleans())
def test_precision_round_trip(base, kv, upper):
    name = base if kv is None else f"{base}-kv{kv}"
    p = parse_precision(name.upper() if upper else name)
    assert p.name == name
    assert parse_precision(p.name) == p
    if kv is not None:
        assert p.kv_bits == kv


# --- availability rule -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def devs():
    return {d: load_device(d) for d in ("a100-sxm-80g", "h100-sxm", "groq-lpu", "maia-100",
                                        "tpu-v5e", "gc200")}


def test_a100_has_no_fp8(devs):
    a100 = devs["a100-sxm-80g"].peak_flops
    assert parse_precision("fp8").compute_dtype_for(a100) is None
    assert parse_precision("fp8-kv8").compute_dtype_for(a100) is None
    assert parse_precision("fp4").compute_dtype_for(a100) is None
    assert parse_precision("w8a16").compute_dtype_for(a100) == "bf16"
    assert parse_precision("w4a16").compute_dtype_for(a100) == "bf16"
    assert parse_precision("int8").compute_dtype_for(a100) == "int8"


def test_h100_runs_fp8_natively(devs):
    h100 = devs["h100-sxm"].peak_flops
    assert parse_precision("fp8").compute_dtype_for(h100) == "fp8"
    assert parse_precision("bf16").compute_dtype_for(h100) == "bf16"
    assert parse_precision("fp16").compute_dtype_for(h100) == "fp16"


def test_fp16_only_device_runs_bf16_at_its_fp16_rate(devs):
    groq = devs["groq-lpu"].peak_flops
    assert "bf16" not in groq
    dtype = parse_precision("bf16").compute_dtype_for(groq)
    assert dtype == "fp16" and groq[dtype] == pytest.approx(188e12)
    assert parse_precision("w4a16").compute_dtype_for(groq) == "fp16"
    assert parse_precision("fp8").compute_dtype_for(groq) is None  # never falls back to 16-bit
    assert parse_precision("int8").compute_dtype_for(groq) == "int8"
    assert parse_precision("fp16").compute_dtype_for(devs["gc200"].peak_flops) == "fp16"


def test_bf16_only_device_runs_fp16(devs):
    maia = devs["maia-100"].peak_flops
    assert "fp16" not in maia
    assert parse_precision("fp16").compute_dtype_for(maia) == "bf16"
    assert parse_precision("fp32").compute_dtype_for(devs["tpu-v5e"].peak_flops) is None


def test_zero_peak_counts_as_absent():
    assert parse_precision("fp8").compute_dtype_for({"bf16": 1e15, "fp8": 0.0}) is None


# ------------------------------------------------------------------------------ layouts


@pytest.mark.parametrize("text,expected", [
    ("tp1", Layout()),
    ("tp4", Layout(tp=4)),
    ("tp4-ep2", Layout(tp=4, ep=2)),
    ("ep2-tp4", Layout(tp=4, ep=2)),
    ("tp2-pp2", Layout(tp=2, pp=2)),
    ("pp4", Layout(pp=4)),
    ("tp4-dp2", Layout(tp=4, dp=2)),
    ("tp8-off0.25", Layout(tp=8, offload=0.25)),
    ("tp8-offload0.5", Layout(tp=8, offload=0.5)),
    ("TP4", Layout(tp=4)),
    (" Tp4-EP2 ", Layout(tp=4, ep=2)),
    ("tp8-off0", Layout(tp=8)),
    ("tp1-off.5", Layout(offload=0.5)),
])
def test_parse_layout(text, expected):
    assert parse_layout(text) == expected


@pytest.mark.parametrize("text,name", [("tp1", "tp1"), ("ep8", "tp1-ep8"), ("pp4", "tp1-pp4"),
                                       ("ep2-tp4", "tp4-ep2"), ("tp8-offload0.5", "tp8-off0.5"),
                                       ("dp2-pp2-tp2", "tp2-pp2-dp2"), ("TP4", "tp4")])
def test_layout_names_normalised(text, name):
    assert parse_layout(text).name == name


def test_offload_spellings_equal():
    assert parse_layout("tp8-offload0.5") == parse_layout("tp8-off0.5")
    assert parse_layout("tp8-offload0.5").name == "tp8-off0.5"


def test_layout_devices():
    lay = parse_layout("tp4-pp2-ep2-dp3")
    assert lay.devices_per_replica == 16 and lay.devices == 48
    assert lay.to_dict()["devices"] == 48


def test_catalog_layouts_parse_and_are_distinct():
    lays = [parse_layout(name) for name in CATALOG_LAYOUTS]
    assert len(set(lays)) == len(lays)
    for lay in lays:
        assert parse_layout(lay.name) == lay


@pytest.mark.parametrize("text,needle", [
    ("", "empty layout name"),
    ("tq4", "cannot read part 'tq4'"),
    ("tp", "cannot read part 'tp'"),
    ("tp0", "tp must be a whole number >= 1"),
    ("tp1.5", "tp must be a whole number >= 1"),
    ("tp4-tp2", "tp given twice"),
    ("tp4-off1", "offload fraction must be in [0, 1)"),
    ("tp4-off-0.5", "cannot read part"),
    ("tp4_ep2", "cannot read part"),
])
def test_layout_errors(text, needle):
    with pytest.raises(SpecError) as exc:
        parse_layout(text)
    assert needle in str(exc.value)
    assert "tp" in str(exc.value)  # the message shows the accepted form or the offending part


def test_layout_errors_collected():
    with pytest.raises(SpecError) as exc:
        parse_layout("tp0-xx2-off2")
    assert len(exc.value.problems) == 3


degrees = st.sampled_from([1, 2, 3, 4, 8, 16, 64])
offloads = st.integers(0, 999).map(lambda k: k / 1000)


@given(tp=degrees, pp=degrees, ep=degrees, dp=degrees, off=offloads)
def test_layout_round_trip(tp, pp, ep, dp, off):
    lay = Layout(tp, pp, ep, dp, off)
    assert parse_layout(lay.name) == lay
    assert parse_layout(lay.name).name == lay.name


@given(tp=degrees, pp=degrees, ep=degrees, dp=degrees, off=offloads, data=st.data())
def test_any_spelling_parses_to_the_canonical_name(tp, pp, ep, dp, off, data):
    parts = [f"tp{tp}", f"pp{pp}", f"ep{ep}", f"dp{dp}"]
    if off:
        parts.append(f"{data.draw(st.sampled_from(['off', 'offload']))}{off!r}")
    keep = [p for p in parts if data.draw(st.booleans()) or p.startswith("tp")]
    keep = data.draw(st.permutations(keep))
    text = "-".join(p.upper() if data.draw(st.booleans()) else p for p in keep)
    lay = parse_layout(text)
    canonical = parse_layout(lay.name)
    assert canonical == lay and canonical.name == lay.name
    assert lay.tp == tp


@given(st.text(alphabet="tpedofl0123456789.-xTP ", max_size=16))
def test_parse_layout_raises_only_spec_error(text):
    try:
        lay = parse_layout(text)
    except SpecError:
        return
    assert parse_layout(lay.name) == lay


def test_expand_degrees():
    lays = expand_degrees(tp=[1, 2], ep=[1, 4], offload=[0.0, 0.5])
    assert len(lays) == 8
    assert {x.name for x in lays} >= {"tp1", "tp2-ep4-off0.5", "tp1-ep4"}


# --- layout x model ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def models():
    return {m: load_model(m) for m in ("llama-3.1-8b", "mixtral-8x7b", "deepseek-r1")}


def test_layout_suits_model(models):
    assert parse_layout("tp8").problems_for_model(models["llama-3.1-8b"]) == []
    assert parse_layout("tp2-ep4").problems_for_model(models["mixtral-8x7b"]) == []
    assert parse_layout("tp8-pp32").problems_for_model(models["llama-3.1-8b"]) == []


@pytest.mark.parametrize("layout,model,needle", [
    ("tp3", "llama-3.1-8b", "tp3 does not divide the 32 attention heads of llama-3.1-8b"),
    ("ep2", "llama-3.1-8b", "ep2 needs a mixture-of-experts model; llama-3.1-8b is dense"),
    ("ep3", "mixtral-8x7b", "ep3 does not divide the 8 experts of mixtral-8x7b"),
    ("pp33", "llama-3.1-8b", "pp33 exceeds the 32 layers of llama-3.1-8b"),
    ("ep16", "mixtral-8x7b", "ep16 does not divide the 8 experts"),
    ("tp256", "deepseek-r1", "does not divide the 128 attention heads"),
])
def test_layout_problems_for_model(layout, model, needle, models):
    problems = parse_layout(layout).problems_for_model(models[model])
    assert len(problems) == 1 and needle in problems[0]


def test_layout_problems_for_model_all_reported(models):
    problems = parse_layout("tp3-pp64-ep2").problems_for_model(models["llama-3.1-8b"])
    assert len(problems) == 3
