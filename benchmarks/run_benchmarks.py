"""accel-sweep performance benchmark: one command, every figure measured in the same run.

    PYTHONPATH=. python3 benchmarks/run_benchmarks.py            # full run (< 10 min on 2 cores)
    PYTHONPATH=. python3 benchmarks/run_benchmarks.py --quick    # ~1-2 min, smaller grids
    PYTHONPATH=. python3 benchmarks/run_benchmarks.py --markdown # print the table of latest.json

Prints a table and writes ``benchmarks/results/latest.json`` (every figure, the targets, met or
not, machine info). See benchmarks/README.md for what each figure means and docs/performance.md
for the latest numbers and what limits each of them.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "benchmarks" / "results" / "latest.json"
TIME_BUDGET_S = 570.0  # the whole benchmark must finish in < 10 min

#: the ~10^7-point benchmark grid: the built-in default grid (all catalog devices, its 15
#: models, batch 1..1024 and context 128..128k in powers of two, 3 precisions, 10 layouts) with
#: 7 output lengths as an extra dim
OUTPUT_LENS = [64, 128, 256, 512, 1024, 2048, 4096]


def bench_spec(nb: int | None = None, ns: int | None = None) -> dict:
    """The benchmark grid; with (nb, ns) the batch and context axes are replaced by linear ranges
    of that many values and output_len is 256 (same devices, models, precisions and layouts:
    devices x 15 x 3 x 10 combinations per (batch, context)), for the scaling and out-of-core
    sizes."""
    from grids.spec import DEFAULT_SPEC

    spec = {k: v for k, v in DEFAULT_SPEC.items() if k != "name"}
    spec["name"] = "benchmark"
    if nb is None:
        spec["output_len"] = list(OUTPUT_LENS)
        return spec
    spec["batch"] = {"from": 1, "to": 1024, "scale": "linear", "num": nb}
    spec["context"] = {"from": 128, "to": 131072, "scale": "linear", "num": ns}
    spec["output_len"] = 256
    return spec


#: (batch values, context values) giving ~10^4 .. 10^9 points (x 14,400 = 32 catalog devices x
#: 15 models x 3 precisions x 10 layouts)
SIZES = {
    "1e4": (1, 1),        # 14,400
    "1e5": (3, 3),        # 129,600
    "1e6": (9, 10),       # 1,296,000
    "1e7": (30, 30),      # 12,960,000
    "1e8": (90, 99),      # 128,304,000
    "1e9": (300, 300),    # 1,296,000,000
}


# --------------------------------------------------------------------------------------------
# helpers


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _times(fn, reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict:
    import dask
    import numba
    import numpy
    import xarray
    import zarr

    try:
        import psutil

        mem = psutil.virtual_memory().total
    except ImportError:  # pragma: no cover
        mem = None
    return {
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": _cpu_model(),
        "memory_bytes": mem,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numba": numba.__version__,
        "numba_threads": numba.config.NUMBA_NUM_THREADS,
        "kernel_threads": _kernel_threads(),
        "numba_threading_layer": _threading_layer(),
        "numpy": numpy.__version__,
        "xarray": xarray.__version__,
        "zarr": zarr.__version__,
        "dask": dask.__version__,
        "load_average_start": list(os.getloadavg()),
    }


def _threading_layer() -> str:
    import numba

    try:
        return numba.threading_layer()
    except ValueError:
        return "not initialised"


def _grid_args(gr):
    """``kernels.evaluate_grid`` arguments of a whole grid: every platform row (hardware x
    engine, hardware-major) and its (platform, precision) px rows."""
    t = gr.tables
    return (t.hw, t.md, t.px, gr.batch, gr.context, gr.output_len, t.pr, t.ly)


def _kernel_shape(gr) -> tuple[int, ...]:
    """Shape of ``evaluate_grid``'s output without the metric axis: the spec's dims with
    hardware and engine merged into one platform axis."""
    return (gr.shape[0] * gr.shape[1], *gr.shape[2:])


def _metric(name: str) -> int:
    from kernels.params import METRICS

    return METRICS.index(name)


def _n_metrics() -> int:
    from kernels.params import METRICS

    return len(METRICS)


def _gridrun(spec):
    from grids.spec import load_spec
    from sweep.execute.grid import GridRun

    return GridRun(load_spec(spec))


class _RSSMonitor:
    """Peak resident memory of a process and its children, sampled every 0.1 s."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        import psutil

        try:
            proc = psutil.Process(self.pid)
        except psutil.Error:
            return
        while not self._stop.is_set():
            try:
                total = proc.memory_info().rss
                for ch in proc.children(recursive=True):
                    with contextlib.suppress(psutil.Error):
                        total += ch.memory_info().rss
                self.peak = max(self.peak, total)
            except psutil.Error:
                return
            self._stop.wait(0.1)

    def stop(self) -> int:
        self._stop.set()
        self._t.join()
        return self.peak


