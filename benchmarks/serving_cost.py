"""What continuous batching costs the grid kernel: issue 19's target "kernel cost of the serving
model <= 2x the per-point time" measured in one process, static and continuous batching
interleaved on the same grid (compilation excluded, output preallocated and touched).

    PYTHONPATH=<tree> python benchmarks/serving_cost.py [--grid bench|default] [--reps 3]
        [--threads 2] [--json]

``--grid bench`` is the kernel benchmark grid of ``run_benchmarks.py`` (the default grid x 7
output lengths, 1.7e7 points); ``default`` the built-in grid (2.4e6). Each round times static
then continuous (then a request-rate grid of the same size with ``--rate``); the figure of each
mode is its fastest round. Run it for two trees in turn (``PYTHONPATH=``) to compare them: the
machine is shared, so compare ratios taken in one run, not absolute rates across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _child import _gridrun, _kernel_args, _set_threads


def measure(grid: str, reps: int, threads: int, rate: bool) -> dict:
    from kernels import evaluate_grid
    from kernels.params import METRICS, MODE_CONTINUOUS, MODE_RATE, MODE_STATIC

    gr = _gridrun(grid)
    n = gr.spec.n_points
    out = np.empty((len(METRICS), n), dtype=np.float32)
    args = _kernel_args(gr, out)
    modes = {"static": MODE_STATIC, "continuous": MODE_CONTINUOUS}
    rate_args = None
    if rate:  # request rates of the same count as the batch axis: 0.1 - 100 req/s per layout
        rates = np.geomspace(0.1, 100.0, len(gr.batch))
        rate_args = (*args[:3], rates, *args[4:])
        modes["rate"] = MODE_RATE
    _set_threads(threads)
    for name, mode in modes.items():  # compile or load, touch every page
        evaluate_grid(*(rate_args if name == "rate" else args), mode=mode)
    best = {name: float("inf") for name in modes}
    for _ in range(reps):
        for name, mode in modes.items():
            a = rate_args if name == "rate" else args
            t0 = time.perf_counter()
            evaluate_grid(*a, mode=mode)
            best[name] = min(best[name], time.perf_counter() - t0)
    res = {"grid": grid, "points": n, "threads": threads, "reps": reps,
           "seconds": best, "points_per_s": {k: n / v for k, v in best.items()},
           "continuous_over_static": best["continuous"] / best["static"],
           "load_average": os.getloadavg()}
    if rate:
        res["rate_over_static"] = best["rate"] / best["static"]
    return res


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grid", default="bench", choices=["bench", "default"])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rate", action="store_true", help="also time a request-rate grid")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    res = measure(args.grid, args.reps, args.threads, args.rate)
    if args.json:
        print(json.dumps(res, indent=2))
        return
    print(f"{args.grid} grid, {res['points']:,} points, {args.threads} thread(s), best of "
          f"{args.reps} interleaved rounds, load average {res['load_average'][0]:.1f}")
    for name, s in res["seconds"].items():
        print(f"  {name:10s} {s:7.2f} s  {res['points_per_s'][name] / 1e6:6.2f} M points/s")
    print(f"  continuous / static per-point time: {res['continuous_over_static']:.2f}x")
    if args.rate:
        print(f"  request rate / static per-point time: {res['rate_over_static']:.2f}x")


if __name__ == "__main__":
    main()
