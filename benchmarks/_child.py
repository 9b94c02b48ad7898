"""Measurements run in a fresh interpreter by ``run_benchmarks.py``, against whichever source tree
is first on ``PYTHONPATH`` (this project's, or a checkout of an earlier commit for the "before"
figures): ``python benchmarks/_child.py TASK 'JSON ARGS'``. Prints one JSON line. Only public
entry points are used (``kernels.evaluate_grid``, ``sweep.execute.local.run_with_stats``,
``sweep.evaluate``), so both trees run the same script.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

T_START = time.perf_counter()

import numpy as np  # noqa: E402

#: the ~10^7-point benchmark grid: the built-in default grid with 7 output lengths
OUTPUT_LENS = [64, 128, 256, 512, 1024, 2048, 4096]


def grid_spec(name: str) -> dict | None:
    """'default' (the built-in grid), 'bench' (it with 7 output lengths), 'linear:NB:NS' (it with
    NB batch and NS context values, linearly spaced, output_len 256)."""
    from grids.spec import DEFAULT_SPEC

    spec = {k: v for k, v in DEFAULT_SPEC.items() if k != "name"}
    if name == "default":
        return spec
    if name == "bench":
        spec["output_len"] = list(OUTPUT_LENS)
        return spec
    _, nb, ns = name.split(":")
    spec["batch"] = {"from": 1, "to": 1024, "scale": "linear", "num": int(nb)}
    spec["context"] = {"from": 128, "to": 131072, "scale": "linear", "num": int(ns)}
    spec["output_len"] = 256
    return spec


def vm_hwm() -> int:
    """This process's own peak RSS (ru_maxrss would include the parent's at spawn time)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def process_age() -> float:
    """Seconds since this process started (interpreter start-up included), from /proc."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.perf_counter() - T_START


def _times(fn, reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _set_threads(n: int) -> None:
    import kernels

    if hasattr(kernels, "set_num_threads") and "set_num_threads" in getattr(kernels, "__all__", ()):
        kernels.set_num_threads(n)
    else:  # the earlier kernels ran on numba's threading layer
        import numba

        numba.set_num_threads(n)


def _gridrun(name: str):
    from grids.spec import load_spec
    from sweep.execute.grid import GridRun

    return GridRun(load_spec(grid_spec(name)))


def _kernel_args(gr, out):
    t = gr.tables
    return (t.hw, t.md, t.px, gr.batch, gr.context, gr.output_len, t.pr, t.ly, out)


# ------------------------------------------------------------------------------ tasks
def _modes(gr, evaluate_grid) -> dict[str, dict]:
    """The serving modes a kernel run measures, as keyword arguments: the grid's own mode first
    (continuous batching by default since issue 19), then static batches; a tree whose kernel
    has no serving mode measures its one (static) kernel."""
    import inspect

    mode = getattr(gr.spec, "mode", None)
    if mode is None or "mode" not in inspect.signature(evaluate_grid).parameters:
        return {"static": {}}
    names = {0.0: "static", 1.0: "continuous", 2.0: "request rate"}
    return {names.get(float(mode), str(mode)): {"mode": mode}, "static": {"mode": 0.0}}


def task_kernel(grid: str, reps: int = 3, threads=(1, 2)) -> dict:
    """Kernel rate with a preallocated, touched output array (compilation excluded), per thread
    count and serving mode (``rows``: the grid's own mode, ``mode``; ``rows_by_mode``: each);
    the write bound (fill of the same array) and the feasible fraction."""
    from kernels import evaluate_grid
    from kernels.params import METRICS

    gr = _gridrun(grid)
    n = gr.spec.n_points
    out = np.empty((len(METRICS), n), dtype=np.float32)
    args = _kernel_args(gr, out)
    modes = _modes(gr, evaluate_grid)
    first_mode = next(iter(modes))
    t0 = time.perf_counter()
    evaluate_grid(*args, **modes[first_mode])  # compiles or loads the cache, touches every page
    first = time.perf_counter() - t0
    by_mode: dict[str, list] = {}
    for name, kw in modes.items():
        rows = by_mode[name] = []
        for k in threads:
            _set_threads(k)
            evaluate_grid(*args, **kw)
            ts = _times(lambda kw=kw: evaluate_grid(*args, **kw), reps)
            rows.append({"threads": k, "best_s": min(ts), "median_s": statistics.median(ts),
                         "points_per_s": n / min(ts)})
    fill = min(_times(lambda: out.fill(1.0), max(reps, 5)))
    evaluate_grid(*args, **modes[first_mode])
    fits = float(np.count_nonzero(out[METRICS.index("fits")] == 1.0) / n)
    return {"grid": grid, "shape": list(gr.shape), "points": n, "metrics": len(METRICS),
            "first_call_s": first, "mode": first_mode, "rows": by_mode[first_mode],
            "rows_by_mode": by_mode, "fill_s": fill, "fill_points_per_s": n / fill,
            "fill_bytes_per_s": out.nbytes / fill, "feasible_fraction": fits,
            "load_average": os.getloadavg()}


def task_bounds(grid: str, root: str, combos: int = 300) -> dict:
    """Operations per point (counted) and their cost on this CPU: the arithmetic bound."""
    sys.path.insert(0, str(Path(__file__).parent))
    from opcount import arithmetic_bound, count_ops, op_costs, store_cost

    from kernels import evaluate_grid
    from kernels.params import METRICS

    gr = _gridrun(grid)
    t = gr.tables
    out = evaluate_grid(*_kernel_args(gr, None), mode=gr.spec.mode)
    n_e = gr.shape[1]
    if n_e != 1:
        raise ValueError("bounds: one engine only")
    kout = out.reshape(len(METRICS), gr.shape[0], *gr.shape[2:])
    counts = count_ops(Path(root), (t.hw, t.md, t.px, t.pr, t.ly), gr.batch, gr.context,
                       gr.output_len, combos=combos, kernel_out=kout, mode=gr.spec.mode)
    costs = op_costs()
    store_s = store_cost(len(METRICS))
    bound = arithmetic_bound(counts["per_point"], costs, store_s)
    return {"grid": grid, "counts": counts, "op_cost_s": costs, "store_cost_s": store_s,
            "bound": bound}


def task_reference(grid: str, n_grid: int, n_points: int) -> dict:
    """tests/reference.py: reference_grid on an evenly spaced Cartesian subset of the grid and
    reference_point per configuration on random points (the plain-Python baselines)."""
    from kernels.params import HW_FIELDS, LAYOUT_FIELDS, MODEL_FIELDS, PRECISION_FIELDS, PX_FIELDS
    from tests.reference import reference_grid, reference_point

    gr = _gridrun(grid)
    t = gr.tables
    shape = (t.hw.shape[0], t.md.shape[0], len(gr.batch), len(gr.context), len(gr.output_len),
             t.pr.shape[0], t.ly.shape[0])

    def sub(n, k):
        return np.unique(np.linspace(0, n - 1, min(n, k)).round().astype(int))

    picks = [sub(shape[0], 5), sub(shape[1], 4), sub(shape[2], 4), sub(shape[3], 4),
             sub(shape[4], 2), np.arange(shape[5]), np.arange(shape[6])]
    while int(np.prod([len(p) for p in picks])) > n_grid and len(picks[0]) > 1:
        picks[0] = picks[0][:-1]
    ih, im, ib, is_, io, ip, il = picks
    size = int(np.prod([len(p) for p in picks]))
    t0 = time.perf_counter()
    reference_grid(t.hw[ih], t.md[im], t.px[np.ix_(ih, ip)], gr.batch[ib], gr.context[is_],
                   gr.output_len[io], t.pr[ip], t.ly[il])
    grid_s = time.perf_counter() - t0
    rng = np.random.default_rng(2024)
    idx = np.unravel_index(rng.choice(int(np.prod(shape)), size=n_points, replace=False), shape)
    t0 = time.perf_counter()
    for h, m, b, s, o, p, li in zip(*idx):
        reference_point(dict(zip(HW_FIELDS, t.hw[h].tolist())),
                        dict(zip(MODEL_FIELDS, t.md[m].tolist())),
                        dict(zip(PX_FIELDS, t.px[h, p].tolist())), float(gr.batch[b]),
                        float(gr.context[s]), float(gr.output_len[o]),
                        dict(zip(PRECISION_FIELDS, t.pr[p].tolist())),
                        dict(zip(LAYOUT_FIELDS, t.ly[li].tolist())))
    point_s = time.perf_counter() - t0
    return {"grid_points": size, "grid_s": grid_s, "grid_points_per_s": size / grid_s,
            "points": n_points, "point_s": point_s, "point_points_per_s": n_points / point_s}


def task_inmem(grid: str, max_memory: str = "8 GiB", kernel_reps: int = 3) -> dict:
    """``sweep.run(spec)`` in memory, end to end, in a fresh process (fresh memory, as a user gets
    it): rate, and peak RSS (``VmHWM``) over the Dataset's size; then the kernel alone on the same
    grid in the same process (output preallocated and touched): the reference rate."""
    import sweep
    from kernels import evaluate_grid
    from kernels.params import METRICS

    spec = grid_spec(grid)
    sweep.run({**spec, "batch": [1], "context": [128]}, progress=False)  # compile or load
    t0 = time.perf_counter()
    ds = sweep.run(spec, max_memory=max_memory, progress=False)
    run_s = time.perf_counter() - t0
    hwm = vm_hwm()
    out_bytes = int(ds.nbytes)
    points = int(ds["ttft"].size)
    del ds
    gr = _gridrun(grid)
    out = np.empty((len(METRICS), gr.spec.n_points), dtype=np.float32)
    args = _kernel_args(gr, out)
    evaluate_grid(*args)
    kernel_s = min(_times(lambda: evaluate_grid(*args), kernel_reps))
    return {"grid": grid, "points": points, "run_s": run_s, "points_per_s": points / run_s,
            "peak_rss_bytes": hwm, "output_bytes": out_bytes, "rss_over_output": hwm / out_bytes,
            "kernel_s": kernel_s, "kernel_points_per_s": gr.spec.n_points / kernel_s,
            "load_average": os.getloadavg()}


def task_stream(grid: str, path: str, fmt: str, max_memory: str = "512 MiB",
                compression: str | None = None, summary: bool = True,
                scheduler: str | None = None) -> dict:
    """A streamed run to a file with the CLI's summary: computed from the chunks during the run
    (since issue 22), or by the CLI's post-run summary on the result read back (earlier trees)."""
    from sweep.execute.local import run_with_stats

    kw = {} if compression is None else {"compression": compression}
    if scheduler is not None:
        kw["scheduler"] = scheduler
    if summary:
        try:  # since issue 22 the summary is computed from the chunks during the run
            from sweep.analysis.headline import HeadlineVariation

            kw["summarise"] = HeadlineVariation
        except ImportError:  # an earlier tree: the summary reads the result back
            pass
    spec = grid_spec(grid)
    t0 = time.perf_counter()
    ds, st = run_with_stats(spec, output=path, format=fmt, max_memory=max_memory,
                            progress=False, overwrite=True, **kw)
    run_s = time.perf_counter() - t0
    res = {"grid": grid, "format": fmt, "compression": compression, "max_memory": max_memory,
           "scheduler": scheduler, "points": st.points, "chunks": st.chunks, "run_s": run_s,
           "stats_s": st.seconds, "points_per_s": st.points / run_s,
           "phases": dict(getattr(st, "phases", {}) or {})}
    if summary:
        from sweep.cli.summary import run_summary

        t1 = time.perf_counter()
        text = run_summary(ds, st, run_s, path)
        report = time.perf_counter() - t1
        # the part computed during the run (from the chunks), if any, plus the report; the
        # fraction is of the whole (run and report), as the large run's is of the process
        during = (getattr(st, "phases", None) or {}).get("summary", 0.0)
        res["summary_s"] = report + during
        res["summary_fraction"] = res["summary_s"] / (run_s + report)
        res["summary_text"] = text
    ds.close()
    res["self_peak_rss_bytes"] = vm_hwm()
    res["load_average"] = os.getloadavg()
    return res


def task_warm(spec: dict) -> dict:
    """Process start to first result: import sweep, run a small grid, read a value."""
    t1 = time.perf_counter()
    import sweep

    t2 = time.perf_counter()
    ds = sweep.run(spec, progress=False)
    float(ds["throughput"].max())
    t3 = time.perf_counter()
    return {"import_s": t2 - t1, "first_result_s": t3 - t2, "in_process_s": t3 - T_START,
            "process_age_s": process_age()}


def _table(rows: int):
    import pandas as pd

    hw = ["h100-sxm", "mi300x", "tpu-v5e"]
    md = ["llama-3.1-8b", "mixtral-8x7b"]
    return pd.DataFrame({
        "hardware": [hw[i % 3] for i in range(rows)], "model": [md[i % 2] for i in range(rows)],
        "batch": [str(1 << (i % 6)) if i else "max" for i in range(rows)],
        "context": [1024 * (1 + i % 4) for i in range(rows)], "output_len": 256,
        "precision": "bf16", "parallelism": ["tp1" if i % 2 else "tp8" for i in range(rows)]})


def compiled_variants() -> dict[str, int]:
    """Compiled signatures of every numba dispatcher in ``kernels.grid`` (entry points and the
    shared pieces), as numba records them (``len(dispatcher.signatures)``)."""
    from numba.core.dispatcher import Dispatcher

    import kernels.grid as kg

    return {name: len(obj.signatures) for name, obj in vars(kg).items()
            if isinstance(obj, Dispatcher) and obj.py_func.__module__ == kg.__name__}


def task_evaluate(rows: int = 12, variants: bool = False) -> dict:
    """First ``sweep.evaluate`` of a small table (one ``batch = "max"`` row), from process start.

    With ``variants``: then every entry point is exercised as other callers do (the point list
    with uint64 indices, a view and no in-flight flags; a small grid through ``sweep.run``), and
    the compiled signatures of every dispatcher are counted ("one compiled variant per entry
    point"). Run that on a warm cache: it would compile the grid kernel too."""
    t1 = time.perf_counter()
    import sweep

    table = _table(rows)
    t2 = time.perf_counter()
    res = sweep.evaluate(table)
    float(res["throughput"].max())
    t3 = time.perf_counter()
    out = {"import_s": t2 - t1, "first_evaluate_s": t3 - t2, "in_process_s": t3 - T_START,
           "process_age_s": process_age()}
    if not variants:
        return out
    errors = []
    try:
        import kernels
        from sweep.execute.points import resolve_points

        pt = resolve_points(table)
        t = pt.tables
        n = len(table)
        idx = np.arange(n, dtype=np.uint64)
        plat = pt.platform if hasattr(pt, "platform") else pt.index["hardware"]
        kernels.evaluate_points(t.hw, t.md, t.px, t.pr, t.ly, plat[idx],
                                pt.index["model"][idx], pt.index["precision"][idx],
                                pt.index["parallelism"][idx], np.ones(n), np.full(n, 1024.0),
                                np.full(n, 256.0))
    except Exception as exc:  # an older tree: other internals; the count below still holds
        errors.append(f"point list called directly: {type(exc).__name__}: {exc}")
    try:
        sweep.run({"hardware": ["h100-sxm"], "model": ["llama-3.1-8b"], "batch": [1, 8],
                   "context": [1024], "precision": ["bf16"], "parallelism": ["tp1"]},
                  progress=False)
    except Exception as exc:
        errors.append(f"small grid: {type(exc).__name__}: {exc}")
    out["variants"] = compiled_variants()
    out["variant_errors"] = errors
    return out


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"no TOML for {type(v).__name__}")