def _run_child(script: str, env: dict | None = None, timeout: float = 900.0) -> dict:
    """Run ``script`` in a fresh interpreter; returns its last stdout line (JSON) plus the wall
    time from process start to exit and the peak RSS of its process tree."""
    full_env = {**os.environ, **(env or {})}
    full_env["PYTHONPATH"] = str(ROOT) + (os.pathsep + full_env["PYTHONPATH"]
                                          if full_env.get("PYTHONPATH") else "")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(script)
        path = f.name
    try:
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=full_env, cwd=str(ROOT))
        mon = _RSSMonitor(p.pid)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            raise RuntimeError(f"benchmark child timed out after {timeout} s") from None
        finally:
            peak = mon.stop()
        wall = time.perf_counter() - t0
    finally:
        os.unlink(path)
    if p.returncode != 0:
        raise RuntimeError(f"benchmark child failed ({p.returncode}):\n{err[-3000:]}")
    res = json.loads(out.strip().splitlines()[-1])
    res["process_wall_s"] = wall
    res["tree_peak_rss_bytes"] = peak
    return res


# --------------------------------------------------------------------------------------------
# 1-3: kernel throughput, write bound, thread scaling


def _kernel_threads() -> int:
    import kernels

    return kernels.num_threads()


def bench_kernel(reps: int) -> tuple[dict, dict, dict, np.ndarray, object]:
    import kernels
    from kernels import evaluate_grid

    gr = _gridrun(bench_spec())
    args = _grid_args(gr)
    n = gr.spec.n_points
    n_metrics = _n_metrics()
    out = np.empty((n_metrics, n), dtype=np.float32)
    t0 = time.perf_counter()
    evaluate_grid(*args, out=out)  # compiles (or loads the cache) and touches every page
    first = time.perf_counter() - t0
    threads = kernels.num_threads()
    c0 = time.process_time()
    ts = _times(lambda: evaluate_grid(*args, out=out), reps)
    cpu = (time.process_time() - c0) / reps
    kernel = {
        "grid": f"default grid x 7 output lengths ({gr.shape[0]} devices x {gr.shape[1]} "
                f"engine, 15 models, 11 batch, 11 context, 7 output_len, 3 precisions, "
                f"{gr.shape[-1]} layouts)",
        "shape": list(gr.shape), "points": n, "metrics": n_metrics, "threads": threads,
        "reps": reps, "best_s": min(ts), "median_s": statistics.median(ts),
        "first_call_s": first,
        "points_per_s": n / min(ts), "points_per_s_median": n / statistics.median(ts),
        "points_per_cpu_s": n / cpu if cpu > 0 else None,
        "feasible_fraction": float(np.count_nonzero(out[_metric("fits")] == 1.0) / n),
    }
    # 3. the write bound: fill the same (n_metrics, n) float32 array
    tf = _times(lambda: out.fill(1.0), max(reps, 5))
    fill = min(tf)
    write = {
        "what": "ndarray.fill(1.0) of the kernel's (n_metrics, n) float32 output, pages already "
                "touched, best of reps (one thread: numpy's fill is single-threaded)",
        "points": n, "bytes": out.nbytes, "best_s": fill, "points_per_s": n / fill,
        "bytes_per_s": out.nbytes / fill,
        "kernel_fraction": fill / kernel["best_s"],
    }
    # thread scaling on the same grid
    rows = []
    nt_max = kernels.num_threads()  # the kernels run on Python threads (kernels.set_num_threads)
    for nt in sorted({1, 2, nt_max}):
        if nt > nt_max:
            continue
        kernels.set_num_threads(nt)
        evaluate_grid(*args, out=out)
        t = min(_times(lambda: evaluate_grid(*args, out=out), max(2, reps - 2)))
        rows.append({"threads": nt, "best_s": t, "points_per_s": n / t})
    kernels.set_num_threads(None)
    base = rows[0]["points_per_s"]
    for r in rows:
        r["speedup"] = r["points_per_s"] / base
    threads_res = {"points": n, "rows": rows}
    return kernel, write, threads_res, out, gr


