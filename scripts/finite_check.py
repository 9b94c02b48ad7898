"""Finite runs (``sweep.finite_run``, docs/model.md section 13.7) against the offline simulator
(tests/serving_sim.py ``simulate_offline``, each request with its own output length) on random
catalog points: the figures of section 13.7.

    python -m scripts.finite_check [--seed 7] [--draws 60] [--rows]

Draws hardware/model/layout combinations and engines as tests/test_serving.py does, a prompt,
a mean output, a cap on requests in flight, the spread of the output lengths (coefficient of
variation 0-1.5) and the data set's size (0.5-4 requests per slot); keeps the feasible ones,
simulates each with the lengths at the distribution's quantiles (shuffled) and prints the
ratio of the model's run throughput to the simulator's (median and worst error, share within
10%). Runs in about 15 s after the kernels are compiled.
"""

from __future__ import annotations

import argparse
import random

import pandas as pd

from kernels.params import MODE_CONTINUOUS
from sweep.execute.finite import finite_run
from tests.serving_sim import simulate_offline
from tests.test_finite_run import quantile_lengths
from tests.test_serving import COMBOS, ENGINES, M, _evaluate, _rows

PROMPTS = (128, 512, 1024)  # [token]
OUTPUTS = (64, 128, 256)  # [token]
CAPS = (16, 64, 256, "max")  # requests in flight per replica
SPREADS = (0.0, 0.5, 1.0, 1.5)  # coefficient of variation of the output lengths
PER_SLOT = (0.5, 1.0, 2.0, 4.0)  # requests of the data set per slot
MOST = 3000  # requests per replica simulated at most


def compare(seed: int, draws: int) -> pd.DataFrame:
    """One row per feasible draw: the workload, the model's run throughput, the simulator's
    and their ratio (all replicas)."""
    rng = random.Random(seed)
    rows = []
    for k in range(draws):
        (h, m, lay, p), e = rng.choice(COMBOS), rng.choice(ENGINES)
        s, o = rng.choice(PROMPTS), rng.choice(OUTPUTS)
        cap, cv, per = rng.choice(CAPS), rng.choice(SPREADS), rng.choice(PER_SLOT)
        row = {"hardware": h, "model": m, "parallelism": lay, "precision": p, "engine": e,
               "context": s, "output_len": o, "batch": cap}
        pt, out = _evaluate(pd.DataFrame([{**row, "batch": 10**6 if cap == "max" else cap}]),
                            MODE_CONTINUOUS)
        if out[M["fits"], 0] != 1:
            continue
        hw, md, px, pr, ly = _rows(pt, 0)
        conc = int(min(10**6 if cap == "max" else cap, out[M["max_concurrency"], 0]))
        n = max(2, int(conc * per))
        if n > MOST:
            continue
        dp = int(ly["dp"])
        got = finite_run(pd.DataFrame([{**row, "requests": n * dp, "output_cv": cv}]))
        sim = simulate_offline(hw, md, px, pr, ly, n, s, o, conc=conc,
                               outputs=quantile_lengths(o, cv, n, k))
        rows.append({**row, "concurrency": conc, "requests": n * dp, "output_cv": cv,
                     "model run": float(got["run_throughput"].iloc[0]),
                     "simulated run": sim.tokens_per_s * dp,
                     "steady state": float(got["steady_throughput"].iloc[0])})
    df = pd.DataFrame(rows)
    df["fluid/sim"] = df["model run"] / df["simulated run"]
    return df


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--draws", type=int, default=60)
    ap.add_argument("--rows", action="store_true", help="print every draw")
    args = ap.parse_args(argv)
    df = compare(args.seed, args.draws)
    if args.rows:
        print(df.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    err = (df["fluid/sim"] - 1.0).abs()
    print(f"{len(df)} feasible draws of {args.draws} (seed {args.seed}): model run / simulated "
          f"run, median error {err.median():.1%}, worst {err.max():.1%}, within 10% "
          f"{(err <= 0.10).mean():.0%}; steady state / simulated run: median "
          f"{(df['steady state'] / df['simulated run']).median():.2f}")
    for cv, g in df.groupby("output_cv"):
        e = (g["fluid/sim"] - 1.0).abs()
        print(f"  output_cv {cv}: {len(g)} draws, median error {e.median():.1%}, worst "
              f"{e.max():.1%}")


if __name__ == "__main__":
    main()
