"""Evaluate a grid on a Dask cluster, streaming the result atomically to a shared file.

``scheduler`` is ``'local:N'`` (start a :class:`distributed.LocalCluster` of N single-threaded
worker processes on this machine) or the address of a running scheduler (``'tcp://HOST:PORT'``).
The grid is cut into chunks (one Dask task each, ``retries=2``); every task evaluates its chunk on
a worker with the same kernel as the in-process run, so the result is bit-identical to it.

* **Zarr**: the store's metadata is created first by :class:`sweep.results.files.ResultWriter` under its
  temporary name; each task then writes its own region straight into the store from the worker.
  Task regions are unions of whole storage chunks, so no two tasks touch the same storage chunk and
  a re-executed task (after a worker was killed) overwrites exactly the bytes it wrote before:
  nothing is lost or duplicated. The output path must be on a filesystem every worker sees.
* **netCDF**: tasks return their arrays; the client writes each region as it completes
  (``as_completed``), with a bounded number of tasks in flight so results do not pile up in memory.

Either way the file appears under the target name only after every chunk is written (temporary
name, then rename); any failure removes the partial file.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from grids.errors import SpecError
from sweep.execute.grid import count_feasible
from sweep.execute.progress import Progress

#: one kernel call at a time per worker process (its kernel threads are shared by the process;
#: other task threads of the same worker keep writing while one computes)
_KERNEL_LOCK = threading.Lock()
#: on failure, how long to wait for Zarr tasks still running to finish before deleting [s]
DRAIN_TIMEOUT = 120.0


# ------------------------------------------------------------------------------ worker side
def _identity(x: Any) -> Any:
    """Task holding the GridRun on the cluster: recomputable from the graph if its worker dies."""
    return x


def _worker_threads(procs_by_host: dict[str, int] | None) -> int | None:
    """numba threads for this worker: the host's cores shared among its worker processes."""
    if not procs_by_host:
        return None
    try:
        from distributed import get_worker
        from distributed.comm import get_address_host

        host = get_address_host(get_worker().address)
    except (ImportError, ValueError):
        return None
    procs = procs_by_host.get(host, 1)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cores or 1) // max(1, procs))


def _evaluate(gr, chunk, procs_by_host):
    import kernels

    n = _worker_threads(procs_by_host)
    with _KERNEL_LOCK:
        if n is not None:
            kernels.set_num_threads(n)
        return gr.evaluate(chunk)


def _evaluate_chunk(gr, chunk, procs_by_host, reducer, block_points: int
                    ) -> tuple[dict[str, np.ndarray], int, list]:
    """Evaluate a chunk on the worker: ``({name: array} as the result stores them (int8 flags
    cast), feasible points, the pieces of the summary's ``reducer``)``; the feasible points and
    the pieces come from every layout evaluated, also when the result keeps the best one."""
    out = _evaluate(gr, chunk, procs_by_host)
    every = gr.observed(out)
    parts = ([] if reducer is None else
             gr.reduce(reducer, chunk, gr.metric_views(every, reducer.variables), block_points))
    return gr.chunk_arrays(chunk, out), count_feasible(every), parts


def _chunk_arrays_task(gr, chunk, procs_by_host, reducer=None, block_points: int = 0):
    """netCDF: evaluate a chunk, return ``({name: array}, feasible points, the pieces of the
    summary's ``reducer``)`` (:func:`_evaluate_chunk`). The pieces are reduced here only when the
    result keeps each point's best layout (the arrays then lack the other layouts the summary
    reads); else the client reduces the arrays it receives."""
    return _evaluate_chunk(gr, chunk, procs_by_host, reducer, block_points)


def _zarr_region_task(gr, chunk, store: str, procs_by_host, reducer=None,
                      block_points: int = 0) -> tuple[int, int, list]:
    """Zarr: evaluate a chunk and write it to its region of the store; returns (points, feasible
    points, the pieces of the summary's ``reducer`` for the chunk, reduced here next to the data).

    The region covers whole storage chunks and is overwritten, so running this twice is harmless.
    """
    from sweep.results.files import ZarrChunks

    arrays, feasible, parts = _evaluate_chunk(gr, chunk, procs_by_host, reducer, block_points)
    if not (Path(store) / ".zgroup").exists():
        raise RuntimeError(f"zarr store {store} is gone (run aborted?)")
    chunks = ZarrChunks(store, arrays)
    region = gr.region(chunk)
    for name, arr in arrays.items():
        chunks.write(name, region, arr)
    return chunk.size(gr.shape), feasible, parts