# --------------------------------------------------------------------------------------------
# 2 and 4: the plain-Python reference


def _subset_indices(n: int, k: int) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, min(n, k)).round().astype(int))


def bench_reference(gr, kernel_out: np.ndarray, n_grid_target: int, n_points: int,
                    kernel_rate: float) -> tuple[dict, dict]:
    from kernels.params import (
        HW_FIELDS,
        LAYOUT_FIELDS,
        METRICS,
        MODEL_FIELDS,
        PRECISION_FIELDS,
        PX_FIELDS,
    )
    from tests.reference import reference_grid, reference_point

    t = gr.tables
    shape = _kernel_shape(gr)  # (platform, model, batch, context, output_len, precision, layout)
    n_m = len(METRICS)
    # (2) reference_grid on an evenly spaced Cartesian subset of the benchmark grid
    picks = [_subset_indices(shape[0], 5), _subset_indices(shape[1], 4),
             _subset_indices(shape[2], 4), _subset_indices(shape[3], 4),
             _subset_indices(shape[4], 2), np.arange(shape[5]), np.arange(shape[6])]
    size = int(np.prod([len(p) for p in picks]))
    while size > n_grid_target and len(picks[0]) > 1:
        picks[0] = picks[0][:-1]
        size = int(np.prod([len(p) for p in picks]))
    ih, im, ib, is_, io, ip, il = picks
    args = (t.hw[ih], t.md[im], t.px[ih][:, ip], gr.batch[ib], gr.context[is_],
            gr.output_len[io], t.pr[ip], t.ly[il])
    t0 = time.perf_counter()
    ref = reference_grid(*args)
    dt = time.perf_counter() - t0
    sub = kernel_out.reshape(n_m, *shape)[np.ix_(np.arange(n_m), ih, im, ib, is_, io, ip, il)]
    with np.errstate(invalid="ignore", divide="ignore"):
        same_nan = bool(np.array_equal(np.isnan(sub), np.isnan(ref)))
        ok = np.isfinite(sub) & np.isfinite(ref)
        a, b = sub[ok].astype(np.float64), ref[ok].astype(np.float64)
        rel = np.abs(a - b) / np.maximum(np.abs(b), 1e-300)
    grid_res = {
        "what": "tests/reference.py reference_grid (plain Python, one reference_point call per "
                "grid point, table rows converted to dicts once) on an evenly spaced Cartesian "
                "subset of the benchmark grid; no vectorised NumPy evaluation is timed",
        "points": size, "seconds": dt, "points_per_s": size / dt,
        "kernel_points_per_s": kernel_rate, "kernel_speedup": kernel_rate / (size / dt),
        "feasible_fraction": float(np.count_nonzero(ref[METRICS.index("fits")] == 1.0) / size),
        "agreement": {"same_nan_pattern": same_nan,
                      "share_within_rtol_2e-4": float((rel <= 2e-4).mean()) if rel.size else 1.0,
                      "note": "kernel vs reference on this subset, for information; the tests "
                              "(tests/test_kernel_reference.py) own the correctness check"},
    }

    # (4) per-point Python as peer tools do: one call per configuration, built from its inputs
    rng = np.random.default_rng(2024)
    flat = rng.choice(gr.spec.n_points, size=n_points, replace=False)
    idx = np.unravel_index(flat, shape)
    hw_rows, md_rows = t.hw, t.md
    t0 = time.perf_counter()
    for h, m, b, s, o, p, li in zip(*idx):
        hwd = dict(zip(HW_FIELDS, hw_rows[h].tolist()))
        mdd = dict(zip(MODEL_FIELDS, md_rows[m].tolist()))
        prd = dict(zip(PRECISION_FIELDS, t.pr[p].tolist()))
        lyd = dict(zip(LAYOUT_FIELDS, t.ly[li].tolist()))
        pxd = dict(zip(PX_FIELDS, t.px[h, p].tolist()))
        reference_point(hwd, mdd, pxd, float(gr.batch[b]), float(gr.context[s]),
                        float(gr.output_len[o]), prd, lyd)
    dt = time.perf_counter() - t0
    rate = n_points / dt
    point_res = {
        "what": "tests/reference.py reference_point called once per configuration (inputs built "
                "as dicts per call, as a per-configuration Python tool does), on points drawn "
                "uniformly at random from the benchmark grid",
        "points": n_points, "seconds": dt, "points_per_s": rate,
        "us_per_point": 1e6 / rate,
        "kernel_points_per_s": kernel_rate, "kernel_speedup": kernel_rate / rate,
    }
    return grid_res, point_res


