"""Every ``units`` string of a result parses in pint and cf-xarray with sweep's registry, and
pint-xarray quantifies a result."""

from __future__ import annotations

import cf_xarray.units
import numpy as np
import pint_xarray  # noqa: F401 - registers ds.pint
import pytest

import sweep
from sweep.results.variables import COORDS, VARIABLES
from tests.test_analysis import make_result


def all_units() -> set[str]:
    return {v.units for v in VARIABLES.values()} | {u for _, _, u, _ in COORDS}


def test_every_unit_string_parses():
    ureg = sweep.unit_registry()
    for u in sorted(all_units()):
        ureg.parse_units(u)  # raises on an unknown unit
    assert not ureg.parse_units("token/s").dimensionless
    q = ureg.Quantity(1200.0, "token/s") / ureg.Quantity(2.0, "kW")
    assert q.to("token/J").magnitude == pytest.approx(0.6)
    assert ureg.Quantity(3.6, "USD/h").to("USD/s").magnitude == pytest.approx(0.001)


def test_cf_xarray_registry_and_pint_xarray_quantify():
    cf_units = cf_xarray.units.units
    ureg = sweep.unit_registry(cf_units)
    for u in sorted(all_units()):
        ureg.parse_units(u)
    sweep.unit_registry(cf_units)  # a second call keeps the definitions
    ds = make_result()
    q = ds.pint.quantify(unit_registry=sweep.unit_registry())
    per_kw = (q["throughput"] / q["system_power"]).pint.to("token/s/kW")
    want = 1e3 * ds["throughput"] / ds["system_power"]
    np.testing.assert_allclose(per_kw.pint.magnitude, want.values, rtol=1e-6)
