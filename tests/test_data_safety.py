"""Data safety: a run never destroys what is not its own, checks its output before computing, cleans
up after interrupts and dead runs, and reports file-system faults in one line."""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sweep.cli import main
from sweep.results.target import TMP_PREFIX, is_result, remove_stale_partials

REPO = Path(__file__).resolve().parents[1]
SPEC = textwrap.dedent("""
    hardware = ["h100-sxm", "mi300x"]
    model = ["llama-3.1-8b"]
    batch = [1, 16]
    context = [512, 2048]
    precision = ["bf16"]
    parallelism = ["tp1", "tp2"]
""")
runmod = importlib.import_module("sweep.execute.grid")


@pytest.fixture()
def spec(tmp_path) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(SPEC)
    return p


@pytest.fixture()
def no_compute(monkeypatch):
    """Fail the test if any grid chunk is evaluated."""
    def boom(self, c):
        raise AssertionError("the kernel ran although the output was refused")

    monkeypatch.setattr(runmod.GridRun, "evaluate", boom)


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if TMP_PREFIX in p.name)


def test_user_directory_is_never_replaced(tmp_path, spec, capsys, no_compute):
    proj = tmp_path / "project.zarr"
    proj.mkdir()
    (proj / "notes.txt").write_text("my notes")
    assert main(["run", str(spec), "-o", str(proj), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "not a result written by sweep" in err and "--overwrite" in err
    assert len(err.strip().splitlines()) == 1
    assert (proj / "notes.txt").read_text() == "my notes"
    assert _leftovers(tmp_path) == []


def test_overwrite_flag_replaces_anything(tmp_path, spec, capsys):
    proj = tmp_path / "project.zarr"
    proj.mkdir()
    (proj / "notes.txt").write_text("my notes")
    assert main(["run", str(spec), "-o", str(proj), "--no-progress", "--overwrite"]) == 0
    assert is_result(proj) and not (proj / "notes.txt").exists()
    other = tmp_path / "notes.nc"
    other.write_text("not netCDF")
    assert main(["run", str(spec), "-o", str(other), "--no-progress", "--overwrite"]) == 0
    assert is_result(other)
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
def test_previous_result_is_replaced(tmp_path, spec, capsys, suffix):
    out = tmp_path / f"r{suffix}"
    assert main(["run", str(spec), "-o", str(out), "--no-progress"]) == 0
    assert is_result(out)
    first = sorted(p.name for p in tmp_path.iterdir())
    assert main(["run", str(spec), "-o", str(out), "--no-progress"]) == 0
    assert is_result(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == first  # nothing else left behind


@pytest.mark.parametrize("suffix, opener", [(".nc", "_open_netcdf"), (".zarr", "_open_zarr")])
def test_a_file_that_cannot_be_created_on_the_writer_thread(tmp_path, spec, capsys, monkeypatch,
                                                           suffix, opener):
    """``sweep run`` creates the file on the writer thread while the first chunk is computed
    (issue 24 item 5): a failure there (a full disk) is the same one clear line, exit 2, the
    previous result untouched and no partial file left."""
    import errno

    from sweep.results.files import ResultWriter

    out = tmp_path / f"r{suffix}"
    assert main(["run", str(spec), "-o", str(out), "--no-progress"]) == 0
    before = sorted(p.name for p in tmp_path.iterdir())
    threads = []

    def full(self, template):
        import threading

        threads.append(threading.current_thread().name)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ResultWriter, opener, full)
    capsys.readouterr()
    assert main(["run", str(spec), "-o", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "no space left" in err.lower() and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1
    assert threads == ["accel-sweep-writer"]
    assert is_result(out) and sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("args, words", [
    (["-o", "{d}/out.csv"], "cannot tell the format"),
    (["-o", "{d}/x.zarr", "--format", "netcdf"], "--format netcdf"),
    (["-o", "{d}/x.nc", "--format", "zarr"], "--format zarr"),
    (["-o", "{d}/plain", "--format", "zarr"], "needs a name ending in .zarr"),
    (["-o", "{d}/missing/x.nc"], "does not exist"),
    (["-o", "{d}/isdir.nc"], "is a directory"),
    (["-o", "{d}/notes.nc"], "not a result written by sweep"),
    (["-o", "{d}/file.zarr"], "is not a directory"),
])
def test_bad_output_is_refused_before_any_computation(tmp_path, spec, capsys, no_compute, args,
                                                      words):
    (tmp_path / "isdir.nc").mkdir()
    (tmp_path / "notes.nc").write_text("keep me")
    (tmp_path / "file.zarr").write_text("keep me")
    before = sorted(p.name for p in tmp_path.iterdir())
    argv = ["run", str(spec), "--no-progress", *(a.format(d=tmp_path) for a in args)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (tmp_path / "notes.nc").read_text() == "keep me"


def _fake_partial(directory: Path, target: str, token: str, held: bool):
    """A partial result as a run leaves it: lock file + partial file (+ an open, locked fd)."""
    stem = f".{target}{TMP_PREFIX}{token}"
    lock = directory / f"{stem}.lock"
    fd = os.open(lock, os.O_CREAT | os.O_RDWR)
    (directory / f"{stem}.nc").write_bytes(b"x" * 1000)
    if held:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    os.close(fd)
    return None


def test_stale_partials_of_dead_runs_are_removed(tmp_path, spec, capsys):
    out = tmp_path / "r.nc"
    _fake_partial(tmp_path, "r.nc", "dead00000000", held=False)
    live = _fake_partial(tmp_path, "r.nc", "live00000000", held=True)
    other = _fake_partial(tmp_path, "other.nc", "dead11111111", held=False)  # another target
    (tmp_path / f".r.nc{TMP_PREFIX}nolock0000.nc").write_bytes(b"y")  # no lock: not provably ours
    try:
        assert main(["run", str(spec), "-o", str(out), "--no-progress"]) == 0
        left = _leftovers(tmp_path)
        assert not any("dead00000000" in n for n in left)
        assert any("live00000000" in n for n in left)  # a live run keeps its partial
        assert any("dead11111111" in n for n in left)  # only the same target is cleaned
        assert f".r.nc{TMP_PREFIX}nolock0000.nc" in left
    finally:
        os.close(live)
    assert other is None


def test_interrupted_commit_is_restored_by_the_next_run(tmp_path, spec, capsys):
    """A run killed between the two renames of a Zarr commit leaves the previous result under
    ``.old``: the next run puts it back instead of deleting it."""
    out = tmp_path / "r.zarr"
    assert main(["run", str(spec), "-o", str(out), "--no-progress"]) == 0
    stem = f".r.zarr{TMP_PREFIX}abcdefabcdef"
    os.close(os.open(tmp_path / f"{stem}.lock", os.O_CREAT | os.O_RDWR))
    os.replace(out, tmp_path / f"{stem}.old")
    removed = remove_stale_partials(out)
    assert is_result(out)
    assert [p.name for p in removed] == [f"{stem}.lock"]


@pytest.fixture()
def sigint_default():
    """SIGINT with Python's default handler for the test. A process started in the background by
    a non-interactive shell (``cmd &``, as a CI script may) begins with SIGINT ignored, and a run
    deliberately keeps an ignored signal ignored (sweep.execute.signals.guarded)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("when", [2, "last"])
def test_a_swallowed_interrupt_still_stops_the_run(tmp_path, spec, capsys, monkeypatch, when,
                                                     sigint_default):
    """SIGINT landing in a C callback (numba/llvmlite compile) raises KeyboardInterrupt there,
    which is printed and lost; the run must stop anyway, with exit 130 and the previous result
    intact. Deterministic: the signal is raised, and swallowed, inside a chunk evaluation."""
    out = tmp_path / "r.nc"
    spec.write_text(SPEC.replace("batch = [1, 16]", 'batch = { from = 1, to = 512, scale = "linear", '
                                 'num = 100 }').replace("[512, 2048]", "[512, 1024, 2048, 4096]"))
    argv = ["run", str(spec), "-o", str(out), "--no-progress", "--max-memory", "64 KiB"]
    real = runmod.GridRun.evaluate
    calls = {"n": 0, "interrupt_at": 0}

    def counting(self, c):
        calls["n"] += 1
        return real(self, c)

    monkeypatch.setattr(runmod.GridRun, "evaluate", counting)
    assert main(argv) == 0
    n_chunks = calls["n"]
    assert n_chunks >= 3
    previous = out.read_bytes()
    calls["n"] = 0

    def swallowing(self, c):
        calls["n"] += 1
        if calls["n"] == (n_chunks if when == "last" else when):
            with contextlib.suppress(KeyboardInterrupt):  # what a C callback does with it
                signal.raise_signal(signal.SIGINT)
        return real(self, c)

    monkeypatch.setattr(runmod.GridRun, "evaluate", swallowing)
    assert main(argv) == 130
    assert calls["n"] >= 2
    assert out.read_bytes() == previous
    assert _leftovers(tmp_path) == []
    assert "interrupted" in capsys.readouterr().err
    # the handlers are restored afterwards: a later run is not interrupted
    monkeypatch.setattr(runmod.GridRun, "evaluate", real)
    assert main(["run", str(spec), "-o", str(out), "--no-progress"]) == 0


def test_calibrate_never_writes_into_the_installation(tmp_path, capsys):
    from sweep.validate.calibration import inside_installation

    site = tmp_path / "lib" / "python3.11" / "site-packages" / "grids" / "data"
    site.mkdir(parents=True)
    assert inside_installation(site / "calibration.toml")
    assert not inside_installation(tmp_path / "calibration.toml")
    assert main(["calibrate", "-o", str(site / "calibration.toml"), "--no-lopo"]) == 2
    assert "installed package" in capsys.readouterr().err
    assert not (site / "calibration.toml").exists()
    with pytest.raises(SystemExit) as exc:  # -o is required: no default inside the package
        main(["calibrate", "--no-lopo"])
    assert exc.value.code == 2


# ------------------------------------------------------------------------- file-system faults
def _namespace_ok() -> str:
    """'' if this machine lets an unprivileged user namespace mount a tmpfs, else why not."""
    if not shutil.which("unshare"):
        return "no unshare command"
    res = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                         capture_output=True, text=True)
    return "" if res.returncode == 0 else f"cannot mount a tmpfs in a user namespace: {res.stderr}"


FS_REASON = _namespace_ok()


def _run_in_small_fs(tmp_path: Path, spec: Path, mount_opts: str, remount_ro: bool = False,
                     command: str | None = None):
    """``sweep run SPEC -o BOX/out.nc`` (or ``sweep COMMAND``, where ``{box}`` is the mount) with
    BOX a fresh tmpfs mounted with ``mount_opts``."""
    box = tmp_path / "box"
    box.mkdir()
    command = (command or f"run {spec} -o {{box}}/out.nc --no-progress").format(box=box)
    script = (f"mount -t tmpfs -o {mount_opts} tmpfs {box} && "
              + (f"mount -o remount,ro {box} && " if remount_ro else "")
              + f"{sys.executable} -m sweep.cli {command}; "
              f"echo rc=$?; ls -a {box}")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True,
                          env=env, timeout=600)


@pytest.mark.skipif(bool(FS_REASON), reason=FS_REASON or "ok")
def test_full_disk_is_one_clear_line(tmp_path, spec):
    big = tmp_path / "big.toml"
    big.write_text(SPEC.replace('batch = [1, 16]', 'batch = { from = 1, to = 4096, scale = "linear", '
                                                   'num = 400 }'))
    res = _run_in_small_fs(tmp_path, big, "size=64k")
    assert "rc=2" in res.stdout, res.stdout + res.stderr
    assert "no space left" in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    listing = res.stdout.split("rc=2", 1)[1].split()
    assert TMP_PREFIX not in " ".join(listing) and "out.nc" not in listing


@pytest.mark.skipif(bool(FS_REASON), reason=FS_REASON or "ok")
def test_read_only_file_system_is_one_clear_line(tmp_path, spec):
    res = _run_in_small_fs(tmp_path, spec, "size=1m", remount_ro=True)
    assert "rc=2" in res.stdout, res.stdout + res.stderr
    assert "not writable" in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(bool(FS_REASON), reason=FS_REASON or "ok")
@pytest.mark.parametrize("command", ["plot {result} -o {{box}}/p.png",
                                     "calibrate -o {{box}}/c.toml --no-lopo"])
def test_plot_and_calibrate_into_a_read_only_file_system(tmp_path, spec, command):
    """Refused before any work, exit 2 (issue 22 item 11: exit 1 before)."""
    result = tmp_path / "r.nc"
    assert main(["run", str(spec), "-o", str(result), "--no-progress"]) == 0
    res = _run_in_small_fs(tmp_path, spec, "size=1m", remount_ro=True,
                           command=command.format(result=result))
    assert "rc=2" in res.stdout, res.stdout + res.stderr
    assert "not writable" in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------------- other outputs
def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    return fig


@pytest.mark.parametrize("suffix", [".png", ".pdf", ".svg"])
def test_an_image_replaces_only_an_image_of_ours(tmp_path, suffix):
    from sweep.analysis import plots
    from sweep.results.images import is_own_image
    from sweep.results.target import OutputError

    fig = _figure()
    ours, theirs = tmp_path / f"ours{suffix}", tmp_path / f"theirs{suffix}"
    plots.save(fig, ours)
    assert is_own_image(ours)
    plots.save(fig, ours)  # our own image is replaced
    fig.savefig(theirs)  # matplotlib's, not ours
    before = theirs.read_bytes()
    assert not is_own_image(theirs)
    with pytest.raises(OutputError, match="not an image written by sweep"):
        plots.save(fig, theirs)
    assert theirs.read_bytes() == before
    plots.save(fig, theirs, overwrite=True)  # the user's explicit choice
    assert is_own_image(theirs)
    assert _leftovers(tmp_path) == []


def test_an_interrupted_image_write_leaves_the_previous_image(tmp_path, monkeypatch):
    from sweep.analysis import plots

    fig = _figure()
    out = tmp_path / "p.png"
    plots.save(fig, out)
    before = out.read_bytes()

    def half(path, **kw):
        Path(path).write_bytes(b"\x89PNG half")
        raise KeyboardInterrupt

    monkeypatch.setattr(fig, "savefig", half)
    with pytest.raises(KeyboardInterrupt):
        plots.save(fig, out)
    assert out.read_bytes() == before and _leftovers(tmp_path) == []


def test_a_calibration_overlay_replaces_only_an_overlay_of_ours(tmp_path):
    from sweep.results.target import OutputError
    from sweep.validate.calibration import is_overlay_file, write_overlay

    text = '[vllm.defaults]\nbandwidth = 0.8\n\n[provenance]\ntool = "sweep calibrate"\n'
    out = tmp_path / "c.toml"
    write_overlay(text, out)
    assert is_overlay_file(out)
    write_overlay(text.replace("0.8", "0.7"), out)  # its own overlay: replaced
    assert "0.7" in out.read_text()
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    with pytest.raises(OutputError, match="not a calibration overlay written by sweep"):
        write_overlay(text, spec)
    assert spec.read_text() == SPEC
    with pytest.raises(OutputError, match="does not exist"):
        write_overlay(text, tmp_path / "nodir" / "c.toml")  # never created
    assert not (tmp_path / "nodir").exists()
    write_overlay(text, spec, overwrite=True)
    assert is_overlay_file(spec) and _leftovers(tmp_path) == []
