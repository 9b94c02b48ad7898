"""The results layer: Dataset structure, round trips, streamed chunked writes, atomicity, CLI."""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import sweep
from grids.errors import SpecError
from sweep.cli import main
from sweep.execute.local import run_with_stats
from sweep.execute.plan import plan_chunks
from sweep.results.files import flag_labels, write_dataset
from sweep.results.target import TMP_PREFIX
from sweep.results.variables import BATCH_VARIABLES, VARIABLES, check_dataset

SMALL = {
    "hardware": ["h100-sxm", "mi300x", "groq-lpu", "sn40l"],
    "model": ["llama-3.1-8b", "mixtral-8x7b"],
    "batch": [1, 8, 64],
    "context": [128, 4096],
    "output_len": 128,
    "precision": ["bf16", "fp8"],
    "parallelism": ["tp1", "tp2", "ep2", "tp8-pp16"],
}
DIMS6 = ("hardware", "engine", "model", "batch", "context", "precision", "parallelism")


@pytest.fixture(scope="module")
def small_ds() -> xr.Dataset:
    return sweep.run(SMALL, progress=False)


def _same(a: xr.Dataset, b: xr.Dataset) -> None:
    for name in BATCH_VARIABLES:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)
        assert a[name].dtype == b[name].dtype, name


def test_dataset_structure(small_ds):
    assert tuple(small_ds["ttft"].dims) == DIMS6
    assert check_dataset(small_ds) == []
    for name in BATCH_VARIABLES:
        assert small_ds[name].attrs["units"], name
    assert small_ds["fits"].dtype == np.int8
    assert small_ds["bound"].dtype == np.int8
    assert small_ds["bound"].attrs["flag_meanings"].split()[:2] == ["infeasible", "compute"]
    labels = flag_labels(small_ds["bound"])
    assert set(np.unique(labels.values)) <= {"infeasible", "compute", "sram", "dram",
                                             "host_link", "interconnect", "overhead"}
    assert set(small_ds["bound"].values.ravel()) <= {-1, 0, 1, 2, 3, 4, 5}
    for coord in ("peak_bf16_flops", "dram_bandwidth", "tdp", "host_power", "params_total",
                  "params_active", "tp", "pp", "ep", "dp", "offload", "spill", "devices",
                  "engine_used", "peak_flops", "price_usd_per_hour"):
        assert coord in small_ds.coords, coord
    assert small_ds["infeasible_reason"].dtype == np.int8
    why = flag_labels(small_ds["infeasible_reason"]).values
    fits = small_ds["fits"].values == 1
    assert (why[fits] == "feasible").all() and (why[~fits] != "feasible").all()
    for key in ("package_version", "grid_spec_toml", "catalog_sha256", "created_utc",
                "efficiency_parameters_json", "engine_parameters_json"):
        assert small_ds.attrs[key], key
    assert int(small_ds["output_len"]) == 128


def test_infeasible_points_are_nan(small_ds):
    bad = small_ds["fits"].values == 0
    assert bad.any() and (~bad).any()
    for name in ("ttft", "tpot", "throughput", "tokens_per_joule", "power"):
        assert np.isnan(small_ds[name].values[bad]).all(), name
        assert np.isfinite(small_ds[name].values[~bad]).all(), name
    assert (small_ds["bound"].values[bad] == -1).all()


@pytest.mark.parametrize("fmt,suffix", [("netcdf", ".nc"), ("zarr", ".zarr")])
def test_round_trip(small_ds, tmp_path, fmt, suffix):
    path = tmp_path / f"r{suffix}"
    write_dataset(small_ds, path, fmt)
    back = sweep.open(path)
    _same(small_ds, back)
    for k, v in small_ds.attrs.items():
        assert back.attrs[k] == v, k
    for name in BATCH_VARIABLES:
        for k in ("units", "long_name"):
            assert back[name].attrs[k] == small_ds[name].attrs[k]
    assert list(back["hardware"].values) == list(small_ds["hardware"].values)
    if fmt == "netcdf":  # a plain xarray open works too
        plain = xr.open_dataset(path)
        _same(small_ds, plain)
        assert plain["tpot"].attrs["units"] == "s"


