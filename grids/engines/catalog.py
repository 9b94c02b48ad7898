"""The catalog's engines: :func:`load_engine` by id (cached) or path, :func:`catalog_engines`
(every file checked, problems reported together) and :func:`clear_caches`."""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path

from grids import tomlio
from grids.engines.overlay import shipped_overlay
from grids.engines.parameters import CALIBRATION_FILE, ENGINE_IDS, engine_family, engines_dir
from grids.engines.parse import _raw_catalog, parse_engine
from grids.engines.profile import Engine, _catalog_devices
from grids.errors import SpecError, suggest

# --------------------------------------------------------------------------------------------
# catalog access


@functools.cache
def _load_catalog_engine(engine_id: str) -> Engine:
    return parse_engine(_raw_catalog(engine_id), f"{engine_id}.toml", expected_id=engine_id)


def load_engine(ref: str | Path | Engine) -> Engine:
    """An engine by catalog id, ``<id>@<build>`` (one release of a catalog engine, see
    :func:`with_build`), or from the path of a TOML file of the same schema."""
    if isinstance(ref, Engine):
        return ref
    text = str(ref)
    if text in ENGINE_IDS:
        return _load_catalog_engine(text)
    family, at, build = text.partition("@")
    if at and family in ENGINE_IDS:
        return with_build(_load_catalog_engine(family), build)
    if text.endswith(".toml") or "/" in text or "\\" in text:
        path = Path(text)
        return parse_engine(tomlio.load(path), path.name)
    raise SpecError(f"unknown engine {text!r}{suggest(text, ENGINE_IDS)}; the catalog engines are "
                    f"{', '.join(ENGINE_IDS)}, or give the path of a TOML file")


def with_build(engine: Engine, build: str) -> Engine:
    """``engine`` as its release ``build``: the file's own build (the bare id's values) or one of
    its ``[builds]``, whose values take precedence (docs/engines.md "Builds")."""
    if engine.family:
        raise SpecError(f"{engine.id!r} is already one build of {engine.family!r}: load "
                        f"'{engine.family}@{build}' instead")
    names = engine.build_names()
    if build not in names:
        have = (f"its builds are {', '.join(names)}" if names else
                "it declares no builds (use the bare id)")
        raise SpecError(f"unknown build {build!r} of engine {engine.id!r}: {have} (write "
                        f"'{engine.id}@<build>')")
    active = engine.builds.get(build)
    versions = engine.versions if active is None else (
        f"{build} (released {active.released}): {active.description}")
    return replace(engine, id=f"{engine.id}@{build}", family=engine.id, active=active,
                   versions=versions)


def engine_for_version(engine: str, version: str) -> str:
    """The engine reference of a measurement row: ``<id>@<build>`` when the row's
    ``engine_version`` text starts with a ``matches`` prefix of one of the catalog engine's
    ``[builds]``, else ``engine`` itself (the file's own build, or not a catalog id)."""
    if engine not in ENGINE_IDS:
        return engine
    build = _load_catalog_engine(engine).build_for_version(version)
    return engine if build is None else f"{engine}@{build}"


def catalog_engines() -> dict[str, Engine]:
    """Every catalog engine, all files checked and every problem reported together; also checks
    that each catalog device ``native`` hands to another engine is one that engine runs on."""
    problems: list[str] = []
    out: dict[str, Engine] = {}
    present = sorted(p.name[:-5] for p in engines_dir().glob("*.toml")
                     if p.name != CALIBRATION_FILE)
    for name in present:
        if name not in ENGINE_IDS:
            problems.append(f"{name}.toml: not a catalog engine id{suggest(name, ENGINE_IDS)}")
    for engine_id in ENGINE_IDS:
        try:
            out[engine_id] = _load_catalog_engine(engine_id)
        except SpecError as exc:
            problems.extend(exc.problems)
    for eng in out.values():
        if not eng.delegate:
            continue
        for target, ref in eng.delegate:
            try:
                load_engine(ref)
            except SpecError as exc:
                problems.append(f"{eng.where}: [delegate] {target!r} = {ref!r}: {exc.problems[0]}")
        for dev in _catalog_devices().values():
            hit = eng.delegate_for(dev)
            family = engine_family(hit[1]) if hit else ""
            if hit and family in out and not out[family].runs_on_device(dev):
                problems.append(f"{eng.where}: [delegate] {hit[0]!r} hands {dev.id} to {hit[1]}, "
                                f"which does not run on it")
    if problems:
        raise SpecError(problems, "engine catalog")
    return out


def clear_caches() -> None:
    """Forget loaded engines and the shipped overlay (after an engine file, the calibration or
    the hardware catalog changed)."""
    shipped_overlay.cache_clear()
    _raw_catalog.cache_clear()
    _load_catalog_engine.cache_clear()
    _catalog_devices.cache_clear()
