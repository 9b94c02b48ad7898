"""Grid specs: which hardware x engine x model x batch x context x output_len x precision x
parallelism to sweep.

A spec is a TOML file or the same structure as a dict. Top-level keys are the dims::

    hardware    = ["h100-sxm", "mi300x"]      # catalog ids, TOML paths, or "all"
    engine      = ["native", "ideal"]         # serving engines (docs/engines.md); default native
    model       = ["llama-3.1-8b", "my/config.json"]
    batch       = [1, 8, 64]                  # or { from = 1, to = 1024, scale = "log2" }
    context     = [128, 2048]                 # prompt tokens; same forms as batch
    output_len  = 256                         # a number (setting) or a list (an extra dim)
    precision   = ["bf16", "fp8", "w4a16"]
    parallelism = ["tp1", "tp4-ep2"]          # or { tp = [1, 2, 4], pp = [1], ep = [1], dp = [1] }
                                              # or "auto" / { auto = true, max_devices = 256 }
    best_layout = "power"                     # keep only each point's best layout (a basis;
                                              # true: the default basis); default: keep all

    calibration = "my-engines.toml"           # engine parameter overlay (default: the shipped)

    [workload]
    prefill_chunk = 8192                      # tokens per prefill forward pass (else the engine's)
    context_scaling = 1.0                     # allow prompts beyond the model's window (x factor)

    [cost]                                    # price basis and parameters (docs/prices.md)
    basis = "cloud"

    [efficiency]                              # overrides for every device ...
    flops_efficiency = 0.6
    [efficiency.h100-sxm]                     # ... or for one device
    bandwidth_efficiency = 0.85

    [hypothetical.h100-fast-hbm]              # a derived device; list values are swept
    base = "h100-sxm"
    hbm_bandwidth = ["4 TB/s", "8 TB/s", "16 TB/s"]

The value axes (whole numbers, request rates, names, layouts) are read by :mod:`grids.spec_axes`;
the hardware axis, with its ``[efficiency]`` overrides and ``[hypothetical]`` devices, by
:mod:`grids.spec_hardware`.

Every problem in a spec is collected and reported in one :class:`grids.errors.SpecError`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grids import engines as enginecat
from grids import hardware as hwcat
from grids import models as mdcat
from grids import tomlio
from grids.auto_layouts import auto_layouts
from grids.errors import SpecError, suggest
from grids.layouts import Layout
from grids.precisions import Precision, parse_precision
from grids.spec_axes import (
    RATE_DIM,
    _auto_budget,
    _int_axis,
    _layouts,
    _plain,
    _rate_axis,
    _str_list,
    prefill_chunk_problem,
)
from grids.spec_axes import RATE_MAX as RATE_MAX  # re-exported: sweep.execute reads it from here
from grids.spec_hardware import _hardware

DIMS = ("hardware", "engine", "model", "batch", "context", "output_len", "precision",
        "parallelism")
#: serving modes (docs/model.md section 13): iteration-level (continuous) batching at a
#: concurrency of ``batch`` requests per replica, or static batches of ``batch`` sequences
BATCHING = ("continuous", "static")
DEFAULT_BATCHING = "continuous"
TOP_KEYS = (*DIMS, RATE_DIM, "batching", "best_layout", "workload", "efficiency", "hypothetical",
            "calibration", "cost", "name", "description")
WORKLOAD_KEYS = {"prefill_chunk": "count", "output_len": "count", "context_scaling": "fraction"}
MAX_POINTS_WARNING = 10**10
#: the engine of the default grid: each device served by its vendor's reference stack
DEFAULT_ENGINE = "native"
#: tokens per prefill forward pass (chunked prefill) unless a spec's [workload] says otherwise
DEFAULT_PREFILL_CHUNK = 8192

#: the seeds' landscape (seed 004's fourteen models plus Llama-2-70B of seed 002)
DEFAULT_MODELS = (
    "llama-3.1-8b", "ministral-8b", "qwen3-8b", "qwen3-14b", "mistral-small-3.1-24b",
    "qwen3-32b", "llama-3.3-nemotron-super-49b", "llama-3.3-70b", "qwen2.5-72b", "llama-2-70b",
    "mixtral-8x7b", "mixtral-8x22b", "llama-4-scout", "qwen3-235b-a22b", "deepseek-r1",
)
#: the default grid's layouts: every device count from 1 to 512 in powers of two (tensor
#: parallel within an 8-device node, then pipeline stages), so that each device has a layout
#: within 2x of the fewest devices that hold each model (SRAM parts need hundreds); expert
#: parallelism for the MoE models; one weight-offload layout
DEFAULT_LAYOUTS = ("tp1", "tp2", "tp4", "tp8", "tp8-pp2", "tp8-pp4", "tp8-pp8", "tp8-pp16",
                   "tp8-pp32", "tp8-pp64", "ep4", "ep8", "tp2-ep4", "tp8-off0.25")
DEFAULT_SPEC: dict[str, Any] = {
    "name": "default: the seeds' landscape",
    "hardware": "all",
    "engine": [DEFAULT_ENGINE],
    "model": list(DEFAULT_MODELS),
    "batch": {"from": 1, "to": 1024, "scale": "log2"},
    "context": {"from": 128, "to": 131072, "scale": "log2"},
    "output_len": 256,
    "batching": DEFAULT_BATCHING,
    "precision": ["bf16", "fp8", "w4a16"],
    "parallelism": list(DEFAULT_LAYOUTS),
    "workload": {"prefill_chunk": DEFAULT_PREFILL_CHUNK},
}


@dataclass
class GridSpec:
    """A validated grid: per-dim values as catalog objects, in SI units."""

    hardware: list[hwcat.Device]
    models: list[mdcat.ModelArch]
    batch: list[int] | list[float]  # request rates [1/s] when ``at_rate``
    context: list[int]
    output_len: list[int]
    output_len_is_dim: bool
    precisions: list[Precision]
    layouts: list[Layout]
    prefill_chunk: int = DEFAULT_PREFILL_CHUNK
    raw: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    engines: list[Any] = field(default_factory=list)
    engine_overlay: dict[str, Any] | None = None  # calibration overlay (None = the shipped one)
    cost: Any = None  # grids.prices.CostSpec
    context_scaling: float = 1.0
    batching: str = DEFAULT_BATCHING
    #: the grid's load axis holds request rates of the layout [1/s] (``batch`` holds them)
    at_rate: bool = False
    #: keep only each point's best layout (highest throughput on this comparison basis, its
    #: text form; "" = the default basis; sweep.analysis.basis reads it) instead of every
    #: layout; None = keep every layout (the result has the parallelism dim)
    best_layout: str | None = None

    def __post_init__(self) -> None:
        if not self.engines:
            self.engines = [enginecat.load_engine(DEFAULT_ENGINE)]

    @property
    def load_dim(self) -> str:
        """Name of the load axis: ``batch`` (sequences per replica) or ``request_rate``."""
        return RATE_DIM if self.at_rate else "batch"

    @property
    def mode(self) -> float:
        """The kernels' serving mode (``kernels.params.MODE_*`` value; grids does not import
        kernels, the values are 0 static, 1 continuous, 2 continuous at a request rate)."""
        if self.at_rate:
            return 2.0
        return 0.0 if self.batching == "static" else 1.0

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self.hardware), len(self.engines), len(self.models), len(self.batch),
                len(self.context), len(self.output_len), len(self.precisions), len(self.layouts))

    def resolved_engines(self) -> list[list[Any]]:
        """``[h][e]``: engine e resolved for device h (:class:`grids.engines.EngineParams`)."""
        return [[enginecat.resolve(e, d, self.engine_overlay) for e in self.engines]
                for d in self.hardware]

    def device_costs(self) -> list[Any]:
        """Per device, its :class:`grids.prices.DeviceCost` under the spec's ``[cost]`` (NaN
        fixed cost where unpriced)."""
        from grids.prices import device_costs

        costs = device_costs(self.hardware, self.cost, missing="nan")
        return [costs[d.id] for d in self.hardware]

    @property
    def n_points(self) -> int:
        """Points evaluated (every layout, also when only the best one is kept)."""
        return math.prod(self.shape)

    @property
    def keeps_best_layout(self) -> bool:
        """The result keeps one layout per point (``best_layout``), not the parallelism dim."""
        return self.best_layout is not None

    @property
    def result_shape(self) -> tuple[int, ...]:
        """The kernel's dims as the result stores them: :attr:`shape`, without the layouts when
        only the best one is kept."""
        return self.shape[:-1] if self.keeps_best_layout else self.shape

    def to_toml(self) -> str:
        """The spec as TOML text (for provenance attributes)."""
        return spec_toml(self.raw)


# --------------------------------------------------------------------------------------------


def load_spec(spec: str | Path | dict[str, Any] | GridSpec | None = None) -> GridSpec:
    """Build a :class:`GridSpec` from a TOML path, a dict, a GridSpec, or None (default grid)."""
    if isinstance(spec, GridSpec):
        return spec
    if spec is None:
        return spec_from_dict(DEFAULT_SPEC)
    if isinstance(spec, dict):
        return spec_from_dict(spec)
    if not isinstance(spec, (str, Path)):
        hint = (" (a list of values belongs under a key: e.g. {'hardware': [...]})"
                if isinstance(spec, (list, tuple)) else "")
        raise SpecError(f"a grid spec is a TOML file path, a dict of the same structure or None "
                        f"(the default grid), got {type(spec).__name__} {spec!r:.60}{hint}")
    path = Path(spec)
    if not path.exists():
        raise SpecError(f"grid spec file {str(path)!r} not found (give a TOML path, or no argument "
                        f"for the built-in default grid)")
    return spec_from_dict(tomlio.load(path), base_dir=path.parent)

def spec_from_dict(raw: dict[str, Any], base_dir: Path | None = None) -> GridSpec:
    """Validate a spec dict; every problem is reported at once."""
    problems: list[str] = []
    if not isinstance(raw, dict):
        raise SpecError(f"a grid spec must be a table/dict, got {type(raw).__name__}")
    raw = _plain(raw)
    for key in raw:
        if key not in TOP_KEYS:
            problems.append(f"unknown key {key!r}{suggest(key, TOP_KEYS)}")
    workload = raw.get("workload", {}) or {}
    if not isinstance(workload, dict):
        problems.append("workload: must be a table")
        workload = {}
    for key in workload:
        if key not in WORKLOAD_KEYS:
            problems.append(f"workload: unknown key {key!r}{suggest(key, WORKLOAD_KEYS)}")

    def resolve(ref: str) -> str:
        if base_dir is not None and (ref.endswith((".toml", ".json")) or "/" in ref):
            p = Path(ref)
            return str(p if p.is_absolute() else base_dir / p)
        return ref

    # hardware (+ efficiency overrides, + hypothetical devices)
    eff_over = raw.get("efficiency", {}) or {}
    devices = _hardware(raw.get("hardware", "all"), eff_over, raw.get("hypothetical", {}) or {},
                        resolve, problems)

    _no_duplicate_ids("hardware", [d.id for d in devices], problems)

    engines = []
    for ref in _str_list(raw.get("engine", [DEFAULT_ENGINE]), "engine", problems):
        try:
            engines.append(enginecat.load_engine(resolve(ref)))
        except SpecError as exc:
            problems.extend(f"engine: {p}" for p in exc.problems)
    _no_duplicate_ids("engine", [e.id for e in engines], problems)
    overlay = None
    if "calibration" in raw:
        cal = raw["calibration"]
        if not isinstance(cal, str) or not cal.strip():
            problems.append(f"calibration: give the path of an engine calibration overlay (TOML), "
                            f"got {cal!r}")
        else:
            try:
                overlay = load_overlay(resolve_path(cal, base_dir))
            except SpecError as exc:
                problems.extend(f"calibration: {p}" for p in exc.problems)

    models: list[mdcat.ModelArch] = []
    for ref in _str_list(raw.get("model", list(DEFAULT_MODELS)), "model", problems):
        try:
            models.append(mdcat.load_model(resolve(ref)))
        except SpecError as exc:
            problems.extend(f"model: {p}" for p in exc.problems)
    _no_duplicate_ids("model", [m.id for m in models], problems)

    batching = raw.get("batching", DEFAULT_BATCHING)
    if batching not in BATCHING:
        problems.append(f"batching: {batching!r} is not a serving mode; use 'continuous' "
                        f"(iteration-level batching, what serving engines run) or 'static' (a "
                        f"fixed batch prefilled and decoded together)")
        batching = DEFAULT_BATCHING
    at_rate = RATE_DIM in raw
    batch: list[int] | list[float]
    if at_rate:
        if "batch" in raw:
            problems.append("give batch (requests in flight per replica) or request_rate "
                            "(requests per second), not both")
        if batching == "static":
            problems.append("request_rate needs batching = 'continuous' (a static batch has no "
                            "arrival rate)")
        batch = _rate_axis(raw[RATE_DIM], problems)
    else:
        batch = _int_axis(raw.get("batch", [1]), "batch", problems)
    context = _int_axis(raw.get("context", [1024]), "context", problems)
    out_raw = raw.get("output_len", workload.get("output_len", 256))
    if "output_len" in raw and "output_len" in workload:
        problems.append("output_len given both at the top level and in [workload]; keep one")
    output_len = _int_axis(out_raw, "output_len", problems)
    out_is_dim = isinstance(out_raw, (list, dict))

    precisions: list[Precision] = []
    for name in _str_list(raw.get("precision", ["bf16"]), "precision", problems):
        try:
            precisions.append(parse_precision(name))
        except SpecError as exc:
            problems.extend(exc.problems)

    par = raw.get("parallelism", ["tp1"])
    auto = _auto_budget(par, problems)
    if auto is not None:
        layouts = (auto_layouts(devices, models, precisions, auto)
                   if devices and models and precisions else [])
    else:
        layouts = _layouts(par, problems)
    names = [lay.name for lay in layouts]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        spelled = ["; ".join(" and ".join(repr(lay.display) for lay in layouts if lay.name == n)
                             + f" (both {n})" for n in dups)]
        problems.append(f"parallelism: the same layout is given twice: {spelled[0]}")
    if models and layouts:
        pads = _any_engine_pads_heads(devices, engines, overlay)
        for lay in layouts:
            why = [lay.problems_for_model(m, pads) for m in models]
            if all(why):
                problems.append(f"parallelism: layout {lay.display!r} suits none of the models: "
                                f"{'; '.join(w[0] for w in why)}")

    best = _best_layout(raw.get("best_layout", False), problems)

    chunk = workload.get("prefill_chunk", DEFAULT_PREFILL_CHUNK)
    bad = prefill_chunk_problem(chunk, "workload.prefill_chunk")
    if bad:
        problems.append(bad)
        chunk = DEFAULT_PREFILL_CHUNK
    scaling = workload.get("context_scaling", 1.0)
    if (isinstance(scaling, bool) or not isinstance(scaling, (int, float))
            or not 1.0 <= scaling <= 1024.0):
        problems.append(f"workload.context_scaling: a factor in [1, 1024] by which prompts may "
                        f"exceed a model's context window (rope scaling), got {scaling!r}")
        scaling = 1.0
    cost = None
    if "cost" in raw:
        from grids.prices import parse_cost_spec

        try:
            cost = parse_cost_spec(raw["cost"], device_ids=[d.id for d in devices])
        except SpecError as exc:
            problems.extend(f"cost: {p}" for p in exc.problems)
    if problems:
        raise SpecError(problems, "grid spec")
    spec = GridSpec(devices, models, batch, context, output_len, out_is_dim, precisions, layouts,
                    int(chunk), raw=dict(raw), name=str(raw.get("name", "")), engines=engines,
                    engine_overlay=overlay, cost=cost, context_scaling=float(scaling),
                    batching=str(batching), at_rate=at_rate, best_layout=best)
    if spec.n_points > MAX_POINTS_WARNING:
        raise SpecError(f"grid spec: {spec.n_points:.3g} points is more than "
                        f"{MAX_POINTS_WARNING:.0e}; split the grid or narrow an axis")
    return spec


def _best_layout(value: Any, problems: list[str]) -> str | None:
    """``best_layout``: false (keep every layout), true (the best on the default basis) or a
    basis such as ``"power"``, ``"device"``, ``"system:8"`` (its text is read by the run,
    ``sweep.analysis.basis.parse_basis``)."""
    if value is False:
        return None
    if value is True:
        return ""
    if isinstance(value, str) and value.strip():
        return value.strip()
    problems.append(f"best_layout: true (the best layout on the default basis, per kW), a "
                    f"comparison basis such as 'power', 'device', 'system:8' or 'cost', or "
                    f"false (keep every layout), got {value!r}")
    return None


def _any_engine_pads_heads(devices: list[hwcat.Device], engines: list[Any],
                           overlay: dict[str, Any] | None) -> bool:
    """True if some engine of the grid pads attention heads on some device of it (then a tp that
    does not divide the heads is not an error of the spec)."""
    for e in engines:
        for d in devices:
            try:
                r = enginecat.resolve(e, d, overlay)
            except SpecError:
                continue
            if r.supported and r.pads_heads:
                return True
    return False


def load_overlay(path: str | os.PathLike[str]) -> dict[str, Any]:
    """An engine calibration overlay file (``sweep calibrate -o``), parsed and checked whole
    (every engine section, level and value, :func:`grids.engines.check_overlay`), without its
    ``[provenance]``: a misspelt section is an error wherever an overlay is read, never ignored."""
    raw = tomlio.load(Path(path))
    raw.pop("provenance", None)
    enginecat.check_overlay(raw)
    return raw


def resolve_path(ref: str, base_dir: Path | None) -> Path:
    """A file path of a spec, relative to the spec file's directory."""
    p = Path(ref).expanduser()
    return p if p.is_absolute() or base_dir is None else base_dir / p


def _no_duplicate_ids(kind: str, ids: list[str], problems: list[str]) -> None:
    """Two entries of one dim must not resolve to the same id (the coordinate would repeat a
    label, and every analysis across that dim would compare a thing with itself)."""
    dups = sorted({i for i in ids if ids.count(i) > 1})
    if dups:
        problems.append(f"{kind}: {', '.join(map(repr, dups))} given twice (different references "
                        f"to the same {kind}); keep one")


def spec_toml(raw: dict[str, Any]) -> str:
    """A spec dict as TOML text (the dims' ranges as inline tables), e.g. for provenance."""
    return tomlio.dumps(raw, inline=(*DIMS, RATE_DIM))