def test_streamed_chunks_equal_in_memory(small_ds, tmp_path):
    out = tmp_path / "streamed.nc"
    ds, stats = run_with_stats(SMALL, max_memory="1 MiB", progress=False, output=out)
    # 1 MiB budget -> kernel chunks of ~4000 points; the grid has 768 x 4 x ... points
    _same(small_ds, ds)
    assert stats.chunks >= 1
    chunks = plan_chunks((4, 2, 2, 3, 2, 1, 2, 4), 20)
    covered = np.zeros((4, 2, 2, 3, 2), dtype=int)
    for c in chunks:
        covered[c.slices] += 1
        assert c.size((4, 2, 2, 3, 2, 1, 2, 4)) <= 20 or (c.s.stop - c.s.start) == 1
    assert (covered == 1).all()


def test_many_chunks_streamed(tmp_path):
    spec = dict(SMALL, batch=[1, 2, 4, 8, 16, 32, 64, 128], context=[128, 512, 2048, 8192])
    mem = sweep.run(spec, progress=False)
    ds, stats = run_with_stats(spec, max_memory="64 KiB", progress=False,
                               output=tmp_path / "x.nc")
    assert stats.chunks > 1
    _same(mem, ds)


@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
def test_several_engines_stream_and_round_trip(tmp_path, suffix):
    # coordinates over (hardware, engine), e.g. the resolved engine levels, are 2-D string arrays
    spec = dict(SMALL, engine=["native", "vllm", "sglang"])
    mem = sweep.run(spec, progress=False)
    two_d = [c for c in mem.coords if mem[c].ndim == 2 and mem[c].dtype == object]
    assert two_d, "the multi-engine result has no 2-D string coordinate to check"
    ds, stats = run_with_stats(spec, max_memory="64 KiB", progress=False,
                               output=tmp_path / f"streamed{suffix}")
    assert stats.chunks > 1
    _same(mem, ds)
    write_dataset(mem, tmp_path / f"whole{suffix}")
    for path in (tmp_path / f"streamed{suffix}", tmp_path / f"whole{suffix}"):
        back = sweep.open(path)
        _same(mem, back)
        for c in two_d:
            assert back[c].dims == mem[c].dims
            assert back[c].values.tolist() == mem[c].values.tolist(), c


def test_zarr_chunks_encoded_side_by_side_are_the_same_bytes(tmp_path, monkeypatch):
    import sweep.results.files as files

    spec = dict(SMALL, batch=[1, 2, 4, 8, 16, 32, 64, 128], context=[128, 512, 2048, 8192])
    stores = {}
    for threads in (1, 4):
        monkeypatch.setattr(files, "ZARR_ENCODE_THREADS", threads)
        out = tmp_path / f"t{threads}.zarr"
        _, stats = run_with_stats(spec, max_memory="64 KiB", progress=False, output=out)
        assert stats.chunks > 1
        stores[threads] = {p.relative_to(out): p.read_bytes() for p in out.rglob("*")
                           if p.is_file() and p.name not in (".zmetadata", ".zattrs")}
    assert len(stores[1]) > len(VARIABLES)
    assert stores[1] == stores[4]


def test_streamed_zarr_writes_whole_storage_chunks(tmp_path, monkeypatch):
    import sweep.results.files as files

    seen = []
    real_aligned, real_chunks = files.ZarrChunks.aligned, files.storage_chunks

    def aligned(self, name, region):
        seen.append(real_aligned(self, name, region))
        return seen[-1]

    monkeypatch.setattr(files.ZarrChunks, "aligned", aligned)
    # 80 values per model; 64 KiB hold 372 points: pieces of 4 models (of 7) as plan_chunks cuts
    # them. Storage chunks of ~240 values hold 3 models, which straddled those pieces: the run
    # now cuts its pieces from whole storage chunks
    monkeypatch.setattr(files, "storage_chunks", lambda shape: real_chunks(shape, 240))
    spec = dict(SMALL, batch=[1, 2, 4, 8, 64],
                model=["llama-3.1-8b", "mixtral-8x7b", "qwen3-8b", "qwen3-14b", "mistral-7b",
                       "llama-2-7b", "qwen2.5-7b"])
    mem = sweep.run(spec, progress=False)
    ds, stats = run_with_stats(spec, max_memory="64 KiB", progress=False,
                               output=tmp_path / "a.zarr")
    assert stats.chunks > 4 and seen and all(seen)
    _same(mem, ds)


