"""How a run executes (docs/performance.md): kernel entry points with one compiled signature, the
kernels' threads, results written in place, the writer thread, compression presets, direct Zarr
chunk writes, and the CLI's wall time. Results must be identical whichever way they are made."""

from __future__ import annotations

import errno
import json
import threading
import time

import numpy as np
import pytest
import xarray as xr

import kernels
import sweep
from grids.spec import load_spec
from sweep.cli import main
from sweep.cli.run import wall_line, with_wall_line
from sweep.execute.grid import GridRun, RunStats
from sweep.execute.local import run_with_stats
from sweep.execute.memory import populated_empty
from sweep.execute.plan import BYTES_PER_POINT, plan_chunks
from sweep.results.files import COMPRESSIONS, ResultWriter, ZarrChunks, write_dataset
from sweep.results.target import TMP_PREFIX, OutputError
from sweep.results.variables import BATCH_VARIABLES, VARIABLES

VARIABLES_ORDER = list(VARIABLES)

SPEC = {
    "hardware": ["h100-sxm", "mi300x", "groq-lpu", "sn40l", "tpu-v5e"],
    "model": ["llama-3.1-8b", "mixtral-8x7b", "llama-3.3-70b"],
    "batch": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
    "context": [128, 1024, 8192, 32768],
    "output_len": [64, 512],
    "precision": ["bf16", "fp8", "w4a16"],
    "parallelism": ["tp1", "tp2", "tp8", "ep8", "tp4-pp2", "tp8-off0.25"],
}  # 5 x 3 x 10 x 4 x 2 x 3 x 6 = 21,600 points: above the kernels' single-thread threshold


@pytest.fixture(scope="module")
def reference_ds() -> xr.Dataset:
    ds, stats = run_with_stats(SPEC, progress=False, max_memory="1 GiB")
    assert stats.chunks == 1
    return ds


def same(a: xr.Dataset, b: xr.Dataset) -> None:
    """Bit-identical metrics (NaN pattern included) and dtypes."""
    for name in BATCH_VARIABLES:
        x, y = np.asarray(a[name].values), np.asarray(b[name].values)
        assert x.dtype == y.dtype, name
        if x.dtype.kind == "f":
            assert np.array_equal(np.isnan(x), np.isnan(y)), name
            x, y = x.view(np.uint32), y.view(np.uint32)
        assert np.array_equal(x, y), name


# ------------------------------------------------------------------------------ kernels
def _tables():
    gr = GridRun(load_spec(SPEC))
    t = gr.tables
    return gr, (t.hw, t.md, t.px, gr.batch, gr.context, gr.output_len, t.pr, t.ly)


def test_every_entry_point_is_compiled_once():
    """Whatever the callers pass (uint64 or int32 indices, read-only or strided inputs, flags
    or none), each entry point and each shared stage has exactly one compiled signature."""
    import kernels.grid as kg

    gr, args = _tables()
    kernels.evaluate_grid(*args)
    ro = [np.array(a) for a in args]
    for a in ro:
        a.flags.writeable = False
    kernels.evaluate_grid(*ro)
    t = gr.tables
    n = 50
    rng = np.random.default_rng(1)
    for dtype in (np.int64, np.uint64, np.int32):
        hi = rng.integers(0, t.hw.shape[0], n).astype(dtype)
        mi = rng.integers(0, t.md.shape[0], n).astype(dtype)
        pi = rng.integers(0, t.pr.shape[0], n).astype(dtype)
        li = rng.integers(0, t.ly.shape[0], n).astype(dtype)
        batch = np.broadcast_to(np.float32(8), (n,))  # read-only, float32
        for flags in (None, True, np.ones(n, dtype=bool)):
            kernels.evaluate_points(t.hw, t.md, t.px, t.pr, t.ly, hi, mi, pi, li, batch,
                                    np.full(n, 1024), np.full(n, 128.0)[::-1], flags)
    for name in ("_grid_range", "_points_range"):
        assert len(getattr(kg, name).signatures) == 1, name
    for name in ("_static", "_sweep", "_grid_block"):  # 0 when loaded with an entry's cache
        assert len(getattr(kg, name).signatures) <= 1, name


def test_threads_give_identical_results():
    _, args = _tables()
    one = kernels.evaluate_grid(*args, threads=1)
    two = kernels.evaluate_grid(*args, threads=2)
    four = kernels.evaluate_grid(*args, threads=4)
    assert one[0].size > kernels.grid.SERIAL_POINTS
    assert np.array_equal(one.view(np.uint32), two.view(np.uint32))
    assert np.array_equal(one.view(np.uint32), four.view(np.uint32))
    kernels.set_num_threads(1)
    try:
        assert kernels.num_threads() == 1
        np.testing.assert_array_equal(kernels.evaluate_grid(*args).view(np.uint32),
                                      one.view(np.uint32))
    finally:
        kernels.set_num_threads(None)
    with pytest.raises(ValueError):
        kernels.set_num_threads(0)


