"""Serving-engine catalog: what a serving stack costs on top of the hardware's achievable roofline.

The hardware catalog's efficiencies are what the *best* software reaches on a device. An engine
profile (``grids/data/engines/<id>.toml``, schema and sources in ``docs/engines.md``) states how far
one serving stack falls short of that and what it adds: compute and bandwidth factors, host time
per forward pass and per request, collective costs, memory and batch caps, speculative decoding.

:func:`resolve` turns an (engine, device) pair into plain SI numbers (:class:`EngineParams`) by a
per-parameter fallback ``[device.<id>]`` -> ``[vendor.<vendor>]`` -> ``[class.<cls>]`` ->
``[defaults]`` -> the ideal value (only for parameters whose ideal value is physically right when
absent, see ``OPTIONAL``). A calibration overlay (fitted plain numbers with the same hierarchy)
takes precedence over the file at the same or a less specific level. An engine with a
``[delegate]`` table (``native``) hands each device to another engine, most specific key first.

Units (SI): times in s, ``comm_bytes`` in B per element, fractions and counts dimensionless;
``max_batch`` and ``prefill_chunk`` may be ``inf`` (no cap / no chunking).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from grids import tomlio
from grids.errors import SpecError, suggest
from grids.hardware import CLASSES, COMPUTE_DTYPES, Device, load_catalog
from grids.sourced import Sourced, read_sourced
from grids.units import parse_quantity

#: the shipped calibration overlay's file name, next to the engine files (not an engine)
CALIBRATION_FILE = "calibration.toml"
ENGINE_IDS = ("ideal", "trtllm", "vllm", "sglang", "deepspeed-mii", "llama.cpp", "neuron", "gaudi",
              "sambaflow", "cerebras", "groq", "groq-specdec", "jetstream", "native")
PHASES = ("prefill", "decode")
#: override levels, most specific first
LEVELS = ("device", "vendor", "class", "defaults")
BY_DTYPE = ("prefill_compute", "decode_compute")


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
    "max_batch": ParamSpec("count", "1", 1.0, math.inf, math.inf, "sequences the scheduler runs at "
                           "once per replica; inf = no cap", whole=True, allow_inf=True),
    "prefill_chunk": ParamSpec("count", "token", 0.0, math.inf, 0.0, "tokens per forward pass: "
                               "the scheduler's token budget per iteration (decode and prompt "
                               "tokens) and a static prefill's chunk; 0 = the grid's workload "
                               "setting, inf = no limit", whole=True, allow_inf=True),
    "kv8_efficiency": ParamSpec(**_FRACTION, meaning="factor on bandwidth when reading a KV cache "
                                "narrower than 16 bit"),
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
    "speculative_tokens": ParamSpec("count", "1", 0.0, 64.0, 0.0, "draft tokens per verification "
                                    "step (0 = off)", whole=True),
    "speculative_acceptance": ParamSpec("fraction", "1", 0.0, 1.0, 0.0, "per-token acceptance "
                                        "probability", hi_open=True),
    "speculative_draft_cost": ParamSpec("count", "1", 0.0, 10.0, 0.0, "time of one draft step "
                                        "relative to one target decode step"),
}
SCALARS = tuple(k for k in PARAMS if k not in BY_DTYPE)
#: yes/no parameters: a TOML boolean with a ``<name>_source`` text beside it
BOOLS = tuple(k for k, v in PARAMS.items() if v.dimension == "bool")
#: parameters a real engine's file may leave out, each then at its ``absent`` value (else its
#: ideal value) because that is physically right: engines do not speculate unless configured to;
#: an engine without a custom all-reduce has none (``custom_allreduce_max_bytes`` 0) and its
#: other custom-all-reduce parameters are unused; a library that does not state in-switch
#: reduction does not use it; an engine chooses collectives by its own rules, not the fastest.
#: Every other parameter must be in a real engine's [defaults].
OPTIONAL = ("speculative_tokens", "speculative_acceptance", "speculative_draft_cost",
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
TOP_KEYS = ("id", "name", "description", "versions", "runs_on", "notes", "defaults", "vendor",
            "class", "device", "delegate")


def engines_dir() -> Path:
    return Path(str(resources.files("grids") / "data" / "engines"))


# --------------------------------------------------------------------------------------------
# loaded profiles


@dataclass(frozen=True)
class Value:
    """One resolved-to-be value of a level: SI number (or bool) and where it comes from."""

    value: float | bool
    origin: str
    sourced: Sourced | None = None


@dataclass(frozen=True)
class Engine:
    """A loaded engine profile. ``levels`` maps ``(level, key)`` (``("defaults", "")``,
    ``("vendor", "AMD")``, ``("class", "gpu")``, ``("device", "h100-sxm")``) to flat parameter
    keys (``iteration_overhead``, ``decode_compute.bf16``, ...) -> :class:`Value`."""

    id: str
    name: str
    description: str
    versions: str
    runs_on: tuple[str, ...]
    notes: tuple[str, ...]
    levels: Mapping[tuple[str, str], Mapping[str, Value]]
    delegate: tuple[tuple[str, str], ...] = ()
    where: str = ""

    def runs_on_device(self, device: Device) -> bool:
        """Whether a ``runs_on`` entry matches ``device`` (a hypothetical one as its base)."""
        return any(_target_matches(t, device) for t in self.runs_on)

    def delegate_for(self, device: Device) -> tuple[str, str] | None:
        """``(target key, engine id)`` of the most specific ``[delegate]`` entry for ``device``."""
        best = None
        for target, engine_id in self.delegate:
            if _target_matches(target, device):
                rank = _TARGET_RANK[target.partition(":")[0]]
                if best is None or rank > best[0]:
                    best = (rank, target, engine_id)
        return None if best is None else (best[1], best[2])

    def sources(self) -> dict[str, Sourced]:
        """Every sourced number of the file, keyed ``<level>[.<key>].<parameter>``."""
        out = {}
        for (level, key), values in self.levels.items():
            for name, v in values.items():
                if v.sourced is not None:
                    out[f"{level}.{key}.{name}" if key else f"{level}.{name}"] = v.sourced
        return out


_TARGET_RANK = {"all": 0, "class": 1, "vendor": 2, "device": 3}


def _target_matches(target: str, device: Device) -> bool:
    kind, _, value = target.partition(":")
    if kind == "all":
        return True
    if kind == "vendor":
        return device.vendor == value
    if kind == "class":
        return device.cls == value
    return kind == "device" and (device.base or device.id) == value


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
    max_batch: float  # [1], inf = no cap
    prefill_chunk: float  # [token], 0 = workload setting, inf = no chunking
    kv8_efficiency: float  # [1]
    weight_only_efficiency: float  # [1]
    pads_heads: bool
    chunked_prefill: bool
    mixed_batching: bool
    kv_block: float  # [token]
    kv_reserve: bool
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
# catalog context (vendors, classes, device ids of the hardware catalog)


@functools.cache
def _catalog_devices() -> dict[str, Device]:
    return load_catalog()


def _known_vendors() -> tuple[str, ...]:
    return tuple(sorted({d.vendor for d in _catalog_devices().values()}))


def _suggest(name: str, known: Iterable[str]) -> str:
    """``suggest`` that also catches a difference of case only ('Nvidia' -> 'NVIDIA')."""
    known = list(known)
    same = [k for k in known if k.lower() == str(name).lower()]
    return f" (did you mean {same[0]!r}?)" if same else suggest(name, known)


def _check_target(text: Any, where: str, problems: list[str], *, allow_all: bool = True) -> bool:
    """A ``runs_on`` / ``[delegate]`` key: ``all``, ``vendor:<v>``, ``class:<c>``, ``device:<id>``
    that matches at least one catalog device."""
    if not isinstance(text, str):
        problems.append(f"{where}: {text!r} must be a string such as \"vendor:NVIDIA\"")
        return False
    if text == "all":
        if allow_all:
            return True
        problems.append(f"{where}: 'all' is not allowed here")
        return False
    kind, sep, value = text.partition(":")
    devices = _catalog_devices().values()
    if not sep or kind not in ("vendor", "class", "device") or not value:
        problems.append(f"{where}: {text!r} is not 'all', 'vendor:<vendor>', 'class:<class>' or "
                        f"'device:<id>'")
        return False
    if kind == "vendor" and not any(d.vendor == value for d in devices):
        problems.append(f"{where}: {text!r} matches no catalog device (vendor strings are "
                        f"exact){_suggest(value, _known_vendors())}")
        return False
    if kind == "class" and not any(d.cls == value for d in devices):
        problems.append(f"{where}: {text!r} matches no catalog device{suggest(value, CLASSES)}")
        return False
    if kind == "device" and value not in _catalog_devices():
        problems.append(f"{where}: {text!r} matches no catalog device"
                        f"{suggest(value, _catalog_devices())}")
        return False
    return True


# --------------------------------------------------------------------------------------------
# reading values


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


def _read_number(entry: Any, name: str, spec: ParamSpec, where: str,
                 problems: list[str]) -> Sourced | None:
    """A sourced number of parameter ``name`` in SI units, range-checked."""
    if spec.allow_inf and isinstance(entry, dict) and _is_inf_text(entry.get("value")):
        s = read_sourced({**entry, "value": 1.0}, "count", where, problems, positive=False)
        return None if s is None else Sourced(math.inf, s.source, s.note, s.estimate, s.rule)
    n = len(problems)
    s = read_sourced(entry, spec.dimension, where, problems, positive=False)
    if s is None or len(problems) > n:
        return None
    if not spec.contains(s.value):
        problems.append(_range_problem(name, spec, s.value, where))
        return None
    return s


def _origin(label: str, s: Sourced | None) -> str:
    if s is not None and s.estimate:
        return f"{label}; estimate: {s.rule}"
    return label


def _read_level(table: Any, label: str, file: str, problems: list[str]) -> dict[str, Value]:
    """The parameters of one level table (``label`` as in the file, e.g. ``vendor.AMD``)."""
    where = f"{file}: [{label}]"
    if not isinstance(table, dict):
        problems.append(f"{where} must be a table of parameters, got {table!r}")
        return {}
    out: dict[str, Value] = {}
    origin_label = f"{file} [{label}]"
    for key, entry in table.items():
        if key in BY_DTYPE:
            if not isinstance(entry, dict):
                problems.append(f"{where}: {key} must be a table of sourced factors per compute "
                                f"dtype, e.g. bf16 = {{ value = 0.8, source = \"...\" }}")
                continue
            for dtype, e in entry.items():
                if dtype not in COMPUTE_DTYPES:
                    problems.append(f"{where}: {key}.{dtype}: unknown compute dtype"
                                    f"{suggest(dtype, COMPUTE_DTYPES)}")
                    continue
                s = _read_number(e, key, PARAMS[key], f"{where} {key}.{dtype}", problems)
                if s is not None:
                    out[f"{key}.{dtype}"] = Value(s.value, _origin(origin_label, s), s)
        elif key in BOOLS:
            src = table.get(f"{key}_source")
            if not isinstance(entry, bool):
                problems.append(f"{where}: {key} must be true or false, got {entry!r}")
            elif not (isinstance(src, str) and src.strip()):
                problems.append(f"{where}: {key} needs a {key}_source text saying where the "
                                f"behaviour is documented")
            else:
                out[key] = Value(entry, f"{origin_label}; {src}")
        elif key.endswith("_source") and key[:-7] in BOOLS:
            if key[:-7] not in table:
                problems.append(f"{where}: {key} without {key[:-7]}")
            elif not isinstance(entry, str):
                problems.append(f"{where}: {key} must be a text, got {entry!r}")
        elif key in PARAMS:
            s = _read_number(entry, key, PARAMS[key], f"{where} {key}", problems)
            if s is not None:
                out[key] = Value(s.value, _origin(origin_label, s), s)
        elif key in RETIRED:
            problems.append(f"{where}: parameter {key!r} is {RETIRED[key]}")
        else:
            problems.append(f"{where}: unknown parameter {key!r}"
                            f"{suggest(key, (*PARAMS, *(f'{b}_source' for b in BOOLS)))}")
    return out


def _read_overrides(raw: dict[str, Any], kind: str, file: str, problems: list[str],
                    levels: dict[tuple[str, str], dict[str, Value]]) -> None:
    """``[vendor.<v>]``, ``[class.<c>]`` or ``[device.<id>]`` tables of a file."""
    tables = raw.get(kind)
    if tables is None:
        return
    if not isinstance(tables, dict):
        problems.append(f"{file}: [{kind}] must hold one table per {kind}, got {tables!r}")
        return
    known: Iterable[str] = {"vendor": _known_vendors(), "class": CLASSES,
                            "device": tuple(_catalog_devices())}[kind]
    for key, table in tables.items():
        if key not in known:
            problems.append(f"{file}: [{kind}.{key}]: unknown {kind}{_suggest(key, known)}")
            continue
        levels[(kind, key)] = _read_level(table, f"{kind}.{tomlio.key(key)}", file, problems)


# --------------------------------------------------------------------------------------------
# parsing one file


@functools.cache
def _raw_catalog(engine_id: str) -> dict[str, Any]:
    return tomlio.load(engines_dir() / f"{engine_id}.toml")


def _delegates_of(engine_id: str) -> list[str]:
    """Engine ids a catalog engine delegates to (read from the raw file, no validation)."""
    try:
        table = _raw_catalog(engine_id).get("delegate", {})
    except SpecError:
        return []
    return [v for v in table.values() if isinstance(v, str)] if isinstance(table, dict) else []


def _find_cycle(start: str, first: list[str]) -> list[str] | None:
    """A delegation path from ``start`` back to an engine already on it, if any."""
    def walk(node: str, targets: list[str], path: list[str]) -> list[str] | None:
        for t in targets:
            if t in path:
                return [*path, t]
            if t in ENGINE_IDS:
                found = walk(t, _delegates_of(t), [*path, t])
                if found:
                    return found
        return None
    return walk(start, first, [start])


def parse_engine(raw: dict[str, Any], file: str, *, expected_id: str | None = None) -> Engine:
    """Build an :class:`Engine` from a parsed TOML table; one SpecError with every problem."""
    problems: list[str] = []
    for key in raw:
        if key not in TOP_KEYS and key not in PARAMS:
            problems.append(f"{file}: unknown top-level key {key!r}{suggest(key, TOP_KEYS)}")
        elif key in PARAMS:
            problems.append(f"{file}: parameter {key!r} at top level: put it in [defaults] (or an "
                            f"override table)")
    text = {}
    for key in ("id", "name", "description", "versions"):
        v = raw.get(key)
        if not (isinstance(v, str) and v.strip()):
            problems.append(f"{file}: missing text field {key!r}")
        text[key] = v if isinstance(v, str) else ""
    engine_id = text["id"]
    if expected_id is not None and engine_id and engine_id != expected_id:
        problems.append(f"{file}: id {engine_id!r} does not match the file name ({expected_id!r})")

    runs_on = raw.get("runs_on")
    if not (isinstance(runs_on, list) and runs_on):
        problems.append(f"{file}: runs_on must be a non-empty list of 'all', 'vendor:<vendor>', "
                        f"'class:<class>' or 'device:<id>'")
        runs_on = []
    runs_on = [t for t in runs_on if _check_target(t, f"{file}: runs_on", problems)]
    notes = raw.get("notes", [])
    if not (isinstance(notes, list) and all(isinstance(n, str) for n in notes)):
        problems.append(f"{file}: notes must be a list of texts")
        notes = []

    levels: dict[tuple[str, str], dict[str, Value]] = {}
    levels[("defaults", "")] = (_read_level(raw["defaults"], "defaults", file, problems)
                                if "defaults" in raw else {})
    for kind in ("class", "vendor", "device"):
        _read_overrides(raw, kind, file, problems, levels)

    delegate: list[tuple[str, str]] = []
    table = raw.get("delegate")
    if table is not None:
        if not isinstance(table, dict) or not table:
            problems.append(f"{file}: [delegate] must map targets such as \"vendor:NVIDIA\" to "
                            f"engine ids")
        else:
            for target, target_engine in table.items():
                ok = _check_target(target, f"{file}: [delegate]", problems)
                if not isinstance(target_engine, str) or target_engine not in ENGINE_IDS:
                    problems.append(f"{file}: [delegate] {target!r} = {target_engine!r}: unknown "
                                    f"engine{suggest(str(target_engine), ENGINE_IDS)}")
                elif ok:
                    delegate.append((target, target_engine))
            cycle = _find_cycle(engine_id, [e for _, e in delegate])
            if cycle:
                problems.append(f"{file}: [delegate] cycle {' -> '.join(cycle)}: an engine cannot "
                                f"delegate (directly or through others) back to itself")

    defaults = levels[("defaults", "")]
    if engine_id == "ideal":
        for (level, key), values in levels.items():
            if values:
                label = f"{level}.{key}" if key else level
                problems.append(f"{file}: the ideal engine sets no parameters (found "
                                f"{', '.join(sorted(values))} in [{label}])")
    elif isinstance(raw.get("defaults"), dict) or ("defaults" not in raw and not delegate):
        for name in PARAMS:
            if name in OPTIONAL:
                continue
            flat = f"{name}.bf16" if name in BY_DTYPE else name
            if flat not in defaults and not _failed(raw, name):
                what = f"{name}.bf16" if name in BY_DTYPE else name
                problems.append(f"{file}: [defaults] lacks {what}: a real serving stack is not "
                                f"ideal here; give a sourced value or an estimate with its rule")
    _check_custom_allreduce(levels, file, problems)
    if problems:
        raise SpecError(problems, f"engine {file}")
    return Engine(id=engine_id, name=text["name"], description=text["description"],
                  versions=text["versions"], runs_on=tuple(runs_on),
                  notes=tuple(notes), levels=levels, delegate=tuple(delegate), where=file)


def _check_custom_allreduce(levels: Mapping[tuple[str, str], Mapping[str, Value]], file: str,
                            problems: list[str]) -> None:
    """A file that gives some level a custom all-reduce (``custom_allreduce_max_bytes`` > 0) must
    state its group limit, cost, bandwidth and thresholds somewhere in the file: their ideal values
    (no cost, any size one-shot) would make a real engine's kernels look free."""
    uses = [lvl for lvl, values in levels.items()
            if values.get("custom_allreduce_max_bytes", Value(0.0, "")).value]
    if not uses:
        return
    stated = {k for values in levels.values() for k in values}
    missing = [k for k in CUSTOM_ALLREDUCE if k not in stated]
    if missing:
        where = ", ".join(f"[{lvl}.{key}]" if key else f"[{lvl}]" for lvl, key in uses)
        problems.append(f"{file}: {where} gives the engine a custom all-reduce "
                        f"(custom_allreduce_max_bytes > 0) but the file does not state "
                        f"{', '.join(missing)}: give each a sourced value or an estimate with its "
                        f"rule")