def test_output_len_as_dim():
    ds = sweep.run(dict(SMALL, output_len=[16, 256]), progress=False)
    assert tuple(ds["tpot"].dims) == ("hardware", "engine", "model", "batch", "context",
                                      "output_len", "precision", "parallelism")
    fits = ds["fits"].values == 1
    assert (ds["e2e_latency"].values[fits] > 0).all()


def test_in_memory_over_budget_is_a_clear_error():
    with pytest.raises(SpecError, match="max_memory"):
        sweep.run(dict(SMALL, batch=list(range(1, 200))), max_memory="64 KiB", progress=False)


def test_failure_mid_write_leaves_previous_file(tmp_path, monkeypatch, small_ds):
    target = tmp_path / "keep.nc"
    write_dataset(small_ds.isel(batch=[0]), target)
    previous = target.read_bytes()
    runmod = importlib.import_module("sweep.execute.grid")

    calls = {"n": 0}
    real = runmod.GridRun.evaluate

    def flaky(self, c):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(self, c)

    monkeypatch.setattr(runmod.GridRun, "evaluate", flaky)
    spec = dict(SMALL, batch=[1, 2, 4, 8, 16, 32, 64, 128], context=[128, 512, 2048, 8192])
    with pytest.raises(KeyboardInterrupt):
        run_with_stats(spec, max_memory="64 KiB", progress=False, output=target)
    assert target.read_bytes() == previous
    assert not [p for p in tmp_path.iterdir() if TMP_PREFIX in p.name]


def _spawn_run(tmp_path: Path, out: Path) -> subprocess.Popen:
    (tmp_path / "small.toml").write_text('hardware = ["h100-sxm"]\nmodel = ["llama-3.1-8b"]\n')
    spec = tmp_path / "big.toml"
    spec.write_text(textwrap.dedent("""
        hardware = "all"
        model = ["llama-3.1-8b", "llama-3.3-70b", "mixtral-8x7b", "qwen3-32b"]
        batch = { from = 1, to = 4096, scale = "linear", num = 3000 }
        context = { from = 128, to = 131072, scale = "log2" }
        precision = ["bf16", "fp8", "w4a16", "int8"]
        parallelism = { tp = [1, 2, 4, 8], pp = [1, 2], ep = [1] }
    """))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    # a background shell (CI) starts children with SIGINT ignored; restore the default so the
    # child's Python installs its KeyboardInterrupt handler as in an interactive terminal
    return subprocess.Popen([sys.executable, "-m", "sweep.cli", "run", str(spec), "-o", str(out),
                             "--max-memory", "2 MiB", "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=tmp_path,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for_partial(tmp_path: Path, proc: subprocess.Popen, timeout: float = 60.0) -> bool:
    end = time.time() + timeout
    while time.time() < end and proc.poll() is None:
        partial = [p for p in tmp_path.iterdir() if TMP_PREFIX in p.name
                   and not p.name.endswith(".lock")]
        if partial and partial[0].stat().st_size > 0:
            time.sleep(0.1)  # let it write a few chunks; the grid takes many seconds to finish
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM])
def test_killed_run_leaves_no_partial_target(tmp_path, sig, small_ds):
    out = tmp_path / "result.nc"
    write_dataset(small_ds.isel(batch=[0]), out)
    previous = out.read_bytes()
    proc = _spawn_run(tmp_path, out)
    assert _wait_for_partial(tmp_path, proc), proc.communicate()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert out.read_bytes() == previous
    left = [p for p in tmp_path.iterdir() if TMP_PREFIX in p.name]
    if sig in (signal.SIGINT, signal.SIGTERM):
        assert proc.returncode == 128 + sig
        text = err.decode()
        assert ("interrupted" if sig == signal.SIGINT else "terminated") in text
        assert "Traceback" not in text
        assert len(text.strip().splitlines()) == 1
        assert not left
    else:
        assert proc.returncode == -signal.SIGKILL
        assert left  # a dead run's partial and lock stay ...
        assert main(["run", str(tmp_path / "small.toml"), "-o", str(out), "--no-progress"]) == 0
        assert not [p for p in tmp_path.iterdir() if TMP_PREFIX in p.name]  # ... until the next run


