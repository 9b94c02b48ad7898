"""Evaluate arbitrary points (a table of rows) with the same per-point physics as a grid.

One path for every caller: :func:`resolve_points` loads the distinct hardware, engine, model,
precision and parallelism labels of a table once (one :class:`~grids.errors.SpecError` listing
every bad value and the rows that use it), packs them into the kernels' tables and maps each row to
its indices; :func:`evaluate_rows` types the per-row inputs once (contiguous int64 indices, float64
values, so the point-list kernel is compiled for one signature only) and calls it; and
:func:`max_load` finds each row's maximum-load batch (docs/model.md section 11). :func:`evaluate`
(``sweep.evaluate``) and the validation evaluator both go through these functions.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from grids.engines import load_engine
from grids.engines import resolve as resolve_engine
from grids.errors import SpecError
from grids.hardware import load_device
from grids.layouts import parse_layout
from grids.models import load_model
from grids.precisions import parse_precision
from grids.spec import (
    BATCHING,
    DEFAULT_BATCHING,
    DEFAULT_ENGINE,
    DEFAULT_PREFILL_CHUNK,
    RATE_DIM,
    RATE_MAX,
    prefill_chunk_problem,
)
from kernels.params import METRICS, MODE_CONTINUOUS, MODE_RATE, MODE_STATIC, RATE_METRICS
from sweep.execute.tables import Tables, build_tables
from sweep.results.assemble import band_coordinates, metric_arrays

#: the axes of a point and the loader of each axis' labels
AXES: dict[str, Callable[[str], Any]] = {
    "hardware": load_device, "engine": load_engine, "model": load_model,
    "precision": parse_precision, "parallelism": parse_layout,
}
NUMBERS = ("batch", "context", "output_len")
#: the load column a table may give instead of ``batch``: requests per second of the layout
RATE_COLUMN = RATE_DIM
#: columns ``sweep.evaluate`` reads (``engine`` may be absent: the default engine; ``batching``
#: absent: continuous batching; ``request_rate`` instead of ``batch``)
EVALUATE_COLUMNS = (*AXES, *NUMBERS, "batching", RATE_COLUMN)
OPTIONAL_COLUMNS = ("engine", "batching")
#: ``batch`` value asking for the maximum load (docs/model.md section 13.2)
MAX_LOAD = "max"
#: the kernel's serving mode of each ``batching`` value
MODE_OF = {"continuous": MODE_CONTINUOUS, "static": MODE_STATIC}
#: the problem of a request rate asked for with static batching
RATE_NEEDS_CONTINUOUS = ("batching: a request_rate needs continuous batching (a static batch "
                         "has no arrival rate)")
_FITS = METRICS.index("fits")
_MAXC = METRICS.index("max_concurrency")
_CONC = METRICS.index("concurrency")


@dataclass
class PointTables:
    """The distinct labels of each axis of a table of points, resolved and packed for the kernels,
    and each row's index into them (``platform``: the row's (hardware, engine) platform row)."""

    labels: dict[str, list[str]]
    objects: dict[str, list[Any]]
    tables: Tables
    index: dict[str, np.ndarray]  # axis -> int64 row indices
    costs: list[Any]
    prefill_chunk: float
    context_scaling: float = 1.0
    #: ``[h, e]``: the uncertainty band of each (hardware, engine) pair (``band_factor`` of a
    #: result, :func:`sweep.results.assemble.band_coordinates`)
    band: np.ndarray | None = None

    @property
    def platform(self) -> np.ndarray:
        return self.index["hardware"] * self.tables.n_engines + self.index["engine"]

    def engines(self, overlay: dict[str, Any] | None = None) -> list[list[Any]]:
        """``[h][e]``: every engine of the table resolved for every device under ``overlay``."""
        return [[resolve_engine(e, d, overlay) for e in self.objects["engine"]]
                for d in self.objects["hardware"]]

    def retable(self, engines: list[list[Any]]) -> Tables:
        """The kernels' tables with other engine parameters (``engines[h][e]``), same axes."""
        return build_tables(self.objects["hardware"], self.objects["model"],
                            self.objects["precision"], self.objects["parallelism"], engines,
                            self.costs, self.prefill_chunk, self.context_scaling)