def _failed(raw: dict[str, Any], name: str) -> bool:
    """Whether ``[defaults]`` gives ``name`` (``bf16`` for a compute table), so that a missing
    resolved value means a bad value, already reported, not an absent one."""
    d = raw.get("defaults")
    if not isinstance(d, dict) or name not in d:
        return False
    return not (name in BY_DTYPE and isinstance(d[name], dict) and "bf16" not in d[name])


# --------------------------------------------------------------------------------------------
# catalog access


@functools.cache
def _load_catalog_engine(engine_id: str) -> Engine:
    return parse_engine(_raw_catalog(engine_id), f"{engine_id}.toml", expected_id=engine_id)


def load_engine(ref: str | Path | Engine) -> Engine:
    """An engine by catalog id, or from the path of a TOML file of the same schema."""
    if isinstance(ref, Engine):
        return ref
    text = str(ref)
    if text in ENGINE_IDS:
        return _load_catalog_engine(text)
    if text.endswith(".toml") or "/" in text or "\\" in text:
        path = Path(text)
        return parse_engine(tomlio.load(path), path.name)
    raise SpecError(f"unknown engine {text!r}{suggest(text, ENGINE_IDS)}; the catalog engines are "
                    f"{', '.join(ENGINE_IDS)}, or give the path of a TOML file")


