"""Provenance attributes of a result: package version, grid spec, catalog hash, efficiencies, time."""

from __future__ import annotations

import datetime as _dt
import functools
import json
import math
from importlib import metadata

from grids.hardware import catalog_hash
from grids.spec import GridSpec


@functools.cache
def package_version() -> str:
    """The installed distribution's version (looked up once per process)."""
    try:
        return metadata.version("accel-sweep")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "0+source"


def provenance(spec: GridSpec, *, engines: list | None = None) -> dict[str, str]:
    """Attributes saying what produced a result: version, spec, catalog hash, and the device
    efficiencies and engine parameters in force (JSON, SI units). ``engines``: the spec's
    :meth:`~grids.spec.GridSpec.resolved_engines` when the caller has them already."""
    eff = {d.id: {"flops_efficiency": d.efficiency.flops_efficiency,
                  "flops_efficiency_by_dtype": dict(d.efficiency.flops_efficiency_by_dtype),
                  "bandwidth_efficiency": d.efficiency.bandwidth_efficiency,
                  "jitter": d.efficiency.jitter,
                  "capacity_fraction": d.efficiency.capacity_fraction,
                  "origin": d.efficiency.origin} for d in spec.hardware}
    resolved = spec.resolved_engines() if engines is None else engines
    engine_records = {f"{d.id}/{r.engine}": _engine_record(r)
                      for d, row in zip(spec.hardware, resolved) for r in row}
    version = package_version()
    return {
        "title": "accel-sweep result: LLM inference roofline over a parametric grid",
        "Conventions": "CF-1.8",
        "source": f"accel-sweep {version}",
        "package_version": version,
        "created_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "catalog_sha256": catalog_hash(),
        "grid_spec_toml": spec.to_toml(),
        "efficiency_parameters_json": json.dumps(eff, sort_keys=True),
        "engine_parameters_json": json.dumps(engine_records, sort_keys=True,
                                             default=_json_default),
        "output_len": "" if spec.output_len_is_dim else str(spec.output_len[0]),
        "prefill_chunk_tokens": str(spec.prefill_chunk),
        "batching": spec.batching,
        "load_dim": spec.load_dim,
        "model_reference": "docs/model.md of accel-sweep (roofline, first principles)",
    }


def _engine_record(params) -> dict:
    """An engine resolution as JSON-safe values (infinite caps as the string 'inf')."""
    def clean(v):
        if isinstance(v, float) and not math.isfinite(v):
            return str(v)
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        return v

    return {k: clean(v) for k, v in params.to_dict().items() if k != "device"}


def _json_default(x):
    return str(x)


#: engine parameters shown by ``sweep info`` (all are in the attribute)
ENGINE_SHOWN = (("bandwidth", "bw", "{:.2f}"), ("iteration_overhead", "t_iter", "{:.2e} s"),
                ("request_overhead", "t_req", "{:.2e} s"), ("memory_fraction", "mem", "{:.2f}"),
                ("max_batch", "cap", "{}"))


def parameters_text(attrs) -> list[str]:
    """The device efficiencies and engine parameters in force, from a result's provenance JSON,
    as the indented lines ``sweep info`` prints (and the HTML report shows)."""
    import json

    lines = []
    if "efficiency_parameters_json" in attrs:
        eff = json.loads(attrs["efficiency_parameters_json"])
        lines.append("  device efficiencies in force (achievable fractions):")
        for dev, e in eff.items():
            by = ", ".join(f"{k} {v:.2f}" for k, v in e.get("flops_efficiency_by_dtype", {}).items())
            lines.append(f"    {dev:16s} flops {e['flops_efficiency']:.2f}"
                         f"{' (' + by + ')' if by else ''}, bandwidth "
                         f"{e['bandwidth_efficiency']:.2f}, capacity {e['capacity_fraction']:.2f}, "
                         f"jitter {e['jitter']:.2f}")
    if "engine_parameters_json" in attrs:
        eng = json.loads(attrs["engine_parameters_json"])
        lines.append("  engine parameters in force (per device/engine; factors on the above):")
        for key, p in eng.items():
            if not p.get("supported", True):
                lines.append(f"    {key:28s} not supported: {p.get('why', '')}")
                continue
            shown = ", ".join(f"{label} {fmt.format(p[k]) if not isinstance(p[k], str) else p[k]}"
                              for k, label, fmt in ENGINE_SHOWN if k in p)
            via = p.get("delegate", "")
            lines.append(f"    {key:28s} {shown}{f' (via {via})' if via and via not in key else ''}")
    return lines