def _point_task(gr, names, h: int, rest: tuple[int, ...]) -> dict[str, np.ndarray]:
    """One (device, workload point) over the layouts (the summary names the best layouts)."""
    with _KERNEL_LOCK:
        return gr.point_metrics(names, h, rest)


async def _drain(prefix: str, timeout: float, dask_worker=None) -> int:
    """Wait (on a worker's event loop) until none of its running tasks' keys start with
    ``prefix``: a cancelled task keeps running to its end, and may still be writing."""
    import asyncio

    def running() -> int:
        tasks = getattr(dask_worker.state, "all_running_tasks", None)
        if tasks is None:  # pragma: no cover - older distributed
            tasks = dask_worker.state.executing
        return sum(1 for ts in tasks if str(ts.key).startswith(prefix))

    t0 = time.monotonic()
    while running() and time.monotonic() - t0 < timeout:
        await asyncio.sleep(0.05)
    return running()


def parse_scheduler(scheduler: str) -> tuple[str, int | str]:
    """``'local:N'`` -> ('local', N); ``'local'`` -> ('local', cores); an address -> ('address', it)."""
    s = str(scheduler).strip()
    if s == "local" or s.startswith("local:"):
        _, _, n = s.partition(":")
        if not n:
            return "local", os.cpu_count() or 1
        try:
            k = int(n)
        except ValueError:
            k = 0
        if k < 1:
            raise SpecError(f"scheduler {scheduler!r}: 'local:N' needs a whole number of "
                            f"workers N >= 1, e.g. 'local:2'")
        return "local", k
    if "://" in s:
        return "address", s
    raise SpecError(f"scheduler {scheduler!r}: give 'local:N' (a local cluster of N worker "
                    f"processes) or a scheduler address such as 'tcp://host:8786'")


@contextlib.contextmanager
def _client(scheduler: str):
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SpecError("--scheduler needs dask.distributed, a dependency of accel-sweep: "
                        "reinstall it (python3 -m pip install .)") from exc
    kind, arg = parse_scheduler(scheduler)
    if kind == "local":
        cluster = LocalCluster(n_workers=int(arg), threads_per_worker=1, processes=True,
                               dashboard_address=":0",  # any free port: 8787 may be taken
                               silence_logs=logging.ERROR)
        try:
            client = Client(cluster)
            try:
                yield client
            finally:
                client.close()
        finally:
            cluster.close()
    else:
        try:
            client = Client(arg, timeout="30s")
        except (OSError, TimeoutError) as exc:
            raise SpecError(f"cannot reach the Dask scheduler at {arg}: {exc} (start it with "
                            f"`dask scheduler` and some `dask worker {arg}`)") from exc
        try:
            yield client
        finally:
            client.close()


def _procs_by_host(client) -> dict[str, int]:
    """host -> number of worker processes on it (to share its cores among them)."""
    counts: dict[str, int] = {}
    for w in client.scheduler_info(n_workers=-1).get("workers", {}).values():
        host = w.get("host")
        if host:
            counts[host] = counts.get(host, 0) + 1
    return counts


def _wait_for_workers(client, timeout: float = 60.0) -> int:
    t0 = time.monotonic()
    while True:
        n = sum(client.nthreads().values())
        if n > 0:
            return n
        if time.monotonic() - t0 > timeout:
            raise SpecError("the Dask cluster has no workers (start some with `dask worker "
                            "<scheduler address>`)")
        time.sleep(0.2)


