"""Issue 20's property "fp8 compute is not slower than bf16 on hardware with fp8 units" as a
check of a calibration: the floor of each narrower-dtype compute factor, and where it is set
(:func:`dtype_floors`; used by :mod:`sweep.validate.calibration`)."""

from __future__ import annotations

from typing import Any

#: a narrower compute dtype and the wider one it is never slower than on a device that has both
NARROWER = (("fp8", "bf16"), ("int8", "bf16"), ("fp4", "fp8"))


def dtype_floors(unit: Any, overlay: dict[str, Any]
                 ) -> dict[tuple[str, str, str], tuple[float, float]]:
    """Narrower-dtype compute factors that ``overlay`` leaves too low:
    ``{(level, key, name): (value, floor)}`` for each ``<phase>_compute.<narrow>`` at which a
    catalog device the unit's rows could inform (its vendor's, or every vendor's for a defaults
    unit) and the engine runs on would reach fewer FLOP/s in the narrow dtype than in the wider one
    of :data:`NARROWER` (peak x the device's achievable fraction x the engine factor). The floor
    is the least factor at which it does not (issue 20: "fp8 compute is not slower than bf16 on
    hardware with fp8 units"); a fit below it stands in for a mechanism the model lacks. It goes
    to the device's vendor level (its device level where the engine file sets the factor per
    device), so that one vendor's factors (the AMD or Intel bf16 estimates of vllm.toml) do not move
    another's pooled fp8 fit."""
    from grids.engines import resolve
    from grids.hardware import load_catalog

    out: dict[tuple[str, str, str], tuple[float, float]] = {}
    for dev in load_catalog().values():
        if unit.level == "vendor" and dev.vendor != unit.key:
            continue
        params = resolve(unit.engine, dev, overlay)
        if not params.supported:
            continue
        for narrow, wide in NARROWER:
            if not (dev.peak_flops.get(narrow, 0.0) > 0 and dev.peak_flops.get(wide, 0.0) > 0):
                continue
            if not params.runs(narrow):
                continue  # the engine (a build of before FP8) does not compute the dtype at all
            for phase in ("prefill", "decode"):
                f_n, f_w = params.compute(narrow, phase), params.compute(wide, phase)
                rate_n = dev.achievable_flops(narrow) * f_n
                rate_w = dev.achievable_flops(wide) * f_w
                if rate_n >= rate_w * (1 - 1e-9):
                    continue
                name = f"{phase}_compute.{narrow}"
                where = ("device", dev.base or dev.id) if "[device." in params.origin.get(
                    name, "") else ("vendor", dev.vendor)
                floor = min(1.0, f_n * rate_w / rate_n)
                if floor > out.get((*where, name), (f_n, 0.0))[1]:
                    out[(*where, name)] = (f_n, floor)
    return out


def floor_label(level: str, key: str, name: str) -> str:
    """``vendor.AMD decode_compute.fp8``: where a floor was set."""
    return f"{level}.{key} {name}"