def spec_toml(spec: dict) -> str:
    """A grid spec dict as TOML (the few value types specs use; tables written inline)."""
    return "".join(f"{k} = {_toml_value(v)}\n" for k, v in spec.items())


def task_cli(argv: list[str], argv0: str, grid: str | None = None,
             spec_path: str | None = None) -> dict:
    """``sweep ARGV`` as ``python -m sweep.cli`` runs it (``sys.argv[0]`` = ``argv0``, the tree's
    ``sweep/cli/__main__.py``), with the post-run summary (``sweep.cli.summary.run_summary``)
    timed by a wrapper: the CLI of an earlier tree may not print it. Prints the command's output,
    then the JSON line."""
    import contextlib
    import io

    import sweep.cli.summary as summary

    inner = summary.run_summary
    timed: list[float] = []

    def run_summary(*a, **kw):
        t0 = time.perf_counter()
        try:
            return inner(*a, **kw)
        finally:
            timed.append(time.perf_counter() - t0)

    summary.run_summary = run_summary
    if grid is not None:  # the grid as a spec file, given after ``run``
        Path(spec_path).write_text(spec_toml({"name": f"benchmark {grid}", **grid_spec(grid)}))
        argv = [argv[0], spec_path, *argv[1:]]
    sys.argv = [argv0, *argv]
    from sweep.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(argv)
    text = buf.getvalue()
    return {"exit": code, "summary_s": sum(timed) if timed else None, "printed": text,
            "process_age_s": process_age(), "self_peak_rss_bytes": vm_hwm()}