def catalog_engines() -> dict[str, Engine]:
    """Every catalog engine, all files checked and every problem reported together; also checks
    that each catalog device ``native`` hands to another engine is one that engine runs on."""
    problems: list[str] = []
    out: dict[str, Engine] = {}
    present = sorted(p.name[:-5] for p in engines_dir().glob("*.toml")
                     if p.name != CALIBRATION_FILE)
    for name in present:
        if name not in ENGINE_IDS:
            problems.append(f"{name}.toml: not a catalog engine id{suggest(name, ENGINE_IDS)}")
    for engine_id in ENGINE_IDS:
        try:
            out[engine_id] = _load_catalog_engine(engine_id)
        except SpecError as exc:
            problems.extend(exc.problems)
    for eng in out.values():
        if not eng.delegate:
            continue
        for dev in _catalog_devices().values():
            hit = eng.delegate_for(dev)
            if hit and hit[1] in out and not out[hit[1]].runs_on_device(dev):
                problems.append(f"{eng.where}: [delegate] {hit[0]!r} hands {dev.id} to {hit[1]}, "
                                f"which does not run on it")
    if problems:
        raise SpecError(problems, "engine catalog")
    return out


def clear_caches() -> None:
    """Forget loaded engines and the shipped overlay (after an engine file, the calibration or
    the hardware catalog changed)."""
    shipped_overlay.cache_clear()
    _raw_catalog.cache_clear()
    _load_catalog_engine.cache_clear()
    _catalog_devices.cache_clear()


