"""Provenance attributes of a result: package version, grid spec, catalog hash, efficiencies, time."""

from __future__ import annotations

import datetime as _dt
import json
from importlib import metadata

from grids.hardware import catalog_hash
from grids.spec import GridSpec


def package_version() -> str:
    try:
        return metadata.version("accel-sweep")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "0+source"


def provenance(spec: GridSpec) -> dict[str, str]:
    eff = {d.id: {"flops_efficiency": d.efficiency.flops_efficiency,
                  "bandwidth_efficiency": d.efficiency.bandwidth_efficiency,
                  "layer_overhead_s": d.efficiency.layer_overhead,
                  "jitter": d.efficiency.jitter,
                  "capacity_fraction": d.efficiency.capacity_fraction,
                  "origin": d.efficiency.origin} for d in spec.hardware}
    return {
        "title": "accel-sweep result: LLM inference roofline over a parametric grid",
        "Conventions": "CF-1.8",
        "source": f"accel-sweep {package_version()}",
        "package_version": package_version(),
        "created_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "catalog_sha256": catalog_hash(),
        "grid_spec_toml": spec.to_toml(),
        "efficiency_parameters_json": json.dumps(eff, sort_keys=True),
        "output_len": "" if spec.output_len_is_dim else str(spec.output_len[0]),
        "prefill_chunk_tokens": str(spec.prefill_chunk),
        "model_reference": "docs/model.md of accel-sweep (roofline, first principles)",
    }
