"""Fit the custom all-reduce's per-call time and bandwidth share to SGLang PR #2904's table.

``python -m scripts.collectives.fit_custom_allreduce`` fits, for each kernel of
``pr2904_allreduce.csv`` (the sgl-kernel all-reduce, which is TensorRT-LLM's, and vLLM's custom
all-reduce, both timed on H100 SXM at 2, 4 and 8 GPUs from 2 KiB to 4 MiB), the two engine
parameters ``custom_allreduce_overhead`` [s] and ``custom_allreduce_efficiency`` [1] by least
squares on ln(model / measured), where the model is the kernel's own all-reduce
(:func:`kernels.collectives.allreduce_time`, docs/model.md section 5) on the catalog's H100 with
the engine's one-shot/two-shot thresholds. It prints the fitted values, the median and largest
|relative error| and the table; the engine files (``grids/data/engines/{trtllm,sglang,vllm}.toml``)
carry the rounded values with this script named in their rule.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

from grids.engines import resolve
from grids.hardware import load_device
from kernels.params import HW_FIELDS
from sweep.execute.tables import platform_columns

DATA = Path(__file__).with_name("pr2904_allreduce.csv")
#: which engine's thresholds each measured kernel follows
KERNEL_ENGINE = {"sgl-kernel": "sglang", "vllm": "vllm"}


def read_table(path: Path = DATA) -> list[dict]:
    with path.open(newline="") as f:
        return [{"kernel": r["kernel"], "gpus": int(r["gpus"]), "bytes": float(r["bytes"]),
                 "time": float(r["time_us"]) * 1e-6} for r in csv.DictReader(f)]


def platform_row(engine: str, device: str = "h100-sxm", **override: float) -> np.ndarray:
    """The kernels' platform row of ``device`` under ``engine`` (files only, no calibration
    overlay), with ``override`` replacing fields."""
    cols = platform_columns(load_device(device), resolve(engine, load_device(device), {}), None,
                            8192)
    cols.update(override)
    return np.array([cols[f] for f in HW_FIELDS], dtype=np.float64)


def model_times(rows: list[dict], engine: str, overhead: float, efficiency: float) -> np.ndarray:
    from kernels.collectives import allreduce_time

    hw = platform_row(engine, custom_ar_overhead=overhead, custom_ar_efficiency=efficiency)
    return np.array([allreduce_time(hw, float(r["gpus"]), r["bytes"])[0] for r in rows])


def fit(kernel: str, rows: list[dict]) -> tuple[float, float, np.ndarray]:
    """(overhead [s], efficiency [1], relative errors) of one kernel's rows."""
    mine = [r for r in rows if r["kernel"] == kernel]
    measured = np.array([r["time"] for r in mine])
    engine = KERNEL_ENGINE[kernel]

    def residual(x: np.ndarray) -> np.ndarray:
        return np.log(model_times(mine, engine, x[0] * 1e-6, x[1]) / measured)

    res = least_squares(residual, [3.0, 0.7], bounds=([0.0, 0.05], [50.0, 1.0]))
    return res.x[0] * 1e-6, res.x[1], np.expm1(res.fun)


def main() -> int:
    rows = read_table()
    for kernel in KERNEL_ENGINE:
        overhead, eff, err = fit(kernel, rows)
        print(f"{kernel}: custom_allreduce_overhead {overhead * 1e6:.2f} us, "
              f"custom_allreduce_efficiency {eff:.3f}; |relative error| median "
              f"{np.median(np.abs(err)):.3f}, largest {np.max(np.abs(err)):.3f} over {len(err)} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
