"""Helpers shared by the command modules: JSON output, text tables, ``--sel``."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from grids.errors import SpecError


def parse_sel(items: list[str] | None) -> dict[str, str | list[str]]:
    """``--sel DIM=VALUE`` options as a dict; ``DIM=A,B`` (several values, the dim kept) gives a
    list. Repeating a dim adds its values: ``--sel hardware=a --sel hardware=b``."""
    out: dict[str, str | list[str]] = {}
    for item in items or ():
        dim, eq, value = str(item).partition("=")
        values = [v.strip() for v in value.split(",")]
        if not eq or not dim.strip() or not all(values):
            raise SpecError(f"--sel {item!r}: write DIM=VALUE or DIM=A,B,..., e.g. "
                            f"--sel model=llama-3.1-8b or --sel hardware=h100-sxm,mi300x")
        dim = dim.strip()
        if dim in out:
            prev = out[dim]
            values = [*(prev if isinstance(prev, list) else [prev]), *values]
        out[dim] = values if len(values) > 1 else values[0]
    return out


def jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if x is pd.NA or x is None:
        return None
    return x


def records(df: pd.DataFrame) -> list[dict]:
    df = df.astype(object).where(pd.notna(df), None)
    return [jsonable(r) for r in df.to_dict(orient="records")]


def print_json(obj: Any) -> None:
    print(json.dumps(jsonable(obj), indent=1, default=str))


def text_table(df: pd.DataFrame, limit: int | None) -> str:
    if df.empty:
        return "(none)"
    n = len(df)
    shown = df if limit is None or limit <= 0 or n <= limit else df.head(limit)
    text = shown.to_string(index=False, float_format=lambda v: f"{v:.4g}")
    if len(shown) < n:
        text += f"\n... {n - len(shown)} more rows (use --limit 0 or --json for all)"
    return text
