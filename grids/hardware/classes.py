"""Per architecture-class defaults of the efficiency, power and interconnect parameters
(``grids/data/classes.toml``), and where the catalog's data files live (``grids/data``).
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path
from typing import Any

from grids import tomlio
from grids.errors import SpecError
from grids.hardware.device import CLASS_FIELDS, CLASSES
from grids.sourced import Sourced, read_sourced


def _data_dir() -> Path:
    return Path(str(resources.files("grids") / "data"))


# --------------------------------------------------------------------------------------------
# class defaults and calibration overlay


@functools.cache
def class_defaults() -> dict[str, dict[str, Sourced]]:
    """Per-class default efficiency parameters from ``classes.toml``."""
    path = _data_dir() / "classes.toml"
    raw = _load_toml(path)
    problems: list[str] = []
    out: dict[str, dict[str, Sourced]] = {}
    for cls in CLASSES:
        table = raw.get(cls)
        if not isinstance(table, dict):
            problems.append(f"{path.name}: missing class table [{cls}]")
            continue
        out[cls] = {}
        for name, (dim, lo, hi) in CLASS_FIELDS.items():
            if name not in table:
                problems.append(f"{path.name}: [{cls}] missing {name}")
                continue
            s = read_sourced(table[name], dim, f"{path.name}: [{cls}].{name}", problems,
                             positive=False)
            if s is not None and not (lo < s.value <= hi):
                problems.append(f"{path.name}: [{cls}].{name} = {s.value} outside ({lo}, {hi}]")
            if s is not None:
                out[cls][name] = s
    if problems:
        raise SpecError(problems, "class defaults")
    return out


def _load_toml(path: Path) -> dict[str, Any]:
    return tomlio.load(path)
