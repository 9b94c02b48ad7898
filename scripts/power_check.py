"""The activity power model (docs/model.md section 9) against ML.ENERGY v3's measured board
powers: the check quoted in docs/model.md section 9.

    python -m scripts.power_check [--context 1024] [--output 512] [--rows]

Reads the ML.ENERGY rows of ``../shared/reference/power.csv`` (H100 SXM and B200, vLLM 0.11.1,
continuous batching in steady state, power per GPU from NVML), evaluates each catalog model at
the measured mean running batch as the concurrency (``batching = "continuous"``, the ``vllm``
engine, the row's layout and precision) and prints model / measured board power. The chat task's
prompt and output lengths are not in the rows: ``--context`` and ``--output`` set them (1024 and
512 tokens by default). Rows whose model, precision or layout the catalog lacks are skipped and
counted. Runs in a few seconds after the kernels are compiled.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np
import pandas as pd

from sweep.execute.points import evaluate

POWER_CSV = Path(__file__).resolve().parents[2] / "shared" / "reference" / "power.csv"
DEVICES = {"NVIDIA B200": "b200", "NVIDIA H100": "h100-sxm"}
MODELS = {"llama-3.1-8b-instruct": "llama-3.1-8b", "llama-3.1-70b-instruct": "llama-3.1-70b",
          "llama-3.1-405b-instruct-fp8": "llama-3.1-405b", "deepseek-v3.1": "deepseek-v3",
          "qwen3-235b-a22b-instruct-2507-fp8": "qwen3-235b-a22b", "qwen3-32b": "qwen3-32b",
          "gpt-oss-120b": "gpt-oss-120b"}
PRECISIONS = {"bfloat16": "bf16", "fp8": "fp8", "mxfp4": "fp4"}
CONDITION = re.compile(r"^(?P<model>\S+) (?P<dtype>\S+), (?P<gpus>\d+) GPU\(s\) TP(?P<tp>\d+)"
                       r"(?: EP(?P<ep>\d+))?, vLLM .*mean running batch (?P<batch>[\d.]+)\)")


def measured_rows(path: Path = POWER_CSV) -> pd.DataFrame:
    """The ML.ENERGY board-power rows: device, model, precision, layout, batch, watts."""
    raw = pd.read_csv(path)
    raw = raw[(raw["quantity"] == "gpu_power_per_device")
              & raw["source"].str.contains("ml-energy", na=False)]
    rows = []
    for _, r in raw.drop_duplicates(["device", "condition"]).iterrows():
        m = CONDITION.match(r["condition"])
        device = next((v for k, v in DEVICES.items() if r["device"].startswith(k)), None)
        if m is None or device is None:
            continue
        ep = int(m["ep"] or 1)
        layout = f"ep{ep}" if ep > 1 and int(m["tp"]) == 1 else f"tp{m['tp']}"
        rows.append({"device": device, "source_model": m["model"].split("/")[-1],
                     "model": MODELS.get(m["model"].split("/")[-1].lower()),
                     "precision": PRECISIONS.get(m["dtype"]), "parallelism": layout,
                     "batch": float(m["batch"]), "measured_w": float(r["value"])})
    return pd.DataFrame(rows)


def compare(context: int, output: int, path: Path = POWER_CSV) -> tuple[pd.DataFrame, int]:
    """Model / measured board power per ML.ENERGY row; the count of rows the catalog lacks."""
    rows = measured_rows(path)
    known = rows.dropna(subset=["model", "precision"]).reset_index(drop=True)
    pts = pd.DataFrame({"hardware": known["device"], "model": known["model"],
                        "precision": known["precision"], "parallelism": known["parallelism"],
                        "batch": np.round(known["batch"]).astype(int), "context": context,
                        "output_len": output, "engine": "vllm", "batching": "continuous"})
    res = evaluate(pts)
    devices = known["parallelism"].str.extract(r"(\d+)")[0].astype(float)
    known["model_w"] = res["power"].to_numpy() / devices.to_numpy()
    known["ratio"] = known["model_w"] / known["measured_w"]
    return known, len(rows) - len(known)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--context", type=int, default=1024, help="prompt tokens [default 1024]")
    ap.add_argument("--output", type=int, default=512, help="generated tokens [default 512]")
    ap.add_argument("--rows", action="store_true", help="print every row")
    args = ap.parse_args(argv)
    res, skipped = compare(args.context, args.output)
    ok = res.dropna(subset=["ratio"])
    if args.rows:
        print(res.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print(f"{len(ok)} rows evaluated ({len(res) - len(ok)} infeasible, {skipped} not in the "
          f"catalog); prompt {args.context}, output {args.output} tokens")
    for dev, g in ok.groupby("device"):
        print(f"{dev}: model / measured board power median {g.ratio.median():.2f}, "
              f"range {g.ratio.min():.2f}-{g.ratio.max():.2f}")
    print(f"all: median {ok.ratio.median():.2f}, within 15%: {(abs(ok.ratio - 1) <= 0.15).sum()}"
          f" of {len(ok)}")


if __name__ == "__main__":
    main()
