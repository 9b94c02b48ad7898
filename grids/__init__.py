"""What to sweep: sourced catalogs (hardware, models, precisions, parallel layouts) and grid specs.

Everything here is validated and in SI base units. This package imports neither ``kernels`` nor
``sweep``. Main entry points: :func:`load_spec` (TOML path, dict or None for the default grid),
:func:`load_device`, :func:`load_model`, :func:`parse_precision`, :func:`parse_layout`.
"""

from grids.engines import ENGINE_IDS, EngineParams, load_engine
from grids.engines import resolve as resolve_engine
from grids.errors import SpecError
from grids.hardware import Device, catalog_hash, catalog_ids, load_catalog, load_device
from grids.layouts import Layout, parse_layout
from grids.models import MODEL_IDS, ModelArch, catalog_models, load_model
from grids.precisions import Precision, catalog_precisions, parse_precision
from grids.spec import DEFAULT_SPEC, DIMS, GridSpec, load_spec

__all__ = [
    "DEFAULT_SPEC", "DIMS", "ENGINE_IDS", "MODEL_IDS", "Device", "EngineParams", "GridSpec", "Layout",
    "ModelArch", "Precision", "SpecError", "catalog_hash", "catalog_ids", "catalog_models",
    "catalog_precisions", "load_catalog", "load_device", "load_engine", "load_model", "load_spec",
    "parse_layout", "parse_precision", "resolve_engine",
]
