"""A unit registry for the result's ``units`` attributes, for pint, pint-xarray and cf-xarray.

Every metric and coordinate of a result carries a ``units`` string (sweep/results/variables.py).
Most are SI or SI-derived (s, W, B, B/s, bit, 1); four are counts that pint does not know:
``token`` (a generated or prompt token), ``FLOP`` (a floating-point operation), and ``USD``
(US dollars, a currency). :data:`DEFINITIONS` adds them, each as a base dimension of its own
(tokens, operations and dollars do not convert into anything else), so that every string
parses, including the compound ones (``token/s``, ``FLOP/s``, ``FLOP/B``, ``token/J``,
``token/USD``, ``USD/h``):

    >>> import pint_xarray, sweep
    >>> q = ds.pint.quantify(unit_registry=sweep.unit_registry())
    >>> (q["throughput"] / q["system_power"]).pint.to("token/s/kW")

or, with cf-xarray's registry, ``sweep.unit_registry(cf_xarray.units.units)``. pint is a
dependency of accel-sweep; ``ds.pint`` needs pint-xarray (``pip install pint-xarray``).
"""

from __future__ import annotations

#: pint definitions of the non-SI units of a result
DEFINITIONS = (
    "token = [token]",
    "FLOP = [floating_point_operation]",
    "USD = [currency]",
)


def unit_registry(registry=None):
    """A pint UnitRegistry that parses every ``units`` string of a result: ``registry`` (e.g.
    cf-xarray's) with :data:`DEFINITIONS` added, or a new pint registry."""
    import pint

    # pint-xarray needs array-like magnitudes (force_ndarray_like)
    ureg = registry if registry is not None else pint.UnitRegistry(force_ndarray_like=True)
    for line in DEFINITIONS:
        name = line.split("=", 1)[0].strip()
        try:
            ureg.parse_units(name)
            continue  # already defined (a registry given twice, or one that has it)
        except pint.errors.UndefinedUnitError:
            ureg.define(line)
    return ureg