# ------------------------------------------------------------------------------ the run
def run_distributed(gr, scheduler: str, *, output, fmt=None, plan, progress: bool = True,
                    overwrite: bool = False, compression: str | None = None, tmpl=None):
    """Evaluate ``gr`` (a :class:`sweep.execute.grid.GridRun`) on a Dask cluster and write it to ``output``.

    ``plan``: the run's :class:`~sweep.execute.plan.MemoryPlan` (chunk size, caches and the
    summary's observer, which sees every chunk: reduced on the workers for Zarr, on the client
    for netCDF); ``tmpl``: the result's template. Returns ``(None, RunStats)``; RunStats.seconds
    counts from the moment the cluster is connected (cluster start-up excluded, in the phase
    ``cluster_start``) to the published file.
    """
    from distributed import as_completed

    from sweep.execute.grid import RunStats
    from sweep.execute.plan import plan_chunks, zarr_chunks
    from sweep.execute.signals import abandon, checkpoint
    from sweep.results.assemble import result_dims, result_metrics, template
    from sweep.results.files import ResultWriter
    from sweep.results.target import infer_format

    if output is None:
        raise SpecError("a distributed run (scheduler=...) needs an output file: pass "
                        "output=<path> (CLI: -o out.zarr); the result is written by the workers")
    parse_scheduler(scheduler)  # bad input fails before any cluster starts
    fmt = infer_format(output, fmt)
    grid = gr.spec
    total = grid.n_points
    max_points = plan.chunk_points
    obs = plan.observing
    tmpl = template(grid) if tmpl is None else tmpl
    t_start = time.perf_counter()

    with _client(scheduler) as client:
        n_threads = _wait_for_workers(client)
        by_host = _procs_by_host(client)
        t0 = time.perf_counter()
        writer = ResultWriter(output, tmpl, result_dims(grid), fmt,
                              write_shape=gr.write_shape(plan_chunks(grid.shape, max_points)[0]),
                              cache_bytes=plan.cache_bytes, overwrite=overwrite,
                              before_publish=checkpoint, compression=compression,
                              metrics=result_metrics(grid))
        feasible = 0
        summary_s = 0.0
        bar = Progress(total, enabled=progress)
        futures: list = []
        try:
            gr_f = client.submit(_identity, gr, pure=False)
            if fmt == "zarr":
                store = str(Path(writer.atomic.tmp).resolve())
                chunks = zarr_chunks(grid.shape, writer.chunks, max_points)
                reducer = obs.reducer if obs is not None else None
                futures = [client.submit(_zarr_region_task, gr_f, c, store, by_host, reducer,
                                         plan.block_points, retries=2, pure=False)
                           for c in chunks]
                for fut in as_completed(futures):
                    checkpoint()
                    points, fits, parts = fut.result()
                    fut.release()
                    feasible += fits
                    for part in parts:
                        obs.merge(part)
                    bar.update(points)
            else:
                chunks = plan_chunks(grid.shape, max_points)
                window = max(2, 2 * n_threads)  # tasks in flight: results wait on workers
                todo = collections.deque(chunks)
                owner = {}

                # the summary's pieces come from the workers when the arrays sent back hold
                # only each point's best layout
                on_worker = obs.reducer if obs is not None and gr.keeper is not None else None

                def submit_next(ac=None):
                    c = todo.popleft()
                    f = client.submit(_chunk_arrays_task, gr_f, c, by_host, on_worker,
                                      plan.block_points, retries=2, pure=False)
                    owner[f.key] = c
                    futures.append(f)
                    if ac is not None:
                        ac.add(f)
                    return f

                initial = [submit_next() for _ in range(min(window, len(todo)))]
                ac = as_completed(initial)
                for fut in ac:
                    checkpoint()
                    c = owner.pop(fut.key)
                    arrays, fits, parts = fut.result()
                    feasible += fits
                    for part in parts:
                        obs.merge(part)
                    fut.release()
                    futures.remove(fut)
                    if todo:
                        submit_next(ac)
                    if obs is not None and on_worker is None:
                        t1 = time.perf_counter()
                        gr.observe(obs, c, {n: arrays[n] for n in obs.reducer.variables},
                                   plan.block_points)
                        summary_s += time.perf_counter() - t1
                    writer.write(gr.region(c), arrays)
                    del arrays
                    bar.update(c.size(grid.shape))
            if obs is not None:
                t1 = time.perf_counter()
                obs.finish(lambda h, rest: client.submit(  # before publishing
                    _point_task, gr_f, obs.reducer.variables, h, rest, pure=False).result())
                summary_s += time.perf_counter() - t1
            writer.close()
            checkpoint()  # a signal that arrived while the result was renamed
        except BaseException as exc:
            with contextlib.suppress(Exception):
                client.cancel(futures)
            if fmt == "zarr" and not writer.published:  # running tasks finish their write
                with contextlib.suppress(Exception):
                    client.run(_drain, _zarr_region_task.__name__, DRAIN_TIMEOUT)
            abandon(writer, exc, output)
            raise
        finally:
            bar.close()
        seconds = time.perf_counter() - t0
    phases = {"cluster_start": t0 - t_start, "cluster_stop": time.perf_counter() - t0 - seconds}
    if obs is not None:
        phases["summary"] = summary_s
    return None, RunStats(total, seconds, len(chunks), Path(output), feasible, phases,
                          summary=plan.observer, memory=plan,
                          sizes={d: tmpl.sizes[d] for d in result_dims(grid)}, kept=gr.kept)