# --------------------------------------------------------------------------------------------
# 5: JIT cold and warm start

_JIT_CHILD = textwrap.dedent("""
    import json, time
    t0 = time.perf_counter()
    import sweep
    t1 = time.perf_counter()
    ds = sweep.run({spec!r}, progress=False)
    float(ds["throughput"].max())
    t2 = time.perf_counter()
    print(json.dumps({{"import_s": t1 - t0, "first_result_s": t2 - t1, "in_process_s": t2 - t0}}))
""")


def bench_jit() -> dict:
    spec = {"hardware": ["h100-sxm", "mi300x"], "model": ["llama-3.1-8b", "mixtral-8x7b"],
            "batch": [1, 8, 64], "context": [1024, 8192], "precision": ["bf16", "fp8"],
            "parallelism": ["tp1", "tp2-ep4"]}
    script = _JIT_CHILD.format(spec=spec)
    cache = tempfile.mkdtemp(prefix="sweep-bench-numba-")
    try:
        env = {"NUMBA_CACHE_DIR": cache}
        cold = _run_child(script, env)
        warm = _run_child(script, env)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {
        "what": "fresh interpreter: import sweep, run a 96-point grid, read a value; cold = empty "
                "NUMBA_CACHE_DIR (compiles the grid kernel), warm = second process on that cache",
        "cold_s": cold["process_wall_s"], "warm_s": warm["process_wall_s"],
        "cold_detail": cold, "warm_detail": warm,
    }


# --------------------------------------------------------------------------------------------
# 6: scaling with grid size


def bench_scaling(sizes: list[str], reps: int) -> list[dict]:
    from kernels import evaluate_grid

    rows = []
    for key in sizes:
        gr = _gridrun(bench_spec(*SIZES[key]))
        args = _grid_args(gr)
        n = gr.spec.n_points
        out = np.empty((_n_metrics(), n), dtype=np.float32)
        evaluate_grid(*args, out=out)  # warm, pages touched
        k = reps if n <= 2 * 10**7 else 2
        if n <= 2 * 10**5:
            k = 20
        ts = _times(lambda a=args, o=out: evaluate_grid(*a, out=o), k)
        rows.append({"size": key, "shape": list(gr.shape), "points": n, "reps": k,
                     "best_s": min(ts), "points_per_s": n / min(ts)})
        del out
        _log(f"  scaling {key}: {n:,} points {n / min(ts) / 1e6:,.1f} M points/s")
    return rows