def _rm_path(path: Path) -> None:
    import shutil

    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists():
        path.unlink()


def task_codecs(grid: str, workdir: str, reps: int = 3) -> dict:
    """Write the grid's result with every compression preset (netCDF and Zarr): write time
    (open to close, one thread) and compression ratio."""
    from sweep.execute.local import run_with_stats
    from sweep.results.files import COMPRESSIONS, write_dataset

    ds, _ = run_with_stats(grid_spec(grid), progress=False, max_memory="8 GiB")
    raw = int(sum(ds[v].nbytes for v in ds.data_vars))
    rows = []
    for fmt, ext in (("netcdf", ".nc"), ("zarr", ".zarr")):
        for comp in COMPRESSIONS:
            path = Path(workdir) / f"codec-{comp}{ext}"
            ts = []
            for _ in range(reps):
                t0 = time.perf_counter()
                write_dataset(ds, path, fmt, overwrite=True, compression=comp)
                ts.append(time.perf_counter() - t0)
            size = (path.stat().st_size if path.is_file()
                    else sum(f.stat().st_size for f in path.rglob("*") if f.is_file()))
            rows.append({"format": fmt, "compression": comp, "write_s": min(ts),
                         "points_per_s": ds["ttft"].size / min(ts), "bytes": size,
                         "ratio_to_in_memory": raw / size})
            _rm_path(path)
    for r in rows:  # the compression ratio: against the same format uncompressed
        none = next(x["bytes"] for x in rows if x["format"] == r["format"]
                    and x["compression"] == "none")
        r["ratio"] = none / r["bytes"]
    return {"grid": grid, "points": int(ds["ttft"].size), "raw_bytes": raw, "rows": rows}