def resolve_points(table: pd.DataFrame, loaders: dict[str, Callable[[str], Any]] | None = None,
                   where: str = "evaluate", *, overlay: dict[str, Any] | None = None,
                   cost: Any = None, prefill_chunk: float = DEFAULT_PREFILL_CHUNK,
                   context_scaling: float = 1.0) -> PointTables:
    """Resolve the axis columns of ``table`` (``hardware, engine, model, precision,
    parallelism``); a missing ``engine`` column means the default engine.

    ``loaders`` replaces the loader of some axes; ``overlay`` is an engine calibration overlay
    (None = the shipped one), ``cost`` a :class:`grids.prices.CostSpec`, ``context_scaling`` how
    far prompts may exceed a model's context window. Every label that cannot be loaded is
    reported at once, with the rows (by index label) that use it.
    """
    from grids.prices import device_costs

    loaders = {**AXES, **(loaders or {})}
    problems: list[str] = []
    labels: dict[str, list[str]] = {}
    objects: dict[str, list[Any]] = {}
    index: dict[str, np.ndarray] = {}
    for axis, loader in loaders.items():
        raw = table[axis] if axis in table.columns else pd.Series(DEFAULT_ENGINE,
                                                                   index=table.index)
        empty = raw.isna().to_numpy()
        if empty.any():
            rows = table.index[empty].tolist()
            shown = ", ".join(map(str, rows[:5])) + (", ..." if len(rows) > 5 else "")
            problems.append(f"{axis}: rows {shown} have no value (None/NaN); give a {axis} "
                            f"for every row")
            raw = raw.where(~empty, "")
        col = raw.astype(str)
        codes, uniques = pd.factorize(col, sort=False)  # first-appearance order, as pd.unique
        values = [str(v) for v in uniques]
        objs: list[Any] = []
        for v in values:
            if v == "" and empty.any():
                objs.append(None)  # reported above
                continue
            try:
                objs.append(loader(v))
            except SpecError as exc:
                rows = table.index[col == v].tolist()
                shown = ", ".join(map(str, rows[:5])) + (", ..." if len(rows) > 5 else "")
                problems.extend(f"{axis} {v!r} (rows {shown}): {p}" for p in exc.problems)
                objs.append(None)
        labels[axis], objects[axis] = values, objs
        index[axis] = codes.astype(np.int64)
    if problems:
        raise SpecError(problems, where)
    devices = objects["hardware"]
    costs = device_costs(devices, cost, missing="nan")
    pt = PointTables(labels, objects, None, index, [costs[d.id] for d in devices],  # type: ignore
                     float(prefill_chunk), float(context_scaling))
    engines = pt.engines(overlay)
    pt.tables = pt.retable(engines)
    pt.band = band_coordinates(devices, engines)["band_factor"][1]
    return pt


def evaluate_rows(pt: PointTables, rows: np.ndarray, batch: np.ndarray, context: np.ndarray,
                  output_len: np.ndarray, *, mode: np.ndarray | float = MODE_CONTINUOUS,
                  tables: Tables | None = None) -> np.ndarray:
    """Kernel output ``(N_METRICS, len(rows))`` for the given rows of ``pt``.

    ``batch`` [sequences, or requests/s of the layout in rate mode], ``context`` and
    ``output_len`` [tokens] are per evaluated row; ``mode`` the serving mode
    (``kernels.params.MODE_*``, per row or for all); ``tables`` replaces ``pt``'s (the
    calibration evaluates the same points with other engine parameters,
    :meth:`PointTables.retable`)."""
    from kernels import evaluate_points  # lazy: importing sweep does not compile kernels

    rows = np.asarray(rows, dtype=np.int64)
    t = pt.tables if tables is None else tables
    modes = np.broadcast_to(np.asarray(mode, dtype=np.float64), rows.shape)
    return evaluate_points(
        t.hw, t.md, t.px, t.pr, t.ly, pt.platform[rows],
        pt.index["model"][rows], pt.index["precision"][rows], pt.index["parallelism"][rows],
        batch, context, output_len, modes)


def max_load(pt: PointTables, rows: np.ndarray, context: np.ndarray, output_len: np.ndarray,
             *, tables: Tables | None = None, cap: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray]:
    """Maximum load as the scheduler reaches it (docs/model.md section 13.2): continuous
    batching at the maximum concurrency (the engine's batch cap and the KV cache at its
    admission length), further capped by ``cap`` [requests] per row (a stated
    ``max_num_seqs``). Returns (kernel output ``(N_METRICS, n)``, the concurrency; NaN where
    nothing fits, whose output says why)."""
    rows = np.asarray(rows, dtype=np.int64)
    first = evaluate_rows(pt, rows, np.full(rows.size, np.inf), context, output_len,
                          mode=MODE_CONTINUOUS, tables=tables)
    conc = first[_MAXC].astype(np.float64)
    if cap is not None:
        conc = np.minimum(conc, cap)
    fits = first[_FITS] == 1.0
    again = np.flatnonzero(fits & (conc < first[_CONC]))
    if again.size:
        first[:, again] = evaluate_rows(pt, rows[again], conc[again], context[again],
                                        output_len[again], mode=MODE_CONTINUOUS, tables=tables)
    return first, np.where(fits, first[_CONC], np.nan)