def test_cli_run_info_and_bad_input(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text('hardware = ["h100-sxm", "mi300x"]\nmodel = ["llama-3.1-8b"]\n'
                    'batch = [1, 16]\ncontext = [512]\nprecision = ["bf16"]\n'
                    'parallelism = ["tp1"]\n')
    out = tmp_path / "o.nc"
    assert main(["run", str(spec), "-o", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    for word in ("grid", "points", "wall time", "points/s", "feasible", "variation"):
        assert word in text
    assert main(["info", str(out)]) == 0
    info = capsys.readouterr().out
    assert "tpot" in info and "[s]" in info and "grid spec" in info
    bad = tmp_path / "bad.toml"
    bad.write_text('hardware = ["h100-sxmm"]\nbatch = [-1]\nprecision = ["fp9"]\n')
    assert main(["run", str(bad), "-o", str(tmp_path / "b.nc")]) == 2
    err = capsys.readouterr().err
    assert "h100-sxm" in err and "Traceback" not in err and "3 problems" in err
    assert main(["info", str(tmp_path / "missing.nc")]) == 2
    bad.write_text("hardware = [")
    assert main(["run", str(bad)]) == 2
    assert "malformed TOML" in capsys.readouterr().err


def test_evaluate_matches_grid(small_ds):
    rows = []
    rng = np.random.default_rng(0)
    for _ in range(60):
        pt = {d: small_ds[d].values[rng.integers(small_ds.sizes[d])] for d in DIMS6}
        rows.append(pt)
    table = pd.DataFrame(rows)
    table["output_len"] = 128
    res = sweep.evaluate(table)
    for r, pt in zip(res.itertuples(), rows):
        sel = small_ds.sel({d: pt[d] for d in DIMS6})
        for name in ("ttft", "tpot", "throughput", "fits", "bound", "latency_cov"):
            a, b = getattr(r, name), sel[name].item()
            assert (np.isnan(a) and np.isnan(b)) or a == b, name


def test_evaluate_reports_every_bad_row():
    table = pd.DataFrame({"hardware": ["h100", "mi300x"], "model": ["llama-3.1-8b", "nope"],
                          "batch": [1, 0], "context": [128, 128], "output_len": [1, 1],
                          "precision": ["bf16", "fp7"], "parallelism": ["tp1", "tp1"]})
    with pytest.raises(SpecError) as exc:
        sweep.evaluate(table)
    assert len(exc.value.problems) >= 4
    with pytest.raises(SpecError, match="lacks columns"):
        sweep.evaluate(table.drop(columns=["parallelism"]))
    with pytest.raises(SpecError, match="called 'parallelism'"):
        sweep.evaluate(table.rename(columns={"parallelism": "layout"}))


@pytest.mark.parametrize("compression", ["lz4", "zstd", "zlib", "none"])
def test_every_compression_writes_a_one_point_grid(tmp_path, compression):
    """HDF5's Blosc filter (lz4) fails on chunks too small to compress ("NetCDF: HDF error",
    exit 1, issue 22 item 9): such chunks are stored uncompressed."""
    spec = {"hardware": ["h100-sxm"], "model": ["llama-3.1-8b"], "batch": [1],
            "context": [512], "precision": ["bf16"], "parallelism": ["tp1"]}
    out = tmp_path / "one.nc"
    ds = sweep.run(spec, output=out, compression=compression, progress=False)
    ref = sweep.run(spec, progress=False)
    assert float(ds["tpot"].squeeze()) == float(ref["tpot"].squeeze())
    ds.close()
