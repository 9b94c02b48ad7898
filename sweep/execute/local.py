"""Run a grid spec in this process: in memory, or chunk by chunk streamed to a file.

Each chunk is evaluated by the Cartesian kernel (parallel over its outer dims) and, when writing to
a file, written to its region at once. A Dask cluster runs the same chunks: :mod:`.distributed`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from grids.errors import SpecError
from grids.spec import DIMS, GridSpec, load_spec
from grids.units import format_quantity
from sweep.execute.grid import GridRun, RunStats, count_feasible
from sweep.execute.memory import populated_empty
from sweep.execute.plan import (
    BYTES_PER_POINT,
    DEFAULT_MAX_MEMORY,
    MemoryPlan,
    parse_memory,
    plan_chunks,
    zarr_chunks,
)
from sweep.execute.progress import Progress
from sweep.execute.signals import abandon, checkpoint, guarded, mark_published
from sweep.results.assemble import build_dataset, result_dims, result_metrics, template
from sweep.results.files import COMPRESSIONS, ResultWriter, open_result
from sweep.results.target import TargetLock, check_output
from sweep.results.variables import KEPT_LAYOUT_DIM

#: largest chunk [points] of an in-memory run that keeps each point's best layout: the scratch
#: buffer the kernel writes into (120 B per point) is reused chunk after chunk, and the
#: reduction reads it back while it is still in the last-level cache as far as it can
KEPT_CHUNK_POINTS = 1 << 18

#: ``summarise=`` of :func:`run_with_stats`: the result's template -> an observer of the chunks
Summarise = Callable[[xr.Dataset], Any]


def run(spec: Any = None, *, max_memory: str | int | None = DEFAULT_MAX_MEMORY,
        progress: bool = True, output: str | Path | None = None, format: str | None = None,
        scheduler: str | None = None, overwrite: bool = False,
        compression: str | None = None) -> xr.Dataset:
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
    compression : {'zlib', 'zstd', 'lz4', 'none'}, optional
        Lossless compression of ``output`` (default: zlib for netCDF, which every netCDF-4 reader
        can open; zstd for Zarr). See docs/performance.md ("Files") for what each costs.

    SIGINT and SIGTERM stop the run (:class:`sweep.execute.signals.Interrupted`) and leave the
    previous ``output`` as it was; one that arrives once the result is published (while it is
    reopened) carries ``published`` (the path). A second run to the same ``output`` while this
    one holds it is refused (:class:`~sweep.results.target.OutputError`).
    """
    ds, _ = run_with_stats(spec, max_memory=max_memory, progress=progress, output=output,
                           format=format, scheduler=scheduler, overwrite=overwrite,
                           compression=compression)
    assert ds is not None  # reopen (the default): the result, in memory or opened from output
    return ds


