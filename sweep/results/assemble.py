"""Assemble the self-describing result from kernel output: dims, per-dim coordinates, metrics.

The one converter from the kernels' output array to named metric arrays (:func:`metric_arrays`:
the ``output_len`` squeeze and the int8 casts of the registry) serves the in-memory, streamed and
Dask paths alike; :func:`template` is the Dataset of coordinates and attributes a streamed file is
created from.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import xarray as xr

from grids.precisions import peak_table
from grids.spec import DIMS, GridSpec
from kernels.params import METRICS, RATE_METRICS
from sweep.results.provenance import provenance
from sweep.results.variables import (
    COORDS,
    COORDS_2D,
    DIM_ATTRS,
    KEPT_LAYOUT_DIM,
    LAYOUT_INDEX,
    RESULT_VARIABLES,
)

#: the rows of a kernel output reduced to each point's best layout: the metrics, then the index
#: of the layout kept (:mod:`sweep.analysis.keep_layout`)
KEPT_ROWS = (*METRICS, LAYOUT_INDEX.name)


def result_dims(spec: GridSpec) -> tuple[str, ...]:
    """The dims of the result, in storage order (output_len only when it is a dim; the load axis
    is ``batch`` or ``request_rate``; no parallelism when only each point's best layout is
    kept)."""
    return tuple(spec.load_dim if d == "batch" else d for d in DIMS
                 if (d != "output_len" or spec.output_len_is_dim)
                 and (d != "parallelism" or not spec.keeps_best_layout))


def result_metrics(spec: GridSpec) -> tuple[str, ...]:
    """The variables a result of ``spec`` carries: the latency percentiles only at request
    rates; ``layout_index`` when only each point's best layout is kept."""
    out = METRICS if spec.at_rate else tuple(m for m in METRICS if m not in RATE_METRICS)
    return (*out, LAYOUT_INDEX.name) if spec.keeps_best_layout else out


