"""Build the self-describing result: dims, per-dim coordinates, metric variables, provenance."""

from __future__ import annotations

import datetime as _dt
import json
from importlib import metadata

import numpy as np
import xarray as xr

from grids.hardware import catalog_hash
from grids.spec import GridSpec
from kernels.params import METRICS
from sweep.variables import COORDS, DIM_ATTRS, VARIABLES


def package_version() -> str:
    try:
        return metadata.version("accel-sweep")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "0+source"


def result_dims(spec: GridSpec) -> tuple[str, ...]:
    if spec.output_len_is_dim:
        return ("hardware", "model", "batch", "context", "output_len", "precision", "parallelism")
    return ("hardware", "model", "batch", "context", "precision", "parallelism")


def coordinate_values(spec: GridSpec) -> dict[str, tuple[str, np.ndarray, dict]]:
    """name -> (dim, values, attrs) for every dim and per-dim coordinate."""
    devs, models = spec.hardware, spec.models
    out: dict[str, tuple[str, np.ndarray, dict]] = {
        "hardware": ("hardware", np.array([d.id for d in devs], dtype=object), {}),
        "model": ("model", np.array([m.id for m in models], dtype=object), {}),
        "batch": ("batch", np.array(spec.batch, dtype=np.int64), {}),
        "context": ("context", np.array(spec.context, dtype=np.int64), {}),
        "precision": ("precision", np.array([p.name for p in spec.precisions], dtype=object), {}),
        "parallelism": ("parallelism", np.array([x.name for x in spec.layouts], dtype=object), {}),
    }
    if spec.output_len_is_dim:
        out["output_len"] = ("output_len", np.array(spec.output_len, dtype=np.int64), {})
    for name in list(out):
        out[name][2].update(DIM_ATTRS[name])

    def dram(d, attr):
        t = d.tier_of_kind("dram")
        return getattr(t, attr) if t else (np.nan if attr == "bandwidth" else 0.0)

    values = {
        "hardware_name": [d.name for d in devs],
        "hardware_class": [d.cls for d in devs],
        "peak_bf16_flops": [d.peak_flops.get("bf16", d.peak_flops.get("fp16", np.nan))
                            for d in devs],
        "peak_fp8_flops": [d.peak_flops.get("fp8", np.nan) for d in devs],
        "hbm_bandwidth": [dram(d, "bandwidth") for d in devs],
        "hbm_capacity": [dram(d, "capacity") for d in devs],
        "sram_capacity": [(d.tier_of_kind("sram").capacity if d.tier_of_kind("sram") else 0.0)
                          for d in devs],
        "device_memory": [d.device_capacity for d in devs],
        "link_bandwidth": [d.link_bandwidth for d in devs],
        "tdp": [d.tdp for d in devs],
        "release_year": [d.release_year for d in devs],
        "params_total": [m.params_total for m in models],
        "params_active": [m.params_active for m in models],
        "n_layers": [m.n_layers for m in models],
        "kv_bytes_per_token": [m.kv_bytes_per_token(16) for m in models],
        "weight_bits": [p.weight_bits for p in spec.precisions],
        "act_bits": [p.act_bits for p in spec.precisions],
        "kv_bits": [p.kv_bits for p in spec.precisions],
        "tp": [x.tp for x in spec.layouts], "pp": [x.pp for x in spec.layouts],
        "ep": [x.ep for x in spec.layouts], "dp": [x.dp for x in spec.layouts],
        "offload": [x.offload for x in spec.layouts],
        "devices": [x.devices for x in spec.layouts],
    }
    for dim, name, units, long_name in COORDS:
        vals = values[name]
        arr = (np.array(vals, dtype=object) if isinstance(vals[0], str)
               else np.array(vals, dtype=np.int64 if isinstance(vals[0], (int, np.integer))
                             and not isinstance(vals[0], bool) else np.float64))
        attrs = {"long_name": long_name}
        if units:
            attrs["units"] = units
        out[name] = (dim, arr, attrs)
    return out


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


def build_dataset(spec: GridSpec, metrics: np.ndarray, attrs: dict | None = None) -> xr.Dataset:
    """In-memory Dataset from the kernel output ``(N_METRICS, H, M, B, S, O, P, L)``."""
    dims = result_dims(spec)
    coords = {}
    for name, (dim, values, cattrs) in coordinate_values(spec).items():
        coords[name] = xr.Variable((dim,), values, cattrs)
    if not spec.output_len_is_dim:
        coords["output_len"] = xr.Variable((), np.int64(spec.output_len[0]),
                                           dict(DIM_ATTRS["output_len"]))
    data_vars = {}
    for k, name in enumerate(METRICS):
        arr = metrics[k]
        if not spec.output_len_is_dim:
            arr = arr[:, :, :, :, 0]
        var = VARIABLES[name]
        if var.dtype == "int8":
            arr = arr.astype(np.int8)
        data_vars[name] = xr.Variable(dims, arr, var.attrs())
    return xr.Dataset(data_vars, coords=coords, attrs=attrs if attrs is not None
                      else provenance(spec))
