"""Run a grid spec through the kernels: in memory, or chunk by chunk streamed to a file.

The grid is cut along its outer dims (hardware, model, batch, context) into chunks whose kernel
output fits the memory budget; each chunk is evaluated by the Cartesian kernel (parallel over its
outer dims) and, when writing to a file, written to its region at once.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from grids.errors import SpecError
from grids.hardware import load_device
from grids.layouts import parse_layout
from grids.models import load_model
from grids.precisions import parse_precision
from grids.spec import GridSpec, load_spec
from grids.units import format_quantity, parse_quantity
from kernels.params import METRICS
from sweep.dataset import build_dataset, coordinate_values, provenance, result_dims
from sweep.progress import Progress
from sweep.tables import build_tables
from sweep.variables import VARIABLES

#: kernel output bytes per grid point (float32 per metric), plus the int8 casts when writing
BYTES_PER_POINT = 4 * len(METRICS) + 2
FITS = METRICS.index("fits")
DEFAULT_MAX_MEMORY = "1 GiB"


def parse_memory(value: str | int | float | None) -> int:
    if value is None:
        value = DEFAULT_MAX_MEMORY
    if isinstance(value, str) and value.strip().upper().endswith(("G", "M", "K")):
        value = value.strip() + "iB"  # '2G' -> '2GiB'
    v = parse_quantity(value, "bytes", "max_memory")
    if v < 64 << 10:
        raise SpecError(f"max_memory {value!r} is below 64 KiB; give e.g. '512 MiB' or '2 GiB'")
    return int(v)


@dataclass(frozen=True)
class Chunk:
    """Index ranges along (hardware, model, batch, context) of one piece of the grid."""

    h: slice
    m: slice
    b: slice
    s: slice

    def size(self, shape: tuple[int, ...]) -> int:
        n = 1
        for sl in (self.h, self.m, self.b, self.s):
            n *= sl.stop - sl.start
        return n * math.prod(shape[4:])


def plan_chunks(shape: tuple[int, ...], max_points: int) -> list[Chunk]:
    """Cut ``shape`` = (H, M, B, S, O, P, L) along its first four dims into chunks of at most
    ``max_points`` points (at least one context value per chunk)."""
    max_points = max(1, max_points)
    outer = list(shape[:4])
    inner = math.prod(shape[4:])
    # find the first dim d whose trailing block fits; chunk along d with k values per chunk
    sizes = [1] * 4
    block = inner
    for d in range(3, -1, -1):
        if block * outer[d] <= max_points:
            sizes[d] = outer[d]
            block *= outer[d]
        else:
            sizes[d] = max(1, max_points // block)
            break
    chunks = []
    for h0 in range(0, outer[0], sizes[0]):
        for m0 in range(0, outer[1], sizes[1]):
            for b0 in range(0, outer[2], sizes[2]):
                for s0 in range(0, outer[3], sizes[3]):
                    chunks.append(Chunk(slice(h0, min(h0 + sizes[0], outer[0])),
                                        slice(m0, min(m0 + sizes[1], outer[1])),
                                        slice(b0, min(b0 + sizes[2], outer[2])),
                                        slice(s0, min(s0 + sizes[3], outer[3]))))
    return chunks


class GridRun:
    """The per-axis tables of a spec and a method to evaluate any chunk of it."""

    def __init__(self, spec: GridSpec) -> None:
        self.spec = spec
        self.tables = build_tables(spec.hardware, spec.models, spec.precisions, spec.layouts)
        self.batch = np.array(spec.batch, dtype=np.float64)
        self.context = np.array(spec.context, dtype=np.float64)
        self.output_len = np.array(spec.output_len, dtype=np.float64)
        self.shape = spec.shape

    def evaluate(self, c: Chunk) -> np.ndarray:
        from kernels import evaluate_grid  # lazy: importing sweep does not compile kernels

        t = self.tables
        return evaluate_grid(t.hw[c.h], t.md[c.m], t.peak[c.h], self.batch[c.b],
                             self.context[c.s], self.output_len, t.pr, t.ly,
                             float(self.spec.prefill_chunk))

    def region(self, c: Chunk) -> tuple[slice, ...]:
        rest = (slice(None),) * (3 if self.spec.output_len_is_dim else 2)
        return (c.h, c.m, c.b, c.s, *rest)

    def chunk_arrays(self, c: Chunk, out: np.ndarray) -> dict[str, np.ndarray]:
        arrays = {}
        for k, name in enumerate(METRICS):
            a = out[k]
            if not self.spec.output_len_is_dim:
                a = a[:, :, :, :, 0]
            if VARIABLES[name].dtype == "int8":
                a = a.astype(np.int8)
            arrays[name] = a
        return arrays


@dataclass
class RunStats:
    points: int
    seconds: float
    chunks: int
    path: Path | None = None
    feasible: int = 0  # points with fits = 1

    @property
    def points_per_second(self) -> float:
        return self.points / self.seconds if self.seconds > 0 else float("inf")


def run(spec: Any = None, *, max_memory: str | int | None = DEFAULT_MAX_MEMORY,
        progress: bool = True, output: str | Path | None = None, format: str | None = None,
        scheduler: str | None = None, overwrite: bool = False) -> xr.Dataset:
    """Evaluate a grid spec and return the result as an :class:`xarray.Dataset`.

    Parameters
    ----------
    spec : str, Path, dict, GridSpec or None
        TOML path, dict of the same structure, or None for the built-in default grid.
    max_memory : str or int
        Memory budget for kernel output [B] (e.g. ``"1 GiB"``); the grid is evaluated in chunks
        that fit it. Without ``output``, the whole result must fit it too.
    progress : bool
        Show a progress bar on a terminal.
    output : path, optional
        Stream the result to this file (netCDF, or Zarr for ``.zarr``/``format='zarr'``), written
        atomically; the returned Dataset is then opened lazily from it.
    format : {'netcdf', 'zarr'}, optional
    scheduler : str, optional
        ``'local:N'`` or ``'tcp://host:port'`` to evaluate chunks on a Dask cluster (needs
        ``output``; see ``sweep.distributed``).
    overwrite : bool
        Replace ``output`` even if it is not a result written by this tool (by default only a
        previous result is replaced; anything else is refused before any work is done).

    SIGINT and SIGTERM stop the run (:class:`sweep.signals.Interrupted`) and leave the previous
    ``output`` as it was.
    """
    ds, _ = run_with_stats(spec, max_memory=max_memory, progress=progress, output=output,
                           format=format, scheduler=scheduler, overwrite=overwrite)
    return ds


def run_with_stats(spec: Any = None, *, max_memory=DEFAULT_MAX_MEMORY, progress: bool = True,
                   output=None, format=None, scheduler=None, overwrite: bool = False
                   ) -> tuple[xr.Dataset, RunStats]:
    from sweep.signals import guarded

    if output is not None:  # every check of the target before any computation
        from sweep.io import check_output

        output, format = check_output(output, format, overwrite=overwrite)
    grid = load_spec(spec)
    budget = parse_memory(max_memory)
    with guarded():
        return _run(grid, budget, progress, output, format, scheduler, overwrite)


def _run(grid: GridSpec, budget: int, progress: bool, output, format, scheduler, overwrite
         ) -> tuple[xr.Dataset, RunStats]:
    from sweep.signals import checkpoint

    gr = GridRun(grid)
    total = grid.n_points
    if scheduler is not None:
        from sweep.distributed import run_distributed

        return run_distributed(gr, scheduler, output=output, fmt=format, budget=budget,
                               progress=progress, overwrite=overwrite)
    if output is None and total * BYTES_PER_POINT > budget:
        raise SpecError(
            f"the grid has {total:,} points needing "
            f"{format_quantity(total * BYTES_PER_POINT, 'bytes')} in memory, more than "
            f"max_memory={format_quantity(budget, 'bytes')}: pass output=<file> (CLI: -o) to "
            f"stream it to disk, or raise max_memory")
    chunks = plan_chunks(grid.shape, budget // (2 * BYTES_PER_POINT))
    bar = Progress(total, enabled=progress)
    t0 = time.perf_counter()
    if output is None:
        full = np.empty((len(METRICS), *grid.shape), dtype=np.float32)
        for c in chunks:
            full[(slice(None), c.h, c.m, c.b, c.s)] = gr.evaluate(c)
            checkpoint()
            bar.update(c.size(grid.shape))
        bar.close()
        ds = build_dataset(grid, full)
        feasible = int(np.count_nonzero(full[FITS] == 1.0))
        return ds, RunStats(total, time.perf_counter() - t0, len(chunks), feasible=feasible)
    from sweep.io import ResultWriter, open_result

    template = _template(grid)
    first = chunks[0]
    write_shape = tuple(sl.stop - sl.start for sl in (first.h, first.m, first.b, first.s))
    write_shape += tuple(grid.shape[4:]) if grid.output_len_is_dim else tuple(grid.shape[5:])
    writer = ResultWriter(output, template, result_dims(grid), format, write_shape=write_shape,
                          cache_bytes=max(1 << 20, budget // (4 * len(METRICS))),
                          overwrite=overwrite)
    feasible = 0
    try:
        for c in chunks:
            out = gr.evaluate(c)
            checkpoint()
            feasible += int(np.count_nonzero(out[FITS] == 1.0))
            writer.write(gr.region(c), gr.chunk_arrays(c, out))
            bar.update(c.size(grid.shape))
        writer.close()
    except BaseException:
        writer.abort()
        raise
    finally:
        bar.close()
    stats = RunStats(total, time.perf_counter() - t0, len(chunks), Path(output), feasible)
    return open_result(output), stats


def _template(grid: GridSpec) -> xr.Dataset:
    coords = {name: xr.Variable((dim,), values, attrs)
              for name, (dim, values, attrs) in coordinate_values(grid).items()}
    if not grid.output_len_is_dim:
        from sweep.variables import DIM_ATTRS

        coords["output_len"] = xr.Variable((), np.int64(grid.output_len[0]),
                                           dict(DIM_ATTRS["output_len"]))
    return xr.Dataset(coords=coords, attrs=provenance(grid))


# --------------------------------------------------------------------------------------------
# point list

EVALUATE_COLUMNS = ("hardware", "model", "batch", "context", "output_len", "precision", "layout")


def evaluate(table: pd.DataFrame, *, prefill_chunk: int = 8192) -> pd.DataFrame:
    """Evaluate arbitrary points: a DataFrame with columns ``hardware, model, batch, context,
    output_len, precision, layout``; returns a copy with one column per metric added.

    Uses the point-list kernel (the same per-point physics as :func:`run`). Unknown ids or
    malformed values raise one :class:`~grids.errors.SpecError` listing every bad row.
    """
    from kernels import evaluate_points

    missing = [c for c in EVALUATE_COLUMNS if c not in table.columns]
    if missing:
        raise SpecError(f"evaluate: the table lacks columns {missing} (needs "
                        f"{', '.join(EVALUATE_COLUMNS)})")
    problems: list[str] = []
    cache: dict[tuple[str, str], Any] = {}

    def lookup(kind: str, value: str, loader):
        key = (kind, str(value))
        if key not in cache:
            try:
                cache[key] = loader(str(value))
            except SpecError as exc:
                cache[key] = None
                problems.extend(f"{kind} {value!r}: {p}" for p in exc.problems)
        return cache[key]

    devs, mods, precs, lays = {}, {}, {}, {}
    for kind, col, loader, store in (("hardware", "hardware", load_device, devs),
                                     ("model", "model", load_model, mods),
                                     ("precision", "precision", parse_precision, precs),
                                     ("layout", "layout", parse_layout, lays)):
        for v in pd.unique(table[col].astype(str)):
            obj = lookup(kind, v, loader)
            if obj is not None:
                store[v] = obj
    nums = {}
    for col in ("batch", "context", "output_len"):
        vals = pd.to_numeric(table[col], errors="coerce").to_numpy(dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(vals) | (vals < 1) | (vals != np.round(vals)))
        if bad.size:
            problems.append(f"{col}: rows {bad[:10].tolist()} are not whole numbers >= 1")
        nums[col] = vals
    if problems:
        raise SpecError(problems, "evaluate")
    dev_ids, mod_ids = list(devs), list(mods)
    prec_ids, lay_ids = list(precs), list(lays)
    tables = build_tables([devs[k] for k in dev_ids], [mods[k] for k in mod_ids],
                          [precs[k] for k in prec_ids], [lays[k] for k in lay_ids])
    idx = {k: i for i, k in enumerate(dev_ids)}
    hi = table["hardware"].astype(str).map(idx).to_numpy(np.int64)
    mi = table["model"].astype(str).map({k: i for i, k in enumerate(mod_ids)}).to_numpy(np.int64)
    pi = table["precision"].astype(str).map({k: i for i, k in enumerate(prec_ids)}
                                            ).to_numpy(np.int64)
    li = table["layout"].astype(str).map({k: i for i, k in enumerate(lay_ids)}).to_numpy(np.int64)
    out = evaluate_points(tables.hw, tables.md, tables.peak, tables.pr, tables.ly, hi, mi, pi, li,
                          nums["batch"], nums["context"], nums["output_len"],
                          float(prefill_chunk))
    result = table.copy()
    for k, name in enumerate(METRICS):
        col = out[k]
        if VARIABLES[name].dtype == "int8":
            col = col.astype(np.int8)
        result[name] = col
    return result
