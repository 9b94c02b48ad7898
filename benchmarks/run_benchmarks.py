"""accel-sweep performance benchmark: issue 15's figures, every one measured in the same session,
for this source tree ("after") and, with ``--before DIR``, for an earlier checkout ("before").

    PYTHONPATH=. python3 benchmarks/run_benchmarks.py --before /tmp/base   # before and after
    PYTHONPATH=. python3 benchmarks/run_benchmarks.py --quick --before /tmp/base   # ~6 min
    PYTHONPATH=. python3 benchmarks/run_benchmarks.py                      # this tree only
    PYTHONPATH=. python3 benchmarks/run_benchmarks.py --markdown           # table of latest.json

Every figure runs in fresh interpreters (``benchmarks/_child.py``), each tree with its own numba
cache; before and after alternate rep by rep so that both see the same load. Timings are the
minimum of ``--reps`` runs (3 by default, 1 with ``--quick``; cold starts 1 with ``--before``).
A figure a tree cannot produce is n/a (the reason is in the JSON). Prints a table and writes
``benchmarks/results/latest.json``. See benchmarks/README.md for what each figure means and
docs/performance.md for the numbers and what limits them.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = Path(__file__).resolve().parent / "_child.py"
RESULTS = ROOT / "benchmarks" / "results" / "latest.json"

#: grids (see _child.grid_spec): the kernel's benchmark grid (the default grid x 7 output lengths,
#: 1.7e7 points), the default grid (2.4e6), a 2.6e7-point grid for the end-to-end runs (the default
#: grid's 20,160 (device, model, precision, layout) combinations x 43 batch x 30 context values,
#: 2.3 GB in memory) and a 1.0e8-point grid (x 80 x 62) for the large streamed run (8.8 GB)
BENCH, DEFAULT, E2E, LARGE = "bench", "default", "linear:43:30", "linear:80:62"
#: the end-to-end grid of ``--quick`` (4.5e6 points)
E2E_QUICK = "linear:15:15"
WARM_SPEC = {"hardware": ["h100-sxm", "mi300x"], "model": ["llama-3.1-8b", "mixtral-8x7b"],
             "batch": [1, 8, 64], "context": [1024, 8192], "precision": ["bf16", "fp8"],
             "parallelism": ["tp1", "tp2-ep4"]}


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict:
    import numba
    import numpy

    try:
        import psutil

        mem = psutil.virtual_memory().total
    except ImportError:  # pragma: no cover
        mem = None
    return {"cpu_count": os.cpu_count(),
            "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else None,
            "cpu_model": _cpu_model(), "memory_bytes": mem, "platform": platform.platform(),
            "python": platform.python_version(), "numba": numba.__version__,
            "numpy": numpy.__version__, "load_average_start": list(os.getloadavg())}


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


class Tree:
    """A source tree to measure, with its own numba cache and working directory."""

    def __init__(self, label: str, root: Path, work: Path) -> None:
        self.label = label
        self.root = root.resolve()
        self.work = work / label
        self.work.mkdir(parents=True, exist_ok=True)
        self.cache = self.work / "numba-cache"

    def env(self, cache: Path | None = None) -> dict:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NUMBA_CACHE_DIR")}
        env["PYTHONPATH"] = str(self.root)
        env["NUMBA_CACHE_DIR"] = str(cache or self.cache)
        return env

    def run(self, argv: list[str], *, cache: Path | None = None, timeout: float = 1800.0
            ) -> dict:
        """Run ``python ARGV`` in a fresh interpreter; returns its last stdout line as JSON (when
        it is JSON), its stdout, the process wall time (start to exit) and the tree's peak RSS."""
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=self.env(cache),
                             cwd=str(self.work))
        mon = _RSSMonitor(p.pid)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            raise ChildFailed(f"{self.label}: {argv[:2]} timed out after {timeout} s") from None
        finally:
            peak = mon.stop()
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            raise ChildFailed(f"{self.label}: {' '.join(argv[:3])[:200]} failed ({p.returncode}): "
                              + (err.strip().splitlines() or ["?"])[-1][-500:])
        res: dict = {}
        last = out.strip().splitlines()[-1] if out.strip() else ""
        if last.startswith("{"):
            res = json.loads(last)
        res.update(process_wall_s=wall, tree_peak_rss_bytes=peak, stdout=out[-4000:],
                   stderr=err[-2000:], load_average=os.getloadavg())
        return res

    def child(self, task: str, cache: Path | None = None, timeout: float = 1800.0, **args
              ) -> dict:
        return self.run([str(CHILD), task, json.dumps(args)], cache=cache, timeout=timeout)

    def attempt(self, what, *a, **kw) -> dict:
        """``what(*a, **kw)`` (``self.run`` or ``self.child``), or ``{"error": ...}`` when this
        tree cannot produce the figure (an earlier API, a missing module): reported as n/a."""
        try:
            return what(*a, **kw)
        except ChildFailed as exc:
            _log(f"  n/a: {exc}")
            return {"error": str(exc)}


