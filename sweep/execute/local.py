"""Run a grid spec in this process: in memory, or chunk by chunk streamed to a file.

Each chunk is evaluated by the Cartesian kernel (parallel over its outer dims) and, when writing to
a file, written to its region at once. A Dask cluster runs the same chunks: :mod:`.distributed`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from grids.errors import SpecError
from grids.spec import GridSpec, load_spec
from grids.units import format_quantity
from kernels.params import METRICS
from sweep.execute.grid import GridRun, RunStats
from sweep.execute.plan import (
    BYTES_PER_POINT,
    DEFAULT_MAX_MEMORY,
    cache_bytes,
    parse_memory,
    plan_chunks,
)
from sweep.execute.progress import Progress
from sweep.execute.signals import checkpoint, guarded
from sweep.results.assemble import build_dataset, result_dims, template
from sweep.results.files import ResultWriter, open_result
from sweep.results.target import check_output

FITS = METRICS.index("fits")


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
        ``output``; see :mod:`sweep.execute.distributed`).
    overwrite : bool
        Replace ``output`` even if it is not a result written by this tool (by default only a
        previous result is replaced; anything else is refused before any work is done).

    SIGINT and SIGTERM stop the run (:class:`sweep.execute.signals.Interrupted`) and leave the previous
    ``output`` as it was.
    """
    ds, _ = run_with_stats(spec, max_memory=max_memory, progress=progress, output=output,
                           format=format, scheduler=scheduler, overwrite=overwrite)
    return ds


def run_with_stats(spec: Any = None, *, max_memory=DEFAULT_MAX_MEMORY, progress: bool = True,
                   output=None, format=None, scheduler=None, overwrite: bool = False
                   ) -> tuple[xr.Dataset, RunStats]:
    if output is not None:  # every check of the target before any computation
        output, format = check_output(output, format, overwrite=overwrite)
    grid = load_spec(spec)
    budget = parse_memory(max_memory)
    with guarded():
        return _run(grid, budget, progress, output, format, scheduler, overwrite)


def _run(grid: GridSpec, budget: int, progress: bool, output, format, scheduler, overwrite
         ) -> tuple[xr.Dataset, RunStats]:
    gr = GridRun(grid)
    total = grid.n_points
    if scheduler is not None:
        from sweep.execute.distributed import run_distributed

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
            full[(slice(None), *c.slices)] = gr.evaluate(c)
            checkpoint()
            bar.update(c.size(grid.shape))
        bar.close()
        ds = build_dataset(grid, full)
        feasible = int(np.count_nonzero(full[FITS] == 1.0))
        return ds, RunStats(total, time.perf_counter() - t0, len(chunks), feasible=feasible)
    writer = ResultWriter(output, template(grid), result_dims(grid), format,
                          write_shape=gr.write_shape(chunks[0]), cache_bytes=cache_bytes(budget),
                          overwrite=overwrite, before_publish=checkpoint)
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
