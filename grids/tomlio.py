"""The one TOML reader and writer of the project (specs in provenance, catalogs, overlays).

Reading uses :mod:`tomllib` and turns every failure into one :class:`~grids.errors.SpecError` that
names the file. Writing handles the small, regular structures the project produces: nested dicts
of numbers, strings, booleans and lists. A nested dict becomes a ``[table]`` unless its top-level
key is listed in ``inline`` (then it is written as an inline table, e.g. a spec's
``batch = { from = 1, to = 1024, scale = "log2" }``); ``None`` values are left out.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from grids.errors import SpecError


def load(path: str | Path) -> dict[str, Any]:
    """Parse a TOML file; a missing file, bad encoding or malformed TOML is one SpecError."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError as exc:
        raise SpecError(f"{p}: file not found") from exc
    except IsADirectoryError as exc:
        raise SpecError(f"{p}: is a directory, not a TOML file") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{p}: malformed TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise SpecError(f"{p}: not a UTF-8 text file: {exc}") from exc
    except OSError as exc:
        raise SpecError(f"{p}: cannot read: {exc.strerror or exc}") from exc


def key(k: str) -> str:
    """A TOML key: bare when it is letters, digits, ``-`` and ``_`` only, else quoted."""
    k = str(k)
    return k if k and k.replace("-", "").replace("_", "").isalnum() and k.isascii() else value(k)


def value(v: Any) -> str:
    """One TOML value (dicts as inline tables)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return repr(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()
                                if x is not None) + " }"
    if hasattr(v, "item"):  # NumPy scalars
        return value(v.item())
    return value(str(v))


def dumps(data: Mapping[str, Any], *, inline: Collection[str] = (), header: str = "") -> str:
    """Serialise ``data`` to TOML text; ``header`` lines are written first as comments."""
    out = [f"# {line}".rstrip() for line in header.splitlines()]
    if out:
        out.append("")
    out.extend(_table_lines(data, "", set(inline)))
    return "\n".join(out).strip() + "\n"


def _table_lines(data: Mapping[str, Any], prefix: str, inline: set[str]) -> list[str]:
    lines, subs = [], []
    for k, v in data.items():
        if v is None:
            continue
        if isinstance(v, Mapping) and not (not prefix and k in inline):
            subs.append((k, v))
        else:
            lines.append(f"{key(k)} = {value(v)}")
    for k, v in subs:
        name = f"{prefix}.{key(k)}" if prefix else key(k)
        lines.append("")
        lines.append(f"[{name}]")
        lines.extend(_table_lines(v, name, inline))
    return lines