#: netCDF settings measured beside the presets: (compression, level, shuffle, chunk elements)
NC_OPTIONS = [("zlib", 1, False, 1 << 20), ("zlib", 1, True, 1 << 20), ("zlib", 4, False, 1 << 20),
              ("zlib", 4, True, 1 << 20), ("zlib", 1, False, 1 << 18), ("zlib", 1, False, 1 << 22),
              ("zstd", 1, True, 1 << 20), ("zstd", 3, True, 1 << 20), (None, 0, False, 1 << 20)]


def task_ncoptions(grid: str, workdir: str, reps: int = 1) -> dict:
    """netCDF-4 written directly with netCDF4-python, every result variable (dtype and fill value
    from the registry), for each of :data:`NC_OPTIONS`: write time (one thread, open to close)
    and size. What shuffle, level and chunk size buy, beside the presets' choices."""
    import netCDF4

    import sweep
    from sweep.results.files import storage_chunks
    from sweep.results.variables import VARIABLES

    ds = sweep.run(grid_spec(grid), progress=False, max_memory="8 GiB")
    dims, shape = ds["ttft"].dims, ds["ttft"].shape
    values = {name: np.asarray(ds[name].values) for name in VARIABLES}
    path = Path(workdir) / "ncoptions.nc"
    rows = []
    for comp, level, shuffle, target in NC_OPTIONS:
        chunks = storage_chunks(shape, target)
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            nc = netCDF4.Dataset(path, "w", format="NETCDF4")
            for d, n in zip(dims, shape):
                nc.createDimension(d, n)
            for name, meta in VARIABLES.items():
                enc = meta.encoding(chunks)
                kw = ({"compression": comp, "complevel": level, "shuffle": shuffle} if comp
                      else {"compression": None})
                v = nc.createVariable(name, np.dtype(enc["dtype"]), dims, chunksizes=chunks,
                                      fill_value=enc["_FillValue"] if enc["_FillValue"] is not None
                                      else False, **kw)
                v[:] = values[name]
            nc.close()
            ts.append(time.perf_counter() - t0)
        rows.append({"compression": comp or "none", "level": level, "shuffle": shuffle,
                     "chunk_elements": int(np.prod(chunks)), "chunks": list(chunks),
                     "write_s": min(ts), "bytes": path.stat().st_size})
        path.unlink()
    none = next(r["bytes"] for r in rows if r["compression"] == "none")
    for r in rows:
        r["ratio"] = none / r["bytes"]
        r["points_per_s"] = int(np.prod(shape)) / r["write_s"]
    return {"grid": grid, "points": int(np.prod(shape)), "rows": rows}


TASKS = {name[5:]: fn for name, fn in globals().items() if name.startswith("task_")}

if __name__ == "__main__":
    task, args = sys.argv[1], json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    result = TASKS[task](**args)
    print(json.dumps(result, default=float))
