"""Serving-engine catalog: what a serving stack costs on top of the hardware's achievable roofline.

The hardware catalog's efficiencies are what the *best* software reaches on a device. An engine
profile (``grids/data/engines/<id>.toml``, schema and sources in ``docs/engines.md``) states how far
one serving stack falls short of that and what it adds: compute and bandwidth factors, host time
per forward pass and per request, collective costs, memory and batch caps, speculative decoding.

:func:`resolve` turns an (engine, device) pair into plain SI numbers (:class:`EngineParams`) by a
per-parameter fallback ``[device.<id>]`` -> ``[vendor.<vendor>]`` -> ``[class.<cls>]`` ->
``[defaults]`` -> the ideal value (only for parameters whose ideal value is physically right when
absent, see ``OPTIONAL``). A calibration overlay (fitted plain numbers with the same hierarchy)
takes precedence over the file at the same or a less specific level. An engine with a
``[delegate]`` table (``native``) hands each device to another engine, most specific key first.

Units (SI): times in s, ``comm_bytes`` in B per element, fractions and counts dimensionless;
``max_batch`` and ``prefill_chunk`` may be ``inf`` (no cap / no chunking).

Files (each imports only those above it):

- ``parameters.py``: the catalog's engine ids (``ENGINE_IDS``) and ``engines_dir``; every
  parameter (``ParamSpec``, ``PARAMS`` and the tuples derived from it: ``SCALARS``, ``BOOLS``,
  ``OPTIONAL``, ``FLAT_KEYS``, ...); ``EngineParams``, the resolved parameters of one pair;
- ``profile.py``: ``Engine`` (a loaded profile) and ``Value``; ``runs_on`` / ``[delegate]``
  targets, matched to a device and checked against the hardware catalog;
- ``parse.py``: ``parse_engine``, one engine file's tables of sourced values into an ``Engine``;
- ``overlay.py``: calibration overlays (``read_overlay``, ``check_overlay``) and the shipped one
  (``calibration_path``, ``shipped_overlay``);
- ``catalog.py``: ``load_engine`` (an id, ``<id>@<build>`` or a path), ``with_build``,
  ``engine_for_version`` (a measurement row's build), ``catalog_engines``, ``clear_caches``;
- ``resolution.py``: ``resolve``, an (engine, device) pair to ``EngineParams``.
"""

from grids.engines.catalog import (
    catalog_engines,
    clear_caches,
    engine_for_version,
    load_engine,
    with_build,
)
from grids.engines.overlay import calibration_path, check_overlay, read_overlay, shipped_overlay
from grids.engines.parameters import (
    BY_DTYPE,
    CALIBRATION_FILE,
    ENGINE_IDS,
    FLAT_KEYS,
    OPTIONAL,
    PARAMS,
    SCALARS,
    EngineParams,
    engines_dir,
)
from grids.engines.parse import parse_engine
from grids.engines.profile import Engine
from grids.engines.resolution import resolve

__all__ = [
    "BY_DTYPE", "CALIBRATION_FILE", "ENGINE_IDS", "FLAT_KEYS", "OPTIONAL", "PARAMS", "SCALARS",
    "Engine", "EngineParams", "calibration_path", "catalog_engines", "check_overlay",
    "clear_caches", "engine_for_version", "engines_dir", "load_engine", "parse_engine",
    "read_overlay", "resolve", "shipped_overlay", "with_build",
]