# --------------------------------------------------------------------------------------------
# calibration overlays


def read_overlay(path: str | Path) -> dict[str, Any]:
    """A calibration overlay TOML file, parsed (validated per engine when resolving)."""
    return tomlio.load(Path(path))


def _overlay_value(name: str, v: Any, where: str, problems: list[str]) -> float | bool | None:
    spec = PARAMS[name]
    if spec.dimension == "bool":
        if isinstance(v, bool):
            return v
        problems.append(f"{where}: must be true or false, got {v!r}")
        return None
    if spec.allow_inf and _is_inf_text(v):
        return math.inf
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        problems.append(f"{where}: expected a plain number, got {v!r}")
        return None
    try:
        x = parse_quantity(v, spec.dimension, where)
    except SpecError as exc:
        problems.extend(exc.problems)
        return None
    if not spec.contains(x):
        problems.append(_range_problem(name, spec, x, where))
        return None
    return x


def _overlay_level(table: Any, label: str, problems: list[str]) -> dict[str, Value]:
    where = f"overlay [{label}]"
    if not isinstance(table, dict):
        problems.append(f"{where} must be a table of fitted values, got {table!r}")
        return {}
    out: dict[str, Value] = {}
    for name, v in table.items():
        if name in BY_DTYPE:
            if not isinstance(v, dict):
                problems.append(f"{where}: {name} must be a table of factors per compute dtype")
                continue
            for dtype, x in v.items():
                if dtype not in COMPUTE_DTYPES:
                    problems.append(f"{where}: {name}.{dtype}: unknown compute dtype"
                                    f"{suggest(dtype, COMPUTE_DTYPES)}")
                    continue
                val = _overlay_value(name, x, f"{where} {name}.{dtype}", problems)
                if val is not None:
                    out[f"{name}.{dtype}"] = Value(val, f"overlay [{label}] (fitted)")
        elif name in PARAMS:
            val = _overlay_value(name, v, f"{where} {name}", problems)
            if val is not None:
                out[name] = Value(val, f"overlay [{label}] (fitted)")
        elif name in RETIRED:
            problems.append(f"{where}: parameter {name!r} is {RETIRED[name]}")
        else:
            problems.append(f"{where}: unknown parameter {name!r}{suggest(name, PARAMS)}")
    return out