# --------------------------------------------------------------------------------------------
# 7: out of core

_STREAM_CHILD = textwrap.dedent("""
    import json, time
    from sweep.execute.local import run_with_stats


    def vm_hwm():
        # this process's own peak RSS (ru_maxrss would include the parent's RSS at spawn time)
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        return 0

    if __name__ == "__main__":
        t0 = time.perf_counter()
        ds, st = run_with_stats({spec!r}, output={path!r}, format={fmt!r},
                                max_memory={max_memory!r}, progress=False,
                                scheduler={scheduler!r})
        t1 = time.perf_counter()
        print(json.dumps({{"points": st.points, "chunks": st.chunks, "run_s": st.seconds,
                           "call_s": t1 - t0,
                           "self_peak_rss_bytes": vm_hwm()}}))
""")


def _du(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def bench_stream(size: str, fmt: str, workdir: Path, max_memory: str = "512 MiB",
                 scheduler: str | None = None) -> dict:
    spec = bench_spec(*SIZES[size])
    path = workdir / f"stream-{size}-{fmt}{'-dist' if scheduler else ''}" \
                     f"{'.zarr' if fmt == 'zarr' else '.nc'}"
    try:
        res = _run_child(_STREAM_CHILD.format(spec=spec, path=str(path), fmt=fmt,
                                              max_memory=max_memory, scheduler=scheduler))
        res["bytes_on_disk"] = _du(path)
    finally:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists():
            path.unlink()
    res.update(size=size, format=fmt, max_memory=max_memory, scheduler=scheduler,
               points_per_s=res["points"] / res["run_s"],
               peak_rss_bytes=max(res["self_peak_rss_bytes"], res["tree_peak_rss_bytes"]))
    return res


def bench_in_memory_run(reps: int) -> dict:
    """run_with_stats without output on the benchmark grid (kernel + Dataset), for comparison."""
    from sweep.execute.local import run_with_stats

    spec = bench_spec()
    run_with_stats(spec, max_memory="4 GiB", progress=False)
    best = None
    for _ in range(max(1, reps // 2)):
        _, st = run_with_stats(spec, max_memory="4 GiB", progress=False)
        best = st if best is None or st.seconds < best.seconds else best
    return {"what": "sweep.run_with_stats in memory (kernel in chunks + xarray Dataset)",
            "points": best.points, "seconds": best.seconds,
            "points_per_s": best.points_per_second}


# --------------------------------------------------------------------------------------------
# targets, table, markdown

TARGETS = [
    # key, description, target text, value getter, predicate
    ("kernel_vs_numpy_reference", "kernel / NumPy reference (reference_grid)", ">= 10x",
     lambda f: f["reference_grid"]["kernel_speedup"], lambda v: v >= 10),
    ("write_bound_fraction", "kernel throughput / write bound (fill)", ">= 25%",
     lambda f: f["write_bound"]["kernel_fraction"], lambda v: v >= 0.25),
    ("kernel_vs_per_point_python", "kernel / per-point Python", ">= 10,000x",
     lambda f: f["per_point_python"]["kernel_speedup"], lambda v: v >= 10_000),
    ("warm_start", "warm start, process start to first result", "<= 2 s",
     lambda f: f["jit"]["warm_s"], lambda v: v <= 2.0),
    ("out_of_core_peak_rss", "out-of-core peak RSS (largest streamed grid)", "<= 2 GiB",
     lambda f: f["out_of_core"]["headline"]["peak_rss_bytes"], lambda v: v <= 2 * 2**30),
    ("out_of_core_slowdown", "in-memory rate / streamed rate (largest streamed grid)", "<= 2x",
     lambda f: f["out_of_core"]["headline"]["slowdown_vs_kernel"], lambda v: v <= 2.0),
    ("out_of_core_billion", "10^9 points streamed", "done",
     lambda f: f["out_of_core"]["headline"]["points"], lambda v: v >= 10**9),
]


def evaluate_targets(fig: dict) -> list[dict]:
    out = []
    for key, desc, target, get, ok in TARGETS:
        try:
            v = get(fig)
        except (KeyError, TypeError):
            out.append({"key": key, "description": desc, "target": target, "value": None,
                        "met": None})
            continue
        out.append({"key": key, "description": desc, "target": target, "value": v,
                    "met": bool(ok(v))})
    return out


def _si(x: float) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= div:
            return f"{x / div:,.1f} {unit}"
    return f"{x:,.0f} "


def _gib(x: float) -> str:
    return f"{x / 2**30:.2f} GiB"


def table_rows(res: dict) -> list[tuple[str, str, str, str]]:
    """(figure, value, target, met) rows for the console and markdown tables."""
    f = res["figures"]
    tg = {t["key"]: t for t in res.get("targets", [])}

    def met(key):
        t = tg.get(key)
        if t is None or t["met"] is None:
            return ""
        return "yes" if t["met"] else "**no**"

    k = f["kernel"]
    rows = [(f"kernel throughput, {k['points']:,}-point benchmark grid, all {k['metrics']} metrics, warm "
             f"({k['threads']} threads)", f"{_si(k['points_per_s'])}points/s", "", "")]
    if "reference_grid" in f:
        r = f["reference_grid"]
        rows.append(("NumPy/Python reference (`reference_grid`, "
                     f"{r['points']:,} points)", f"{_si(r['points_per_s'])}points/s", "", ""))
        rows.append(("kernel / reference", f"{r['kernel_speedup']:,.0f}x", ">= 10x",
                     met("kernel_vs_numpy_reference")))
    w = f["write_bound"]
    rows.append((f"write bound: `fill` of the same ({k['metrics']}, n) float32 array",
                 f"{_si(w['points_per_s'])}points/s ({w['bytes_per_s'] / 1e9:.1f} GB/s)", "", ""))
    rows.append(("kernel / write bound", f"{100 * w['kernel_fraction']:.1f}%", ">= 25%",
                 met("write_bound_fraction")))
    if "per_point_python" in f:
        p = f["per_point_python"]
        rows.append(("per-point Python (`reference_point` per configuration)",
                     f"{_si(p['points_per_s'])}points/s ({p['us_per_point']:.1f} us/point)",
                     "", ""))
        rows.append(("kernel / per-point Python", f"{p['kernel_speedup']:,.0f}x", ">= 10,000x",
                     met("kernel_vs_per_point_python")))
    if "jit" in f:
        j = f["jit"]
        rows.append(("JIT cold start (empty cache; process start to first result)",
                     f"{j['cold_s']:.1f} s", "", ""))
        rows.append(("JIT warm start (cached)", f"{j['warm_s']:.2f} s", "<= 2 s",
                     met("warm_start")))
    for r in f.get("scaling", {}).get("by_size", []):
        rows.append((f"scaling: {r['points']:,} points (output_len 256)",
                     f"{_si(r['points_per_s'])}points/s", "flat", ""))
    for r in f.get("scaling", {}).get("threads", {}).get("rows", []):
        rows.append((f"threads: {r['threads']} (benchmark grid)", f"{_si(r['points_per_s'])}points/s "
                     f"({r['speedup']:.2f}x)", "", ""))
    oc = f.get("out_of_core", {})
    for r in oc.get("runs", []):
        how = f"{r['format']}" + (f", {r['scheduler']}" if r.get("scheduler") else "")
        rows.append((f"streamed {r['points']:,} points to disk ({how}, max_memory "
                     f"{r['max_memory']}, {r['chunks']} chunks)",
                     f"{r['run_s']:.1f} s, {_si(r['points_per_s'])}points/s, peak RSS "
                     f"{_gib(r['peak_rss_bytes'])}, {r['bytes_on_disk'] / 1e9:.1f} GB on disk",
                     "", ""))
    h = oc.get("headline")
    if h:
        rows.append((f"out-of-core peak RSS ({h['points']:,} points)",
                     _gib(h["peak_rss_bytes"]), "<= 2 GiB", met("out_of_core_peak_rss")))
        rows.append((f"in-memory kernel rate ({h['in_memory_grid_points']:,} points, "
                     f"{_si(h['in_memory_points_per_s'])}points/s) / streamed rate",
                     f"{h['slowdown_vs_kernel']:.1f}x", "<= 2x", met("out_of_core_slowdown")))
        rows.append(("10^9 points streamed", "yes" if h["points"] >= 10**9 else
                     f"no ({h['points']:,} measured)", "done", met("out_of_core_billion")))
    return rows


def print_table(res: dict) -> None:
    rows = table_rows(res)
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    print(f"{'figure':<{w0}}  {'value':<{w1}}  {'target':<10}  met")
    print("-" * (w0 + w1 + 20))
    for a, b, c, d in rows:
        print(f"{a:<{w0}}  {b:<{w1}}  {c:<10}  {d.replace('**', '')}")


def markdown(res: dict) -> str:
    m = res["machine"]
    lines = [
        f"Measured {res['generated_utc']} with `benchmarks/run_benchmarks.py"
        f"{' --quick' if res.get('quick') else ''}` on {m['cpu_count']} x {m['cpu_model']}, "
        f"numba {m['numba']} ({m['numba_threads']} threads, {m['numba_threading_layer']} layer), "
        f"load average {m['load_average_start'][0]:.1f} at start / "
        f"{m.get('load_average_end', [float('nan')])[0]:.1f} at end "
        "(a shared machine: absolute rates vary, ratios are measured in the same run).",
        "",
        "| figure | value | target | met |",
        "|---|---|---|---|",
    ]
    for a, b, c, d in table_rows(res):
        lines.append(f"| {a} | {b} | {c} | {d} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="small and fast: no 10^8/10^9 grids, fewer repetitions")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--billion", dest="billion", action="store_true", default=None,
                   help="stream the 10^9-point grid (default: only if time and disk allow)")
    g.add_argument("--no-billion", dest="billion", action="store_false")
    ap.add_argument("--skip-jit", action="store_true", help="skip the cold/warm start runs")
    ap.add_argument("--json", type=Path, default=RESULTS, help=f"output (default {RESULTS})")
    ap.add_argument("--tmpdir", type=Path, default=None,
                    help="where streamed results are written (and deleted); default: system temp")
    ap.add_argument("--markdown", action="store_true",
                    help="print the markdown table of the JSON results (no measurement)")
    args = ap.parse_args(argv)

    if args.markdown:
        print(markdown(json.loads(args.json.read_text())))
        return 0

    t_start = time.perf_counter()
    reps = 3 if args.quick else 5
    res: dict = {"generated_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
                 "quick": args.quick, "machine": machine_info(), "figures": {}}
    fig = res["figures"]

    _log("1/3. kernel throughput, write bound, threads ...")
    kernel, write, threads, out, gr = bench_kernel(reps)
    res["machine"]["numba_threading_layer"] = _threading_layer()
    fig["kernel"], fig["write_bound"] = kernel, write
    _log(f"  kernel {kernel['points_per_s'] / 1e6:,.1f} M points/s, fill "
         f"{write['points_per_s'] / 1e6:,.1f} M points/s")

    _log("2/4. plain-Python reference ...")
    fig["reference_grid"], fig["per_point_python"] = bench_reference(
        gr, out, 2_000 if args.quick else 12_000, 1_000 if args.quick else 5_000,
        kernel["points_per_s"])
    del out

    _log("6. scaling ...")
    sizes = ["1e4", "1e5", "1e6", "1e7"] + ([] if args.quick else ["1e8"])
    fig["scaling"] = {"by_size": bench_scaling(sizes, reps), "threads": threads}

    _log("in-memory run ...")
    fig["in_memory_run"] = bench_in_memory_run(reps)

    if not args.skip_jit:
        _log("5. JIT cold/warm start ...")
        fig["jit"] = bench_jit()
        _log(f"  cold {fig['jit']['cold_s']:.1f} s, warm {fig['jit']['warm_s']:.2f} s")

    _log("7. out of core ...")
    work = Path(tempfile.mkdtemp(prefix="sweep-bench-", dir=args.tmpdir))
    runs = []
    oc = {"workdir_free_bytes_at_start": shutil.disk_usage(work).free, "runs": runs}
    try:
        base = "1e7" if args.quick else "1e8"
        runs.append(bench_stream("1e7", "netcdf", work))
        runs.append(bench_stream(base, "zarr", work))
        if not args.quick:
            runs.append(bench_stream(base, "zarr", work, scheduler="local:2"))
        _log("  " + "; ".join(f"{r['format']}{'/' + r['scheduler'] if r['scheduler'] else ''} "
                              f"{r['points']:,}: {r['points_per_s'] / 1e6:.1f} M points/s"
                              for r in runs))
        # the 10^9 case: zarr (the faster writer), if time and disk allow
        ref = runs[1]
        scale = SIZES["1e9"][0] * SIZES["1e9"][1] * 11250 / ref["points"]
        est_s = ref["process_wall_s"] * scale
        est_bytes = ref["bytes_on_disk"] * scale
        elapsed = time.perf_counter() - t_start
        free = shutil.disk_usage(work).free
        oc["billion_estimate"] = {"seconds": est_s, "bytes": est_bytes, "free_bytes": free,
                                  "elapsed_before_s": elapsed}
        do_billion = args.billion
        if do_billion is None:
            do_billion = (not args.quick and elapsed + est_s < TIME_BUDGET_S
                          and est_bytes * 1.5 < free)
        if do_billion and est_bytes * 1.2 > free:
            _log(f"  not enough disk for 10^9 points (~{est_bytes / 1e9:.0f} GB needed, "
                 f"{free / 1e9:.0f} GB free)")
            do_billion = False
        if do_billion:
            _log(f"  streaming 10^9 points (estimated {est_s:.0f} s, {est_bytes / 1e9:.0f} GB) ...")
            runs.append(bench_stream("1e9", "zarr", work))
        else:
            oc["billion_skipped"] = (
                f"10^9 not run: estimated {est_s:.0f} s and {est_bytes / 1e9:.0f} GB "
                f"({elapsed:.0f} s already used of the {TIME_BUDGET_S:.0f} s budget, "
                f"{free / 1e9:.0f} GB free); {ref['points']:,} points measured instead")
            _log("  " + oc["billion_skipped"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    serial = [r for r in runs if not r["scheduler"]]
    head = max(serial, key=lambda r: (r["points"], r["format"] == "zarr"))
    # in-memory reference: the kernel on the largest same-kind grid of the scaling runs
    mem = max(fig["scaling"]["by_size"], key=lambda r: r["points"])
    oc["headline"] = {"points": head["points"], "format": head["format"],
                      "peak_rss_bytes": head["peak_rss_bytes"],
                      "points_per_s": head["points_per_s"],
                      "in_memory_points_per_s": mem["points_per_s"],
                      "in_memory_grid_points": mem["points"],
                      "slowdown_vs_kernel": mem["points_per_s"] / head["points_per_s"],
                      "slowdown_vs_in_memory_run":
                          fig["in_memory_run"]["points_per_s"] / head["points_per_s"]}
    fig["out_of_core"] = oc

    res["machine"]["load_average_end"] = list(os.getloadavg())
    res["total_seconds"] = time.perf_counter() - t_start
    res["targets"] = evaluate_targets(fig)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(res, indent=1, default=float) + "\n")
    print_table(res)
    print(f"\n{sum(1 for t in res['targets'] if t['met'])}/{len(res['targets'])} targets met; "
          f"total {res['total_seconds']:.0f} s; wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