class ChildFailed(RuntimeError):
    """A measurement process failed (the figure is n/a for that tree)."""


def _fresh_cache(tree: Tree) -> Path:
    return Path(tempfile.mkdtemp(prefix="cold-cache-", dir=tree.work))


def _best(rows: list[dict], key: str) -> dict | None:
    """The row with the smallest ``key`` among those that have it (None: none has)."""
    ok = [r for r in rows if r.get(key) is not None]
    return min(ok, key=lambda r: r[key]) if ok else None


def _min(rows: list[dict], key: str) -> float | None:
    b = _best(rows, key)
    return None if b is None else b[key]


_WALL = re.compile(r"wall time\s*:\s*([0-9.]+) s")
_SUMMARY = re.compile(r"summary\s+([0-9.]+) s")


def _printed_wall(stdout: str) -> float | None:
    m = _WALL.search(stdout or "")
    return float(m.group(1)) if m else None


def _printed_summary(stdout: str) -> float | None:
    line = next((ln for ln in (stdout or "").splitlines() if ln.startswith("wall time")), "")
    m = _SUMMARY.search(line)
    return float(m.group(1)) if m else None


def _cli_row(r: dict) -> dict:
    if "error" in r:
        return r
    return {"process_wall_s": r["process_wall_s"], "printed_wall_s": _printed_wall(r["stdout"]),
            "printed_summary_s": _printed_summary(r["stdout"]), "stdout": r["stdout"],
            "stderr": r["stderr"][-600:], "load_average": r["load_average"]}


def _show(r: dict) -> str:
    if "process_wall_s" in r:
        return f"{r['process_wall_s']:.1f} s"
    return "not run (--quick)" if "note" in r else "n/a"


def _retire(cache: Path, into: Path | None) -> None:
    """Remove a cold-start cache, after merging it into ``into`` (the tree's own cache, so that
    warming it does not compile again; the same tree compiles the same entries)."""
    if into is not None:
        shutil.copytree(cache, into, dirs_exist_ok=True)
    shutil.rmtree(cache, ignore_errors=True)


# ------------------------------------------------------------------------------ figures
START_KEYS = ("cold_run", "install", "installed_run", "evaluate_cold", "warm_run", "warm_start",
              "evaluate_warm")


def fig_start(trees: list[Tree], reps: int, cold_reps: int, build: bool = True) -> dict:
    """Cold `sweep run` of the default grid, two ways: (a) an empty numba cache (an editable or
    development checkout: the kernels compile), (b) after install (a cache built beforehand by
    ``python -m kernels`` in a separate process into the same ``NUMBA_CACHE_DIR``, as
    ``pip install .`` does); the first ``sweep.evaluate`` (empty cache); then on each tree's own
    warm cache: `sweep run` again (printed vs real wall time), the warm start (small grid) and
    ``sweep.evaluate`` again; the compiled variants per entry point.

    ``build=False`` (``--quick``): the cache of (b) is the union of the caches the cold run and
    the cold ``sweep.evaluate`` built (the same entries ``python -m kernels`` compiles, one
    signature each), so the build is not run and timed a second time."""
    res: dict = {t.label: {k: [] for k in START_KEYS} for t in trees}
    out_name = "sweep-default.nc"
    cli = ["-m", "sweep.cli", "run", "-o", out_name, "--no-progress", "--overwrite"]
    for rep in range(cold_reps):
        for t in trees:
            r = res[t.label]
            keep = rep == cold_reps - 1  # the last rep's caches become the tree's own cache
            cache_run = _fresh_cache(t)
            r["cold_run"].append(_cli_row(t.attempt(t.run, cli, cache=cache_run)))
            _log(f"  {t.label}: cold `sweep run` (empty cache) {_show(r['cold_run'][-1])}")
            cache_eval = _fresh_cache(t)
            r["evaluate_cold"].append(t.attempt(t.child, "evaluate", cache=cache_eval))
            _log(f"  {t.label}: first sweep.evaluate (empty cache) {_show(r['evaluate_cold'][-1])}")
            cache = _fresh_cache(t)
            # (the file is checked first: the venv's editable install could supply another
            # tree's kernels/__main__.py)
            if not (t.root / "kernels" / "__main__.py").exists():
                b = {"error": "no install-time build step (`python -m kernels`) in this tree"}
            elif build:
                b = t.attempt(t.run, ["-m", "kernels"], cache=cache)
            else:
                for part in (cache_run, cache_eval):
                    shutil.copytree(part, cache, dirs_exist_ok=True)
                b = {"note": "--quick: the install build not run; its cache assembled from the "
                             "cold run's and the cold evaluate's caches"}
            r["install"].append({k: b[k] for k in ("process_wall_s", "stdout", "error", "note")
                                 if k in b})
            if "error" in b:
                r["installed_run"].append({"error": b["error"]})
            else:
                r["installed_run"].append(_cli_row(t.attempt(t.run, cli, cache=cache)))
            _log(f"  {t.label}: install build {_show(b)}, then `sweep run` "
                 f"{_show(r['installed_run'][-1])}")
            for c in (cache_run, cache_eval, cache):
                _retire(c, t.cache if keep else None)
    for t in trees:  # the trees' own caches, warm from here on; the variants counted once
        t.attempt(t.run, cli)
        res[t.label]["variants"] = v = t.attempt(t.child, "evaluate", variants=True)
        _log(f"  {t.label}: compiled variants {v.get('variants', 'n/a')}")
    for _ in range(reps):
        for t in trees:
            r = res[t.label]
            r["warm_run"].append(_cli_row(t.attempt(t.run, cli)))
            r["warm_start"].append(t.attempt(t.child, "warm", spec=WARM_SPEC))
            r["evaluate_warm"].append(t.attempt(t.child, "evaluate"))
    for t in trees:
        with contextlib.suppress(OSError):
            (t.work / out_name).unlink()
    return res


