"""Time per call of one configuration: ``sweep.evaluate_point`` against ``sweep.evaluate`` on a
one-row table (built in the call or beforehand), on a dict of one row's values, and per row of
larger tables, in one process (warm: kernels compiled, catalog
read; minimum of interleaved rounds, so load on the machine shows as a floor, not noise).

    python -m benchmarks.single_point [--rounds 5]
    PYTHONPATH=<other tree> python benchmarks/single_point.py   # the same on another tree

Prints a Markdown table (docs/performance.md quotes it). Wall time is measured here and never
asserted in a test.
"""

from __future__ import annotations

import argparse
import itertools
import time

import pandas as pd

import sweep

#: configurations cycled through, so the cache serves several combinations
POINTS = [{"hardware": h, "model": m, "precision": p, "parallelism": la, "batch": b,
           "context": s, "output_len": o}
          for (h, m, p, la), b, s, o in itertools.product(
              [("h100-sxm", "llama-3.1-8b", "bf16", "tp1"), ("a100-sxm-80g", "llama-3.1-70b",
                                                             "bf16", "tp8"),
               ("mi300x", "llama-3.3-70b", "fp8", "tp2"), ("b200", "mixtral-8x7b", "fp8", "tp1")],
              [1, 16, 256], [128, 2048, 8192], [256])]


def per_call(fn, calls: int) -> float:
    t0 = time.perf_counter()
    for i in range(calls):
        fn(POINTS[i % len(POINTS)])
    return (time.perf_counter() - t0) / calls


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    frames = {n: pd.DataFrame([POINTS[i % len(POINTS)] for i in range(n)])
              for n in (1_000, 100_000)}
    one_row = {id(p): pd.DataFrame([p]) for p in POINTS}  # built once: the call alone is timed
    paths = {
        "`sweep.evaluate`, one-row table per point, building the table in the call": (
            lambda p: sweep.evaluate(pd.DataFrame([p])), 200),
        "`sweep.evaluate`, a one-row table per point (built beforehand)": (
            lambda p: sweep.evaluate(one_row[id(p)]), 1_000),
        "`sweep.evaluate`, a dict of one row's values per point": (
            lambda p: sweep.evaluate(p), 1_000),
    }
    if hasattr(sweep, "evaluate_point"):  # absent from trees before issue 24 (--tree compares)
        paths["`sweep.evaluate_point`, one call per point"] = (
            lambda p: sweep.evaluate_point(**p), 2_000)
    for fn, _ in paths.values():  # warm: compile or load the kernels, fill the caches
        for p in POINTS:
            fn(p)
    sweep.evaluate(frames[1_000])
    best: dict[str, float] = {}
    for _ in range(args.rounds):
        for name, (fn, calls) in paths.items():
            best[name] = min(best.get(name, float("inf")), per_call(fn, calls))
        for n, df in frames.items():
            t0 = time.perf_counter()
            sweep.evaluate(df)
            name = f"`sweep.evaluate`, {n:,}-row table, per row"
            best[name] = min(best.get(name, float("inf")), (time.perf_counter() - t0) / n)
    print("| path | time per point |")
    print("|---|---|")
    for name, t in best.items():
        print(f"| {name} | {t * 1e6:,.1f} us |")


if __name__ == "__main__":
    main()
