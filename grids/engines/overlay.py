"""Calibration overlays: fitted plain numbers with the engine files' hierarchy (``[<engine>]``
``defaults``, ``vendor``, ``class``, ``device``) and one cross-engine level (``[pooled]``, the
values that replace what engine files mark ``pooled = true``), checked per engine when resolving
or whole by :func:`check_overlay`; the shipped one is ``grids/data/engines/calibration.toml``."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from grids import tomlio
from grids.engines.parameters import (
    BY_DTYPE,
    CALIBRATION_FILE,
    ENGINE_IDS,
    PARAMS,
    POOLABLE,
    POOLED,
    RETIRED,
    _is_inf_text,
    _range_problem,
    engines_dir,
)
from grids.engines.parse import _raw_catalog
from grids.engines.profile import Value, _catalog_devices, _known_vendors, _suggest
from grids.errors import SpecError, suggest
from grids.hardware import CLASSES
from grids.hardware.device import unknown_dtype
from grids.units import parse_quantity

# --------------------------------------------------------------------------------------------
# calibration overlays


def read_overlay(path: str | Path) -> dict[str, Any]:
    """A calibration overlay TOML file, parsed (validated per engine when resolving)."""
    return tomlio.load(Path(path))


def _overlay_value(name: str, v: Any, where: str, problems: list[str]) -> float | bool | None:
    spec = PARAMS[name]
    if spec.dimension == "bool":
        if isinstance(v, bool):
            return v
        problems.append(f"{where}: must be true or false, got {v!r}")
        return None
    if spec.allow_inf and _is_inf_text(v):
        return math.inf
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        problems.append(f"{where}: expected a plain number, got {v!r}")
        return None
    try:
        x = parse_quantity(v, spec.dimension, where)
    except SpecError as exc:
        problems.extend(exc.problems)
        return None
    if not spec.contains(x):
        problems.append(_range_problem(name, spec, x, where))
        return None
    return x


def _overlay_level(table: Any, label: str, problems: list[str]) -> dict[str, Value]:
    where = f"overlay [{label}]"
    if not isinstance(table, dict):
        problems.append(f"{where} must be a table of fitted values, got {table!r}")
        return {}
    out: dict[str, Value] = {}
    for name, v in table.items():
        if name in BY_DTYPE:
            if not isinstance(v, dict):
                problems.append(f"{where}: {name} must be a table of factors per compute dtype")
                continue
            for dtype, x in v.items():
                if bad := unknown_dtype(dtype, f"{where}: {name}.{dtype}"):
                    problems.append(bad)
                    continue
                val = _overlay_value(name, x, f"{where} {name}.{dtype}", problems)
                if val is not None:
                    out[f"{name}.{dtype}"] = Value(val, f"overlay [{label}] (fitted)")
        elif name in PARAMS:
            val = _overlay_value(name, v, f"{where} {name}", problems)
            if val is not None:
                out[name] = Value(val, f"overlay [{label}] (fitted)")
        elif name in RETIRED:
            problems.append(f"{where}: parameter {name!r} is {RETIRED[name]}")
        else:
            problems.append(f"{where}: unknown parameter {name!r}{suggest(name, PARAMS)}")
    return out


def _overlay_levels(overlay: Mapping[str, Any], engine_id: str,
                    problems: list[str]) -> dict[tuple[str, str], dict[str, Value]]:
    """The fitted values of one engine in an overlay, by level."""
    section = overlay.get(engine_id)
    if section is None:
        return {}
    label = tomlio.key(engine_id)
    if not isinstance(section, dict):
        problems.append(f"overlay [{label}] must be a table with defaults, vendor, class or device")
        return {}
    out: dict[tuple[str, str], dict[str, Value]] = {}
    known = {"vendor": _known_vendors(), "class": CLASSES, "device": tuple(_catalog_devices())}
    for level, body in section.items():
        if level == "defaults":
            out[("defaults", "")] = _overlay_level(body, f"{label}.defaults", problems)
        elif level in known:
            if not isinstance(body, dict):
                problems.append(f"overlay [{label}.{level}] must hold one table per {level}")
                continue
            for key, table in body.items():
                if key not in known[level]:
                    problems.append(f"overlay [{label}.{level}.{key}]: unknown {level}"
                                    f"{_suggest(key, known[level])}")
                    continue
                out[(level, key)] = _overlay_level(table, f"{label}.{level}.{tomlio.key(key)}",
                                                   problems)
        else:
            problems.append(f"overlay [{label}.{level}]: unknown level"
                            f"{suggest(level, ('defaults', 'vendor', 'class', 'device'))}")
    return out


def _pooled_level(overlay: Mapping[str, Any], problems: list[str]) -> dict[str, Value]:
    """The overlay's cross-engine ``[pooled]`` values (the factors of :data:`POOLABLE`), which
    replace the values an engine file marks ``pooled = true``; empty when it has none."""
    body = overlay.get(POOLED)
    if body is None:
        return {}
    out = _overlay_level(body, POOLED, problems)
    for key in [k for k in out if k.split(".")[0] not in POOLABLE]:
        problems.append(f"overlay [{POOLED}]: {key} is not one of {', '.join(POOLABLE)} (the "
                        f"factors an engine file may mark pooled = true); remove it")
        del out[key]
    return out


def section_problem(engine_id: str) -> str | None:
    """Why ``engine_id`` cannot name an overlay section (None when it can): a catalog engine, or
    ``<id>@<build>`` for one of the ``[builds]`` its file declares (the values fitted on that
    release's rows, docs/engines.md "Builds")."""
    family, sep, build = engine_id.partition("@")
    if family not in ENGINE_IDS:
        return (f"overlay [{tomlio.key(engine_id)}]: unknown engine"
                f"{suggest(family, (*ENGINE_IDS, POOLED))}")
    if not sep:
        return None
    builds = _raw_catalog(family).get("builds", {})
    names = tuple(builds) if isinstance(builds, dict) else ()
    if build not in names:
        have = f"its file's builds are {', '.join(names)}" if names else "its file has no builds"
        return (f"overlay [{tomlio.key(engine_id)}]: unknown build {build!r} of {family} ({have}; "
                f"the file's own build is fitted as [{family}])")
    return None


def check_overlay(overlay: Mapping[str, Any]) -> None:
    """Validate a whole overlay at once (every engine, level and value); one SpecError."""
    problems: list[str] = []
    if not isinstance(overlay, Mapping):
        raise SpecError(f"overlay must be a table of engines, got {overlay!r}")
    for engine_id in overlay:
        if engine_id == POOLED:
            _pooled_level(overlay, problems)
        elif (bad := section_problem(engine_id)) is not None:
            problems.append(bad)
        else:
            _overlay_levels(overlay, engine_id, problems)
    if problems:
        raise SpecError(problems, "engine overlay")


def calibration_path() -> Path:
    """The shipped calibration overlay, ``grids/data/engines/calibration.toml``."""
    return engines_dir() / CALIBRATION_FILE


@functools.cache
def shipped_overlay() -> dict[str, Any]:
    """The shipped calibration overlay without its ``[provenance]`` (empty when absent)."""
    path = calibration_path()
    if not path.exists():
        return {}
    raw = tomlio.load(path)
    raw.pop("provenance", None)
    return raw
