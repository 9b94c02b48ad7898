"""Peak memory of a streamed ``sweep run`` against its ``--max-memory`` budget, per file format.

    PYTHONPATH=. python3 benchmarks/memory_budget.py                  # 1.0e8 points, 256 and 64 MiB
    PYTHONPATH=. python3 benchmarks/memory_budget.py --grid linear:20:20 --budgets 128MiB
    PYTHONPATH=. python3 benchmarks/memory_budget.py --markdown       # the table of memory.json

Each run is ``python -m sweep.cli run SPEC -o OUT --max-memory BUDGET --no-progress`` in a fresh
process, the whole command (plan, kernel, writes, publication and the post-run summary); its peak
resident set is the kernel's own account of the child, ``ru_maxrss`` from ``wait4``. The budget
bounds what a run allocates for its work; the interpreter with numpy, numba, xarray and the
netCDF/Zarr libraries loaded and the kernels mapped is the same for any grid, so it is measured
once per format as the same command on a one-point grid (the *baseline*) and the figure is

    (peak RSS - baseline) / budget        target <= 1.5 (issue 22)

Both the absolute peak and the baseline are in the table and in ``benchmarks/results/memory.json``.
Grids are those of ``benchmarks/_child.py`` (``linear:NB:NS``: the default grid's 20,160
device x model x precision x layout combinations x NB batch x NS context values).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "memory.json"
#: the large grid of run_benchmarks.py (1.0e8 points)
LARGE = "linear:80:62"
BUDGETS = ("256MiB", "64MiB")
FORMATS = ("netcdf", "zarr")
SUFFIX = {"netcdf": ".nc", "zarr": ".zarr"}
TARGET = 1.5
ONE_POINT = {"hardware": ["h100-sxm"], "model": ["llama-3.1-8b"], "batch": [1],
             "context": [1024], "precision": ["bf16"], "parallelism": ["tp1"]}


def parse_budget(text: str) -> int:
    """Bytes of a budget as ``sweep run --max-memory`` reads it (``256MiB``, ``1G``, ...)."""
    from sweep.execute.plan import parse_memory

    return parse_memory(text)


def measure(argv: list[str], env: dict[str, str], timeout: float = 3600.0) -> dict:
    """Run ``argv``; its exit code, wall time, output and peak RSS (``ru_maxrss`` of the child)."""
    with tempfile.TemporaryFile() as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        out = log.read().decode(errors="replace")
    return {"exit": proc.returncode, "wall_s": wall, "peak_rss_bytes": usage.ru_maxrss * 1024,
            "output": out[-3000:]}


def judge(peak: int, baseline: int, budget: int) -> dict:
    """The figure of one run: memory above the baseline over the budget, and the target met?"""
    above = peak - baseline
    ratio = above / budget
    return {"peak_rss_bytes": peak, "baseline_rss_bytes": baseline, "above_baseline_bytes": above,
            "budget_bytes": budget, "ratio": ratio, "met": ratio <= TARGET}


def _spec_file(directory: Path, name: str, spec: dict) -> Path:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _child import spec_toml

    path = directory / f"{name}.toml"
    path.write_text(spec_toml(spec))
    return path


def run(grid: str, budgets: list[str], formats: list[str], tmpdir: Path) -> dict:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _child import grid_spec

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH",
                                                                                  "")]))
    sizes = {text: parse_budget(text) for text in budgets}  # bad input fails before any run
    big = _spec_file(tmpdir, "grid", {"name": f"memory {grid}", **grid_spec(grid)})
    one = _spec_file(tmpdir, "one", ONE_POINT)
    rows = []
    for fmt in formats:
        out = tmpdir / f"out{SUFFIX[fmt]}"
        base = measure([sys.executable, "-m", "sweep.cli", "run", str(one), "-o", str(out),
                        "--no-progress"], env)
        _remove(out)
        if base["exit"] != 0:
            raise SystemExit(f"the one-point baseline run failed:\n{base['output']}")
        for text in budgets:
            r = measure([sys.executable, "-m", "sweep.cli", "run", str(big), "-o", str(out),
                         "--no-progress", "--max-memory", text], env)
            _remove(out)
            row = {"format": fmt, "budget": text, "exit": r["exit"], "wall_s": r["wall_s"],
                   **judge(r["peak_rss_bytes"], base["peak_rss_bytes"], sizes[text]),
                   "printed": r["output"]}
            rows.append(row)
            print(_line(row), flush=True)
    return {"generated_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "grid": grid, "target": f"(peak RSS - baseline) / budget <= {TARGET}",
            "load_average": os.getloadavg(), "cpu_count": os.cpu_count(), "runs": rows}


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _mib(x: float) -> str:
    return f"{x / 2**20:,.0f} MiB"


def _line(r: dict) -> str:
    return (f"{r['format']:7s} {r['budget']:>7s}: exit {r['exit']}, {r['wall_s']:.1f} s, peak "
            f"{_mib(r['peak_rss_bytes'])} (baseline {_mib(r['baseline_rss_bytes'])}), above "
            f"baseline {_mib(r['above_baseline_bytes'])} = {r['ratio']:.2f}x the budget "
            f"({'met' if r['met'] else 'NOT met'})")


def markdown(res: dict) -> str:
    lines = [f"grid `{res['grid']}`; target: {res['target']}", "",
             "| format | --max-memory | peak RSS | baseline (1 point) | above baseline / budget "
             "| wall time | target |", "|---|---|---:|---:|---:|---:|---|"]
    for r in res["runs"]:
        lines.append(f"| {r['format']} | {r['budget']} | {_mib(r['peak_rss_bytes'])} | "
                     f"{_mib(r['baseline_rss_bytes'])} | {r['ratio']:.2f}x | {r['wall_s']:.1f} s "
                     f"| {'met' if r['met'] else 'not met'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--grid", default=LARGE, help=f"grid of benchmarks/_child.py (default {LARGE})")
    p.add_argument("--budgets", default=",".join(BUDGETS), help="comma list of --max-memory values")
    p.add_argument("--formats", default=",".join(FORMATS), help="comma list: netcdf, zarr")
    p.add_argument("--tmpdir", default=None, help="where the results go (deleted afterwards)")
    p.add_argument("--json", default=str(RESULTS), help="where to write the figures")
    p.add_argument("--markdown", action="store_true", help="print the table of --json, no run")
    args = p.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(Path(args.json).read_text())))
        return 0
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    bad = [f for f in formats if f not in FORMATS]
    if bad:
        p.error(f"unknown formats {bad}: use {', '.join(FORMATS)}")
    budgets = [b.strip() for b in args.budgets.split(",") if b.strip()]
    with tempfile.TemporaryDirectory(dir=args.tmpdir, prefix="sweep-memory-") as d:
        res = run(args.grid, budgets, formats, Path(d))
    res["command"] = "memory_budget.py " + " ".join(argv if argv is not None else sys.argv[1:])
    Path(args.json).write_text(json.dumps(res, indent=1) + "\n")
    print(markdown(res))
    return 0 if all(r["met"] and r["exit"] == 0 for r in res["runs"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
