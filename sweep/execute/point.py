"""One point, fast: :func:`evaluate_point` (``sweep.evaluate_point``) for callers that evaluate
configurations one at a time (an optimiser, a notebook loop, another tool), and :func:`evaluate`
(``sweep.evaluate``), which sends a one-row table of catalog ids under the shipped calibration
and default prices through it and every other table through
:func:`sweep.execute.points.evaluate`.

It runs the same kernel on the same packed tables as :func:`sweep.evaluate` (the rows of a
one-row table, tested to agree value for value) without the table: the resolved and packed
tables of a (hardware, engine, model, precision, parallelism) combination are cached on first
use when every label is a catalog id and the shipped calibration and default prices apply (the
catalog itself is read once per process, so the cache adds no staleness). Labels that are files
(a device TOML, a config.json) and explicit calibrations or price bases are resolved on every
call, as :func:`sweep.evaluate` does.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from grids.errors import SpecError
from grids.spec import (
    BATCHING,
    DEFAULT_BATCHING,
    DEFAULT_ENGINE,
    DEFAULT_PREFILL_CHUNK,
    RATE_MAX,
    prefill_chunk_problem,
)
from kernels.params import METRICS, MODE_RATE, RATE_METRICS
from sweep.execute.points import (
    EVALUATE_COLUMNS,
    MAX_LOAD,
    MODE_OF,
    RATE_COLUMN,
    RATE_NEEDS_CONTINUOUS,
    PointTables,
    as_overlay,
    as_table,
    bad_numbers,
    max_load,
    resolve_points,
    with_outputs,
)
from sweep.execute.points import evaluate as evaluate_table
from sweep.results.variables import VARIABLES

_ROW = np.zeros(1, dtype=np.int64)
#: the serving mode of a point as the kernel's one-element argument
_MODE_ARRAY = {**{k: np.array([v]) for k, v in MODE_OF.items()},
               RATE_COLUMN: np.array([MODE_RATE])}
_CONC = METRICS.index("concurrency")
#: metric name -> int (a flag or a code) or float (float32 value as a Python float)
_INT8 = frozenset(m for m in METRICS if VARIABLES[m].dtype == "int8")
_KEEP = tuple(m for m in METRICS if m not in RATE_METRICS)
#: (row of the kernel's output, metric, an int?) of what :func:`evaluate_point` returns, at a
#: request rate and at a load
_OUT_RATE = tuple((k, m, m in _INT8) for k, m in enumerate(METRICS))
_OUT_LOAD = tuple(row for row in _OUT_RATE if row[1] in _KEEP)
#: numpy dtype of each output column of :func:`sweep.execute.points.evaluate`
_DTYPE = {**{m: np.int8 if m in _INT8 else np.float32 for m in METRICS},
          "batch_used": np.float64, "band_factor": np.float64}
_INPUTS = frozenset(EVALUATE_COLUMNS)
_NEEDED = frozenset(("hardware", "model", "precision", "parallelism", "context", "output_len"))
_LABELS = ("hardware", "model", "precision", "parallelism", "engine", "batching")
#: types whose values are scalars without asking numpy (np.ndim costs ~1 us a value)
_SCALARS = frozenset((str, int, float))


def evaluate(table: Any, *, prefill_chunk: int = DEFAULT_PREFILL_CHUNK,
             calibration: dict[str, Any] | str | Path | None = None,
             cost: Any = None) -> pd.DataFrame:
    # the docstring is sweep.execute.points.evaluate's (set below)
    if calibration is None and cost is None and prefill_chunk == DEFAULT_PREFILL_CHUNK:
        fast = _one_row(table)
        if fast is not None:
            return fast
    return evaluate_table(table, prefill_chunk=prefill_chunk, calibration=calibration,
                          cost=cost)


evaluate.__doc__ = (evaluate_table.__doc__ or "") + """
    Notes
    -----
    A one-row table (or a dict of one row's values) of catalog ids with only input columns,
    under the shipped calibration, default prices and the default ``prefill_chunk``, runs
    through :func:`sweep.evaluate_point`'s cached tables: the same kernel and the same frame
    (columns, dtypes, index; tested), 25-35x faster per call (docs/performance.md). Anything
    else, and any row that path rejects, takes the table path, which gives its own errors.
"""


def _one_row(table: Any) -> pd.DataFrame | None:
    """:func:`evaluate` of a one-row table through :func:`evaluate_point`, or None where that
    path does not apply (several rows, columns that are not inputs, a row it rejects)."""
    if isinstance(table, pd.DataFrame):
        if len(table) != 1 or not table.columns.is_unique:
            return None
        names = list(table.columns)
        arrays = table._mgr.column_arrays  # one array per column: ~20x faster than table[c]
        values = [a[0] for a in arrays]
        kinds = tuple(a.dtype for a in arrays)
    elif isinstance(table, dict) and all(type(v) in _SCALARS or np.ndim(v) == 0
                                         for v in table.values()):
        names = list(table)
        values = list(table.values())
        kinds = tuple(type(v) for v in values)
    else:
        return None
    kw = dict(zip(names, (v.item() if isinstance(v, np.generic) else v for v in values)))
    if not (set(kw) <= _INPUTS and set(kw) >= _NEEDED) or ("batch" in kw) == (RATE_COLUMN in kw):
        return None
    if not all(isinstance(kw[c], str) for c in _LABELS if c in kw):
        return None
    try:
        res = evaluate_point(**kw)
    except SpecError:
        return None  # the table path says what is wrong, in its own words
    return _frame(table, names, kinds, list(kw.values()), res)


#: one-row output frames by input layout and labels (:func:`_frame`), and how to fill a copy
_TEMPLATES: dict[tuple, tuple[pd.DataFrame, list[tuple[Any, list[int] | None]]]] = {}
_MAX_TEMPLATES = 512


def _frame(table: Any, names: list[str], kinds: tuple[Any, ...], values: list[Any],
           res: dict[str, float | int]) -> pd.DataFrame:
    """The one-row frame the table path builds from ``table`` and the metrics ``res`` (as
    :func:`evaluate_point` returns them).

    Building a frame of ~45 one-element columns costs ~10x the evaluation itself, so the first
    frame of each input layout (column names, dtypes, the values of its text columns) is built as
    the table path builds it and kept as a template; a later call builds its numeric blocks from
    its own numbers and copies the template's text blocks (:func:`_fill`). Where a column that is
    not text is not held in a numpy block, or where the fill does not give the table path's
    frame (checked once per template), every frame is built the table path's way."""
    text = tuple((c, v) for c, v in zip(names, values) if not isinstance(v, (int, float)))
    key = (type(table).__name__, tuple(names), kinds, text, len(res))
    hit = _TEMPLATES.get(key)
    row = [*values, *res.values()]
    if hit is None:
        metrics = {m: np.array([v], dtype=_DTYPE[m]) for m, v in res.items()}
        frame = with_outputs(as_table(table), metrics)
        template = frame.copy()  # its own blocks (a copy is consolidated: plan on the copy)
        plan = _fill_plan(template, {c for c, _ in text})
        if plan is not None and _fills(template, plan, row, frame):
            if len(_TEMPLATES) >= _MAX_TEMPLATES:
                _TEMPLATES.clear()
            _TEMPLATES[key] = (template, plan)
        return frame
    template, plan = hit
    return _fill(template, plan, row, table.index if isinstance(table, pd.DataFrame) else None)


def _fill(template: pd.DataFrame, plan: list[tuple[Any, list[int] | None]], row: list[Any],
          index: pd.Index | None) -> pd.DataFrame:
    """A new frame laid out as ``template``: each numeric block made from ``row`` (the values at
    the block's column positions, in the block's dtype), each other block a deep copy, the
    index ``index`` (None: the template's). Blocks and a manager built directly cost a third of
    ``DataFrame.copy`` (pandas internals; :func:`_fills` checks the result once per template)."""
    blocks = []
    for blk, locs in plan:
        if locs is None:
            blocks.append(blk.copy(deep=True))
        else:
            values = np.array([row[loc] for loc in locs], dtype=blk.dtype).reshape(-1, 1)
            blocks.append(blk.make_block_same_class(values))
    mgr: Any = template._mgr  # pandas internals: the stubs do not describe them
    axes = [mgr.axes[0].view(), mgr.axes[1].view() if index is None else index]
    new = type(mgr)(tuple(blocks), axes, verify_integrity=False)
    frame: pd.DataFrame = pd.DataFrame._from_mgr(new, axes=new.axes)  # type: ignore[attr-defined]
    return frame


def _fills(template: pd.DataFrame, plan: list[tuple[Any, list[int] | None]], row: list[Any],
           frame: pd.DataFrame) -> bool:
    """True if :func:`_fill` of ``row`` gives ``frame`` (the table path's frame of that row),
    and leaves the template as it was: the check that the pandas internals it uses behave as
    expected on this installation."""
    before = template.copy()
    try:
        made = _fill(template, plan, row, frame.index)
        pd.testing.assert_frame_equal(made, frame, check_exact=True)
        for j, value in enumerate(made.iloc[0].tolist()):  # writes into the new frame must
            made.iat[0, j] = "\0" if isinstance(value, str) else 0  # not reach the template
        pd.testing.assert_frame_equal(template, before, check_exact=True)
    except Exception:  # any difference, on any pandas: build every frame the table path's way
        return False
    return True


def _fill_plan(frame: pd.DataFrame, labels: set[str]) -> list[tuple[Any, list[int] | None]] | None:
    """(block, the column positions of its rows) for every 2-D numpy block of ``frame``,
    (block, None) for the others; None unless every column outside a numpy block is one of the
    constant ``labels``."""
    plan: list[tuple[Any, list[int] | None]] = []
    names = list(frame.columns)
    for blk in frame._mgr.blocks:
        locs = [int(loc) for loc in blk.mgr_locs.as_array]
        if isinstance(blk.values, np.ndarray) and blk.values.ndim == 2:
            plan.append((blk, locs))
        elif all(names[loc] in labels for loc in locs):
            plan.append((blk, None))
        else:
            return None
    return plan


def evaluate_point(hardware: str, model: str, precision: str, parallelism: str, *,
                   context: int, output_len: int, batch: int | str | None = None,
                   request_rate: float | None = None, engine: str = DEFAULT_ENGINE,
                   batching: str = DEFAULT_BATCHING,
                   prefill_chunk: int = DEFAULT_PREFILL_CHUNK,
                   calibration: dict[str, Any] | str | Path | None = None,
                   cost: Any = None) -> dict[str, float | int]:
    """Every metric of one configuration, as ``{metric: value}``.

    The arguments are the columns of :func:`sweep.evaluate` (same meanings and units: ``batch``
    [requests in flight per replica, or sequences of a static batch; ``"max"`` for the maximum
    load] or ``request_rate`` [requests/s arriving at the layout], ``context`` and
    ``output_len`` [tokens]) and its keywords. Returns the metrics of :func:`sweep.evaluate`'s
    row (the latency percentiles only with ``request_rate``), ``batch_used`` and ``band_factor``
    (the uncertainty band, docs/analysis.md): flags and codes as ``int``, the rest as ``float``
    (NaN where a metric does not apply). Units: see
    ``sweep.unit_registry()`` or docs/glossary.md.
    """
    at_rate = request_rate is not None
    if at_rate == (batch is not None):
        raise SpecError("evaluate_point: give batch (requests in flight) or request_rate "
                        "(requests per second), exactly one")
    problems: list[str] = []
    is_max = (not at_rate and isinstance(batch, str)
              and batch.strip().lower() == MAX_LOAD)
    load = RATE_COLUMN if at_rate else "batch"
    given = {load: request_rate if at_rate else (1 if is_max else batch),
             "context": context, "output_len": output_len}
    nums = {}
    for col, value in given.items():
        x = _number(value)
        if not number_ok(col, x):
            what = bad_numbers(col, np.array([x]))[1]
            problems.append(f"{col}: {value!r} is not one of the {what}")
        nums[col] = np.array([x])
    if batching not in BATCHING:
        problems.append(f"batching: {batching!r} is not one of {list(BATCHING)}")
    elif at_rate and batching == "static":
        problems.append(RATE_NEEDS_CONTINUOUS)
    chunk_problem = prefill_chunk_problem(prefill_chunk, "evaluate_point: prefill_chunk")
    if chunk_problem:  # before the tables, which need a valid chunk
        raise SpecError([chunk_problem, *problems], "evaluate_point")
    labels = (str(hardware), str(engine), str(model), str(precision), str(parallelism))
    try:
        if calibration is None and cost is None and not any(map(_is_path, labels)):
            pt, idx = _cached_tables(*labels, int(prefill_chunk))
        else:
            pt = _tables(labels, as_overlay(calibration), cost, int(prefill_chunk))
            idx = _row_indices(pt)
    except SpecError as exc:
        found = [q.replace(" (rows 0)", "") for q in exc.problems]  # one point, no rows
        raise SpecError([*found, *problems], "evaluate_point") from None
    if problems:
        raise SpecError(problems, "evaluate_point")
    if is_max:
        out, used = max_load(pt, _ROW, nums["context"], nums["output_len"])
        used_value = float(used[0])
    else:
        t = pt.tables
        out = _evaluate_points()(t.hw, t.md, t.px, t.pr, t.ly, *idx, nums[load], nums["context"],
                              nums["output_len"],
                              _MODE_ARRAY[RATE_COLUMN if at_rate else batching])
        used_value = float(out[_CONC, 0])
    col = out[:, 0].tolist()  # Python floats, each the float32 value exactly
    res: dict[str, float | int] = {name: int(col[k]) if is_int else col[k]
                                   for k, name, is_int in (_OUT_RATE if at_rate else _OUT_LOAD)}
    res["batch_used"] = used_value
    band = pt.band
    res["band_factor"] = float(band.ravel()[idx[0][0]]) if band is not None else math.nan
    return res


@functools.cache
def _evaluate_points() -> Any:
    """``kernels.evaluate_points``, imported on first use (importing sweep compiles nothing)."""
    from kernels import evaluate_points
    return evaluate_points


def number_ok(col: str, x: float) -> bool:
    """:func:`sweep.execute.points.bad_numbers`' rule for one value (tested to agree)."""
    if not math.isfinite(x):
        return False
    if col == RATE_COLUMN:
        return 0.0 < x <= RATE_MAX
    return 1.0 <= x <= 2.0 ** 31 and x == round(x)


def _number(value: Any) -> float:
    if isinstance(value, bool):
        return math.nan  # True is not a batch of one
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _row_indices(pt: PointTables) -> tuple[np.ndarray, ...]:
    """The kernel's row indices of a one-row table (platform, model, precision, parallelism)."""
    return (pt.platform[:1].copy(), pt.index["model"][:1].copy(),
            pt.index["precision"][:1].copy(), pt.index["parallelism"][:1].copy())


@functools.lru_cache(maxsize=4096)
def _is_path(label: str) -> bool:
    """A label that may name a file rather than a catalog id (a path, a Hugging Face
    ``ORG/NAME``, a TOML or JSON file name, or anything present on disk): not cached."""
    return ("/" in label or "\\" in label or label.endswith((".toml", ".json"))
            or Path(label).exists())


def _tables(labels: tuple[str, ...], overlay: dict[str, Any] | None, cost: Any,
            prefill_chunk: int) -> PointTables:
    row = dict(zip(("hardware", "engine", "model", "precision", "parallelism"), labels))
    return resolve_points(pd.DataFrame([row]), overlay=overlay, cost=cost,
                          prefill_chunk=prefill_chunk, where="evaluate_point")


@functools.lru_cache(maxsize=512)
def _cached_tables(hardware: str, engine: str, model: str, precision: str, parallelism: str,
                   prefill_chunk: int) -> tuple[PointTables, tuple[np.ndarray, ...]]:
    """The packed tables of one catalog combination under the shipped calibration and default
    prices, and the kernel's row indices (errors are not cached: lru_cache keeps no
    exceptions)."""
    pt = _tables((hardware, engine, model, precision, parallelism), None, None, prefill_chunk)
    return pt, _row_indices(pt)
