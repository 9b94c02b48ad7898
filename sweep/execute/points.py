"""Evaluate arbitrary points (a table of rows) with the same per-point physics as a grid.

One path for every caller: :func:`resolve_points` loads the distinct hardware, model, precision and
layout labels of a table once (one :class:`~grids.errors.SpecError` listing every bad value and the
rows that use it), packs them into the kernels' tables and maps each row to its indices;
:func:`evaluate_rows` types the per-row inputs once (contiguous int64 indices, float64 values, so
the point-list kernel is compiled for one signature only) and calls it. :func:`evaluate`
(``sweep.evaluate``) and the validation evaluator both go through these two functions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from grids.errors import SpecError
from grids.hardware import load_device
from grids.layouts import parse_layout
from grids.models import load_model
from grids.precisions import parse_precision
from grids.spec import DEFAULT_PREFILL_CHUNK
from sweep.execute.tables import Tables, build_tables
from sweep.results.assemble import metric_arrays

#: the axes of a point and the loader of each axis' labels
AXES: dict[str, Callable[[str], Any]] = {
    "hardware": load_device, "model": load_model, "precision": parse_precision,
    "layout": parse_layout,
}
NUMBERS = ("batch", "context", "output_len")
EVALUATE_COLUMNS = (*AXES, *NUMBERS)


@dataclass
class PointTables:
    """The distinct labels of each axis of a table of points, resolved and packed for the kernels,
    and each row's index into them."""

    labels: dict[str, list[str]]
    objects: dict[str, list[Any]]
    tables: Tables
    index: dict[str, np.ndarray]  # axis -> int64 row indices

    def rows_with(self, axis: str, label: str) -> np.ndarray:
        return np.flatnonzero(self.index[axis] == self.labels[axis].index(label))


def resolve_points(table: pd.DataFrame, loaders: dict[str, Callable[[str], Any]] | None = None,
                   where: str = "evaluate") -> PointTables:
    """Resolve the axis columns of ``table`` (``hardware, model, precision, layout``).

    ``loaders`` replaces the loader of some axes (e.g. devices with other efficiencies). Every
    label that cannot be loaded is reported at once, with the rows (by index label) that use it.
    """
    loaders = {**AXES, **(loaders or {})}
    problems: list[str] = []
    labels: dict[str, list[str]] = {}
    objects: dict[str, list[Any]] = {}
    index: dict[str, np.ndarray] = {}
    for axis, loader in loaders.items():
        col = table[axis].astype(str)
        values = [str(v) for v in pd.unique(col)]
        objs = []
        for v in values:
            try:
                objs.append(loader(v))
            except SpecError as exc:
                rows = table.index[col == v].tolist()
                shown = ", ".join(map(str, rows[:5])) + (", ..." if len(rows) > 5 else "")
                problems.extend(f"{axis} {v!r} (rows {shown}): {p}" for p in exc.problems)
                objs.append(None)
        labels[axis], objects[axis] = values, objs
        index[axis] = col.map({v: i for i, v in enumerate(values)}).to_numpy(np.int64)
    if problems:
        raise SpecError(problems, where)
    tables = build_tables(objects["hardware"], objects["model"], objects["precision"],
                          objects["layout"])
    return PointTables(labels, objects, tables, index)


def evaluate_rows(pt: PointTables, rows: np.ndarray, batch: np.ndarray, context: np.ndarray,
                  output_len: np.ndarray, prefill_chunk: float = DEFAULT_PREFILL_CHUNK, *,
                  hw: np.ndarray | None = None, peak: np.ndarray | None = None,
                  hw_index: np.ndarray | None = None) -> np.ndarray:
    """Kernel output ``(N_METRICS, len(rows))`` for the given rows of ``pt``.

    ``batch``, ``context``, ``output_len`` are per evaluated row [sequences], [tokens],
    [tokens]; ``hw`` and ``peak`` replace the hardware and peak tables and ``hw_index`` the rows'
    indices into them (the calibration evaluates the same points with other efficiencies)."""
    from kernels import evaluate_points  # lazy: importing sweep does not compile kernels

    rows = np.asarray(rows, dtype=np.int64)
    t = pt.tables
    hi = pt.index["hardware"][rows] if hw_index is None else hw_index
    return evaluate_points(
        np.ascontiguousarray(t.hw if hw is None else hw, np.float64), t.md,
        np.ascontiguousarray(t.peak if peak is None else peak, np.float64), t.pr, t.ly,
        np.ascontiguousarray(hi, np.int64), np.ascontiguousarray(pt.index["model"][rows]),
        np.ascontiguousarray(pt.index["precision"][rows]),
        np.ascontiguousarray(pt.index["layout"][rows]),
        np.ascontiguousarray(batch, np.float64), np.ascontiguousarray(context, np.float64),
        np.ascontiguousarray(output_len, np.float64), float(prefill_chunk))


def evaluate(table: pd.DataFrame, *, prefill_chunk: int = DEFAULT_PREFILL_CHUNK) -> pd.DataFrame:
    """Evaluate arbitrary points: a DataFrame with columns ``hardware, model, batch, context,
    output_len, precision, layout``; returns a copy with one column per metric added.

    Uses the point-list kernel (the same per-point physics as :func:`sweep.run`). Unknown ids or
    malformed values raise one :class:`~grids.errors.SpecError` listing every bad row.
    """
    missing = [c for c in EVALUATE_COLUMNS if c not in table.columns]
    if missing:
        raise SpecError(f"evaluate: the table lacks columns {missing} (needs "
                        f"{', '.join(EVALUATE_COLUMNS)})")
    problems: list[str] = []
    nums = {}
    for col in NUMBERS:
        vals = pd.to_numeric(table[col], errors="coerce").to_numpy(dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(vals) | (vals < 1) | (vals != np.round(vals)))
        if bad.size:
            problems.append(f"{col}: rows {bad[:10].tolist()} are not whole numbers >= 1")
        nums[col] = vals
    try:
        pt = resolve_points(table)
    except SpecError as exc:
        raise SpecError([*exc.problems, *problems], "evaluate") from None
    if problems:
        raise SpecError(problems, "evaluate")
    out = evaluate_rows(pt, np.arange(len(table)), nums["batch"], nums["context"],
                        nums["output_len"], prefill_chunk)
    result = table.copy()
    for name, col in metric_arrays(out).items():
        result[name] = col
    return result
