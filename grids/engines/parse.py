"""Reading one engine file: its level tables of sourced values, range-checked, into an
:class:`~grids.engines.profile.Engine` (:func:`parse_engine`, one SpecError with every problem),
and the raw TOML of a catalog engine (read again for delegation cycles)."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from typing import Any

from grids import tomlio
from grids.engines.parameters import (
    BOOLS,
    BY_DTYPE,
    CUSTOM_ALLREDUCE,
    ENGINE_IDS,
    OPTIONAL,
    PARAMS,
    POOLABLE,
    RETIRED,
    ParamSpec,
    _is_inf_text,
    _range_problem,
    engine_family,
    engines_dir,
)
from grids.engines.profile import (
    Build,
    Engine,
    Value,
    _catalog_devices,
    _check_target,
    _known_vendors,
    _suggest,
)
from grids.errors import SpecError, suggest
from grids.hardware import CLASSES
from grids.hardware.device import unknown_dtype
from grids.sourced import Sourced, read_sourced

TOP_KEYS = ("id", "name", "description", "versions", "runs_on", "notes", "defaults", "vendor",
            "class", "device", "delegate", "build", "builds")
#: what one ``[builds.<name>]`` table holds: texts, the ``matches`` list and level tables
BUILD_TEXTS = ("released", "description", "source")
BUILD_KEYS = (*BUILD_TEXTS, "matches", "fit_fallback", "fit_apart", "defaults", "vendor", "class", "device")


# --------------------------------------------------------------------------------------------
# reading values


def _read_number(entry: Any, name: str, spec: ParamSpec, where: str,
                 problems: list[str]) -> Sourced | None:
    """A sourced number of parameter ``name`` in SI units, range-checked."""
    if spec.allow_inf and isinstance(entry, dict) and _is_inf_text(entry.get("value")):
        s = read_sourced({**entry, "value": 1.0}, "count", where, problems, positive=False)
        return None if s is None else Sourced(math.inf, s.source, s.note, s.estimate, s.rule)
    n = len(problems)
    s = read_sourced(entry, spec.dimension, where, problems, positive=False)
    if s is None or len(problems) > n:
        return None
    if not spec.contains(s.value):
        problems.append(_range_problem(name, spec, s.value, where))
        return None
    return s


def _pooled_flag(entry: Any, name: str, where: str, problems: list[str]) -> tuple[Any, bool]:
    """``entry`` without its ``pooled`` key, and whether it is ``pooled = true`` (allowed on the
    factors of :data:`POOLABLE` only)."""
    if not isinstance(entry, dict) or "pooled" not in entry:
        return entry, False
    flag = entry["pooled"]
    rest = {k: v for k, v in entry.items() if k != "pooled"}
    if not isinstance(flag, bool):
        problems.append(f"{where}: pooled must be true or false, got {flag!r}")
        return rest, False
    if flag and name not in POOLABLE:
        problems.append(f"{where}: pooled = true is allowed on {', '.join(POOLABLE)} only (the "
                        f"factors `sweep calibrate` fits across engines); remove it")
        return rest, False
    return rest, flag


def _origin(label: str, s: Sourced | None) -> str:
    if s is not None and s.estimate:
        return f"{label}; estimate: {s.rule}"
    return label


def _read_level(table: Any, label: str, file: str, problems: list[str]) -> dict[str, Value]:
    """The parameters of one level table (``label`` as in the file, e.g. ``vendor.AMD``)."""
    where = f"{file}: [{label}]"
    if not isinstance(table, dict):
        problems.append(f"{where} must be a table of parameters, got {table!r}")
        return {}
    out: dict[str, Value] = {}
    origin_label = f"{file} [{label}]"
    for key, entry in table.items():
        if key in BY_DTYPE:
            if not isinstance(entry, dict):
                problems.append(f"{where}: {key} must be a table of sourced factors per compute "
                                f"dtype, e.g. bf16 = {{ value = 0.8, source = \"...\" }}")
                continue
            for dtype, e in entry.items():
                if bad := unknown_dtype(dtype, f"{where}: {key}.{dtype}"):
                    problems.append(bad)
                    continue
                e, pooled = _pooled_flag(e, key, f"{where} {key}.{dtype}", problems)
                s = _read_number(e, key, PARAMS[key], f"{where} {key}.{dtype}", problems)
                if s is not None:
                    out[f"{key}.{dtype}"] = Value(s.value, _origin(origin_label, s), s, pooled)
        elif key in BOOLS:
            src = table.get(f"{key}_source")
            if not isinstance(entry, bool):
                problems.append(f"{where}: {key} must be true or false, got {entry!r}")
            elif not (isinstance(src, str) and src.strip()):
                problems.append(f"{where}: {key} needs a {key}_source text saying where the "
                                f"behaviour is documented")
            else:
                out[key] = Value(entry, f"{origin_label}; {src}")
        elif key.endswith("_source") and key[:-7] in BOOLS:
            if key[:-7] not in table:
                problems.append(f"{where}: {key} without {key[:-7]}")
            elif not isinstance(entry, str):
                problems.append(f"{where}: {key} must be a text, got {entry!r}")
        elif key in PARAMS:
            entry, pooled = _pooled_flag(entry, key, f"{where} {key}", problems)
            s = _read_number(entry, key, PARAMS[key], f"{where} {key}", problems)
            if s is not None:
                out[key] = Value(s.value, _origin(origin_label, s), s, pooled)
        elif key in RETIRED:
            problems.append(f"{where}: parameter {key!r} is {RETIRED[key]}")
        else:
            problems.append(f"{where}: unknown parameter {key!r}"
                            f"{suggest(key, (*PARAMS, *(f'{b}_source' for b in BOOLS)))}")
    return out


def _read_overrides(raw: dict[str, Any], kind: str, file: str, problems: list[str],
                    levels: dict[tuple[str, str], dict[str, Value]], prefix: str = "") -> None:
    """``[vendor.<v>]``, ``[class.<c>]`` or ``[device.<id>]`` tables of a file (or, with
    ``prefix`` ``builds.<name>.``, of one of its builds)."""
    tables = raw.get(kind)
    if tables is None:
        return
    if not isinstance(tables, dict):
        problems.append(f"{file}: [{prefix}{kind}] must hold one table per {kind}, got {tables!r}")
        return
    known: Iterable[str] = {"vendor": _known_vendors(), "class": CLASSES,
                            "device": tuple(_catalog_devices())}[kind]
    for key, table in tables.items():
        if key not in known:
            problems.append(f"{file}: [{prefix}{kind}.{key}]: unknown {kind}"
                            f"{_suggest(key, known)}")
            continue
        levels[(kind, key)] = _read_level(table, f"{prefix}{kind}.{tomlio.key(key)}", file,
                                          problems)


def _read_levels(raw: dict[str, Any], file: str, problems: list[str],
                 prefix: str = "") -> dict[tuple[str, str], dict[str, Value]]:
    """The ``[defaults]`` and override tables of a file or of one of its builds."""
    levels: dict[tuple[str, str], dict[str, Value]] = {}
    levels[("defaults", "")] = (_read_level(raw["defaults"], f"{prefix}defaults", file, problems)
                                if "defaults" in raw else {})
    for kind in ("class", "vendor", "device"):
        _read_overrides(raw, kind, file, problems, levels, prefix)
    return levels


def _read_builds(raw: dict[str, Any], file: str,
                 problems: list[str]) -> tuple[str, dict[str, Build]]:
    """The file's own build name (``build``) and its other releases (``[builds.<name>]``)."""
    own = raw.get("build")
    table = raw.get("builds")
    if own is None and table is None:
        return "", {}
    if not (isinstance(own, str) and own.strip()):
        problems.append(f"{file}: a file with [builds] names the release its own tables describe "
                        f"in build = \"<release>\" (what the bare engine id means)")
        own = ""
    if table is None:
        return own, {}
    if not isinstance(table, dict):
        problems.append(f"{file}: [builds] must hold one table per release, got {table!r}")
        return own, {}
    out: dict[str, Build] = {}
    for name, b in table.items():
        where = f"{file}: [builds.{tomlio.key(name)}]"
        if name == own:
            problems.append(f"{where}: {name!r} is the file's own build (build = {own!r}); its "
                            f"values are the file's tables")
            continue
        if not isinstance(b, dict):
            problems.append(f"{where} must be a table, got {b!r}")
            continue
        for key in b:
            if key not in BUILD_KEYS:
                problems.append(f"{where}: unknown key {key!r}{suggest(key, BUILD_KEYS)}")
        texts = {}
        for key in BUILD_TEXTS:
            v = b.get(key)
            if not (isinstance(v, str) and v.strip()):
                problems.append(f"{where}: missing text field {key!r} (released: when, e.g. "
                                f"\"2024-09\"; description: what differs; source: release "
                                f"notes or PRs)")
            texts[key] = v if isinstance(v, str) else ""
        matches = b.get("matches", [])
        if not (isinstance(matches, list) and all(isinstance(m, str) and m.strip()
                                                  for m in matches)):
            problems.append(f"{where}: matches must be a list of texts (prefixes of the "
                            f"engine_version of measurement rows that ran this build)")
            matches = []
        levels = _read_levels(b, file, problems, prefix=f"builds.{tomlio.key(name)}.")
        fallback = b.get("fit_fallback", "")
        if not isinstance(fallback, str):
            problems.append(f"{where}: fit_fallback must be the name of another of the file's "
                            f"builds, got {fallback!r}")
            fallback = ""
        apart = b.get("fit_apart", False)
        if not isinstance(apart, bool):
            problems.append(f"{where}: fit_apart must be true or false, got {apart!r}")
            apart = False
        out[name] = Build(name=name, released=texts["released"],
                          description=texts["description"], source=texts["source"],
                          matches=tuple(matches), levels=levels, fit_fallback=fallback,
                          fit_apart=apart)
    for name, b in out.items():
        # a prefix that the file's own release also starts with would take its rows ("0.1" of
        # "0.10"): a version text of the file's build must never run as an older build
        for m in b.matches:
            if isinstance(own, str) and own.startswith(m):
                problems.append(f"{file}: [builds.{tomlio.key(name)}] matches prefix {m!r} also "
                                f"matches the file's own build {own!r}, whose rows would run as "
                                f"{name!r}; end the prefix with '.' ({m.rstrip('.')}.) or make it "
                                f"longer")
        if b.fit_fallback and (b.fit_fallback == name or b.fit_fallback not in out):
            others = [n for n in out if n != name]
            problems.append(f"{file}: [builds.{tomlio.key(name)}] fit_fallback = "
                            f"{b.fit_fallback!r} names no other build of the file (its other "
                            f"builds: {', '.join(others) or 'none'}; the file's own build "
                            f"{own!r} is the fallback of every build already)")
    return own, out