def fig_kernel(trees: list[Tree], reps: int, grids: tuple[str, ...]) -> dict:
    res: dict = {t.label: {} for t in trees}
    for g in grids:
        for t in trees:
            r = res[t.label][g] = t.attempt(t.child, "kernel", grid=g, reps=reps)
            if "rows" in r:
                _log(f"  kernel {t.label} {g}: " + ", ".join(
                    f"{row['threads']}t {row['points_per_s'] / 1e6:.1f}" for row in r["rows"])
                    + f" M points/s ({r.get('mode', 'static')})")
    return res


def fig_inmem(trees: list[Tree], reps: int, grid: str) -> dict:
    res: dict = {t.label: [] for t in trees}
    for _ in range(reps):
        for t in trees:
            res[t.label].append(t.attempt(t.child, "inmem", grid=grid))
    return res


def fig_stream(trees: list[Tree], reps: int, grid: str, fmts=("zarr", "netcdf")) -> dict:
    res: dict = {t.label: {f: [] for f in fmts} for t in trees}
    for _ in range(reps):
        for fmt in fmts:
            for t in trees:
                path = t.work / f"stream{'.zarr' if fmt == 'zarr' else '.nc'}"
                try:
                    r = t.attempt(t.child, "stream", grid=grid, path=str(path), fmt=fmt)
                    r["bytes_on_disk"] = _du(path)
                finally:
                    _rm(path)
                res[t.label][fmt].append(r)
    return res


def fig_large(trees: list[Tree], grid: str) -> dict:
    """The CLI on the large grid, streamed to Zarr within 512 MiB: ``sweep run SPEC -o X.zarr
    --max-memory 512MiB`` as ``python -m sweep.cli`` runs it (``_child.py cli``), the post-run
    summary timed inside the process, the printed wall time against the real process time."""
    res = {}
    for t in trees:
        path = t.work / "large.zarr"
        try:
            r = t.attempt(t.child, "cli", grid=grid, spec_path=str(t.work / "large.toml"),
                          argv=["run", "-o", str(path), "--max-memory", "512MiB", "--no-progress",
                                "--overwrite"],
                          argv0=str(t.root / "sweep" / "cli" / "__main__.py"))
            r["bytes_on_disk"] = _du(path)
        finally:
            _rm(path)
        if "error" not in r:
            r["printed_wall_s"] = _printed_wall(r["printed"])
            r["printed_summary_s"] = _printed_summary(r["printed"])
            if r["printed_summary_s"] is not None:
                # since issue 22 the summary is mostly computed during the run, from the chunks;
                # the printed figure counts that too (an earlier CLI printed none, or the same
                # post-run time the wrapper measures)
                r["report_s"] = r["summary_s"]
                r["summary_s"] = max(r["printed_summary_s"], r["summary_s"] or 0.0)
            m = re.search(r"points\s*:\s*([0-9,]+)", r["printed"])
            r["points"] = int(m.group(1).replace(",", "")) if m else None
            r["summary_fraction"] = (r["summary_s"] / r["process_wall_s"]
                                     if r.get("summary_s") is not None else None)
            r["points_per_s"] = r["points"] / r["process_wall_s"] if r["points"] else None
            _log(f"  large {t.label}: {r['process_wall_s']:.1f} s, summary "
                 f"{r['summary_s'] if r['summary_s'] is None else round(r['summary_s'], 2)} s")
        res[t.label] = r
    return res