def coordinate_values(spec: GridSpec, *, engines: list | None = None, costs: list | None = None
                      ) -> dict[str, tuple[str | tuple[str, ...], np.ndarray, dict]]:
    """name -> (dim or dims, values, attrs) for every dim and coordinate. ``engines`` and
    ``costs``: the spec's :meth:`~grids.spec.GridSpec.resolved_engines` and
    :meth:`~grids.spec.GridSpec.device_costs` when the caller has them already (a run resolves
    them once for the kernels' tables), else resolved here."""
    devs, models = spec.hardware, spec.models
    costs = spec.device_costs() if costs is None else costs
    engines = spec.resolved_engines() if engines is None else engines
    out: dict[str, tuple[str | tuple[str, ...], np.ndarray, dict]] = {
        "hardware": ("hardware", np.array([d.id for d in devs], dtype=object), {}),
        "engine": ("engine", np.array([e.id for e in spec.engines], dtype=object), {}),
        "model": ("model", np.array([m.id for m in models], dtype=object), {}),
        spec.load_dim: (spec.load_dim, np.array(spec.batch, dtype=np.float64 if spec.at_rate
                                                else np.int64), {}),
        "context": ("context", np.array(spec.context, dtype=np.int64), {}),
        "precision": ("precision", np.array([p.name for p in spec.precisions], dtype=object), {}),
        "parallelism": ("parallelism", np.array([x.display for x in spec.layouts],
                                                dtype=object), {}),
    }
    if spec.output_len_is_dim:
        out["output_len"] = ("output_len", np.array(spec.output_len, dtype=np.int64), {})
    for name in list(out):
        out[name][2].update(DIM_ATTRS[name])

    def estimated(d, field):  # 1 when the catalog marks the field an estimate (its sources)
        src = d.sources.get(field)
        return int(bool(src is not None and src.estimate))

    def dram(d, attr):
        t = d.tier_of_kind("dram")
        return getattr(t, attr) if t else (np.nan if attr == "bandwidth" else 0.0)

    values: dict[str, list[Any]] = {
        "hardware_name": [d.name for d in devs],
        "hardware_class": [d.cls for d in devs],
        "peak_bf16_flops": [d.peak_flops.get("bf16", d.peak_flops.get("fp16", np.nan))
                            for d in devs],
        "peak_fp8_flops": [d.peak_flops.get("fp8", np.nan) for d in devs],
        "hardware_vendor": [d.vendor for d in devs],
        "dram_bandwidth": [dram(d, "bandwidth") for d in devs],
        "dram_capacity": [dram(d, "capacity") for d in devs],
        "sram_capacity": [(sram.capacity if (sram := d.tier_of_kind("sram")) else 0.0)
                          for d in devs],
        "device_memory": [d.device_capacity for d in devs],
        "link_bandwidth": [d.link_bandwidth for d in devs],
        "scaleout_bandwidth": [d.scaleout_bandwidth for d in devs],
        "scaleout_latency": [d.scaleout_latency for d in devs],
        "tdp": [d.tdp for d in devs],
        "host_power": [d.host_power for d in devs],
        "tdp_estimated": [estimated(d, "power.tdp") for d in devs],
        "host_power_estimated": [estimated(d, "power.host_power") for d in devs],
        "price_usd_per_hour": [c.fixed_usd_per_hour for c in costs],
        "price_source": [c.label or "unpriced" for c in costs],
        "release_year": [d.release_year for d in devs],
        "params_total": [m.params_total for m in models],
        "params_active": [m.params_active for m in models],
        "n_layers": [m.n_layers for m in models],
        "kv_bytes_per_token": [m.kv_bytes_per_token(16) for m in models],
        "kv_window_bytes_per_token": [m.kv_elems_window * 2 for m in models],
        "attention_window": [m.window for m in models],
        "weight_bits": [p.weight_bits for p in spec.precisions],
        "act_bits": [p.act_bits for p in spec.precisions],
        "kv_bits": [p.kv_bits for p in spec.precisions],
        "attn_bits": [p.attn_weight_bits for p in spec.precisions],
        "tp": [x.tp for x in spec.layouts], "pp": [x.pp for x in spec.layouts],
        "ep": [x.ep for x in spec.layouts], "dp": [x.dp for x in spec.layouts],
        "offload": [x.offload for x in spec.layouts],
        "spill": [int(x.spill) for x in spec.layouts],
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
    out["engine_name"] = ("engine", np.array([e.name for e in spec.engines], dtype=object),
                          {"long_name": "serving engine"})
    out["engine_used"] = (("hardware", "engine"),
                          np.array([[r.delegate if r.supported else "" for r in row]
                                    for row in engines], dtype=object).reshape(len(devs), -1),
                          {})
    out.update(band_coordinates(devs, engines))
    out["peak_flops"] = (("hardware", "precision"),
                         peak_table([d.peak_flops for d in devs], spec.precisions), {})
    for _, name, units, long_name in COORDS_2D:
        out[name][2].update({"long_name": long_name, **({"units": units} if units else {})})
    if spec.keeps_best_layout:  # the layouts become the candidates of layout_index
        out[KEPT_LAYOUT_DIM] = (KEPT_LAYOUT_DIM, out.pop("parallelism")[1],
                                dict(DIM_ATTRS[KEPT_LAYOUT_DIM]))
        out = {name: (KEPT_LAYOUT_DIM if dim == "parallelism" else dim, vals, attrs)
               for name, (dim, vals, attrs) in out.items()}
    return out


def band_coordinates(devs: list, engines: list
                     ) -> dict[str, tuple[tuple[str, str], np.ndarray, dict]]:
    """``band_factor`` and ``calibrated`` per (hardware, engine): the shipped uncertainty band
    of the engine that serves each device (:mod:`grids.bands`; NaN for ``ideal``, the physics
    bound, and where the engine does not run) and whether measurements of that engine on the
    device's vendor were in the calibration data."""
    from grids.bands import shipped_bands

    bands = shipped_bands()
    factor = np.full((len(devs), len(engines[0]) if engines else 0), np.nan)
    calibrated = np.zeros(factor.shape, dtype=np.int8)
    for i, (d, row) in enumerate(zip(devs, engines)):
        for j, r in enumerate(row):
            if bands is not None and r.supported:
                b = bands.band(r.delegate, d.vendor)
                factor[i, j], calibrated[i, j] = b.factor, int(b.calibrated)
    extra = ({"quantile": bands.quantile, "same_group_ratio": bands.same_group_ratio}
             if bands is not None else {})
    return {"band_factor": (("hardware", "engine"), factor, extra),
            "calibrated": (("hardware", "engine"), calibrated, {})}


def metric_arrays(out: np.ndarray, drop_output_len: bool = False,
                  int8_out: dict[str, np.ndarray] | None = None,
                  metrics: tuple[str, ...] | None = None) -> dict[str, np.ndarray]:
    """Kernel output (metrics first: a grid ``(N_METRICS, H, E, M, B, S, O, P, L)`` or any chunk of
    it, or a point list ``(N_METRICS, n)``; or, reduced to each point's best layout, the rows
    :data:`KEPT_ROWS` over ``(H, E, M, B, S, O, P)``) as ``{name: array}``: views of ``out``,
    with the integer variables (flags, ``layout_index``) cast to the registry's dtype and, with
    ``drop_output_len``, the grid's ``output_len`` axis dropped (when it is not a dim of the
    result).

    ``int8_out``: buffers for the integer casts, ``{name: 1-D array}``, grown when too small and
    reused call after call (a streamed run casts every chunk into the same memory).
    ``metrics``: the names to keep (default every metric but the request-rate percentiles)."""
    keep = tuple(m for m in METRICS if m not in RATE_METRICS) if metrics is None else metrics
    arrays = {}
    for k, name in enumerate(KEPT_ROWS[:out.shape[0]]):
        if name not in keep:
            continue
        arr = out[k]
        if drop_output_len:
            arr = arr[:, :, :, :, :, 0]
        dtype = np.dtype(RESULT_VARIABLES[name].dtype)
        if dtype.kind == "i":
            if int8_out is None:
                arr = arr.astype(dtype)
            else:
                buf = int8_out.get(name)
                if buf is None or buf.size < arr.size:
                    buf = int8_out[name] = np.empty(arr.size, dtype=dtype)
                view = buf[:arr.size].reshape(arr.shape)
                np.copyto(view, arr, casting="unsafe")
                arr = view
        arrays[name] = arr
    return arrays


def coordinates(spec: GridSpec, *, engines: list | None = None, costs: list | None = None
                ) -> dict[str, xr.Variable]:
    """Every coordinate variable of the result (dims, per-dim coords, scalar output_len)."""
    values = coordinate_values(spec, engines=engines, costs=costs)
    coords = {name: xr.Variable((dim,) if isinstance(dim, str) else dim, vals, attrs)
              for name, (dim, vals, attrs) in values.items()}
    if not spec.output_len_is_dim:
        coords["output_len"] = xr.Variable((), np.int64(spec.output_len[0]),
                                           dict(DIM_ATTRS["output_len"]))
    return coords


def template(spec: GridSpec, *, engines: list | None = None, costs: list | None = None
             ) -> xr.Dataset:
    """The result without its metrics: coordinates and provenance attributes (``engines``,
    ``costs``: see :func:`coordinate_values`)."""
    _lazy_dask_probe()
    return xr.Dataset(coords=coordinates(spec, engines=engines, costs=costs),
                      attrs=provenance(spec, engines=engines))


def build_dataset(spec: GridSpec, metrics: np.ndarray, attrs: dict | None = None, *,
                  engines: list | None = None, costs: list | None = None) -> xr.Dataset:
    """In-memory Dataset from the kernel output ``(N_METRICS, H, E, M, B, S, O, P, L)`` (or its
    reduction to each point's best layout, :data:`KEPT_ROWS` over ``(H, E, M, B, S, O, P)``)
    (``engines``, ``costs``: see :func:`coordinate_values`)."""
    dims = result_dims(spec)
    _lazy_dask_probe()
    data_vars = {name: xr.Variable(dims, arr, RESULT_VARIABLES[name].attrs())
                 for name, arr in metric_arrays(metrics, not spec.output_len_is_dim,
                                                metrics=result_metrics(spec)).items()}
    return xr.Dataset(data_vars, coords=coordinates(spec, engines=engines, costs=costs),
                      attrs=attrs if attrs is not None else provenance(spec, engines=engines))


def _lazy_dask_probe() -> None:
    """Let xarray check for dask arrays without importing ``dask.array`` before anything has.

    xarray checks every new Variable's data against ``dask.array.Array`` and, when dask is
    installed, imports ``dask.array`` for that check on first use (0.3-0.8 s on the reference
    VM, about a quarter of a warm start), although an in-memory result holds no dask array.
    This puts in xarray's cache of duck-array modules an entry for dask that answers the same
    question from ``sys.modules``: the dask array type once ``dask.array`` is imported (by
    anyone, for any reason), and no type before (when no dask array can exist). Nothing else
    changes; when dask's entry is cached already, or xarray's internals differ from what is
    expected here, this does nothing."""
    if "dask.array" in sys.modules:
        return
    try:
        from xarray.namedarray import pycompat

        cache = pycompat._cached_duck_array_modules
        base: Any = pycompat.DuckArrayModule  # a run-time base class (mypy needs a static one)
        version_type = pycompat.Version
    except (ImportError, AttributeError):
        return
    if not isinstance(cache, dict) or "dask" in cache or not isinstance(base, type):
        return

    class LazyDask(base):
        def __init__(self) -> None:  # no import: every attribute is looked up when read
            pass

        @property
        def module(self):
            return sys.modules.get("dask") if self.type else None

        @property
        def available(self) -> bool:
            return bool(self.type)

        @property
        def type(self) -> tuple:
            array = getattr(sys.modules.get("dask.array"), "Array", None)
            return (array,) if isinstance(array, type) else ()

        @property
        def version(self):
            mod = self.module
            return version_type(mod.__version__ if mod is not None else "0.0.0")

    cache.setdefault("dask", LazyDask())