# --------------------------------------------------------------------------------------------
# parsing one file


@functools.cache
def _raw_catalog(engine_id: str) -> dict[str, Any]:
    return tomlio.load(engines_dir() / f"{engine_id}.toml")


def _delegates_of(engine_id: str) -> list[str]:
    """Engine ids a catalog engine delegates to (read from the raw file, no validation)."""
    try:
        table = _raw_catalog(engine_id).get("delegate", {})
    except SpecError:
        return []
    return [v for v in table.values() if isinstance(v, str)] if isinstance(table, dict) else []


def _find_cycle(start: str, first: list[str]) -> list[str] | None:
    """A delegation path from ``start`` back to an engine already on it, if any."""
    def walk(node: str, targets: list[str], path: list[str]) -> list[str] | None:
        for t in targets:
            t = engine_family(t)  # a build delegates as its file does
            if t in path:
                return [*path, t]
            if t in ENGINE_IDS:
                found = walk(t, _delegates_of(t), [*path, t])
                if found:
                    return found
        return None
    return walk(start, first, [start])


def parse_engine(raw: dict[str, Any], file: str, *, expected_id: str | None = None) -> Engine:
    """Build an :class:`Engine` from a parsed TOML table; one SpecError with every problem."""
    problems: list[str] = []
    for key in raw:
        if key not in TOP_KEYS and key not in PARAMS:
            problems.append(f"{file}: unknown top-level key {key!r}{suggest(key, TOP_KEYS)}")
        elif key in PARAMS:
            problems.append(f"{file}: parameter {key!r} at top level: put it in [defaults] (or an "
                            f"override table)")
    text = {}
    for key in ("id", "name", "description", "versions"):
        v = raw.get(key)
        if not (isinstance(v, str) and v.strip()):
            problems.append(f"{file}: missing text field {key!r}")
        text[key] = v if isinstance(v, str) else ""
    engine_id = text["id"]
    if expected_id is not None and engine_id and engine_id != expected_id:
        problems.append(f"{file}: id {engine_id!r} does not match the file name ({expected_id!r})")

    runs_on = raw.get("runs_on")
    if not (isinstance(runs_on, list) and runs_on):
        problems.append(f"{file}: runs_on must be a non-empty list of 'all', 'vendor:<vendor>', "
                        f"'class:<class>' or 'device:<id>'")
        runs_on = []
    runs_on = [t for t in runs_on if _check_target(t, f"{file}: runs_on", problems)]
    notes = raw.get("notes", [])
    if not (isinstance(notes, list) and all(isinstance(n, str) for n in notes)):
        problems.append(f"{file}: notes must be a list of texts")
        notes = []

    levels = _read_levels(raw, file, problems)
    own_build, builds = _read_builds(raw, file, problems)

    delegate: list[tuple[str, str]] = []
    table = raw.get("delegate")
    if table is not None:
        if not isinstance(table, dict) or not table:
            problems.append(f"{file}: [delegate] must map targets such as \"vendor:NVIDIA\" to "
                            f"engine ids")
        else:
            for target, target_engine in table.items():
                ok = _check_target(target, f"{file}: [delegate]", problems)
                family = (engine_family(target_engine) if isinstance(target_engine, str)
                          else None)
                if family not in ENGINE_IDS:
                    problems.append(f"{file}: [delegate] {target!r} = {target_engine!r}: unknown "
                                    f"engine{suggest(str(family), ENGINE_IDS)} (a catalog id, "
                                    f"or <id>@<build> for one release)")
                elif ok:
                    delegate.append((target, target_engine))
            cycle = _find_cycle(engine_id, [e for _, e in delegate])
            if cycle:
                problems.append(f"{file}: [delegate] cycle {' -> '.join(cycle)}: an engine cannot "
                                f"delegate (directly or through others) back to itself")

    defaults = levels[("defaults", "")]
    if engine_id == "ideal":
        for (level, key), values in levels.items():
            if values:
                label = f"{level}.{key}" if key else level
                problems.append(f"{file}: the ideal engine sets no parameters (found "
                                f"{', '.join(sorted(values))} in [{label}])")
    elif isinstance(raw.get("defaults"), dict) or ("defaults" not in raw and not delegate):
        for name in PARAMS:
            if name in OPTIONAL:
                continue
            flat = f"{name}.bf16" if name in BY_DTYPE else name
            if flat not in defaults and not _failed(raw, name):
                what = f"{name}.bf16" if name in BY_DTYPE else name
                problems.append(f"{file}: [defaults] lacks {what}: a real serving stack is not "
                                f"ideal here; give a sourced value or an estimate with its rule")
    _check_custom_allreduce(levels, file, problems)
    if problems:
        raise SpecError(problems, f"engine {file}")
    return Engine(id=engine_id, name=text["name"], description=text["description"],
                  versions=text["versions"], runs_on=tuple(runs_on),
                  notes=tuple(notes), levels=levels, delegate=tuple(delegate), where=file,
                  build=own_build, builds=builds)