def _overlay_levels(overlay: Mapping[str, Any], engine_id: str,
                    problems: list[str]) -> dict[tuple[str, str], dict[str, Value]]:
    """The fitted values of one engine in an overlay, by level."""
    section = overlay.get(engine_id)
    if section is None:
        return {}
    label = tomlio.key(engine_id)
    if not isinstance(section, dict):
        problems.append(f"overlay [{label}] must be a table with defaults, vendor, class or device")
        return {}
    out: dict[tuple[str, str], dict[str, Value]] = {}
    known = {"vendor": _known_vendors(), "class": CLASSES, "device": tuple(_catalog_devices())}
    for level, body in section.items():
        if level == "defaults":
            out[("defaults", "")] = _overlay_level(body, f"{label}.defaults", problems)
        elif level in known:
            if not isinstance(body, dict):
                problems.append(f"overlay [{label}.{level}] must hold one table per {level}")
                continue
            for key, table in body.items():
                if key not in known[level]:
                    problems.append(f"overlay [{label}.{level}.{key}]: unknown {level}"
                                    f"{_suggest(key, known[level])}")
                    continue
                out[(level, key)] = _overlay_level(table, f"{label}.{level}.{tomlio.key(key)}",
                                                   problems)
        else:
            problems.append(f"overlay [{label}.{level}]: unknown level"
                            f"{suggest(level, ('defaults', 'vendor', 'class', 'device'))}")
    return out