def run_with_stats(spec: Any = None, *, max_memory=DEFAULT_MAX_MEMORY, progress: bool = True,
                   output=None, format=None, scheduler=None, overwrite: bool = False,
                   compression: str | None = None, summarise: Summarise | None = None,
                   reopen: bool = True) -> tuple[xr.Dataset | None, RunStats]:
    """:func:`run`, also returning the run's :class:`~sweep.execute.grid.RunStats`.

    ``summarise`` (with ``output``): called with the result's template (coordinates and
    attributes) before the first chunk, it returns an observer (e.g.
    :class:`sweep.analysis.headline.HeadlineVariation`) that is handed every chunk as it is
    produced (:meth:`GridRun.observe <sweep.execute.grid.GridRun.observe>`) and finished before
    the result is published; it is ``stats.summary``. ``reopen=False``: do not open the
    written result (the Dataset returned is None).

    The output is locked (:class:`~sweep.results.target.TargetLock`) from its check to its
    publication: a second run to the same target is refused before it computes anything. An
    exception raised after the result was published (an interrupt) carries the attribute
    ``published`` (the target's path), so that the caller can say so.
    """
    lock = None
    if scheduler is not None:  # bad input fails before any cluster starts
        from sweep.execute.distributed import parse_scheduler

        if output is None:
            raise SpecError("a distributed run (scheduler=...) needs an output file: pass "
                            "output=<path> (CLI: -o out.zarr); the result is written by the "
                            "workers")
        parse_scheduler(scheduler)
    if output is not None:  # every check of the target before any computation
        output, format = check_output(output, format, overwrite=overwrite)
        if compression is not None and compression not in COMPRESSIONS:
            raise SpecError(f"unknown compression {compression!r}: use one of "
                            f"{', '.join(COMPRESSIONS)}")
        lock = TargetLock.acquire(output)
    t_enter = time.perf_counter()
    try:
        grid = load_spec(spec)
        budget = parse_memory(max_memory)
        with guarded():
            ds, stats = _run(grid, budget, progress, output, format, scheduler, overwrite,
                             compression, summarise)
            # what the run's own clock leaves out: the spec, the tables, the plan (and the
            # cluster's start and stop, which a distributed run times itself)
            cluster = stats.phases.get("cluster_start", 0.0) + stats.phases.get("cluster_stop",
                                                                                0.0)
            stats.phases["setup"] = max(0.0, time.perf_counter() - t_enter - stats.seconds
                                        - cluster)
            if output is not None and reopen:
                try:
                    ds = open_result(output)
                except BaseException as exc:
                    mark_published(exc, output)
                    raise
            return (ds if reopen or output is None else None), stats
    finally:
        if lock is not None:
            lock.release()


def _run(grid: GridSpec, budget: int, progress: bool, output, format, scheduler, overwrite,
         compression=None, summarise: Summarise | None = None
         ) -> tuple[xr.Dataset | None, RunStats]:
    gr = GridRun(grid)
    total = math.prod(grid.result_shape)  # the result's points (each point's best layout kept)
    if output is None and total * BYTES_PER_POINT > budget:
        what = " (the best layout of each)" if grid.keeps_best_layout else ""
        raise SpecError(
            f"the grid has {total:,} points{what} needing "
            f"{format_quantity(total * BYTES_PER_POINT, 'bytes')} in memory, more than "
            f"max_memory={format_quantity(budget, 'bytes')}: pass output=<file> (CLI: -o) to "
            f"stream it to disk, or raise max_memory")
    if output is None:
        points = budget // (2 * BYTES_PER_POINT)
        if gr.keeper is not None:  # chunks go through a reused scratch buffer: keep it small
            points = min(points, KEPT_CHUNK_POINTS)
        return _run_in_memory(gr, plan_chunks(grid.shape, points),
                              progress)
    tmpl = template(grid, engines=gr.engines, costs=gr.costs)
    every = tmpl
    if gr.keeper is not None:
        tmpl.attrs.update(gr.keeper.attrs)
        # the summary sees every layout of each chunk, also when the result keeps the best one
        every = tmpl.rename({KEPT_LAYOUT_DIM: DIMS[-1]})
    plan = MemoryPlan.of(budget, grid.shape, summarise(every) if summarise else None)
    if scheduler is not None:
        from sweep.execute.distributed import run_distributed

        return run_distributed(gr, scheduler, output=output, fmt=format, plan=plan,
                               progress=progress, overwrite=overwrite, compression=compression,
                               tmpl=tmpl)
    return _run_to_file(gr, tmpl, plan, progress, output, format, overwrite, compression)


def _run_in_memory(gr: GridRun, chunks: list, progress: bool) -> tuple[xr.Dataset, RunStats]:
    """Every chunk is evaluated straight into its place in the result array (no copy, no second
    buffer); the Dataset's float variables are views of that array."""
    grid = gr.spec
    total = grid.n_points
    bar = Progress(total, enabled=progress)
    t0 = time.perf_counter()
    full = populated_empty((gr.rows, math.prod(grid.result_shape)), np.float32)

    def into_full(c):
        if not gr.is_contiguous(c):  # plan_chunks cuts contiguous runs of the storage order
            raise RuntimeError(f"chunk {c} is not a contiguous part of the grid")
        return full, gr.flat_offset(c)

    feasible = 0
    try:
        with gr.writing_into(into_full):
            for c in chunks:
                out = gr.evaluate(c)
                checkpoint()
                feasible += count_feasible(gr.observed(out))
                bar.update(c.size(grid.shape))
    finally:
        bar.close()
    kernel_s = time.perf_counter() - t0
    ds = build_dataset(grid, full.reshape(gr.rows, *grid.result_shape), engines=gr.engines,
                       costs=gr.costs)
    if gr.keeper is not None:
        ds.attrs.update(gr.keeper.attrs)
    seconds = time.perf_counter() - t0
    return ds, RunStats(total, seconds, len(chunks), feasible=feasible,
                        phases={"kernel": kernel_s, "assemble": seconds - kernel_s},
                        kept=gr.kept)


