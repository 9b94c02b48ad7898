"""The continuous-batching steady state (kernels) against the discrete-event simulation of the
scheduler (tests/serving_sim.py) on random catalog points: the figures of docs/model.md section
13.3.

    python -m scripts.serving_check [--seed 7] [--draws 80] [--rows]

Draws hardware/model/layout combinations, engines and workloads as tests/test_serving.py does,
keeps the feasible ones, simulates each at the kernel's concurrency and prints the relative error
of TTFT, TPOT and throughput (median, 90th percentile, worst, share within 10% and 25%). Runs in
about 10 s after the kernels are compiled.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from kernels.params import MODE_CONTINUOUS
from tests.serving_sim import simulate
from tests.test_serving import COMBOS, ENGINES, JITTER, M, _df, _evaluate, _rows

CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)  # [requests]
PROMPTS = (128, 512, 1024, 2048, 4096, 8192)  # [token]
OUTPUTS = (16, 64, 256, 512)  # [token]


def compare(seed: int, draws: int) -> pd.DataFrame:
    """One row per feasible draw: the workload and the relative errors (model / DES - 1)."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(draws):
        w = {"combo": COMBOS[rng.integers(len(COMBOS))],
             "engine": ENGINES[rng.integers(len(ENGINES))],
             "batch": int(rng.choice(CONCURRENCY)), "context": int(rng.choice(PROMPTS)),
             "output_len": int(rng.choice(OUTPUTS)), "seed": int(rng.integers(1 << 16))}
        pt, out = _evaluate(_df(w), MODE_CONTINUOUS)
        if out[M["fits"], 0] != 1:
            continue
        hw, md, px, pr, ly = _rows(pt, 0)
        conc = int(min(w["batch"], out[M["max_concurrency"], 0]))
        sim = simulate(hw, md, px, pr, ly, conc, w["context"], w["output_len"], seed=w["seed"],
                       jitter=JITTER)
        requests = out[M["throughput"], 0] / ly["dp"] / w["output_len"]  # [1/s] per replica
        queue = (w["batch"] - conc) / requests  # [s] beyond the maximum concurrency, in both
        h, m, lay, p = w["combo"]
        rows.append({"hardware": h, "model": m, "parallelism": lay, "precision": p,
                     "engine": w["engine"], "concurrency": w["batch"], "context": w["context"],
                     "output_len": w["output_len"],
                     "ttft": out[M["ttft"], 0] / (sim.ttft + queue) - 1,
                     "tpot": out[M["tpot"], 0] / sim.tpot - 1,
                     "throughput": requests / sim.requests - 1})
    return pd.DataFrame(rows)


def summary(errors: pd.DataFrame) -> pd.DataFrame:
    out = {}
    for name in ("tpot", "throughput", "ttft"):
        a = errors[name].abs()
        out[name] = {"median": a.median(), "p90": a.quantile(0.9), "worst": a.max(),
                     "within_10pct": (a <= 0.10).mean(), "within_25pct": (a <= 0.25).mean()}
    return pd.DataFrame(out).T


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--draws", type=int, default=80)
    ap.add_argument("--rows", action="store_true", help="print every compared point too")
    args = ap.parse_args(argv)
    errors = compare(args.seed, args.draws)
    pd.set_option("display.width", 200)
    if args.rows:
        print(errors.to_string(float_format=lambda x: f"{x:+.3f}"))
    print(f"{len(errors)} feasible of {args.draws} draws (seed {args.seed}); relative error, "
          "model vs simulation:")
    print(summary(errors).to_string(float_format=lambda x: f"{x:.3f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
