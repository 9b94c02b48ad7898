"""Resolution: an (engine, device) pair to plain SI numbers (:class:`EngineParams`).

:func:`resolve` takes each parameter by a per-parameter fallback ``[device.<id>]`` ->
``[vendor.<vendor>]`` -> ``[class.<cls>]`` -> ``[defaults]`` -> the ideal value (only for
parameters whose ideal value is physically right when absent, see ``OPTIONAL``). A calibration
overlay (fitted plain numbers with the same hierarchy) takes precedence over the file at the same
or a less specific level. A value the file marks ``pooled = true`` (a stack without measurements,
whose value is only a prior) is replaced by the overlay's cross-engine ``[pooled]`` value of that
parameter, fitted on the rows of every engine with measurements (issue 20: a stack without data
is not assumed perfect). An engine with a ``[delegate]`` table (``native``) hands each device to
another engine, most specific key first. An engine loaded as ``<id>@<build>`` (one of its file's
``[builds]``) takes every value that build states first, at any level, then the values fitted on
that release's own rows (the overlay's ``[<id>@<build>]`` section), then those fitted on the rows
of the build it names as ``fit_fallback`` (a release of the same generation): the file's tables and
their fit describe another release.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from grids.engines.catalog import load_engine
from grids.engines.overlay import _overlay_levels, _pooled_level, shipped_overlay
from grids.engines.parameters import (
    BOOLS,
    BY_DTYPE,
    FILL_FROM,
    FLAT_KEYS,
    PARAMS,
    SAME_RATE,
    SCALARS,
    EngineParams,
)
from grids.engines.profile import Engine, Value
from grids.errors import SpecError
from grids.hardware import COMPUTE_DTYPES, Device

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
                 "fastest_collective": "the engine's own collective rules (0)",
                 "kv_efficiency": "no sourced decode-attention kernel rate: the KV cache is "
                                  "read at the engine's bandwidth factor (1, an upper bound)",
                 "gqa_aware_attention": "decode attention reads a KV head once for its query "
                                        "group, as current kernels do (FlashAttention, "
                                        "FlashInfer, XQA, ROCm custom paged attention)",
                 "narrow_float_compute": "the engine runs FP8 and FP4 GEMMs where the device "
                                         "has the units, as current releases do",
                 "narrow_kv_cache": "the engine stores an 8- or 4-bit KV cache, as current "
                                    "releases do"}


def _resolve_levels(engine: Engine, device: Device,
                    fitted: Mapping[tuple[str, str], Mapping[str, Value]],
                    pooled: Mapping[str, Value] | None = None,
                    build_fitted: Sequence[Mapping[tuple[str, str], Mapping[str, Value]]] = (),
                    ) -> EngineParams:
    base = device.base or device.id
    order = (("device", base), ("vendor", device.vendor), ("class", device.cls), ("defaults", ""))
    # what a build states replaces, at every level, the file's value (which describes another
    # release) and its fit; so does what was fitted on the build's own rows (its overlay section
    # ``[<id>@<build>]``), then what was fitted on its ``fit_fallback`` build's rows; what none
    # gives is the file's build's, fitted or not
    build = engine.active.levels if engine.active is not None else {}
    chain = [build.get(lvl, {}) for lvl in order]
    chain += [fit.get(lvl, {}) for fit in build_fitted for lvl in order]
    for lvl in order:
        chain.append(fitted.get(lvl, {}))  # a fitted value beats the file at the same level
        chain.append(engine.levels.get(lvl, {}))
    suffix = f" (hypothetical {device.id} resolves as its base {base})" if device.base else ""
    # an engine that sets nothing at any level is the physics bound (``ideal``): every parameter at
    # its ideal value; a real engine's optional parameters it leaves out take their absent value
    real = any(engine.levels.values())
    found: dict[str, Value] = {}
    replaced: set[str] = set()  # pooled priors the overlay's [pooled] value replaced
    for key in FLAT_KEYS:
        name, _, dtype = key.partition(".")
        twin = f"{name}.{SAME_RATE[dtype]}" if dtype in SAME_RATE else ""
        for level in chain:
            if key in level:
                found[key] = level[key]
                break
            if twin in level:  # the same-rate 16-bit dtype at this level stands for it
                t = level[twin]
                found[key] = Value(t.value, f"as {twin} at the same level (one 16-bit rate): "
                                            f"{t.origin}", t.sourced, t.pooled)
                break
        prior = found.get(key)
        if prior is not None and prior.pooled and pooled and key in pooled:
            found[key] = Value(pooled[key].value,
                               f"overlay [pooled] (fitted across the engines with measurements; "
                               f"replaces the prior {prior.value:g} of {prior.origin})")
            replaced.add(key)
    # a dtype no level lists takes its bf16 (fp16) value; where that value was a pooled prior,
    # the pooled fit of the dtype itself stands in (the cross-engine fit has one per dtype)
    for name in BY_DTYPE:
        fill = next((d for d in FILL_FROM if f"{name}.{d}" in found), None)
        if fill is None or f"{name}.{fill}" not in replaced:
            continue
        for dtype in COMPUTE_DTYPES:
            key = f"{name}.{dtype}"
            if key not in found and pooled and key in pooled:
                found[key] = Value(pooled[key].value,
                                   f"overlay [pooled] (fitted across the engines with "
                                   f"measurements; {engine.where} lists no {dtype}, and its "
                                   f"{fill} value is a prior the pooled fit replaces)")
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
        for the compute factors), and optionally ``{"pooled": {...}}``, the cross-engine values
        that replace what engine files mark ``pooled = true``. Only the sections of the engines
        used (and ``pooled``) are checked. Default
        (None): the shipped calibration, :func:`shipped_overlay`; ``{}``: none (the files' values).
    """
    return _resolve(load_engine(engine), device,
                    shipped_overlay() if overlay is None else overlay, ())


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
    fitted = _overlay_levels(overlay, eng.file_id, problems)
    # a build of the file: the values fitted on that release's rows come first (the file's own
    # build, loaded as <id>@<its build>, has no section of its own: it is [<id>])
    build_fitted = (_overlay_levels(overlay, eng.id, problems) if eng.active is not None
                    else {})
    fits = [build_fitted]
    # where the build's own rows fit nothing, the build it names (``fit_fallback``, a release of
    # the same generation) comes before the file's fit, which describes another generation
    if eng.active is not None and eng.active.fit_fallback:
        fits.append(_overlay_levels(overlay, f"{eng.file_id}@{eng.active.fit_fallback}",
                                    problems))
    pooled = _pooled_level(overlay, problems)
    if problems:
        raise SpecError(problems, "engine overlay")
    params = _resolve_levels(eng, device, fitted, pooled, fits)
    if note:
        params.origin.update({k: v + note for k, v in params.origin.items()})
    return params
