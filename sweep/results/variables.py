"""The one registry of output variables: name, dtype, units, long_name and netCDF encoding.

Nothing is written without units: :func:`check_dataset` verifies a Dataset against this registry.
Every metric is defined over all the grid's dims (see ``grids.DIMS``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from kernels.params import (
    BOUND_INFEASIBLE,
    BOUND_MEANINGS,
    INFEASIBLE_MEANINGS,
    METRICS,
    RATE_METRICS,
)


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
        if self.name == "infeasible_reason":
            out["flag_values"] = np.arange(len(INFEASIBLE_MEANINGS), dtype=np.int8)
            out["flag_meanings"] = " ".join(INFEASIBLE_MEANINGS)
        out["better"] = self.direction
        return out

    def encoding(self, chunks: tuple[int, ...] | None = None) -> Encoding:
        enc: Encoding = {"zlib": True, "complevel": 1, "shuffle": True}
        if self.dtype.startswith("int"):  # no fill value: every value is meaningful
            enc["_FillValue"] = None
            enc["dtype"] = self.dtype
        else:
            enc["_FillValue"] = np.float32(np.nan)
            enc["dtype"] = "float32"
        if chunks is not None:
            enc["chunksizes"] = chunks
        return enc


class Encoding(TypedDict, total=False):
    """The storage of a variable (:meth:`Variable.encoding`): netCDF's deflate, fill value,
    dtype on disk and chunks."""

    zlib: bool
    complevel: int
    shuffle: bool
    _FillValue: np.float32 | None  # None: no fill value
    dtype: str
    chunksizes: tuple[int, ...]


VARIABLES: dict[str, Variable] = {v.name: v for v in (
    Variable("ttft", "float32", "s", "time to first token of a request", "min",
             "continuous batching (docs/model.md section 13): the iterations that carry the "
             "request's prompt chunks, plus waiting for the token budget and for a slot beyond "
             "the maximum concurrency (at a request rate: the mean, with Poisson arrivals' "
             "queueing); static batch: the prefill of the whole batch (and of earlier waves); "
             "with the engine's host time per pass and per request"),
    Variable("tpot", "float32", "s", "time per output token of a request",
             "min", "continuous batching: the mean iteration a decoding request sees (other "
             "requests' prefill chunks included); static batch: one decode step of the whole "
             "pipeline at the mean KV length prompt + output/2; with the engine's host time"),
    Variable("e2e_latency", "float32", "s", "end-to-end latency of a request", "min",
             "ttft + (output_len - 1) * tpot"),
    Variable("throughput", "float32", "token/s", "generated tokens per second of the layout",
             "max", "dp * completed requests per second per replica * output_len (all "
             "replicas; a static batch: dp * batch * output_len / e2e_latency)"),
    Variable("total_throughput", "float32", "token/s",
             "input plus output tokens per second of the layout", "max",
             "seed 004's convention: dp * requests per second * (context + output_len)"),
    Variable("throughput_per_device", "float32", "token/s",
             "generated tokens per second per device", "max", "throughput / devices"),
    Variable("tokens_per_joule", "float32", "token/J",
             "generated tokens per joule of accelerator energy", "max", "throughput / power"),
    Variable("tokens_per_joule_system", "float32", "token/J",
             "generated tokens per joule of system energy", "max",
             "throughput / system_power (accelerators plus their host and system share)"),
    Variable("power", "float32", "W", "average power of the layout's accelerators", "min",
             "board/module power of all devices: static power plus the energy of the FLOPs "
             "and bytes moved over the time, capped at TDP"),
    Variable("system_power", "float32", "W",
             "average power of the layout's accelerators and their hosts", "min",
             "power + devices * host_power"),
    Variable("cost_per_mtok", "float32", "USD",
             "cost of one million generated tokens", "min",
             "1e6 * (devices * fixed USD/s + energy USD/J * system_power) / throughput, on the "
             "spec's price basis (NaN where the device is unpriced)"),
    Variable("tokens_per_dollar", "float32", "token/USD", "generated tokens per US dollar",
             "max", "throughput / cost rate (NaN where the device is unpriced)"),
    Variable("memory_per_device", "float32", "B",
             "bytes per device: weights + KV cache + activations", "min"),
    Variable("host_fraction", "float32", "1",
             "fraction of the device's bytes resident in the host tier", "min",
             "offloaded plus spilled bytes / memory_per_device"),
    Variable("fits", "int8", "1", "point is feasible (1) or not (0)", "max"),
    Variable("infeasible_reason", "int8", "1", "why the point is infeasible (0 = feasible)",
             "none", "docs/model.md section 2"),
    Variable("bound", "int8", "1", "resource that limits the decode step", "none"),
    Variable("arithmetic_intensity", "float32", "FLOP/B",
             "decode FLOPs per byte moved, per device", "none"),
    Variable("mfu", "float32", "1", "decode model FLOP/s utilisation of dense peak", "max"),
    Variable("mbu", "float32", "1", "decode memory bandwidth utilisation", "none"),
    Variable("latency_cov", "float32", "1",
             "coefficient of variation of per-token latency", "min",
             "device jitter and expert-parallel load imbalance"),
    Variable("min_devices", "float32", "1",
             "fewest devices whose memory holds the model at this point", "min"),
    Variable("max_concurrency", "float32", "1",
             "most requests a replica runs at once", "max",
             "the engine's batch cap and the KV cache that fits beside the weights and "
             "activations (continuous batching: at the engine's admission length; static: at "
             "prompt + output); a static batch above it runs in waves, a concurrency above it "
             "queues (docs/model.md sections 11, 13)"),
    Variable("concurrency", "float32", "1", "mean requests running at once per replica", "none",
             "static: the batch (or one wave of it); continuous: min(batch, max_concurrency); "
             "at a request rate: the mean concurrency that serves it (Little's law)"),
    *(Variable(f"{m}_p{p}", "float32", "s", f"{p}th percentile of {what} at the request rate",
               "min", "Poisson arrivals; queueing approximations of docs/model.md section 13.4")
      for m, what in (("ttft", "the time to first token"), ("e2e", "the end-to-end latency"))
      for p in (50, 90, 99)),
)}
assert tuple(VARIABLES) == METRICS, "registry and kernel metric order differ"
#: metrics a result carries only when its grid is over request rates
ONLY_AT_RATE = RATE_METRICS
#: the metrics of a result over batch (every metric but the request-rate percentiles)
BATCH_VARIABLES = tuple(n for n in VARIABLES if n not in ONLY_AT_RATE)

DIRECTION = {name: v.direction for name, v in VARIABLES.items()}

#: the dim of the layouts evaluated in a result that keeps only each point's best one (spec key
#: ``best_layout``): the candidates ``layout_index`` points into
KEPT_LAYOUT_DIM = "layout"
#: beside the metrics of such a result: which layout each point kept
LAYOUT_INDEX = Variable(
    "layout_index", "int16", "1", "index along the layout coordinate of the layout kept at the "
    "point (-1: none is feasible on the basis)", "none",
    "the layout with the highest throughput on the basis in the result's best_layout_basis "
    "attribute, ties to the label that sorts first (as Dataset.sweep.best_layout); every metric "
    "of the point is that layout's")
#: every variable a result can hold: the metrics and ``layout_index``
RESULT_VARIABLES: dict[str, Variable] = {**VARIABLES, LAYOUT_INDEX.name: LAYOUT_INDEX}

#: per-dim coordinate variables written beside the dims: (dim, name, units, long_name)
COORDS = (
    ("hardware", "hardware_name", "", "device name"),
    ("hardware", "hardware_class", "", "architecture class"),
    ("hardware", "peak_bf16_flops", "FLOP/s", "dense 16-bit float peak"),
    ("hardware", "peak_fp8_flops", "FLOP/s", "dense FP8 peak (NaN = none)"),
    ("hardware", "hardware_vendor", "", "vendor"),
    ("hardware", "dram_bandwidth", "B/s", "peak bandwidth of the first DRAM tier (HBM, GDDR, "
     "LPDDR; NaN = none)"),
    ("hardware", "dram_capacity", "B", "capacity of the first DRAM tier (0 = none)"),
    ("hardware", "sram_capacity", "B", "capacity of the first SRAM placement tier (0 = none)"),
    ("hardware", "device_memory", "B", "sum of on-device tier capacities"),
    ("hardware", "link_bandwidth", "B/s", "scale-up link bandwidth per direction"),
    ("hardware", "scaleout_bandwidth", "B/s", "scale-out (beyond the scale-up domain) network "
     "bandwidth per device per direction"),
    ("hardware", "scaleout_latency", "s", "scale-out network latency per transfer"),
    ("hardware", "tdp", "W", "accelerator board/module power (thermal design power)"),
    ("hardware", "host_power", "W", "host and system power attributed to one accelerator"),
    ("hardware", "tdp_estimated", "1", "1 if the board power (tdp) is an estimate, not a published "
     "figure (per-kW answers inherit its uncertainty)"),
    ("hardware", "host_power_estimated", "1", "1 if the host and system share is an estimate or "
     "a class rule"),
    ("hardware", "price_source", "", "which price the device got: provider and offering, the "
     "rule (median of the listed offerings), the spec's own, or unpriced"),
    ("hardware", "price_usd_per_hour", "USD/h", "fixed cost of one device-hour on the spec's "
     "price basis (NaN = unpriced)"),
    ("hardware", "release_year", "1", "release year"),
    ("model", "params_total", "1", "total parameters"),
    ("model", "params_active", "1", "parameters active per token"),
    ("model", "n_layers", "1", "decoder layers"),
    ("model", "kv_bytes_per_token", "B", "KV cache bytes per token at 16 bit"),
    ("model", "kv_window_bytes_per_token", "B", "the part of kv_bytes_per_token on windowed "
     "(sliding or chunked-local) attention layers, which keep at most attention_window tokens"),
    ("model", "attention_window", "token", "window of the windowed attention layers (0 = none)"),
    ("precision", "weight_bits", "bit", "bits per weight"),
    ("precision", "act_bits", "bit", "bits per activation"),
    ("precision", "kv_bits", "bit", "bits per KV-cache element"),
    ("precision", "attn_bits", "bit", "bits per weight of the attention projections (weight_bits "
     "unless the scheme keeps them at 16 bits: -attn16)"),
    ("parallelism", "tp", "1", "tensor parallel degree"),
    ("parallelism", "pp", "1", "pipeline parallel degree"),
    ("parallelism", "ep", "1", "expert parallel degree"),
    ("parallelism", "dp", "1", "data parallel replicas"),
    ("parallelism", "offload", "1", "fraction of weights in the host tier"),
    ("parallelism", "spill", "1", "1 if what does not fit may spill to the host tier"),
    ("parallelism", "devices", "1", "devices of the layout"),
)
#: coordinates over two dims: (dims, name, units, long_name)
COORDS_2D = (
    (("hardware", "engine"), "engine_used", "", "engine whose parameters serve the device "
     "(native: the vendor's stack; empty: the engine does not run on it)"),
    (("hardware", "precision"), "peak_flops", "FLOP/s", "dense peak of the precision's compute "
     "dtype on the device (0 = the device has none)"),
    (("hardware", "engine"), "band_factor", "1", "uncertainty band of the predictions: the "
     "measured value lies within [value / band_factor, value x band_factor] for the `quantile` "
     "attribute's share (0.68) of held-out measurements of the serving engine on the device's "
     "vendor (NaN: ideal is the physics bound, or the engine does not run on the device; "
     "docs/analysis.md, 'Uncertainty bands')"),
    (("hardware", "engine"), "calibrated", "1", "1 if measurements of the serving engine on the "
     "device's vendor were in the calibration data (0: the engine files' values and the wider "
     "band of a vendor without data)"),
)
DIM_ATTRS = {
    "hardware": {"long_name": "accelerator (catalog id)"},
    "engine": {"long_name": "serving engine (catalog id; ideal = the physics bound)"},
    "model": {"long_name": "model (catalog id)"},
    "batch": {"units": "1", "long_name": "concurrent sequences per model replica"},
    "request_rate": {"units": "1/s", "long_name": "requests per second arriving at the layout "
                     "(Poisson)"},
    "context": {"units": "token", "long_name": "prompt length"},
    "output_len": {"units": "token", "long_name": "generated tokens per sequence"},
    "precision": {"long_name": "precision scheme"},
    "parallelism": {"long_name": "parallel layout"},
    KEPT_LAYOUT_DIM: {"long_name": "parallel layouts evaluated (layout_index points into them)"},
}


def check_dataset(ds) -> list[str]:
    """Problems of a result Dataset against the registry (empty list = conforms)."""
    problems = []
    for name, var in VARIABLES.items():
        if name not in ds:
            if name not in ONLY_AT_RATE:
                problems.append(f"missing variable {name}")
            continue
        if "units" not in ds[name].attrs:
            problems.append(f"{name} has no units")
        if str(ds[name].dtype) != var.dtype:
            problems.append(f"{name} dtype {ds[name].dtype} != {var.dtype}")
    return problems
