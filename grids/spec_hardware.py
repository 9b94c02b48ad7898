"""The hardware axis of a grid spec: catalog ids, TOML paths or ``"all"``, the ``[efficiency]``
overrides (for every device or per device id) and the ``[hypothetical.<id>]`` devices derived
from a base device (list values are swept)."""

from __future__ import annotations

import itertools
from typing import Any

from grids import hardware as hwcat
from grids.errors import SpecError, suggest
from grids.spec_axes import _str_list
from grids.units import parse_quantity


def _hardware(value: Any, eff_over: dict[str, Any], hypo: dict[str, Any], resolve,
              problems: list[str]) -> list[hwcat.Device]:
    ids = hwcat.catalog_ids()
    refs = list(ids) if value == "all" else _str_list(value, "hardware", problems)
    hypo_ids = set(hypo) if isinstance(hypo, dict) else set()
    devices: list[hwcat.Device] = []
    for ref in refs:
        if ref in hypo_ids and ref not in ids:
            continue  # added below
        try:
            devices.append(hwcat.load_device(resolve(ref)))
        except SpecError as exc:
            problems.extend(f"hardware: {p}" for p in exc.problems)
    if not isinstance(hypo, dict):
        problems.append("hypothetical: must be a table of [hypothetical.<id>] tables")
        hypo = {}
    for hid, table in hypo.items():
        if hid in ids:
            problems.append(f"hypothetical.{hid}: the name of a catalog device; a hypothetical "
                            f"device needs its own name (e.g. '{hid}-custom')")
            continue
        devices.extend(_hypothetical(hid, table, resolve, problems))
    # efficiency overrides: plain numbers for all devices, or tables per device id
    if not isinstance(eff_over, dict):
        problems.append("efficiency: must be a table")
        return devices

    # each table is checked once (a bad global value is one problem, not one per device)
    def parse_over(table: dict[str, Any], where: str) -> dict[str, float]:
        values = {}
        for k, v in table.items():
            if k not in hwcat.EFFICIENCY_FIELDS:
                problems.append(f"{where}: unknown parameter {k!r}"
                                f"{suggest(k, hwcat.EFFICIENCY_FIELDS)}")
                continue
            dim, lo, hi = hwcat.EFFICIENCY_FIELDS[k]
            try:
                q = parse_quantity(v, dim, f"{where}.{k}")
            except SpecError as exc:
                problems.extend(exc.problems)
                continue
            if not lo < q <= hi:
                bracket = "(" if lo >= 0 else "["  # lo < 0 encodes "0 allowed"
                problems.append(f"{where}.{k} = {v!r} is outside {bracket}{max(lo, 0.0):g}, "
                                f"{hi:g}]")
                continue
            values[f"efficiency.{k}"] = q
        return values

    global_over = parse_over({k: v for k, v in eff_over.items() if not isinstance(v, dict)},
                             "efficiency")
    per_dev = {k: v for k, v in eff_over.items() if isinstance(v, dict)}
    known = {d.id for d in devices}
    for dev_id in per_dev:
        if dev_id not in known:
            problems.append(f"efficiency.{dev_id}: no such device in this grid"
                            f"{suggest(dev_id, known)}")
    per_dev = {k: parse_over(v, f"efficiency.{k}") for k, v in per_dev.items() if k in known}
    out = []
    for dev in devices:
        values = {**global_over, **per_dev.get(dev.id, {})}
        if not values:
            out.append(dev)
            continue
        try:
            derived = hwcat.derive_device(dev, dev.id, values, name=dev.name)
            out.append(derived)
        except SpecError as exc:
            problems.extend(exc.problems)
    return out


def _hypothetical(hid: str, table: Any, resolve, problems: list[str]) -> list[hwcat.Device]:
    where = f"hypothetical.{hid}"
    if not isinstance(table, dict):
        problems.append(f"{where}: must be a table with 'base' and fields to override")
        return []
    base_ref = table.get("base")
    if not isinstance(base_ref, str):
        problems.append(f"{where}: needs base = \"<catalog id>\" (the device it derives from)")
        return []
    try:
        base = hwcat.load_device(resolve(base_ref))
    except SpecError as exc:
        problems.extend(f"{where}: {p}" for p in exc.problems)
        return []
    fields: dict[str, list[tuple[str, float]]] = {}
    for key, value in table.items():
        if key in ("base", "name"):
            continue
        if key not in hwcat.OVERRIDE_KEYS:
            problems.append(f"{where}: unknown field {key!r}{suggest(key, hwcat.OVERRIDE_KEYS)}")
            continue
        dim = hwcat.OVERRIDE_KEYS[key][0]
        items = value if isinstance(value, list) else [value]
        if not items:
            problems.append(f"{where}.{key}: empty list")
            continue
        parsed = []
        for v in items:
            try:
                q = parse_quantity(v, dim, f"{where}.{key}")
            except SpecError as exc:
                problems.extend(exc.problems)
                continue
            if dim != "fraction" and not key.startswith("efficiency.") and q <= 0 \
                    and not (key == "peer_links" and q == 0):  # 0 peer links = switched
                problems.append(f"{where}.{key}: {v!r} must be > 0")
                continue
            if dim == "count" and not q.is_integer():
                problems.append(f"{where}.{key}: {v!r} must be a whole number")
                continue
            parsed.append((str(v), q))
        fields[key] = parsed
    if not any(k not in ("base", "name") for k in table):
        problems.append(f"{where}: overrides no field (add e.g. hbm_bandwidth = \"8 TB/s\")")
        return []
    if not fields or not all(fields.values()):
        return []  # the bad fields are reported above
    keys = list(fields)
    swept = [k for k in keys if len(fields[k]) > 1]
    out = []
    for combo in itertools.product(*(fields[k] for k in keys)):
        label = ",".join(f"{k}={text}" for k, (text, _) in zip(keys, combo) if k in swept)
        new_id = f"{hid}[{label}]" if label else hid
        try:
            out.append(hwcat.derive_device(base, new_id, {k: q for k, (_, q) in zip(keys, combo)},
                                           name=table.get("name")))
        except SpecError as exc:
            problems.extend(exc.problems)
    return out
