"""What an in-memory run loads and looks up: no dask.array, matplotlib or file libraries for a
result that needs none of them, one engine resolution and one version lookup per run, and the same
result (and the same handling of dask arrays) as without these shortcuts (issue 15, warm start)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from grids.spec import GridSpec, load_spec
from kernels.params import METRICS
from sweep.execute.local import run
from sweep.results import provenance as prov
from sweep.results.assemble import build_dataset, coordinates, template

REPO = Path(__file__).resolve().parents[1]
SMALL = {"hardware": ["h100-sxm", "mi300x"], "model": ["llama-3.1-8b", "mixtral-8x7b"],
         "batch": [1, 8], "context": [1024], "precision": ["bf16"], "parallelism": ["tp1", "tp2-ep4"]}


def _child(code: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_in_memory_run_and_a_reduction_import_no_heavy_optional_module():
    report = _child(
        "import json, sys, sweep\n"
        f"ds = sweep.run({SMALL!r}, progress=False)\n"
        "v = float(ds['throughput'].max()) + float(ds['ttft'].mean())\n"
        "print(json.dumps({'loaded': sorted(m for m in ('dask.array', 'matplotlib', 'netCDF4',"
        " 'zarr', 'h5netcdf', 'distributed') if m in sys.modules), 'finite': v == v}))\n")
    assert report == {"loaded": [], "finite": True}


def test_dask_arrays_still_recognised_once_dask_array_is_imported():
    """xarray's dask check answers from sys.modules: after any import of dask.array a chunked
    result computes the same values, and a masked dask array is still unmasked to NaN."""
    report = _child(
        "import json, numpy as np, sweep\n"
        f"ds = sweep.run({SMALL!r}, progress=False)\n"
        "from xarray.namedarray.pycompat import array_type\n"
        "before = list(array_type('dask'))\n"
        "import dask.array as da, xarray as xr\n"
        "c = ds.chunk({'batch': 1})\n"
        "masked = xr.Variable(('x',), da.from_array(np.ma.masked_array([1.0, 2.0], [0, 1])))\n"
        "print(json.dumps({'before': before, 'after': [t.__name__ for t in array_type('dask')],"
        " 'lazy': type(c['ttft'].data).__name__,"
        " 'same': bool((c['ttft'].max().compute() == ds['ttft'].max()).item()),"
        " 'masked': [None if x != x else x for x in masked.values.tolist()]}))\n")
    assert report == {"before": [], "after": ["Array"], "lazy": "Array", "same": True,
                      "masked": [1.0, None]}


@pytest.fixture(scope="module")
def spec() -> GridSpec:
    return load_spec({**SMALL, "engine": ["ideal", "vllm"]})


def _without_time(ds: xr.Dataset) -> xr.Dataset:
    ds = ds.copy()
    ds.attrs = {k: v for k, v in ds.attrs.items() if k != "created_utc"}
    return ds


def test_passing_resolved_engines_and_costs_changes_nothing(spec):
    engines, costs = spec.resolved_engines(), spec.device_costs()
    rng = np.random.default_rng(3)
    metrics = rng.integers(0, 3, (len(METRICS), *spec.shape)).astype(np.float32)  # valid flags too
    metrics[0, 0] = np.nan  # ttft, a float metric
    a = build_dataset(spec, metrics)
    b = build_dataset(spec, metrics, engines=engines, costs=costs)
    xr.testing.assert_identical(_without_time(a), _without_time(b))
    xr.testing.assert_identical(_without_time(template(spec)),
                                _without_time(template(spec, engines=engines, costs=costs)))
    ca, cb = coordinates(spec), coordinates(spec, engines=engines, costs=costs)
    assert ca.keys() == cb.keys()
    for k in ca:
        xr.testing.assert_identical(ca[k], cb[k])


def test_one_engine_resolution_and_one_version_lookup_per_run(spec, monkeypatch):
    calls = {"resolve": 0, "costs": 0, "version": 0}
    resolve, costs = GridSpec.resolved_engines, GridSpec.device_costs

    def count(name, fn):
        def wrapped(*a, **k):
            calls[name] += 1
            return fn(*a, **k)
        return wrapped

    monkeypatch.setattr(GridSpec, "resolved_engines", count("resolve", resolve))
    monkeypatch.setattr(GridSpec, "device_costs", count("costs", costs))
    monkeypatch.setattr(prov.metadata, "version", count("version", prov.metadata.version))
    prov.package_version.cache_clear()
    ds = run(spec, progress=False)
    assert calls == {"resolve": 1, "costs": 1, "version": 1}
    assert ds.attrs["package_version"] == prov.package_version()
    assert ds.attrs["source"].endswith(prov.package_version())
    assert calls["version"] == 1
