"""The one registry of output variables: name, dtype, units, long_name and netCDF encoding.

Nothing is written without units: :func:`check_dataset` verifies a Dataset against this registry.
Every metric is defined over all the grid's dims (see ``grids.DIMS``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels.params import BOUND_INFEASIBLE, BOUND_MEANINGS, METRICS


@dataclass(frozen=True)
class Variable:
    name: str
    dtype: str
    units: str
    long_name: str
    direction: str  # "max" (higher is better), "min" (lower is better) or "none"
    description: str = ""

    def attrs(self) -> dict[str, object]:
        out: dict[str, object] = {"units": self.units, "long_name": self.long_name}
        if self.description:
            out["description"] = self.description
        if self.name == "bound":
            out["flag_values"] = np.array([BOUND_INFEASIBLE, *range(len(BOUND_MEANINGS))],
                                          dtype=np.int8)
            out["flag_meanings"] = " ".join(("infeasible", *BOUND_MEANINGS))
        if self.name == "fits":
            out["flag_values"] = np.array([0, 1], dtype=np.int8)
            out["flag_meanings"] = "does_not_fit fits"
        out["better"] = self.direction
        return out

    def encoding(self, chunks: tuple[int, ...] | None = None) -> dict[str, object]:
        enc: dict[str, object] = {"zlib": True, "complevel": 1, "shuffle": True}
        if self.dtype == "int8":  # no fill value: every flag value is meaningful (-1 infeasible)
            enc["_FillValue"] = None
            enc["dtype"] = "int8"
        else:
            enc["_FillValue"] = np.float32(np.nan)
            enc["dtype"] = "float32"
        if chunks is not None:
            enc["chunksizes"] = chunks
        return enc


VARIABLES: dict[str, Variable] = {v.name: v for v in (
    Variable("ttft", "float32", "s", "time to first token (prefill of the batch)", "min"),
    Variable("tpot", "float32", "s", "time per output token (decode step at mean KV length)",
             "min"),
    Variable("e2e_latency", "float32", "s", "end-to-end latency of a request", "min",
             "ttft + (output_len - 1) * tpot"),
    Variable("throughput", "float32", "token/s", "generated tokens per second of the layout",
             "max"),
    Variable("total_throughput", "float32", "token/s",
             "input plus output tokens per second of the layout", "max"),
    Variable("throughput_per_device", "float32", "token/s",
             "generated tokens per second per device", "max"),
    Variable("tokens_per_joule", "float32", "token/J", "generated tokens per joule", "max"),
    Variable("power", "float32", "W", "average power of all devices of the layout", "min"),
    Variable("memory_per_device", "float32", "B",
             "bytes per device: weights + KV cache + activations", "min"),
    Variable("fits", "int8", "1", "point is feasible (1) or not (0)", "max"),
    Variable("bound", "int8", "1", "resource that limits the decode step", "none"),
    Variable("arithmetic_intensity", "float32", "FLOP/B",
             "decode FLOPs per byte moved, per device", "none"),
    Variable("mfu", "float32", "1", "decode model FLOP/s utilisation of dense peak", "max"),
    Variable("mbu", "float32", "1", "decode memory bandwidth utilisation", "none"),
    Variable("latency_cov", "float32", "1",
             "coefficient of variation of per-token latency", "min"),
    Variable("min_devices", "float32", "1",
             "fewest devices whose memory holds the model at this point", "min"),
)}
assert tuple(VARIABLES) == METRICS, "registry and kernel metric order differ"

DIRECTION = {name: v.direction for name, v in VARIABLES.items()}

#: per-dim coordinate variables written beside the dims: (dim, name, units, long_name)
COORDS = (
    ("hardware", "hardware_name", "", "device name"),
    ("hardware", "hardware_class", "", "architecture class"),
    ("hardware", "peak_bf16_flops", "FLOP/s", "dense 16-bit float peak"),
    ("hardware", "peak_fp8_flops", "FLOP/s", "dense FP8 peak (NaN = none)"),
    ("hardware", "hbm_bandwidth", "B/s", "bandwidth of the first DRAM/HBM tier (NaN = none)"),
    ("hardware", "hbm_capacity", "B", "capacity of the first DRAM/HBM tier (0 = none)"),
    ("hardware", "sram_capacity", "B", "capacity of the first SRAM placement tier (0 = none)"),
    ("hardware", "device_memory", "B", "sum of on-device tier capacities"),
    ("hardware", "link_bandwidth", "B/s", "scale-up link bandwidth per direction"),
    ("hardware", "tdp", "W", "thermal design power"),
    ("hardware", "release_year", "1", "release year"),
    ("model", "params_total", "1", "total parameters"),
    ("model", "params_active", "1", "parameters active per token"),
    ("model", "n_layers", "1", "decoder layers"),
    ("model", "kv_bytes_per_token", "B", "KV cache bytes per token at 16 bit"),
    ("precision", "weight_bits", "bit", "bits per weight"),
    ("precision", "act_bits", "bit", "bits per activation"),
    ("precision", "kv_bits", "bit", "bits per KV-cache element"),
    ("parallelism", "tp", "1", "tensor parallel degree"),
    ("parallelism", "pp", "1", "pipeline parallel degree"),
    ("parallelism", "ep", "1", "expert parallel degree"),
    ("parallelism", "dp", "1", "data parallel replicas"),
    ("parallelism", "offload", "1", "fraction of weights in the host tier"),
    ("parallelism", "devices", "1", "devices of the layout"),
)
DIM_ATTRS = {
    "hardware": {"long_name": "accelerator (catalog id)"},
    "model": {"long_name": "model (catalog id)"},
    "batch": {"units": "1", "long_name": "concurrent sequences per model replica"},
    "context": {"units": "token", "long_name": "prompt length"},
    "output_len": {"units": "token", "long_name": "generated tokens per sequence"},
    "precision": {"long_name": "precision scheme"},
    "parallelism": {"long_name": "parallel layout"},
}


def check_dataset(ds) -> list[str]:
    """Problems of a result Dataset against the registry (empty list = conforms)."""
    problems = []
    for name, var in VARIABLES.items():
        if name not in ds:
            problems.append(f"missing variable {name}")
            continue
        if "units" not in ds[name].attrs:
            problems.append(f"{name} has no units")
        if str(ds[name].dtype) != var.dtype:
            problems.append(f"{name} dtype {ds[name].dtype} != {var.dtype}")
    return problems