def _run_to_file(gr: GridRun, tmpl: xr.Dataset, plan: MemoryPlan, progress: bool, output,
                 format, overwrite: bool, compression: str | None = None
                 ) -> tuple[None, RunStats]:
    """Chunks are evaluated into two reused buffers and written by a writer thread
    (:class:`sweep.execute.stream.ChunkStream`) while the next chunk is computed; the summary's
    observer sees each chunk on this thread in between."""
    from sweep.execute.stream import ChunkStream

    grid = gr.spec
    total = grid.n_points
    bar = Progress(total, enabled=progress)
    t0 = time.perf_counter()
    stream = None
    kernel_s = summary_s = 0.0
    obs = plan.observing
    first = plan_chunks(grid.shape, plan.chunk_points)[0]
    writer = ResultWriter(output, tmpl, result_dims(grid), format,
                          write_shape=gr.write_shape(first), cache_bytes=plan.cache_bytes,
                          overwrite=overwrite, before_publish=checkpoint,
                          compression=compression, metrics=result_metrics(grid),
                          open_later=True)
    try:  # from here on an interrupt or error removes the partial file (writer.abort below)
        # pieces made of whole storage chunks: no write straddles one (a straddled chunk goes
        # through zarr-python's read-modify-write path; every write of a 1e8-point run did)
        chunks = zarr_chunks(grid.shape, writer.chunks, plan.chunk_points)
        stream = ChunkStream(writer, gr, max(c.size(grid.result_shape) for c in chunks),
                             n_buffers=min(2, len(chunks)))
        feasible = 0  # counted here when the stream sees only each point's best layout
        with gr.writing_into(stream.dest):
            for c in chunks:
                t1 = time.perf_counter()
                out = gr.evaluate(c)
                kernel_s += time.perf_counter() - t1
                checkpoint()
                if gr.keeper is not None:
                    feasible += count_feasible(gr.observed(out))
                if obs is not None:
                    t1 = time.perf_counter()
                    gr.observe(obs, c, gr.metric_views(gr.observed(out), obs.reducer.variables),
                               plan.block_points)
                    summary_s += time.perf_counter() - t1
                stream.submit(c, out)
                del out
                bar.update(c.size(grid.shape))
        stream.finish()
        if obs is not None:
            t1 = time.perf_counter()
            # before publishing: nothing is left to compute afterwards
            obs.finish(lambda h, rest: gr.point_metrics(obs.reducer.variables, h, rest))
            summary_s += time.perf_counter() - t1
        writer.close()
        checkpoint()  # a signal that arrived while the result was renamed
    except BaseException as exc:
        if stream is not None:
            stream.abort()
        abandon(writer, exc, output)
        raise
    finally:
        bar.close()
    seconds = time.perf_counter() - t0
    phases = {"kernel": kernel_s - stream.buffer_wait, "buffer_wait": stream.buffer_wait,
              "final_write_wait": stream.finish_wait, "writer_busy": stream.write_seconds}
    if obs is not None:
        phases["summary"] = summary_s
    if gr.keeper is None:
        feasible = stream.feasible
    stats = RunStats(total, seconds, len(chunks), Path(output), feasible, phases,
                     summary=plan.observer, memory=plan,
                     sizes={d: tmpl.sizes[d] for d in result_dims(grid)}, kept=gr.kept)
    return None, stats