def check_overlay(overlay: Mapping[str, Any]) -> None:
    """Validate a whole overlay at once (every engine, level and value); one SpecError."""
    problems: list[str] = []
    if not isinstance(overlay, Mapping):
        raise SpecError(f"overlay must be a table of engines, got {overlay!r}")
    for engine_id in overlay:
        if engine_id not in ENGINE_IDS:
            problems.append(f"overlay [{engine_id}]: unknown engine{suggest(engine_id, ENGINE_IDS)}")
        else:
            _overlay_levels(overlay, engine_id, problems)
    if problems:
        raise SpecError(problems, "engine overlay")


# --------------------------------------------------------------------------------------------
# resolution


def _ideal(engine: Engine, device: Device, *, supported: bool, why: str, delegate: str,
           label: str) -> EngineParams:
    origin = dict.fromkeys(FLAT_KEYS, label)
    values: dict[str, Any] = {k: PARAMS[k].ideal for k in SCALARS}
    ideal_dtype = dict.fromkeys(COMPUTE_DTYPES, float(PARAMS["prefill_compute"].ideal))
    return EngineParams(engine=engine.id, device=device.id, supported=supported, why=why,
                        delegate=delegate, versions=engine.versions,
                        prefill_compute=dict(ideal_dtype), decode_compute=dict(ideal_dtype),
                        origin=origin, **values)