def _du(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def _rm(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists():
        path.unlink()


# ------------------------------------------------------------------------------ summary
def _ok(rows: list[dict]) -> list[dict]:
    return [r for r in rows if "error" not in r]


def _thread_rates(kernel_fig: dict) -> dict[str, float]:
    """{threads: points/s}, keyed by strings (as the JSON keeps them)."""
    return {str(row["threads"]): row["points_per_s"] for row in kernel_fig.get("rows", [])}


def summarise(fig: dict, labels: list[str]) -> dict:
    """Per tree: the headline figures (min of the times over reps; rates from the best rep)."""
    out = {}
    for lab in labels:
        s: dict = {}
        st = fig.get("start", {}).get(lab)
        if st:
            s["cold_run_s"] = _min(st["cold_run"], "process_wall_s")
            s["installed_run_s"] = _min(st["installed_run"], "process_wall_s")
            s["install_build_s"] = _min(st["install"], "process_wall_s")
            best = _best(st["warm_run"], "process_wall_s")
            if best:
                s["warm_run_s"] = best["process_wall_s"]
                s["warm_run_printed_s"] = best["printed_wall_s"]
                if best["printed_wall_s"]:
                    s["printed_over_real"] = best["printed_wall_s"] / best["process_wall_s"]
                    s["unprinted_s"] = best["process_wall_s"] - best["printed_wall_s"]
            s["warm_start_s"] = _min(st["warm_start"], "process_wall_s")
            s["evaluate_cold_s"] = _min(st["evaluate_cold"], "process_wall_s")
            s["evaluate_warm_s"] = _min(st["evaluate_warm"], "process_wall_s")
            v = st.get("variants", {})
            if v.get("variants"):
                s["variants"] = v["variants"]
                s["max_variants"] = max(v["variants"].values())
        for g, r in fig.get("kernel", {}).get(lab, {}).items():
            if "rows" in r:
                s[f"kernel_{g}"] = _thread_rates(r)
                s[f"kernel_mode_{g}"] = r.get("mode", "static")
                if "static" in r.get("rows_by_mode", {}):
                    s[f"kernel_{g}_static"] = _thread_rates({"rows": r["rows_by_mode"]["static"]})
                s[f"fill_{g}"] = r["fill_points_per_s"]
                s[f"points_{g}"] = r["points"]
        im = _ok(fig.get("inmem", {}).get(lab, []))
        if im:
            best = _best(im, "run_s")
            s["inmem"] = {"points": best["points"], "points_per_s": best["points_per_s"],
                          "kernel_points_per_s": max(r["kernel_points_per_s"] for r in im),
                          "rss_over_output": min(r["rss_over_output"] for r in im),
                          "peak_rss_bytes": min(r["peak_rss_bytes"] for r in im),
                          "output_bytes": best["output_bytes"]}
            s["inmem"]["fraction_of_kernel"] = (s["inmem"]["points_per_s"]
                                                / s["inmem"]["kernel_points_per_s"])
        for fmt, rows in fig.get("stream", {}).get(lab, {}).items():
            rows = _ok(rows)
            if not rows:
                continue
            best = _best(rows, "run_s")
            d = s[f"stream_{fmt}"] = {
                "points": best["points"], "points_per_s": best["points_per_s"],
                "run_s": best["run_s"], "chunks": best["chunks"],
                "summary_s": _min(rows, "summary_s"),
                "summary_fraction": _min(rows, "summary_fraction"),
                "peak_rss_bytes": best["self_peak_rss_bytes"],
                "bytes_on_disk": best["bytes_on_disk"], "phases": best.get("phases", {})}
            if "inmem" in s:
                d["fraction_of_inmem"] = best["points_per_s"] / s["inmem"]["points_per_s"]
        lg = fig.get("large", {}).get(lab)
        if lg and "error" not in lg:
            s["large"] = {k: lg.get(k) for k in (
                "points", "process_wall_s", "printed_wall_s", "printed_summary_s", "summary_s",
                "summary_fraction", "points_per_s", "self_peak_rss_bytes", "bytes_on_disk")}
            if lg.get("printed_wall_s"):
                s["large"]["printed_over_real"] = lg["printed_wall_s"] / lg["process_wall_s"]
        out[lab] = s
    return out


def _bound_rates(res: dict) -> dict | None:
    """Arithmetic and write bounds (one thread, points/s) and the kernel (one thread) against
    both, on the benchmark grid (the tree measured last)."""
    b = res["figures"].get("bounds")
    s = res["summary"].get(res["labels"][-1], {})
    if not b or "bound" not in b:
        return None
    arith = 1.0 / b["bound"]["seconds_per_point"]
    k1 = s.get(f"kernel_{BENCH}", {}).get("1")
    fill = s.get(f"fill_{BENCH}")
    return {"arith_points_per_s": arith, "fill_points_per_s": fill, "kernel_1t_points_per_s": k1,
            "kernel_vs_arith": k1 / arith if k1 else None,
            "kernel_vs_write": k1 / fill if k1 and fill else None,
            "dominant": b["bound"].get("dominant", []),
            "bit_identical": b["counts"].get("mismatching_combos") == 0}


TARGETS = [
    # key, description, target, getter(summary of a tree), predicate
    ("summary_fraction", f"post-run summary / run wall time, large grid ({LARGE}) to Zarr (CLI)",
     "<= 10%", lambda s: s["large"]["summary_fraction"], lambda v: v <= 0.10),
    ("summary_fraction_e2e", "post-run summary / run, end-to-end grid streamed to Zarr",
     "(<= 10%)", lambda s: s["stream_zarr"]["summary_fraction"], lambda v: v <= 0.10),
    ("printed_wall", "printed wall time / real process time, warm `sweep run` (default grid)",
     "~1 (real)", lambda s: s["printed_over_real"], lambda v: 0.9 <= v <= 1.02),
    ("unprinted", "  real - printed wall time, warm `sweep run` (start-up before / exit after the "
     "report)", "", lambda s: s["unprinted_s"], lambda v: True),
    ("printed_wall_large", "printed wall time / real process time, large grid (CLI)",
     "~1 (real)", lambda s: s["large"]["printed_over_real"], lambda v: 0.9 <= v <= 1.02),
    ("cold_run", "cold first `sweep run`, default grid, editable/dev checkout (empty cache: "
     "compiles)", "<= 5 s", lambda s: s["cold_run_s"], lambda v: v <= 5.0),
    ("installed_run", "cold first `sweep run`, default grid, after install (cache built by "
     "`python -m kernels`)", "<= 5 s", lambda s: s["installed_run_s"], lambda v: v <= 5.0),
    ("install_build", "  the install-time build (`python -m kernels`, empty cache; not run with "
     "--quick)", "",
     lambda s: s["install_build_s"], lambda v: True),
    ("evaluate_cold", "first `sweep.evaluate()` (12 rows, one 'max'; empty cache, fresh process)",
     "<= 20 s", lambda s: s["evaluate_cold_s"], lambda v: v <= 20.0),
    ("warm_start", "warm start: process start to exit, 96-point `sweep.run`", "<= 1.5 s",
     lambda s: s["warm_start_s"], lambda v: v <= 1.5),
    ("variants", "compiled variants per entry point (most of any numba dispatcher)", "1",
     lambda s: s["max_variants"], lambda v: v <= 1),
    ("inmem_fraction", "in-memory `sweep.run` rate / kernel rate (same grid, same process)",
     ">= 80%", lambda s: s["inmem"]["fraction_of_kernel"], lambda v: v >= 0.80),
    ("inmem_rss", "in-memory peak RSS (VmHWM) / Dataset size", "<= 1.3x",
     lambda s: s["inmem"]["rss_over_output"], lambda v: v <= 1.3),
    ("zarr_fraction", "streamed to Zarr (512 MiB) rate / in-memory rate", ">= 50%",
     lambda s: s["stream_zarr"]["fraction_of_inmem"], lambda v: v >= 0.50),
    ("netcdf_fraction", "streamed to netCDF (512 MiB, default zlib) rate / in-memory rate",
     "as close as zlib allows", lambda s: s["stream_netcdf"]["fraction_of_inmem"],
     lambda v: True),
]
_NO_VERDICT = ("install_build", "netcdf_fraction", "unprinted")


def evaluate_targets(summary: dict) -> list[dict]:
    rows = []
    for key, desc, target, get, ok in TARGETS:
        row = {"key": key, "description": desc, "target": target}
        for lab, s in summary.items():
            try:
                v = get(s)
            except (KeyError, TypeError, ZeroDivisionError):
                v = None
            row[lab] = v
            row[f"{lab}_met"] = None if v is None or key in _NO_VERDICT else bool(ok(v))
        rows.append(row)
    return rows


_PERCENT = ("summary_fraction", "summary_fraction_e2e", "inmem_fraction", "zarr_fraction",
            "netcdf_fraction")


def _fmt(key: str, v) -> str:
    if v is None:
        return "n/a"
    if key in _PERCENT:
        return f"{100 * v:.1f}%" if v < 0.1 else f"{100 * v:.0f}%"
    if key.startswith("printed_wall"):
        return f"{v:.2f}"
    if key == "inmem_rss":
        return f"{v:.2f}x"
    if key in ("variants",):
        return f"{v}"
    return f"{v:.2f} s" if v < 10 else f"{v:.1f} s"


def _si(x: float | None) -> str:
    if x is None:
        return "n/a"
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= div:
            return f"{x / div:,.1f} {unit}"
    return f"{x:,.0f} "


def _rate(x: float | None) -> str:
    return "n/a" if x is None else f"{_si(x)}points/s"


def _met(t: dict, labels: list[str]) -> str:
    """Met on the last tree measured (the "after" tree)."""
    met = t.get(f"{labels[-1]}_met")
    return "" if met is None else ("yes" if met else "**no**")


def table_rows(res: dict) -> list[tuple[str, ...]]:
    """(figure, value per tree..., target, met) rows of the console and markdown tables."""
    labels = res["labels"]
    summ = res["summary"]
    blank = [""] * (len(labels) - 1)
    rows = []
    for t in res["targets"]:
        rows.append((t["description"], *[_fmt(t["key"], t.get(lab)) for lab in labels],
                     t["target"], _met(t, labels)))

    def per(fn) -> list[str]:
        vals = []
        for lab in labels:
            try:
                vals.append(fn(summ.get(lab, {})))
            except (KeyError, TypeError, ZeroDivisionError):
                vals.append("n/a")
        return vals

    for g, name in ((BENCH, "benchmark grid (default x 7 output lengths)"),
                    (DEFAULT, "default grid")):
        for th in (1, 2):
            # the grid's own serving mode (continuous batching since issue 19; a tree before
            # it has static batches only), then static batches where the tree has both
            rows.append((f"kernel, {name}, {th} thread(s), output preallocated, the grid's mode",
                         *per(lambda s, g=g, th=th: f"{_rate(s[f'kernel_{g}'][str(th)])} "
                              f"({s.get(f'kernel_mode_{g}', 'static')})"), "", ""))
        for th in (1, 2):
            rows.append((f"kernel, {name}, {th} thread(s), output preallocated, static batches",
                         *per(lambda s, g=g, th=th: _rate(
                             s.get(f"kernel_{g}_static", s[f"kernel_{g}"]
                                   if s.get(f"kernel_mode_{g}", "static") == "static" else {})
                             [str(th)])), "", ""))
    b = _bound_rates(res)
    if b:
        def pct(x):
            return "n/a" if x is None else f"{100 * x:.0f}%"

        c = res["figures"]["bounds"]["counts"]["per_point"]
        trans = sum(c.get(k, 0.0) for k in ("sqrt", "exp", "log", "log1p", "pow"))
        rows.append((f"operations per point, counted ({res['figures']['bounds']['counts']['combos']}"
                     " random combinations, bit-identical to the kernel: "
                     f"{'yes' if b['bit_identical'] else '**no**'})", *blank,
                     f"{c.get('div', 0):.1f} div, {trans:.2f} sqrt/exp/log/pow, "
                     f"{c.get('mul', 0) + c.get('add', 0):.0f} mul/add, "
                     f"{c.get('minmax', 0):.1f} min/max, {c.get('store', 0):.1f} stores", "", ""))
        rows += [
            ("arithmetic bound, 1 thread (counted divisions, transcendentals, other flops and "
             "stores per point x their measured cost)", *blank, _rate(b["arith_points_per_s"]),
             "", ""),
            ("write bound, 1 thread (`fill` of the same (22, n) float32 output)", *blank,
             _rate(b["fill_points_per_s"]), "", ""),
            ("kernel (1 thread, benchmark grid) / arithmetic bound", *blank,
             pct(b["kernel_vs_arith"]), "reported", ""),
            ("kernel (1 thread, benchmark grid) / write bound", *blank, pct(b["kernel_vs_write"]),
             "reported", ""),
        ]
    for key, name in (("inmem", "in memory"), ("stream_zarr", "streamed to Zarr"),
                      ("stream_netcdf", "streamed to netCDF")):
        rows.append((f"`sweep.run` {name}, end-to-end grid",
                     *per(lambda s, key=key: f"{_rate(s[key]['points_per_s'])} "
                                             f"({s[key]['points']:,} points)"), "", ""))
    rows.append(("in-memory peak RSS / Dataset size",
                 *per(lambda s: f"{s['inmem']['peak_rss_bytes'] / 2**30:.2f} / "
                                f"{s['inmem']['output_bytes'] / 2**30:.2f} GiB"), "", ""))
    rows.append(("large grid: run, summary, peak RSS (CLI, Zarr, 512 MiB)",
                 *per(lambda s: f"{s['large']['process_wall_s']:.0f} s, "
                                f"{s['large']['summary_s']:.1f} s, "
                                f"{s['large']['self_peak_rss_bytes'] / 2**30:.2f} GiB "
                                f"({s['large']['points']:,} points)"), "", ""))
    cod = res["figures"].get("codecs", {})
    for r in cod.get("rows", []):
        rows.append((f"write the default grid's result ({cod['points']:,} points), {r['format']} "
                     f"{r['compression']}", *blank,
                     f"{r['write_s']:.1f} s ({_rate(r['points_per_s'])}), ratio {r['ratio']:.1f}",
                     "", ""))
    nco = res["figures"].get("ncoptions", {})
    for r in nco.get("rows", []):
        how = ("uncompressed" if r["compression"] == "none" else
               f"{r['compression']} level {r['level']}, shuffle {'on' if r['shuffle'] else 'off'}")
        rows.append((f"netCDF written directly, default grid: {how}, chunks of "
                     f"{r['chunk_elements']:,} values", *blank,
                     f"{r['write_s']:.1f} s ({_rate(r['points_per_s'])}), ratio {r['ratio']:.1f}",
                     "", ""))
    return rows


def markdown(res: dict) -> str:
    m = res["machine"]
    labels = res["labels"]
    head = ["figure", *labels, "target", "met"]
    trees = []
    if res.get("before_commit"):
        trees.append(f"before = {res['before_commit']}")
    if res.get("after_commit"):
        trees.append(f"after = {res['after_commit']}")
    skipped = f" Skipped: {', '.join(res['skipped'])}." if res.get("skipped") else ""
    lines = [
        f"Measured {res['generated_utc']} with `{res.get('command', 'run_benchmarks.py')}` on "
        f"{m['cpu_count']} x {m['cpu_model']}, numba {m['numba']}, load average "
        f"{m['load_average_start'][0]:.1f} at start / "
        f"{m.get('load_average_end', [float('nan')])[0]:.1f} at end (a shared machine: absolute "
        "figures vary; each figure in a fresh process, before and after alternating rep by rep, "
        f"minimum of {res.get('reps', 3)} rep(s), {res.get('cold_reps', 1)} for cold starts). "
        + ("; ".join(trees) + "." if trees else "") + skipped
        + f" Total {res.get('total_seconds', 0):.0f} s.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for row in table_rows(res):
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def print_table(res: dict) -> None:
    rows = table_rows(res)
    labels = res["labels"]
    head = ("figure", *labels, "target", "met")
    widths = [min(90, max(len(str(r[i])) for r in [head, *rows])) for i in range(len(head))]
    for r in [head, *rows]:
        print("  ".join(str(c).replace("**", "").ljust(w) for c, w in zip(r, widths)))


def _commit(root: Path) -> str | None:
    try:
        return subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        marker = root / ".commit"
        return marker.read_text().strip() if marker.exists() else None


SKIPPABLE = {
    "start": "cold/warm starts, first sweep.evaluate, compiled variants (the slowest part with "
             "--before: the earlier tree compiles for minutes)",
    "kernel": "kernel rates and the write bound",
    "bounds": "the arithmetic bound (opcount)",
    "reference": "the plain-Python reference rates",
    "inmem": "the in-memory end-to-end run",
    "stream": "the streamed end-to-end runs (Zarr, netCDF)",
    "large": "the 1e8-point streamed CLI run (several minutes per tree)",
    "codecs": "the compression presets and the netCDF shuffle/level/chunking settings",
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", type=Path, default=None,
                    help="an earlier checkout to measure too (e.g. `git archive 6417765`)")
    ap.add_argument("--before-commit", default=None, help="its commit, for the record")
    ap.add_argument("--after", type=Path, default=ROOT,
                    help="the tree measured as 'after' (default: this one)")
    ap.add_argument("--quick", action="store_true",
                    help=f"one rep, end-to-end grid {E2E_QUICK}, no large run (< 6 min with "
                         "--before)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cold-reps", type=int, default=None, help="reps of the cold starts "
                    "(default: 1 with --quick or --before, else --reps)")
    ap.add_argument("--skip", default="", help="comma list of: " + ", ".join(SKIPPABLE))
    ap.add_argument("--json", type=Path, default=RESULTS)
    ap.add_argument("--tmpdir", type=Path, default=None)
    ap.add_argument("--markdown", action="store_true",
                    help="print the markdown table of the JSON results (no measurement)")
    args = ap.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(args.json.read_text())))
        return 0
    skip = set(filter(None, args.skip.split(",")))
    if skip - set(SKIPPABLE):
        ap.error(f"--skip: unknown part(s) {', '.join(sorted(skip - set(SKIPPABLE)))}; use "
                 f"{', '.join(SKIPPABLE)}")
    if args.quick:
        skip.add("large")
    reps = 1 if args.quick else args.reps
    cold_reps = (args.cold_reps if args.cold_reps is not None
                 else 1 if (args.quick or args.before) else reps)
    t_start = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="sweep-bench-", dir=args.tmpdir))
    trees = []
    if args.before is not None:
        trees.append(Tree("before", args.before, work))
    after = Tree("after", args.after, work)
    trees.append(after)
    labels = [t.label for t in trees]
    e2e = E2E_QUICK if args.quick else E2E
    res: dict = {"generated_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
                 "quick": args.quick, "reps": reps, "cold_reps": cold_reps, "labels": labels,
                 "grids": {"bench": BENCH, "default": DEFAULT, "e2e": e2e, "large": LARGE},
                 "skipped": [f"{k} ({SKIPPABLE[k]})" for k in SKIPPABLE if k in skip],
                 "before_commit": args.before_commit or (_commit(args.before) if args.before
                                                         else None),
                 "after_commit": _commit(args.after), "machine": machine_info(), "figures": {}}
    fig = res["figures"]

    def save_partial() -> None:  # a killed or failed run still leaves what it measured
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**res, "partial": True}, indent=1, default=float) + "\n")

    try:
        if "start" not in skip:
            _log("JIT: cold `sweep run` (empty cache; after install), first sweep.evaluate, warm "
                 "runs ...")
            fig["start"] = fig_start(trees, reps, cold_reps, build=not args.quick)
            save_partial()
        else:  # warm the trees' caches for what follows
            for t in trees:
                t.attempt(t.child, "warm", spec=WARM_SPEC)
        if "kernel" not in skip:
            _log("kernel throughput ...")
            fig["kernel"] = fig_kernel(trees, 2 if args.quick else 5, (BENCH, DEFAULT))
            save_partial()
        if "bounds" not in skip:
            _log("arithmetic bound (after) ...")
            fig["bounds"] = after.attempt(after.child, "bounds", grid=BENCH, root=str(after.root),
                                          combos=100 if args.quick else 300)
            save_partial()
        if "reference" not in skip:
            _log("plain-Python reference (after) ...")
            fig["reference"] = after.attempt(after.child, "reference", grid=BENCH,
                                             n_grid=2000 if args.quick else 12000,
                                             n_points=1000 if args.quick else 5000)
            save_partial()
        if "inmem" not in skip:
            _log(f"in-memory runs ({e2e}) ...")
            fig["inmem"] = fig_inmem(trees, reps, e2e)
            save_partial()
        if "stream" not in skip:
            _log(f"streamed runs ({e2e}, 512 MiB) ...")
            fig["stream"] = fig_stream(trees, reps, e2e)
            save_partial()
        if "large" not in skip:
            _log(f"large streamed run ({LARGE}, Zarr, CLI) ...")
            fig["large"] = fig_large(trees, LARGE)
            save_partial()
        if "codecs" not in skip:
            _log("compression presets (after) ...")
            fig["codecs"] = after.attempt(after.child, "codecs", grid=DEFAULT, workdir=str(work),
                                          reps=reps)
            save_partial()
            _log("netCDF shuffle / level / chunking (after) ...")
            fig["ncoptions"] = after.attempt(after.child, "ncoptions", grid=DEFAULT,
                                             workdir=str(work), reps=1)
            save_partial()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    res["machine"]["load_average_end"] = list(os.getloadavg())
    res["total_seconds"] = time.perf_counter() - t_start
    res["summary"] = summarise(fig, labels)
    res["bounds"] = _bound_rates(res)
    res["targets"] = evaluate_targets(res["summary"])
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(res, indent=1, default=float) + "\n")
    print_table(res)
    print(f"\ntotal {res['total_seconds']:.0f} s; wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
