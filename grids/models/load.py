""":func:`load_model`: a model from a catalog id, a ``config.json`` path (or its directory), a
Hugging Face id in the local hub cache, or a dict."""

from __future__ import annotations

import json
import os
from pathlib import Path

from grids.errors import SpecError, suggest
from grids.models.hf_cache import HF_ID, hf_config_path
from grids.models.parse import model_from_config
from grids.models.record import ModelArch
from grids.models.shipped import _load_catalog_model, catalog


def _load_file(path: Path, mid: str | None = None) -> ModelArch:
    if path.is_dir():
        path = path / "config.json"
    try:
        with path.open("r", encoding="utf-8") as fh:
            cfg = json.load(fh)
    except FileNotFoundError:
        raise SpecError(f"model config file {str(path)!r} does not exist "
                        f"(give a catalog id or the path of a config.json)") from None
    except (OSError, ValueError) as exc:  # JSONDecodeError, UnicodeDecodeError, deep nesting
        raise SpecError(f"cannot read model config {str(path)!r} as JSON: {exc}") from None
    except RecursionError:
        raise SpecError(f"cannot read model config {str(path)!r} as JSON: nested too deeply") \
            from None
    mid = mid or (path.parent.name if path.stem == "config" and path.parent.name
                  else path.stem)
    name = str(cfg.get("_name_or_path") or mid) if isinstance(cfg, dict) else mid
    return model_from_config(cfg, id=mid, name=name, sources=(f"user config: {path}",),
                             context=f"model config {str(path)!r}")


def load_model(spec: str | os.PathLike | dict | ModelArch) -> ModelArch:
    """Load a model: a catalog id, the path of a ``config.json`` (or its directory), a Hugging
    Face id ``ORG/NAME`` whose config.json is in the local hub cache (:func:`hf_config_path`;
    the model's id is then the Hugging Face id), or a dict."""
    if isinstance(spec, ModelArch):
        return spec
    if isinstance(spec, dict):
        mid = spec.get("_name_or_path") or spec.get("model_type") or "custom"
        mid = str(mid) if isinstance(mid, str) else "custom"
        return model_from_config(spec, id=mid, name=mid, sources=("user config dict",))
    if isinstance(spec, os.PathLike):
        return _load_file(Path(spec))
    if not isinstance(spec, str):
        raise SpecError(f"a model is a catalog id, a config.json path or a dict, got {spec!r}")
    ids = catalog()
    if spec in ids:
        return _load_catalog_model(spec)
    low = {k.lower(): k for k in ids}
    if spec.lower() in low:
        return _load_catalog_model(low[spec.lower()])
    path = Path(spec).expanduser()
    if not path.exists() and HF_ID.match(spec) and not spec.endswith(".json"):
        return _load_file(hf_config_path(spec), mid=spec)  # a Hugging Face id, from the cache
    if path.exists() or spec.endswith(".json") or os.sep in spec or "/" in spec:
        return _load_file(path)
    raise SpecError(f"unknown model {spec!r}{suggest(spec.lower(), ids)}; or give a Hugging "
                    f"Face id (ORG/NAME, read from the local cache) or the path of a config.json")