#: what the ``absent`` value of an optional parameter means, for the origin text
_ABSENT_MEANS = {"in_switch_overhead": "the library does not reduce inside the switch (inf)",
                 "custom_allreduce_max_bytes": "no custom all-reduce (0 B)",
                 "fastest_collective": "the engine's own collective rules (0)"}


def _resolve_levels(engine: Engine, device: Device,
                    fitted: Mapping[tuple[str, str], Mapping[str, Value]]) -> EngineParams:
    base = device.base or device.id
    order = (("device", base), ("vendor", device.vendor), ("class", device.cls), ("defaults", ""))
    chain = []
    for lvl in order:
        chain.append(fitted.get(lvl, {}))  # a fitted value beats the file at the same level
        chain.append(engine.levels.get(lvl, {}))
    suffix = f" (hypothetical {device.id} resolves as its base {base})" if device.base else ""
    # an engine that sets nothing at any level is the physics bound (``ideal``): every parameter at
    # its ideal value; a real engine's optional parameters it leaves out take their absent value
    real = any(engine.levels.values())
    found: dict[str, Value] = {}
    for key in FLAT_KEYS:
        for level in chain:
            if key in level:
                found[key] = level[key]
                break
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for name in SCALARS:
        if name in found:
            v = found[name]
            values[name] = v.value if name in BOOLS else float(v.value)
            origin[name] = v.origin + suffix
        elif real and PARAMS[name].absent is not None:
            values[name] = PARAMS[name].absent
            origin[name] = f"absent from every level of {engine.where}: {_ABSENT_MEANS[name]}"
        else:
            values[name] = PARAMS[name].ideal
            origin[name] = f"ideal value (absent from every level of {engine.where})"
    tables: dict[str, dict[str, float]] = {}
    for name in BY_DTYPE:
        tables[name] = {}
        fill = next((d for d in FILL_FROM if f"{name}.{d}" in found), None)
        for dtype in COMPUTE_DTYPES:
            key = f"{name}.{dtype}"
            if key in found:
                tables[name][dtype] = float(found[key].value)
                origin[key] = found[key].origin + suffix
            elif fill is not None:
                tables[name][dtype] = float(found[f"{name}.{fill}"].value)
                origin[key] = (f"as {name}.{fill} ({dtype} not listed at any level): "
                               f"{found[f'{name}.{fill}'].origin}{suffix}")
            else:
                tables[name][dtype] = float(PARAMS[name].ideal)
                origin[key] = f"ideal value (absent from every level of {engine.where})"
    return EngineParams(engine=engine.id, device=device.id, supported=True, why="",
                        delegate=engine.id, versions=engine.versions,
                        prefill_compute=tables["prefill_compute"],
                        decode_compute=tables["decode_compute"], origin=origin, **values)


