"""Hardware catalog: accelerators as sourced TOML files, loaded into SI-unit :class:`Device` objects.

Each device is one file ``grids/data/hardware/<id>.toml`` (schema in ``docs/catalog.md``); per
architecture-class defaults for the efficiency parameters live in ``grids/data/classes.toml``; the
efficiencies are what the best software reaches on the hardware ("achievable"); what a given
serving stack falls short of that, and costs on top, is the engine catalog's (``grids.engines``),
which ``sweep calibrate`` fits against measurements.
A user adds a device by writing a file of the same schema and passing its path instead of an id.

Which file holds what (each imports only the ones above it):

``device.py``
    the :class:`Device` record (:class:`MemoryTier`, :class:`Efficiency`) and the schema's names
    (``COMPUTE_DTYPES``, ``CLASSES``, ``EFFICIENCY_FIELDS``, ``CLASS_FIELDS``, ...).
``classes.py``
    :func:`class_defaults`, the per-class defaults of ``classes.toml``; where the data files live.
``device_file.py``
    :func:`parse_device`: one device file, read topic by topic, every problem in one SpecError.
``catalog.py``
    :func:`catalog_ids`, :func:`load_device` (by id or path), :func:`load_catalog`,
    :func:`hardware_dir`, :func:`catalog_hash`.
``hypothetical.py``
    :func:`derive_device` and its ``OVERRIDE_KEYS``: a catalog device with fields replaced.
"""

from grids.hardware.catalog import catalog_hash, catalog_ids, hardware_dir, load_catalog, load_device
from grids.hardware.classes import class_defaults
from grids.hardware.device import (
    BY_DTYPE,
    CLASS_FIELDS,
    CLASSES,
    COMPUTE_DTYPES,
    EFFICIENCY_FIELDS,
    ENERGY_FIELDS,
    INTERCONNECT_KEYS,
    MAX_TIERS,
    POWER_KEYS,
    TIER_KINDS,
    Device,
    Efficiency,
    MemoryTier,
)
from grids.hardware.device_file import parse_device
from grids.hardware.hypothetical import OVERRIDE_KEYS, derive_device

__all__ = [
    "BY_DTYPE", "CLASSES", "CLASS_FIELDS", "COMPUTE_DTYPES", "EFFICIENCY_FIELDS", "ENERGY_FIELDS",
    "INTERCONNECT_KEYS", "MAX_TIERS", "OVERRIDE_KEYS", "POWER_KEYS", "TIER_KINDS", "Device",
    "Efficiency", "MemoryTier", "catalog_hash", "catalog_ids", "class_defaults", "derive_device",
    "hardware_dir", "load_catalog", "load_device", "parse_device",
]
