"""The models shipped with the package: ``grids/data/models/catalog.toml`` and the
``config.json`` files it lists, loaded (once each) with their sources and published counts."""

from __future__ import annotations

import functools
import json
import tomllib
from importlib import resources
from typing import Any

from grids.models.parse import model_from_config
from grids.models.record import ModelArch


def _models_dir():
    return resources.files("grids") / "data" / "models"


@functools.lru_cache(maxsize=1)
def catalog() -> dict[str, dict[str, Any]]:
    """The parsed ``catalog.toml``: id -> entry (name, hf_repo, config, published_*, notes...)."""
    with (_models_dir() / "catalog.toml").open("rb") as fh:
        return tomllib.load(fh)


MODEL_IDS: tuple[str, ...] = tuple(catalog())


def _published(entry: dict, key: str) -> tuple[int | None, str]:
    v = entry.get(key)
    if isinstance(v, dict):
        return int(v["value"]), str(v.get("source", ""))
    return None, ""


@functools.cache
def _load_catalog_model(model_id: str) -> ModelArch:
    e = catalog()[model_id]
    with (_models_dir() / e["config"]).open("r", encoding="utf-8") as fh:
        cfg = json.load(fh)
    pt, pts = _published(e, "published_total")
    pa, pas = _published(e, "published_active")
    sources = [f"config: {e.get('config_source', '')}"]
    if pts:
        sources.append(f"published total: {pts}")
    if pas and pas != pts:
        sources.append(f"published active: {pas}")
    return model_from_config(cfg, id=model_id, name=e.get("name", model_id), sources=sources,
                             published_total=pt, published_active=pa)


def catalog_models() -> list[ModelArch]:
    """Every catalog model, in catalog order."""
    return [_load_catalog_model(m) for m in MODEL_IDS]


def list_models() -> list[ModelArch]:
    """Every catalog model, in catalog order (same as :func:`catalog_models`)."""
    return catalog_models()