def test_evaluate_grid_writes_in_place_at_an_offset():
    _, args = _tables()
    ref = kernels.evaluate_grid(*args)
    n = ref[0].size
    big = np.full((len(VARIABLES), n + 1000), 7.0, dtype=np.float32)
    view = kernels.evaluate_grid(*args, out=big, offset=600)
    assert np.shares_memory(view, big)
    # every metric but the request-rate percentiles, which a batch grid leaves as they were
    batch = [VARIABLES_ORDER.index(m) for m in BATCH_VARIABLES]
    rate = [i for i in range(len(VARIABLES_ORDER)) if i not in batch]
    np.testing.assert_array_equal(big[batch, 600:600 + n].reshape(ref[batch].shape), ref[batch])
    assert ((big[rate] == 7.0) | np.isnan(big[rate])).all()  # NaN: infeasible points
    assert (big[:, :600] == 7.0).all() and (big[:, 600 + n:] == 7.0).all()
    with pytest.raises(ValueError, match="room"):
        kernels.evaluate_grid(*args, out=big, offset=1001)
    with pytest.raises(ValueError):
        kernels.evaluate_grid(*args, out=big.astype(np.float64))


def test_a_failing_range_stops_the_others_and_raises():
    from kernels.grid import _run_ranges

    done = []
    lock = threading.Lock()

    def fn(tag, lo, hi):
        if lo <= 40 < hi:
            raise ZeroDivisionError("range with 40")
        time.sleep(0.002)
        with lock:
            done.append((lo, hi))

    with pytest.raises(ZeroDivisionError, match="range with 40"):
        _run_ranges(fn, ("x",), 1000, 10**6, threads=2)
    covered = sum(hi - lo for lo, hi in done)
    assert covered < 1000  # no new range started after the failure
    assert not [t for t in threading.enumerate() if t.name.startswith("accel-sweep-kernel")]


def test_compile_notice_names_the_cache_once(capsys):
    import kernels.grid as kg

    class Ev:
        def __init__(self, disp):
            self.data = {"dispatcher": disp}

    notice = kg._Notice()
    notice.on_start(Ev(kg._grid_range))  # the entry's own small compile: no notice
    assert capsys.readouterr().err == ""
    notice.on_start(Ev(kg._sweep))
    notice.on_start(Ev(kg._static))
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "compiling the kernels once" in err and "cached in" in err


