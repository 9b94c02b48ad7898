"""Every engine parameter (the kernels' contract) and :class:`EngineParams`, the parameters of
one (engine, device) pair; also the catalog's engine ids and where its files are.

Units (SI): times in s, ``comm_bytes`` in B per element, fractions and counts dimensionless;
``max_batch`` and ``prefill_chunk`` may be ``inf`` (no cap / no chunking).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from grids.errors import SpecError, suggest
from grids.hardware import COMPUTE_DTYPES

#: the shipped calibration overlay's file name, next to the engine files (not an engine)
CALIBRATION_FILE = "calibration.toml"
ENGINE_IDS = ("ideal", "trtllm", "vllm", "sglang", "deepspeed-mii", "llama.cpp", "neuron", "gaudi",
              "sambaflow", "cerebras", "groq", "groq-specdec", "jetstream", "native")
PHASES = ("prefill", "decode")
#: override levels, most specific first
LEVELS = ("device", "vendor", "class", "defaults")
BY_DTYPE = ("prefill_compute", "decode_compute")
#: the overlay's cross-engine level (``[pooled]``), fitted by ``sweep calibrate`` on the rows of
#: every engine with measurements; not an engine id
POOLED = "pooled"
#: parameters an engine file may mark ``pooled = true`` (a stack without measurements: its value
#: is the prior, and a calibration overlay's ``[pooled]`` value replaces it)
POOLABLE = ("bandwidth", "prefill_compute", "decode_compute")


@dataclass(frozen=True)
class ParamSpec:
    """One engine parameter: unit dimension, allowed interval, ideal value and meaning."""

    dimension: str  # grids.units dimension of the file value, or "bool"
    unit: str
    lo: float
    hi: float
    ideal: float | bool
    meaning: str
    lo_open: bool = False
    hi_open: bool = False
    whole: bool = False  # a whole number (counts)
    allow_inf: bool = False  # ``inf`` means "no cap"
    #: the value of an optional parameter a real engine's file leaves out (None: the ideal value);
    #: e.g. an engine without a custom all-reduce has none (0 B), while ``ideal`` has every one
    absent: float | bool | None = None

    def interval(self) -> str:
        hi = "inf" if self.allow_inf else f"{self.hi:g}"
        return (f"{'(' if self.lo_open else '['}{self.lo:g}, {hi}"
                f"{')' if self.hi_open and not self.allow_inf else ']'}")

    def contains(self, v: float) -> bool:
        if math.isnan(v):
            return False
        if math.isinf(v):
            return self.allow_inf and v > 0
        lo_ok = v > self.lo if self.lo_open else v >= self.lo
        hi_ok = v < self.hi if self.hi_open else v <= self.hi
        return lo_ok and hi_ok and (not self.whole or float(v).is_integer())


_FRACTION: dict[str, Any] = {"dimension": "fraction", "unit": "1", "lo": 0.0, "hi": 1.0,
                             "lo_open": True, "ideal": 1.0}

#: every engine parameter (the kernels' contract); the by-dtype ones hold one factor per dtype
PARAMS: dict[str, ParamSpec] = {
    "prefill_compute": ParamSpec(**_FRACTION, meaning="factor on the device's achievable FLOP "
                                 "efficiency of a compute dtype in prefill (large GEMMs)"),
    "decode_compute": ParamSpec(**_FRACTION, meaning="factor on the device's achievable FLOP "
                                "efficiency of a compute dtype in decode (skinny and grouped GEMMs)"),
    "bandwidth": ParamSpec(**_FRACTION, meaning="factor on the device's achievable memory-bandwidth "
                           "efficiency"),
    "iteration_overhead": ParamSpec("time", "s", 0.0, 1.0, 0.0, "host time per forward pass, added "
                                    "to every decode step and every prefill pass"),
    "request_overhead": ParamSpec("time", "s", 0.0, 10.0, 0.0, "per-request host cost added to TTFT"),
    "layer_overhead": ParamSpec("time", "s", 0.0, 0.1, 0.0, "per layer per forward pass (kernel "
                                "gaps not hidden)"),
    "comm_bytes": ParamSpec("bytes", "B", 0.0, 8.0, 0.0, "bytes per element of the tensor-parallel "
                            "all-reduce and expert all-to-all payload; 0 = the activation precision"),
    "collective_overhead": ParamSpec("time", "s", 0.0, 0.01, 0.0, "software time per call of the "
                                     "engine's collective library (NCCL, RCCL, HCCL, XLA) for a ring, "
                                     "tree or all-to-all collective and a pipeline hop: launch and "
                                     "protocol set-up; the link's per-step latency is the hardware's"),
    "in_switch_overhead": ParamSpec("time", "s", 0.0, 0.01, 0.0, "software time per call of an "
                                    "all-reduce reduced inside the switch (NVLink SHARP) where the "
                                    "hardware has one; inf = the library does not use it",
                                    allow_inf=True, absent=math.inf),
    "custom_allreduce_max_bytes": ParamSpec("bytes", "B", 0.0, math.inf, math.inf, "largest "
                                            "all-reduce the engine's own one-shot/two-shot kernels "
                                            "take inside a fully connected scale-up domain; larger "
                                            "ones go to the collective library; 0 = none",
                                            allow_inf=True, absent=0.0),
    "custom_allreduce_max_group": ParamSpec("count", "1", 2.0, math.inf, math.inf, "largest group "
                                            "the custom all-reduce kernels run on", whole=True,
                                            allow_inf=True),
    "custom_allreduce_overhead": ParamSpec("time", "s", 0.0, 0.01, 0.0, "software time per call "
                                           "of the custom all-reduce (launch, flags)"),
    "custom_allreduce_efficiency": ParamSpec(**_FRACTION, meaning="factor on the device's "
                                             "achievable collective bandwidth that the custom "
                                             "all-reduce's peer reads and writes reach"),
    "oneshot_max_bytes": ParamSpec("bytes", "B", 0.0, math.inf, math.inf, "the custom all-reduce "
                                   "of 3-4 devices is one-shot below this message size, two-shot "
                                   "from it (2 devices: always one-shot)", allow_inf=True),
    "oneshot_max_bytes_large": ParamSpec("bytes", "B", 0.0, math.inf, math.inf, "the same "
                                         "threshold for groups of 5 or more devices",
                                         allow_inf=True),
    "fastest_collective": ParamSpec("count", "1", 0.0, 1.0, 1.0, "1 = every collective algorithm "
                                    "the fabric allows, the fastest chosen (a perfect tuner); "
                                    "0 = the engine's own rules", whole=True, absent=0.0),
    "comm_overlap": ParamSpec("fraction", "1", 0.0, 1.0, 1.0, "fraction of communication hidden "
                              "behind compute"),
    "memory_fraction": ParamSpec(**_FRACTION, meaning="fraction of the device's usable memory the "
                                 "engine gives to weights, KV cache and activations"),
    "memory_of_free": ParamSpec("bool", "bool", 0.0, 1.0, False, "memory_fraction is the share "
                                "of the memory left after the weights and activation buffers that "
                                "the KV cache gets (TensorRT-LLM's free_gpu_memory_fraction); "
                                "false: the share of the whole usable memory that weights, KV "
                                "cache and activations get (vLLM's gpu_memory_utilization)"),
    "max_batch": ParamSpec("count", "1", 1.0, math.inf, math.inf, "sequences the scheduler runs at "
                           "once per replica; inf = no cap", whole=True, allow_inf=True),
    "prefill_chunk": ParamSpec("count", "token", 0.0, math.inf, 0.0, "tokens per forward pass: "
                               "the scheduler's token budget per iteration (decode and prompt "
                               "tokens) and a static prefill's chunk; 0 = the grid's workload "
                               "setting, inf = no limit", whole=True, allow_inf=True),
    "kv_efficiency": ParamSpec(**_FRACTION, meaning="factor on bandwidth when the decode "
                               "attention kernel reads a 16-bit KV cache (the weights stream at "
                               "bandwidth; the KV cache at bandwidth x kv_efficiency)",
                               absent=1.0),
    "kv8_efficiency": ParamSpec(**_FRACTION, meaning="factor on the 16-bit KV read rate when "
                                "reading a KV cache narrower than 16 bit"),
    "weight_only_efficiency": ParamSpec(**_FRACTION, meaning="factor on the weight-read bandwidth "
                                        "and GEMM rate of weight-only quantised schemes"),
    "pads_heads": ParamSpec("bool", "bool", 0.0, 1.0, True, "runs a tensor-parallel degree that does "
                            "not divide the attention heads by padding heads"),
    "chunked_prefill": ParamSpec("bool", "bool", 0.0, 1.0, True, "continuous batching: a prompt is "
                                 "split across iterations to fit the token budget left beside "
                                 "the running decodes (chunked prefill); false: a prompt runs "
                                 "whole in one iteration"),
    "mixed_batching": ParamSpec("bool", "bool", 0.0, 1.0, True, "continuous batching: prompt "
                                "tokens share one forward pass with the running decodes; false: "
                                "prefill passes of their own between decode passes"),
    "kv_block": ParamSpec("count", "token", 1.0, 4096.0, 1.0, "KV cache block (page) size: the "
                          "cache is allocated to a request in whole blocks", whole=True),
    "kv_reserve": ParamSpec("bool", "bool", 0.0, 1.0, False, "continuous batching: a request is "
                            "admitted only if the KV cache of its prompt and every output token "
                            "is free (no preemption); false: blocks are allocated as tokens are "
                            "generated, so capacity counts the mean in-flight length"),
    "gqa_aware_attention": ParamSpec("bool", "bool", 0.0, 1.0, True, "the decode attention "
                                     "kernel reads each KV head once for all the query heads that "
                                     "share it (grouped-query attention); false: once per query "
                                     "head, so a model with g query heads per KV head reads its "
                                     "KV cache g times per step", absent=True),
    "narrow_float_compute": ParamSpec("bool", "bool", 0.0, 1.0, True, "the engine has GEMM "
                                      "kernels for 8- and 4-bit float dtypes; false: a precision "
                                      "that computes in fp8 or fp4 does not run on it "
                                      "(infeasible, no_compute_dtype)", absent=True),
    "narrow_kv_cache": ParamSpec("bool", "bool", 0.0, 1.0, True, "the engine can store the KV "
                                 "cache in 8 or 4 bits; false: a precision with a KV cache "
                                 "narrower than 16 bits does not run on it (infeasible, "
                                 "no_compute_dtype)", absent=True),
    "speculative_tokens": ParamSpec("count", "1", 0.0, 64.0, 0.0, "draft tokens per verification "
                                    "step (0 = off)", whole=True),
    "speculative_acceptance": ParamSpec("fraction", "1", 0.0, 1.0, 0.0, "per-token acceptance "
                                        "probability", hi_open=True),
    "speculative_draft_cost": ParamSpec("count", "1", 0.0, 10.0, 0.0, "time of one draft step "
                                        "relative to one target decode step"),
}
#: the compute dtypes an engine without ``narrow_float_compute`` does not run
NARROW_FLOAT_DTYPES = ("fp8", "fp4")
SCALARS = tuple(k for k in PARAMS if k not in BY_DTYPE)
#: yes/no parameters: a TOML boolean with a ``<name>_source`` text beside it
BOOLS = tuple(k for k, v in PARAMS.items() if v.dimension == "bool")
#: parameters a real engine's file may leave out, each then at its ``absent`` value (else its
#: ideal value) because that is physically right: engines do not speculate unless configured to;
#: a file without a sourced decode-attention kernel rate reads the KV cache at its bandwidth
#: factor (``kv_efficiency`` 1: the attention kernel as good as the weight stream, the upper
#: bound, stated as such in docs/engines.md);
#: the attention kernels of current engine releases (FlashAttention, FlashInfer, TensorRT-LLM's
#: XQA, vLLM's ROCm custom paged attention) serve a KV head's query group in one pass, so a file
#: states ``gqa_aware_attention = false`` only for a build whose kernel does not; so do the FP8/FP4
#: GEMMs and 8-bit KV caches of current releases (a build from before them states false);
#: an engine without a custom all-reduce has none (``custom_allreduce_max_bytes`` 0) and its
#: other custom-all-reduce parameters are unused; a library that does not state in-switch
#: reduction does not use it; an engine chooses collectives by its own rules, not the fastest.
#: Every other parameter must be in a real engine's [defaults].
OPTIONAL = ("speculative_tokens", "speculative_acceptance", "speculative_draft_cost",
            "kv_efficiency", "gqa_aware_attention", "narrow_float_compute", "narrow_kv_cache",
            "in_switch_overhead", "custom_allreduce_max_bytes", "custom_allreduce_max_group",
            "custom_allreduce_overhead", "custom_allreduce_efficiency", "oneshot_max_bytes",
            "oneshot_max_bytes_large", "fastest_collective")
#: what a custom all-reduce (``custom_allreduce_max_bytes`` > 0 at some level) needs the same file
#: to state (at any level): its group limit, cost, bandwidth and one-shot/two-shot thresholds
CUSTOM_ALLREDUCE = ("custom_allreduce_max_group", "custom_allreduce_overhead",
                    "custom_allreduce_efficiency", "oneshot_max_bytes", "oneshot_max_bytes_large")
#: parameters of earlier versions that no longer exist, with what replaced them (an overlay or an
#: engine file that still sets one gets this text instead of a bare "unknown parameter")
RETIRED = {
    "link_efficiency": "retired with the collectives-by-algorithm model (issue 20): the achievable "
                       "collective bandwidth is the hardware's, [interconnect] link_efficiency of the "
                       "device file (nccl-tests/rccl-tests bus bandwidth), and a custom all-reduce's "
                       "share of it is custom_allreduce_efficiency; values fitted to the old ring "
                       "model do not carry over, remove them",
    "collective_latency": "retired with the collectives-by-algorithm model (issue 20): it was a "
                          "latency per ring step; the per-call software time is now "
                          "collective_overhead (library), custom_allreduce_overhead and "
                          "in_switch_overhead, and the per-step latency is the hardware's "
                          "link_latency; values fitted to the old ring model do not carry over, "
                          "remove them",
}
#: the flat keys of one resolution: scalars and ``<by_dtype>.<dtype>``
FLAT_KEYS = (*(f"{p}.{d}" for p in BY_DTYPE for d in COMPUTE_DTYPES), *SCALARS)
#: dtypes a missing per-dtype factor is taken from, in order (else the ideal value)
FILL_FROM = ("bf16", "fp16")
#: 16-bit dtypes that run at one tensor-core rate on every catalog device that has both: a level
#: that lists one of them and not the other gives both (so a vendor's bf16 estimate is not
#: bypassed for fp16 by a less specific level's fit; issue 20 "fp16 on AMD picks up
#: NVIDIA-fitted factors"); ``sweep calibrate`` fits them as one factor for the same reason
SAME_RATE = {"fp16": "bf16", "bf16": "fp16"}


def engine_family(ref: str) -> str:
    """The engine file id of an engine reference: ``vllm`` for ``vllm@0.6.0`` (a build is one
    release of its file's engine) and for ``vllm`` itself."""
    return ref.partition("@")[0]


def engines_dir() -> Path:
    return Path(str(resources.files("grids") / "data" / "engines"))


# --------------------------------------------------------------------------------------------
# resolved parameters


@dataclass(frozen=True)
class EngineParams:
    """The parameters of one (engine, device) pair in SI units, as the kernels read them.

    ``prefill_compute`` and ``decode_compute`` hold a factor for every compute dtype of
    :data:`grids.hardware.COMPUTE_DTYPES`. ``origin`` says for every parameter (and
    ``<phase>_compute.<dtype>``) which level of which file (or overlay) it came from, with
    ``estimate: <rule>`` where the value is one. An unsupported pair has ``supported = False``, the
    reason in ``why`` and every parameter at its ideal value.
    """

    engine: str
    device: str
    supported: bool
    why: str
    delegate: str
    versions: str
    prefill_compute: dict[str, float]
    decode_compute: dict[str, float]
    bandwidth: float  # [1]
    iteration_overhead: float  # [s]
    request_overhead: float  # [s]
    layer_overhead: float  # [s]
    comm_bytes: float  # [B] per element, 0 = activation precision
    collective_overhead: float  # [s] per library collective call
    comm_overlap: float  # [1]
    memory_fraction: float  # [1]
    memory_of_free: bool
    max_batch: float  # [1], inf = no cap
    prefill_chunk: float  # [token], 0 = workload setting, inf = no chunking
    kv_efficiency: float  # [1]
    kv8_efficiency: float  # [1]
    weight_only_efficiency: float  # [1]
    pads_heads: bool
    chunked_prefill: bool
    mixed_batching: bool
    kv_block: float  # [token]
    kv_reserve: bool
    gqa_aware_attention: bool
    narrow_float_compute: bool
    narrow_kv_cache: bool
    speculative_tokens: float  # [1]
    speculative_acceptance: float  # [1]
    speculative_draft_cost: float  # [1]
    in_switch_overhead: float  # [s] per in-switch all-reduce call, inf = not used
    custom_allreduce_max_bytes: float  # [B], 0 = no custom all-reduce
    custom_allreduce_max_group: float  # [1]
    custom_allreduce_overhead: float  # [s] per call
    custom_allreduce_efficiency: float  # [1]
    oneshot_max_bytes: float  # [B], groups of 3-4
    oneshot_max_bytes_large: float  # [B], groups of 5+
    fastest_collective: float  # [1] 1 = fastest algorithm, 0 = the engine's rules
    origin: dict[str, str] = field(default_factory=dict, compare=False)

    def runs(self, dtype: str, kv_bits: float = 16.0) -> bool:
        """Whether the engine has kernels for compute dtype ``dtype`` and a KV cache of
        ``kv_bits`` bits (``narrow_float_compute``, ``narrow_kv_cache``)."""
        return ((dtype not in NARROW_FLOAT_DTYPES or self.narrow_float_compute)
                and (kv_bits >= 16 or self.narrow_kv_cache))

    def compute(self, dtype: str, phase: str) -> float:
        """Factor [1] on the achievable FLOP efficiency of ``dtype`` in ``phase``."""
        if phase not in PHASES:
            raise SpecError(f"unknown phase {phase!r}{suggest(phase, PHASES)}")
        table = self.prefill_compute if phase == "prefill" else self.decode_compute
        if dtype not in table:
            raise SpecError(f"unknown compute dtype {dtype!r}{suggest(dtype, COMPUTE_DTYPES)}")
        return table[dtype]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: getattr(self, k) for k in
                               ("engine", "device", "supported", "why", "delegate", "versions")}
        out["prefill_compute"] = dict(self.prefill_compute)
        out["decode_compute"] = dict(self.decode_compute)
        out.update({k: getattr(self, k) for k in SCALARS})
        out["origin"] = dict(self.origin)
        return out


# --------------------------------------------------------------------------------------------
# checking values (of an engine file and of an overlay)


def _range_problem(name: str, spec: ParamSpec, v: float, where: str) -> str:
    if spec.whole and math.isfinite(v) and not float(v).is_integer() and spec.lo <= v <= spec.hi:
        return f"{where} = {v:g} must be a whole number [{spec.unit}]: {spec.meaning}"
    hint = ""
    if spec.dimension == "time" and v > spec.hi:
        hint = " (a plain number is in seconds: write e.g. '2.5 ms')"
    return f"{where} = {v:g} [{spec.unit}] is outside {spec.interval()}{hint}: {spec.meaning}"


def _is_inf_text(v: Any) -> bool:
    return (isinstance(v, float) and math.isinf(v) and v > 0) or \
        (isinstance(v, str) and v.strip().lower() in ("inf", "unlimited"))