def _check_custom_allreduce(levels: Mapping[tuple[str, str], Mapping[str, Value]], file: str,
                            problems: list[str]) -> None:
    """A file that gives some level a custom all-reduce (``custom_allreduce_max_bytes`` > 0) must
    state its group limit, cost, bandwidth and thresholds somewhere in the file: their ideal values
    (no cost, any size one-shot) would make a real engine's kernels look free."""
    uses = [lvl for lvl, values in levels.items()
            if values.get("custom_allreduce_max_bytes", Value(0.0, "")).value]
    if not uses:
        return
    stated = {k for values in levels.values() for k in values}
    missing = [k for k in CUSTOM_ALLREDUCE if k not in stated]
    if missing:
        where = ", ".join(f"[{lvl}.{key}]" if key else f"[{lvl}]" for lvl, key in uses)
        problems.append(f"{file}: {where} gives the engine a custom all-reduce "
                        f"(custom_allreduce_max_bytes > 0) but the file does not state "
                        f"{', '.join(missing)}: give each a sourced value or an estimate with its "
                        f"rule")


def _failed(raw: dict[str, Any], name: str) -> bool:
    """Whether ``[defaults]`` gives ``name`` (``bf16`` for a compute table), so that a missing
    resolved value means a bad value, already reported, not an absent one."""
    d = raw.get("defaults")
    if not isinstance(d, dict) or name not in d:
        return False
    return not (name in BY_DTYPE and isinstance(d[name], dict) and "bf16" not in d[name])