def resolve(engine: str | Path | Engine, device: Device,
            overlay: Mapping[str, Any] | None = None) -> EngineParams:
    """The parameters of ``engine`` on ``device`` in SI units (see the module docstring).

    Parameters
    ----------
    engine : str, Path or Engine
        Catalog id (``"vllm"``), path of an engine TOML file, or a loaded :class:`Engine`.
    device : Device
        A catalog, user or hypothetical device (a hypothetical one resolves as its base).
    overlay : dict, optional
        A parsed calibration overlay: ``{<engine>: {"defaults": {...}, "vendor": {<v>: {...}},
        "class": {<c>: {...}}, "device": {<id>: {...}}}}`` of plain numbers (per-dtype sub-tables
        for the compute factors). Only the sections of the engines used are checked. Default
        (None): the shipped calibration, :func:`shipped_overlay`; ``{}``: none (the files' values).
    """
    return _resolve(load_engine(engine), device,
                    shipped_overlay() if overlay is None else overlay, ())


def calibration_path() -> Path:
    """The shipped calibration overlay, ``grids/data/engines/calibration.toml``."""
    return engines_dir() / CALIBRATION_FILE


@functools.cache
def shipped_overlay() -> dict[str, Any]:
    """The shipped calibration overlay without its ``[provenance]`` (empty when absent)."""
    path = calibration_path()
    if not path.exists():
        return {}
    raw = tomlio.load(path)
    raw.pop("provenance", None)
    return raw


def _resolve(eng: Engine, device: Device, overlay: Mapping[str, Any],
             seen: tuple[str, ...]) -> EngineParams:
    if eng.id in seen:  # parse_engine rejects cycles among catalog engines; a guard for the rest
        raise SpecError(f"engine delegation cycle {' -> '.join((*seen, eng.id))}")
    problems: list[str] = []
    hit = eng.delegate_for(device)
    note = ""
    if hit is not None:
        target = load_engine(hit[1])
        if target.runs_on_device(device):
            sub = _resolve(target, device, overlay, (*seen, eng.id))
            origin = {k: f"{eng.id} -> {sub.delegate} ({hit[0]}): {v}" for k, v in sub.origin.items()}
            return EngineParams(**{**sub.__dict__, "engine": eng.id, "origin": origin})
        note = f"; {hit[0]} names {target.id}, which does not run on {device.id}"
    if not eng.runs_on_device(device):
        why = f"{eng.id} does not run on {device.id} ({device.vendor}){note}"
        return _ideal(eng, device, supported=False, why=why, delegate=eng.id,
                      label=f"unsupported: {why}")
    fitted = _overlay_levels(overlay, eng.id, problems)
    if problems:
        raise SpecError(problems, "engine overlay")
    params = _resolve_levels(eng, device, fitted)
    if note:
        params.origin.update({k: v + note for k, v in params.origin.items()})
    return params
