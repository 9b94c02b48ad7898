"""How much of a maximum-load row is the benchmark's protocol rather than the engine.

TensorRT-LLM's performance pages measure maximum load with ``trtllm-bench throughput``: a
fixed number of identical requests (input/output standard deviation 0) all queued at once, and
"Total Output Throughput" = output tokens over the whole run, ramp-up and drain included. The
model compares such rows with the steady state at the engine's maximum concurrency
(docs/model.md section 13.2), where prompts arrive spread over the decodes. This script runs the
offline simulator (``tests/serving_sim.py``, :func:`simulate_offline`) with the page's request
counts at the model's maximum concurrency and prints, per row, the offline run's throughput over
the steady state's: the part of the row the protocol explains (docs/validation.md, "TensorRT-LLM
at maximum load").

    python -m scripts.maxload_protocol [--hardware h100-sxm h200-sxm b200] [--model llama-3.3-70b]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from kernels.params import MODE_CONTINUOUS
from sweep.validate.measurements import read_measurements
from tests.serving_sim import simulate_offline
from tests.test_serving import M, _evaluate, _rows

#: requests per run of each (input, output) length: NVIDIA/TensorRT-LLM
#: docs/source/performance/perf-overview.md, "Preparing a Dataset" (the v1.0-era page)
NUM_REQUESTS = {(128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (1000, 2000): 1500,
                (2048, 128): 3000, (2048, 2048): 1500, (5000, 500): 1500, (1000, 1000): 3000,
                (500, 2000): 3000, (20000, 2000): 1000}
SOURCE = "trtllm_perf_overview_v1.0_throughput"


def rows(hardware: list[str], model: str) -> pd.DataFrame:
    df = read_measurements()
    keep = ((df["source_key"] == SOURCE) & df["usable"].astype(bool)
            & df["hardware"].isin(hardware) & (df["model"] == model)
            & (df["metric"] == "throughput"))
    return df[keep].sort_values(["hardware", "context", "output_len"]).reset_index(drop=True)


def one(row: pd.Series) -> dict:
    s, o = int(row["context"]), int(row["output_len"])
    df = pd.DataFrame([{k: row[k] for k in ("hardware", "model", "parallelism", "precision",
                                            "engine")} | {"batch": 10**6, "context": s,
                                                          "output_len": o}])
    pt, out = _evaluate(df, MODE_CONTINUOUS)
    hw, md, px, pr, ly = _rows(pt, 0)
    conc = int(out[M["max_concurrency"], 0])
    steady = float(out[M["throughput"], 0])
    run = simulate_offline(hw, md, px, pr, ly, NUM_REQUESTS[(s, o)], s, o, conc=conc)
    offline = run.tokens_per_s * ly["dp"]
    return {"hardware": row["hardware"], "layout": row["parallelism"],
            "precision": row["precision"], "ISL/OSL": f"{s}/{o}",
            "requests": NUM_REQUESTS[(s, o)], "concurrency": conc,
            "measured": float(row["value"]), "steady state": steady,
            "offline run": offline, "offline / steady": offline / steady}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hardware", nargs="+", default=["h100-sxm", "h200-sxm", "b200"])
    ap.add_argument("--model", default="llama-3.3-70b")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    table = pd.DataFrame([one(r) for _, r in rows(args.hardware, args.model).iterrows()])
    ratio = table["offline / steady"].to_numpy()
    print(f"{args.model}, {SOURCE}, shipped calibration ({time.perf_counter() - t0:.0f} s)")
    print("| device | layout | precision | ISL/OSL | requests | concurrency | measured [tok/s] "
          "| steady state | offline run | offline / steady |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|")
    for _, r in table.iterrows():
        print(f"| {r['hardware']} | {r['layout']} | {r['precision']} | {r['ISL/OSL']} "
              f"| {r['requests']:,} | {r['concurrency']} | {r['measured']:,.0f} "
              f"| {r['steady state']:,.0f} | {r['offline run']:,.0f} "
              f"| {r['offline / steady']:.3f} |")
    print(f"offline / steady: median {np.median(ratio):.3f}, range {ratio.min():.3f} - "
          f"{ratio.max():.3f} over {len(ratio)} rows")


if __name__ == "__main__":
    main()
