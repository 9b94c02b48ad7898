"""Quantities with units (grids.units): parsing to SI, formatting, and the errors for bad input."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grids.errors import SpecError, suggest
from grids.units import SI_UNIT, UNITS, format_quantity, parse_quantity

# Independent table (not read from grids.units): unit -> (dimension, factor to the SI base unit).
EXPECTED = {
    "B": ("bytes", 1.0), "kB": ("bytes", 1e3), "MB": ("bytes", 1e6), "GB": ("bytes", 1e9),
    "TB": ("bytes", 1e12), "PB": ("bytes", 1e15),
    "KiB": ("bytes", 1024.0), "MiB": ("bytes", 1024.0**2), "GiB": ("bytes", 1024.0**3),
    "TiB": ("bytes", 1024.0**4),
    "B/s": ("bandwidth", 1.0), "GB/s": ("bandwidth", 1e9), "TB/s": ("bandwidth", 1e12),
    "PB/s": ("bandwidth", 1e15), "GiB/s": ("bandwidth", 1024.0**3),
    "Gb/s": ("bandwidth", 1e9 / 8), "Tb/s": ("bandwidth", 1e12 / 8),
    "Pb/s": ("bandwidth", 1e15 / 8),
    "FLOP/s": ("flops", 1.0), "GFLOP/s": ("flops", 1e9), "TFLOP/s": ("flops", 1e12),
    "PFLOP/s": ("flops", 1e15), "EFLOP/s": ("flops", 1e18), "TOP/s": ("flops", 1e12),
    "POP/s": ("flops", 1e15),
    "W": ("power", 1.0), "kW": ("power", 1e3), "MW": ("power", 1e6),
    "s": ("time", 1.0), "ms": ("time", 1e-3), "us": ("time", 1e-6), "µs": ("time", 1e-6),
    "ns": ("time", 1e-9),
}
DIMENSIONS = ("bytes", "bandwidth", "flops", "power", "time")

finite = st.floats(min_value=-1e30, max_value=1e30, allow_nan=False, allow_infinity=False)


# ----------------------------------------------------------------------------- conversions


@pytest.mark.parametrize("unit", sorted(EXPECTED))
def test_documented_units_convert_to_si(unit):
    dim, factor = EXPECTED[unit]
    assert parse_quantity(f"2.5 {unit}", dim) == pytest.approx(2.5 * factor, rel=1e-15)
    assert parse_quantity(f"2.5{unit}", dim) == pytest.approx(2.5 * factor, rel=1e-15)  # no space


def test_catalog_examples_in_si():
    assert parse_quantity("3.35 TB/s", "bandwidth") == pytest.approx(3.35e12)
    assert parse_quantity("80 GB", "bytes") == 80e9
    assert parse_quantity("32 GiB", "bytes") == 32 * 2**30
    assert parse_quantity("989.4 TFLOP/s", "flops") == pytest.approx(989.4e12)
    assert parse_quantity("400 Gb/s", "bandwidth") == pytest.approx(50e9)
    assert parse_quantity("700 W", "power") == 700.0
    assert parse_quantity("10 us", "time") == pytest.approx(1e-5)
    assert parse_quantity("3.35e12", "bandwidth") == 3.35e12  # a unitless string is SI already


def test_every_unit_in_the_table_has_a_known_dimension():
    for unit, (dim, factor) in UNITS.items():
        assert dim in SI_UNIT, unit
        assert factor > 0 and math.isfinite(factor), unit
        assert parse_quantity(f"1 {unit}", dim) == pytest.approx(factor)


@given(x=finite, unit=st.sampled_from(sorted(EXPECTED)))
def test_number_with_unit_round_trip(x, unit):
    dim, factor = EXPECTED[unit]
    assert parse_quantity(f"{x!r} {unit}", dim) == pytest.approx(x * factor, rel=1e-12, abs=0)


@given(x=finite, dim=st.sampled_from((*DIMENSIONS, "count", "fraction")))
def test_plain_numbers_are_si(x, dim):
    assert parse_quantity(x, dim) == x
    assert parse_quantity(repr(x), dim) == x
    if x == int(x) and abs(x) < 2**53:
        assert parse_quantity(int(x), dim) == x


@given(x=st.floats(min_value=1e-9, max_value=1e21), dim=st.sampled_from(DIMENSIONS))
def test_format_then_parse_round_trip(x, dim):
    text = format_quantity(x, dim)
    assert parse_quantity(text, dim) == pytest.approx(x, rel=5e-3)  # 3 significant digits


def test_format_quantity_examples():
    assert format_quantity(3.35e12, "bandwidth") == "3.35 TB/s"
    assert format_quantity(80e9, "bytes") == "80 GB"
    assert format_quantity(1e-5, "time") == "10 us"
    assert format_quantity(float("nan"), "bytes") == "n/a"


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("text", ["3 XB/s", "3 tb/s", "3 TBps/s", "5 furlongs"])
def test_unknown_unit(text):
    with pytest.raises(SpecError, match="unknown unit") as exc:
        parse_quantity(text, "bandwidth", "h100: memory_tiers[0].bandwidth")
    assert len(exc.value.problems) == 1
    assert "h100: memory_tiers[0].bandwidth" in str(exc.value)  # says where


@pytest.mark.parametrize("text,dim,got", [("3 TB", "bandwidth", "bytes"),
                                          ("3 TB/s", "bytes", "bandwidth"),
                                          ("700 W", "flops", "power"),
                                          ("1 us", "bandwidth", "time"),
                                          ("5 GB", "fraction", "bytes")])
def test_wrong_dimension(text, dim, got):
    with pytest.raises(SpecError) as exc:
        parse_quantity(text, dim)
    msg = str(exc.value)
    assert got in msg and dim in msg and "expected" in msg


@given(unit=st.sampled_from(sorted(EXPECTED)), dim=st.sampled_from(DIMENSIONS))
def test_any_unit_of_another_dimension_is_rejected(unit, dim):
    if EXPECTED[unit][0] == dim:
        assert parse_quantity(f"1 {unit}", dim) > 0
    else:
        with pytest.raises(SpecError):
            parse_quantity(f"1 {unit}", dim)


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), "1e999 B/s",
                                   "-1e999 W"])
def test_non_finite(value):
    with pytest.raises(SpecError, match="finite"):
        parse_quantity(value, "bandwidth" if "B/s" in str(value) else "power")


@pytest.mark.parametrize("value", ["inf", "nan", "", "TB/s", "three TB", "1,5 TB", "3 3 TB"])
def test_unreadable_strings(value):
    with pytest.raises(SpecError, match="cannot read"):
        parse_quantity(value, "bytes")


@pytest.mark.parametrize("value", [True, False])
def test_booleans_are_not_numbers(value):
    with pytest.raises(SpecError, match="boolean"):
        parse_quantity(value, "count")


@pytest.mark.parametrize("value", [None, [1.0], {"value": 1.0}, b"3 TB", 1j])
def test_other_types(value):
    with pytest.raises(SpecError, match="expected a bytes quantity"):
        parse_quantity(value, "bytes")


@given(st.one_of(st.text(max_size=12), st.none(), st.booleans(), st.lists(st.integers()),
                 st.floats()))
def test_only_spec_errors_escape(value):
    """Whatever the input, parse_quantity returns a finite float or raises SpecError."""
    try:
        out = parse_quantity(value, "bandwidth")
    except SpecError:
        return
    assert isinstance(out, float) and math.isfinite(out)


def test_spec_error_collects_problems():
    e = SpecError(["a is wrong", "b is wrong"], "grid spec")
    assert e.problems == ["a is wrong", "b is wrong"]
    assert "2 problems" in str(e) and "a is wrong" in str(e) and "b is wrong" in str(e)
    assert isinstance(e, ValueError)
    assert SpecError("only one").problems == ["only one"]


def test_suggest():
    assert "'h100-sxm'" in suggest("h100-sxn", ["h100-sxm", "mi300x"])
    assert "known:" in suggest("zzz", ["h100-sxm", "mi300x"])
