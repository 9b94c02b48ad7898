"""Distributed runs (sweep.execute.distributed) on a dask LocalCluster: bit-identical to the in-process run,
whatever the chunking, the format, or a worker killed mid-run; atomic publish on failure."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
pytest.importorskip("zarr")

from grids.errors import SpecError  # noqa: E402
from sweep.execute.grid import GridRun  # noqa: E402
from sweep.execute.local import run_with_stats  # noqa: E402
from sweep.results.files import open_result  # noqa: E402
from sweep.results.target import TMP_PREFIX  # noqa: E402
from sweep.results.variables import BATCH_VARIABLES  # noqa: E402

pytestmark = pytest.mark.dask

SPEC = {
    "hardware": ["h100-sxm", "mi300x", "groq-lpu", "tpu-v5e", "gaudi3", "cs-3"],
    "model": ["llama-3.1-8b", "mixtral-8x7b", "llama-3.3-70b", "deepseek-r1"],
    "batch": {"from": 1, "to": 256, "scale": "log2"},
    "context": {"from": 128, "to": 32768, "scale": "log2"},
    "output_len": [128, 1024],
    "precision": ["bf16", "fp8", "w4a16"],
    "parallelism": ["tp1", "tp2", "tp8", "ep8", "tp4-pp2", "tp8-off0.25"],
}
SPEC_SCALAR_OL = {**SPEC, "output_len": 256}
TINY = "1 MiB"  # ~8k points per chunk: the grids above are cut into >= 12 chunks
SUFFIX = {"netcdf": ".nc", "zarr": ".zarr"}


def _cluster(n: int = 2):
    return distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                    dashboard_address=":0", silence_logs=logging.ERROR)


@pytest.fixture(scope="module")
def cluster():
    with _cluster() as c:
        yield c


_REFERENCE: dict[str, object] = {}


def reference(spec: dict):
    """The in-process, in-memory result (cached per spec)."""
    key = repr(spec)
    if key not in _REFERENCE:
        ds, _ = run_with_stats(spec, max_memory="1 GiB", progress=False)
        _REFERENCE[key] = ds
    return _REFERENCE[key]


def assert_identical(path: Path, spec: dict) -> None:
    """Bit-identical metric arrays (NaN positions included), same dtypes, same coordinates."""
    ref = reference(spec)
    got = open_result(path, mask_and_scale=False)  # raw stored values: int8 flags stay int8
    assert set(got.data_vars) >= set(BATCH_VARIABLES)
    for name in BATCH_VARIABLES:
        a, b = ref[name].values, got[name].values
        assert a.dtype == b.dtype, name
        assert a.shape == b.shape, name
        if a.dtype.kind == "f":
            assert np.array_equal(np.isnan(a), np.isnan(b)), name
            assert np.array_equal(a, b, equal_nan=True), name
        else:
            assert np.array_equal(a, b), name
    for dim in ref.dims:
        assert np.array_equal(ref[dim].values, got[dim].values), dim


def assert_clean(directory: Path, keep: Path) -> None:
    left = sorted(p.name for p in directory.iterdir() if p != keep)
    assert not left, f"stray files next to the result: {left}"


@pytest.mark.parametrize("fmt", ["netcdf", "zarr"])
@pytest.mark.parametrize("spec", [SPEC, SPEC_SCALAR_OL], ids=["output_len-dim", "output_len-1"])
def test_identical_to_in_process(cluster, tmp_path, fmt, spec):
    from sweep.analysis.headline import HeadlineVariation
    from sweep.analysis.variation import max_variation

    out = tmp_path / f"r{SUFFIX[fmt]}"
    ds, stats = run_with_stats(spec, max_memory=TINY, progress=False, output=out,
                               scheduler=cluster.scheduler_address, summarise=HeadlineVariation)
    assert stats.chunks >= 4
    assert stats.points == reference(spec)["ttft"].size
    assert stats.feasible == int((reference(spec)["fits"].values == 1).sum())
    assert_identical(out, spec)
    assert ds["ttft"].shape == reference(spec)["ttft"].shape
    assert_clean(tmp_path, out)
    # the headline, reduced from the chunks on the workers (Zarr) or the client (netCDF)
    assert stats.summary.finish() == max_variation(reference(spec), "throughput")


@pytest.mark.parametrize("fmt", ["netcdf", "zarr"])
def test_best_layout_kept_on_the_workers(cluster, tmp_path, fmt):
    """best_layout (each point's best layout kept, sweep/analysis/keep_layout.py) on the
    cluster: the same result as in process, and the headline of every layout."""
    from sweep.analysis.headline import HeadlineVariation
    from sweep.analysis.variation import max_variation

    spec = {**SPEC, "best_layout": "device"}
    mem, _ = run_with_stats(spec, max_memory="1 GiB", progress=False)
    out = tmp_path / f"r{SUFFIX[fmt]}"
    ds, stats = run_with_stats(spec, max_memory=TINY, progress=False, output=out,
                               scheduler=cluster.scheduler_address, summarise=HeadlineVariation)
    assert stats.chunks >= 4 and stats.kept == (len(SPEC["parallelism"]), "device")
    assert stats.feasible == int((reference(SPEC)["fits"].values == 1).sum())
    assert "parallelism" not in ds.dims and ds.attrs["best_layout_basis"] == "device"
    for name in mem.data_vars:
        assert ds[name].dtype == mem[name].dtype
        assert np.array_equal(ds[name].values, mem[name].values, equal_nan=True), name
    assert stats.summary.finish() == max_variation(reference(SPEC), "throughput")
    ds.close()
    assert_clean(tmp_path, out)


class KillOnce(distributed.WorkerPlugin):
    """Kill the worker process (os._exit, like SIGKILL: no clean-up) right after it finished its
    first chunk task, before the result reaches the scheduler. For Zarr the region has then already
    been written, so the re-executed task rewrites it: a lost or duplicated write would show."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def transition(self, key, start, finish, **kwargs):
        name = key[0] if isinstance(key, tuple) else str(key)
        if (start == "executing" and finish == "memory" and "_task-" in name
                and not os.path.exists(self.marker)):
            Path(self.marker).write_text(str(os.getpid()))
            os._exit(1)


@pytest.mark.parametrize("fmt", ["netcdf", "zarr"])
def test_killed_worker_still_identical(tmp_path, fmt):
    marker = tmp_path / "killed"
    outdir = tmp_path / "out"
    outdir.mkdir()
    out = outdir / f"r{SUFFIX[fmt]}"
    with _cluster() as c, distributed.Client(c) as client:
        client.register_plugin(KillOnce(str(marker)))
        _, stats = run_with_stats(SPEC, max_memory=TINY, progress=False, output=out,
                                  scheduler=c.scheduler_address)
    assert marker.exists(), "no worker was killed"
    assert stats.chunks >= 4
    assert_identical(out, SPEC)
    assert_clean(outdir, out)


class BrokenRun(GridRun):
    """A GridRun whose evaluation fails on one chunk (to check the abort path)."""

    def evaluate(self, c):
        if c.h.start > 0:
            raise RuntimeError("boom")
        return super().evaluate(c)


@pytest.mark.parametrize("fmt", ["netcdf", "zarr"])
def test_failure_leaves_no_file(cluster, tmp_path, fmt):
    from grids.spec import load_spec
    from sweep.execute.distributed import run_distributed
    from sweep.execute.plan import MemoryPlan, parse_memory

    out = tmp_path / f"r{SUFFIX[fmt]}"
    spec = load_spec(SPEC)
    with pytest.raises(RuntimeError, match="boom"):
        run_distributed(BrokenRun(spec), cluster.scheduler_address, output=out, fmt=fmt,
                        plan=MemoryPlan.of(parse_memory(TINY), spec.shape), progress=False)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if TMP_PREFIX in p.name]