def test_populated_arrays_are_zeroed_writable_and_sized():
    for shape in ((3, 5), (len(VARIABLES), (80 << 20) // (4 * len(VARIABLES)))):
        a = populated_empty(shape, np.float32)
        assert a.shape == shape and a.dtype == np.float32 and a.flags.c_contiguous
        assert a.flags.writeable
        a[-1, -1] = 1.5
        assert a[-1, -1] == 1.5
    big = populated_empty((1 << 24,), np.float32)
    assert not big.any()


# ------------------------------------------------------------------------------ runs
def test_in_memory_chunks_are_written_in_place(reference_ds, monkeypatch):
    total = reference_ds["ttft"].size
    budget = total * BYTES_PER_POINT  # just enough for the result: chunks of half the grid
    shape = load_spec(SPEC).shape
    assert len(plan_chunks(shape, budget // (2 * BYTES_PER_POINT))) >= 2
    seen = []
    real = GridRun.evaluate

    def spy(self, c):
        out = real(self, c)
        seen.append(out)
        return out

    monkeypatch.setattr(GridRun, "evaluate", spy)
    ds, stats = run_with_stats(SPEC, progress=False, max_memory=budget)
    assert stats.chunks >= 2
    same(reference_ds, ds)
    # every chunk's output is a view of the one result array (no copy, no second buffer)
    base = np.asarray(ds["ttft"].values)
    while base.base is not None and isinstance(base.base, np.ndarray):
        base = base.base
    assert all(np.shares_memory(o, base) for o in seen)
    assert stats.feasible == int((reference_ds["fits"].values == 1).sum())
    assert set(stats.phases) >= {"kernel", "assemble"}


@pytest.mark.parametrize("fmt,suffix", [("netcdf", ".nc"), ("zarr", ".zarr")])
def test_writer_thread_writes_identical_files(reference_ds, tmp_path, fmt, suffix):
    out = tmp_path / f"r{suffix}"
    ds, stats = run_with_stats(SPEC, progress=False, max_memory="256 KiB", output=out)
    assert stats.chunks >= 8
    same(reference_ds, ds)
    assert stats.feasible == int((reference_ds["fits"].values == 1).sum())
    assert set(stats.phases) >= {"kernel", "writer_busy", "buffer_wait"}
    assert not [t for t in threading.enumerate() if t.name == "accel-sweep-writer"]
    assert [p.name for p in tmp_path.iterdir()] == [out.name]


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("fmt,suffix", [("netcdf", ".nc"), ("zarr", ".zarr")])
def test_every_compression_round_trips(reference_ds, tmp_path, fmt, suffix, compression):
    path = tmp_path / f"c{suffix}"
    write_dataset(reference_ds, path, fmt, compression=compression)
    with sweep.open(path) as back:
        same(reference_ds, back)


def test_unknown_compression_is_bad_input(tmp_path, capsys):
    with pytest.raises(sweep.SpecError, match="compression"):
        run_with_stats(SPEC, progress=False, output=tmp_path / "x.nc", compression="gzip9")
    with pytest.raises(SystemExit) as exc:  # argparse's choices: exit 2 with the valid names
        main(["run", "-o", str(tmp_path / "x.nc"), "--compression", "gzip9"])
    assert exc.value.code == 2 and "zstd" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_zarr_chunks_match_zarr_python(reference_ds, tmp_path):
    """The directly written chunk files decode like zarr-python's, edge chunks included."""
    import zarr

    arr = np.asarray(reference_ds["tpot"].values)
    dims = reference_ds["tpot"].dims
    template = reference_ds.drop_vars(list(BATCH_VARIABLES))
    stores = []
    for k in range(2):
        w = ResultWriter(tmp_path / f"s{k}.zarr", template, dims, "zarr",
                         write_shape=(2, 1, 2, 3, 4, 2, 3, 6))  # 5 x 3 x 5: edge chunks
        stores.append(w)
    a, b = stores
    region = tuple(slice(None) for _ in dims)
    ZarrChunks(a.atomic.tmp, ["tpot"]).write("tpot", region, arr)
    zarr.open_group(str(b.atomic.tmp), mode="r+", zarr_format=2)["tpot"][...] = arr
    ka = sorted(p.name for p in (a.atomic.tmp / "tpot").iterdir() if not p.name.startswith("."))
    kb = sorted(p.name for p in (b.atomic.tmp / "tpot").iterdir() if not p.name.startswith("."))
    assert ka == kb and len(ka) > 1
    za = zarr.open_group(str(a.atomic.tmp), mode="r")["tpot"]
    zb = zarr.open_group(str(b.atomic.tmp), mode="r")["tpot"]
    np.testing.assert_array_equal(za[...], zb[...])
    np.testing.assert_array_equal(za[...], arr)
    chunks = ZarrChunks(a.atomic.tmp, ["tpot"])
    assert chunks.aligned("tpot", (slice(2, 4), *[slice(None)] * 7))
    assert chunks.aligned("tpot", (slice(4, 5), *[slice(None)] * 7))  # the edge
    assert not chunks.aligned("tpot", (slice(1, 2), *[slice(None)] * 7))  # -> zarr-python
    for w in stores:
        w.abort()


def test_writer_failure_is_raised_and_leaves_nothing(tmp_path, monkeypatch):
    target = tmp_path / "r.zarr"
    calls = {"n": 0}
    real = ZarrChunks.write

    def full_disk(self, name, region, arr):
        calls["n"] += 1
        if calls["n"] == 3 * len(BATCH_VARIABLES):  # on the writer thread, like a full disk
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, name, region, arr)

    monkeypatch.setattr(ZarrChunks, "write", full_disk)
    with pytest.raises(OutputError, match="no space left"):
        run_with_stats(SPEC, progress=False, max_memory="256 KiB", output=target)
    assert calls["n"] >= 3 * len(BATCH_VARIABLES)
    assert not list(tmp_path.iterdir())
    assert not [t for t in threading.enumerate() if t.name == "accel-sweep-writer"]


def test_interrupt_while_the_writer_writes_keeps_the_previous_result(reference_ds, tmp_path,
                                                                     monkeypatch):
    target = tmp_path / "keep.nc"
    write_dataset(reference_ds.isel(batch=[0]), target)
    previous = target.read_bytes()
    real_write, real_eval = ResultWriter.write, GridRun.evaluate
    writing = threading.Event()
    calls = {"n": 0}

    def slow_write(self, region, arrays):
        writing.set()
        time.sleep(0.05)
        return real_write(self, region, arrays)

    def interrupted(self, c):
        calls["n"] += 1
        if calls["n"] == 4:
            assert writing.wait(5)
            raise KeyboardInterrupt
        return real_eval(self, c)

    monkeypatch.setattr(ResultWriter, "write", slow_write)
    monkeypatch.setattr(GridRun, "evaluate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_with_stats(SPEC, progress=False, max_memory="256 KiB", output=target)
    assert target.read_bytes() == previous
    assert [p.name for p in tmp_path.iterdir()] == [target.name]
    assert not [p for p in tmp_path.iterdir() if TMP_PREFIX in p.name]
    assert not [t for t in threading.enumerate() if t.name == "accel-sweep-writer"]


# ------------------------------------------------------------------------------ CLI
def test_process_age_counts_from_python_not_from_a_shell_fork(monkeypatch):
    # a shell's last command is exec'd without a fork: the process then dates from the shell's
    # fork (``bash -c "pip install . && sweep run"`` printed a 94 s start-up); the age counted
    # from the interpreter caps it
    from sweep.cli import run as cli_run
    from sweep.execute import clock

    t_set = time.perf_counter()
    monkeypatch.setattr(clock, "IMPORT_STARTED", (t_set - 0.05, 0.01))
    age = cli_run.process_age()
    t_after = time.perf_counter()
    assert 0.06 <= age <= 0.06 + (t_after - t_set)


def test_wall_line_is_replaced_or_appended():
    stats = RunStats(points=1000, seconds=2.0, chunks=1)
    line = wall_line(3.5, 0.5, stats, 0.25)
    assert line.startswith("wall time : 3.50 s") and "summary 0.25 s" in line
    assert "start-up 0.50 s" in line and "points/s" in line
    text = "wrote x\nwall time : 1.00 s (kernel+write 1.00 s)\nfeasible  : 50%"
    assert with_wall_line(text, line).splitlines()[1] == line
    assert with_wall_line("wrote x\nfeasible  : 50%", line).splitlines()[-1] == line


def test_cli_prints_the_real_wall_time(tmp_path, capsys, monkeypatch):
    spec = tmp_path / "s.toml"
    spec.write_text('hardware = ["h100-sxm", "mi300x"]\nmodel = ["llama-3.1-8b"]\n'
                    'batch = [1, 16]\ncontext = [512]\nprecision = ["bf16"]\n'
                    'parallelism = ["tp1"]\n')
    import sweep.cli.summary as summary

    real = summary.run_summary

    def slow_summary(*a, **k):
        time.sleep(0.3)
        return real(*a, **k)

    monkeypatch.setattr(summary, "run_summary", slow_summary)
    t0 = time.perf_counter()
    assert main(["run", str(spec), "-o", str(tmp_path / "o.nc"), "--no-progress"]) == 0
    elapsed = time.perf_counter() - t0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("wall time"))
    total = float(line.split(":")[1].split()[0])
    run = float(line.split("kernel+write")[1].split()[0])
    summ = float(line.split("summary")[1].split()[0])
    assert summ >= 0.3  # the summary's time is in the printed wall time
    assert total >= run + summ - 0.02
    assert "start-up" not in line  # main() called in this process: no process start-up to add
    assert total <= elapsed + 0.005  # printed to 0.01 s: it may round up past the measured time
    # the parts add up to the whole (to the printing in between)
    setup = float(line.split("spec and tables")[1].split()[0])
    assert abs(total - (setup + run + summ)) < 0.05, line


def test_wall_line_names_every_part_of_a_distributed_run():
    from types import SimpleNamespace

    stats = SimpleNamespace(seconds=3.0, points_per_second=10.0,
                            phases={"setup": 0.5, "cluster_start": 4.0, "cluster_stop": 1.0,
                                    "summary": 0.25})
    line = wall_line(10.0, 1.0, stats, 0.3)
    assert "start-up 1.00 s" in line and "spec and tables 0.50 s" in line
    assert "Dask cluster start and stop 5.00 s" in line
    assert "kernel+write 2.75 s" in line and "summary 0.30 s" in line  # not counted twice


def test_stats_phases_add_up_for_a_streamed_run(tmp_path):
    _, stats = run_with_stats(SPEC, progress=False, max_memory="256 KiB",
                              output=tmp_path / "p.zarr")
    assert stats.phases["kernel"] > 0 and stats.phases["writer_busy"] > 0
    assert stats.phases["kernel"] + stats.phases["buffer_wait"] <= stats.seconds + 1e-6
    json.dumps(stats.phases)