def _numbers(table: pd.DataFrame, load: str, problems: list[str]
             ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The numeric columns as float64 arrays (``load``: ``batch`` or ``request_rate``), and
    which rows ask for the maximum load."""
    nums = {}
    is_max = table[load].astype(str).str.strip().str.lower().eq(MAX_LOAD).to_numpy() \
        if load == "batch" else np.zeros(len(table), dtype=bool)
    for col in (load, "context", "output_len"):
        src = table[col].where(~is_max, 1) if col == "batch" else table[col]
        vals = pd.to_numeric(src, errors="coerce").to_numpy(dtype=np.float64)
        bad, what = bad_numbers(col, vals)
        if bad.size:
            problems.append(f"{col}: rows {table.index[bad[:10]].tolist()} are not {what}")
        nums[col] = vals
    return nums, is_max


def bad_numbers(col: str, vals: np.ndarray) -> tuple[np.ndarray, str]:
    """The positions of ``vals`` that column ``col`` (the load, ``context``, ``output_len``) does
    not accept, and what it accepts."""
    if col == RATE_COLUMN:
        bad = np.flatnonzero(~np.isfinite(vals) | (vals <= 0) | (vals > RATE_MAX))
        return bad, f"positive request rates [1/s] up to {RATE_MAX:.0e}"
    bad = np.flatnonzero(~np.isfinite(vals) | (vals < 1) | (vals != np.round(vals))
                         | (vals > 2.0 ** 31))
    return bad, "whole numbers in [1, 2^31]" + (" or 'max' (maximum load)"
                                                if col == "batch" else "")


def _modes(table: pd.DataFrame, at_rate: bool, problems: list[str]) -> np.ndarray:
    """The serving mode of every row from the ``batching`` column (default continuous)."""
    col = (table["batching"].astype(str).str.strip() if "batching" in table.columns
           else pd.Series(DEFAULT_BATCHING, index=table.index))
    bad = ~col.isin(BATCHING)
    if bad.any():
        problems.append(f"batching: rows {table.index[bad.to_numpy()][:10].tolist()} are not one "
                        f"of {list(BATCHING)}")
    if at_rate and col.eq("static").any():
        problems.append(RATE_NEEDS_CONTINUOUS)
    if at_rate:
        return np.full(len(table), MODE_RATE)
    return col.map(MODE_OF).fillna(MODE_CONTINUOUS).to_numpy(np.float64)


def evaluate(table: pd.DataFrame | Mapping[str, Any] | list, *,
             prefill_chunk: int = DEFAULT_PREFILL_CHUNK,
             calibration: dict[str, Any] | str | Path | None = None,
             cost: Any = None) -> pd.DataFrame:
    """Evaluate arbitrary points with the same physics as :func:`sweep.run`.

    Parameters
    ----------
    table : pandas.DataFrame (or a dict of columns, one row as a dict, a list of row dicts)
        Columns ``hardware, model, context, output_len, precision, parallelism``, the load
        (``batch`` [requests in flight per replica, or sequences of a static batch], or
        ``request_rate`` [requests per second arriving at the layout]), and optionally ``engine``
        (default: the default grid's engine) and ``batching`` (``continuous``, the default, or
        ``static``). ``batch`` may be ``"max"``: the maximum load the scheduler reaches
        (docs/model.md section 13.2), its concurrency reported in ``batch_used``. Other columns
        are passed through untouched (with a warning naming them and the known columns, in case
        one is a misspelling).
    prefill_chunk : int
        Tokens per prefill pass [token] where the engine has no chunk size of its own: a whole
        number in [1, 2^31], as ``[workload] prefill_chunk`` of a grid spec.
    calibration : path or dict, optional
        An engine calibration overlay: its TOML file (``sweep calibrate -o``) or the parsed
        tables; checked whole either way. Default the shipped one; ``{}`` none.
    cost : grids.prices.CostSpec, optional
        Price basis of the cost metrics (default: cloud prices).

    Returns
    -------
    pandas.DataFrame
        A copy of ``table`` with one column per metric (see the glossary; the latency
        percentiles with ``request_rate``), ``batch_used`` (requests running at once) and
        ``band_factor`` (the uncertainty band of the row's engine on its device's vendor: 68% of
        held-out measurements within [value / band_factor, value x band_factor]; NaN for
        ``ideal``; docs/analysis.md, "Uncertainty bands").
    """
    table = as_table(table)
    bad = prefill_chunk_problem(prefill_chunk, "evaluate: prefill_chunk")
    if bad:
        raise SpecError(bad)
    calibration = as_overlay(calibration)
    if "parallelism" not in table.columns and "layout" in table.columns:
        raise SpecError("evaluate: the layout column is called 'parallelism' (as the result's "
                        "dim); rename 'layout' to 'parallelism'")
    at_rate = RATE_COLUMN in table.columns
    if at_rate and "batch" in table.columns:
        raise SpecError("evaluate: give a batch column (requests in flight) or a request_rate "
                        "column (requests per second), not both")
    load = RATE_COLUMN if at_rate else "batch"
    required = [c for c in EVALUATE_COLUMNS if c not in (*OPTIONAL_COLUMNS, "batch", RATE_COLUMN)]
    missing = [c for c in (*required, load) if c not in table.columns]
    if missing:
        raise SpecError(f"evaluate: the table lacks columns {missing} (needs "
                        f"{', '.join(required)} and batch or request_rate; optional: "
                        f"{', '.join(OPTIONAL_COLUMNS)})")
    unknown = [c for c in table.columns if c not in EVALUATE_COLUMNS]
    if unknown:
        warnings.warn(f"evaluate: columns {unknown} are not inputs of the model and are passed "
                      f"through untouched (inputs: {', '.join(EVALUATE_COLUMNS)})", UserWarning,
                      stacklevel=2)
    clash = [c for c in table.columns if c in METRICS or c in ("batch_used", "band_factor")]
    if clash:
        raise SpecError(f"evaluate: columns {clash} have the names of outputs; rename them")
    problems: list[str] = []
    nums, is_max = _numbers(table, load, problems)
    modes = _modes(table, at_rate, problems)
    try:
        pt = resolve_points(table, overlay=calibration, cost=cost,
                            prefill_chunk=int(prefill_chunk))
    except SpecError as exc:
        raise SpecError([*exc.problems, *problems], "evaluate") from None
    if problems:
        raise SpecError(problems, "evaluate")
    rows = np.arange(len(table))
    out = evaluate_rows(pt, rows, nums[load], nums["context"], nums["output_len"], mode=modes)
    used = out[_CONC].astype(np.float64)
    if is_max.any():
        ml = np.flatnonzero(is_max)
        out_ml, batch_ml = max_load(pt, ml, nums["context"][ml], nums["output_len"][ml])
        out[:, ml] = out_ml
        used[ml] = batch_ml
    keep = METRICS if at_rate else tuple(m for m in METRICS if m not in RATE_METRICS)
    band = pt.band[pt.index["hardware"], pt.index["engine"]] if pt.band is not None \
        else np.full(len(table), np.nan)
    return with_outputs(table, {**metric_arrays(out, metrics=keep), "batch_used": used,
                                "band_factor": band})


def with_outputs(table: pd.DataFrame, columns: dict[str, np.ndarray]) -> pd.DataFrame:
    """A copy of ``table`` with ``columns`` appended, built as one frame (setting the columns one
    by one cost most of a small table's evaluation)."""
    outputs = pd.DataFrame(columns)
    result = pd.concat([table.reset_index(drop=True), outputs], axis=1)
    result.index = table.index
    return result


def as_table(table: Any) -> pd.DataFrame:
    """The points of :func:`evaluate` as a DataFrame: a DataFrame as it is, a dict of columns
    (or of one row's scalars), a list of row dicts."""
    if isinstance(table, pd.DataFrame):
        return table
    try:
        if isinstance(table, Mapping):
            if all(np.ndim(v) == 0 for v in table.values()):
                return pd.DataFrame([dict(table)])  # one row
            return pd.DataFrame(dict(table))
        if isinstance(table, (list, tuple)) and all(isinstance(r, Mapping) for r in table):
            return pd.DataFrame(list(table))
    except ValueError as exc:  # e.g. columns of different lengths
        raise SpecError(f"evaluate: cannot make a table of the points: {exc}") from None
    raise SpecError(f"evaluate: give the points as a pandas DataFrame (or a dict of columns, a "
                    f"list of row dicts), got {type(table).__name__}")


def as_overlay(calibration: Any) -> dict[str, Any] | None:
    """``calibration=`` of :func:`evaluate`: None (the shipped overlay), a path of an overlay
    file, or its parsed tables; checked whole."""
    from grids.engines import check_overlay
    from grids.spec import load_overlay

    if calibration is None:
        return None
    if isinstance(calibration, (str, os.PathLike)):
        if not Path(calibration).is_file():
            raise SpecError(f"evaluate: calibration file {str(calibration)!r} not found")
        return load_overlay(calibration)
    if isinstance(calibration, Mapping):
        calibration = {k: v for k, v in calibration.items() if k != "provenance"}
        check_overlay(calibration)
        return calibration
    raise SpecError(f"evaluate: calibration must be the path of an overlay file or its parsed "
                    f"tables (dict), got {type(calibration).__name__}")