def test_needs_output_and_valid_scheduler(tmp_path):
    with pytest.raises(SpecError, match="output"):
        run_with_stats(SPEC, scheduler="local:2", progress=False)
    for bad in ("local:0", "local:x", "somewhere:8786"):
        with pytest.raises(SpecError, match="scheduler"):
            run_with_stats(SPEC, scheduler=bad, output=tmp_path / "r.nc", progress=False)


def test_zarr_chunks_cover_grid_once():
    from sweep.execute.plan import zarr_chunks

    shape = (7, 3, 5, 11, 9, 2, 3, 4)  # (H, E, M, B, S, O, P, L)
    storage = (2, 2, 2, 3, 4, 2, 3, 4)
    for max_points in (1, 500, 5000, 10**9):
        seen = np.zeros(shape[:5], dtype=int)
        for c in zarr_chunks(shape, storage, max_points):
            seen[c.slices] += 1
            for sl, size, n in zip(c.slices, shape, storage):
                assert sl.start % n == 0  # starts on a storage-chunk boundary
                assert sl.stop % n == 0 or sl.stop == size  # ends on one (or at the edge)
        assert (seen == 1).all()


def test_cli_local_cluster(tmp_path):
    """`sweep run SPEC --scheduler local:2 -o out.zarr` end to end."""
    from grids.spec import spec_toml
    from sweep.cli import main

    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(spec_toml(SPEC_SCALAR_OL))
    out = tmp_path / "out.zarr"
    code = main(["run", str(spec_path), "--scheduler", "local:2", "-o", str(out),
                 "--max-memory", TINY, "--no-progress"])
    assert code == 0
    assert_identical(out, SPEC_SCALAR_OL)


def test_gridrun_pickles():
    """Tasks receive the GridRun (catalog dataclasses, tables) by pickle: it must round-trip and
    evaluate identically."""
    import pickle

    from grids.spec import load_spec
    from sweep.execute.plan import plan_chunks

    gr = GridRun(load_spec(SPEC_SCALAR_OL))
    gr2 = pickle.loads(pickle.dumps(gr))
    c = plan_chunks(gr.shape, 5000)[3]
    a, b = gr.evaluate(c), gr2.evaluate(c)
    assert np.array_equal(a, b, equal_nan=True)
    assert gr2.region(c) == gr.region(c)
