"""Catalog access: the built-in device ids (``grids/data/hardware/*.toml``), a device by id or by
the path of a user's file, the whole catalog checked at once, and the hash of every catalog data
file.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from grids.errors import SpecError, suggest
from grids.hardware.classes import _data_dir, _load_toml, class_defaults
from grids.hardware.device import Device
from grids.hardware.device_file import parse_device

# --------------------------------------------------------------------------------------------
# catalog access


def hardware_dir() -> Path:
    return _data_dir() / "hardware"


def catalog_ids() -> tuple[str, ...]:
    """Ids of the built-in devices (file stems), sorted."""
    return tuple(sorted(p.stem for p in hardware_dir().glob("*.toml")))


@functools.cache
def _load_catalog_device(dev_id: str) -> Device:
    path = hardware_dir() / f"{dev_id}.toml"
    raw = _load_toml(path)
    if raw.get("id") != dev_id:
        raise SpecError(f"{path.name}: id {raw.get('id')!r} does not match the file name")
    return parse_device(raw, dev_id)


def load_device(ref: str | Path) -> Device:
    """A device by catalog id, or from a user TOML file path of the catalog schema."""
    text = str(ref)
    if text.endswith(".toml") or "/" in text or Path(text).suffix:
        path = Path(text)
        raw = _load_toml(path)
        if raw.get("id") != path.stem:  # as in the catalog: the id names the file
            raise SpecError(f"{path.name}: id {raw.get('id')!r} differs from the file name "
                            f"{path.stem!r}; the id of a device file is its name: rename the "
                            f"file to {raw.get('id')}.toml or set id = {path.stem!r}")
        return parse_device(raw, path.name)
    ids = catalog_ids()
    if text not in ids:
        raise SpecError(f"unknown hardware id {text!r}{suggest(text, ids)}; "
                        f"`sweep catalog hardware` lists them, or give a path to a TOML file")
    return _load_catalog_device(text)


def load_catalog() -> dict[str, Device]:
    """All built-in devices, every file checked; all problems reported together."""
    class_defaults()  # a broken classes.toml is one error, not one per device
    problems: list[str] = []
    out: dict[str, Device] = {}
    for dev_id in catalog_ids():
        try:
            out[dev_id] = _load_catalog_device(dev_id)
        except SpecError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SpecError(problems, "hardware catalog")
    return out


def catalog_hash() -> str:
    """SHA-256 over every catalog data file (hardware, classes, engines, prices, models)."""
    h = hashlib.sha256()
    root = _data_dir()
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in (".toml", ".json", ".csv"):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()
