"""Faults at every phase of ``sweep run`` (plan, kernel, write, summary, publish, report): SIGINT
and SIGTERM give exit 130/143 and a message that says what happened to the target (unchanged,
or written), which is what happened; two runs to one target: one wins, the other says so before
computing anything."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import sweep.analysis.headline as headline
import sweep.cli.summary as summary
import sweep.execute.plan as plan
import sweep.results.target as target
from sweep.cli import main
from sweep.execute.grid import GridRun
from sweep.results.files import ResultWriter
from sweep.results.target import TMP_PREFIX, TargetLock, is_result

REPO = Path(__file__).resolve().parents[1]
SPEC = textwrap.dedent("""
    hardware = ["h100-sxm", "mi300x", "l40s"]
    model = ["llama-3.1-8b", "mixtral-8x7b"]
    batch = { from = 1, to = 512, scale = "linear", num = 16 }
    context = [512, 2048, 8192]
    precision = ["bf16", "fp8"]
    parallelism = ["tp1", "tp2", "tp8"]
""")
#: a different grid, so that the new result differs from the previous one
SPEC_NEW = SPEC.replace("num = 16", "num = 17")


@pytest.fixture()
def handlers():
    """Python's default SIGINT handler for the test (a background job may start with SIGINT
    ignored, and a run keeps an ignored signal ignored); SIGTERM as it was."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="module")
def previous(tmp_path_factory) -> Path:
    """Specs and a previous result of each format, made once."""
    d = tmp_path_factory.mktemp("faults")
    (d / "old.toml").write_text(SPEC)
    (d / "new.toml").write_text(SPEC_NEW)
    for suffix in (".nc", ".zarr"):
        assert main(["run", str(d / "old.toml"), "-o", str(d / f"r{suffix}"), "--no-progress",
                     "--max-memory", "256 KiB"]) == 0
    return d


@pytest.fixture()
def setup(previous, tmp_path) -> Path:
    d = tmp_path / "work"
    shutil.copytree(previous, d)
    return d


def _previous(d: Path, suffix: str) -> tuple[Path, dict[str, bytes]]:
    out = d / f"r{suffix}"
    return out, _contents(out)


def _contents(path: Path) -> dict[str, bytes]:
    if path.is_dir():
        return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
                if p.is_file()}
    return {"": path.read_bytes()}


def _leftovers(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if TMP_PREFIX in p.name or "sweep-lock" in p.name)


def _signal_in(monkeypatch, owner, name: str, sig: int, times: list[int]) -> None:
    """Make ``owner.name`` raise ``sig`` at its first call (the boundary of its phase)."""
    real = getattr(owner, name)

    def wrapped(*a, **k):
        times.append(1)
        if len(times) == 1:
            signal.raise_signal(sig)
        return real(*a, **k)

    monkeypatch.setattr(owner, name, wrapped)


# phase -> (object, attribute whose first call starts it, result published when it lands?)
PHASES = {
    "plan": (plan.MemoryPlan, "of", False),
    "kernel": (GridRun, "evaluate", False),
    "write": (ResultWriter, "write", False),  # on the writer thread
    "summary": (headline.HeadlineVariation, "merge", False),  # from the chunks, during the run
    "before-publish": (ResultWriter, "close", False),
    "report": (summary, "run_summary", True),  # after publication
}


CASES = [(".nc", phase, sig) for phase in (*PHASES, "publish")
         for sig in (signal.SIGINT, signal.SIGTERM)]
CASES += [(".zarr", phase, signal.SIGTERM) for phase in ("write", "publish", "report")]


@pytest.mark.parametrize("suffix, phase, sig", CASES,
                         ids=[f"{x}-{p}-{signal.Signals(s).name}" for x, p, s in CASES])
def test_signal_at_every_phase(setup, capsys, monkeypatch, handlers, phase, sig, suffix):
    out, before = _previous(setup, suffix)
    times: list[int] = []
    if phase == "publish":  # lands while the result is being renamed onto the target
        real = target.publishing

        @contextlib.contextmanager
        def signalled():
            with real():
                times.append(1)
                signal.raise_signal(sig)
                yield

        monkeypatch.setattr(target, "publishing", signalled)
        published = True
    else:
        owner, name, published = PHASES[phase]
        _signal_in(monkeypatch, owner, name, sig, times)
    code = main(["run", str(setup / "new.toml"), "-o", str(out), "--no-progress",
                 "--max-memory", "256 KiB"])
    err = capsys.readouterr().err
    assert times, f"phase {phase} was never reached"
    assert code == 128 + sig
    what = "terminated" if sig == signal.SIGTERM else "interrupted"
    assert f"sweep: {what}" in err and "Traceback" not in err
    assert is_result(out)
    if published:
        assert f"after the result was written to {str(out)!r}" in err
        assert _contents(out) != before  # the new result, as the message says
    else:
        assert "the previous output (if any) is unchanged" in err
        assert _contents(out) == before
    assert _leftovers(setup) == []


# ------------------------------------------------------------------------------ real processes
WRAPPER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import {module} as m
    real = m.{name}
    marker = Path(sys.argv[1])

    def slow(*a, **k):
        if not marker.exists():
            marker.write_text("here")
            time.sleep({sleep})
        return real(*a, **k)

    m.{name} = slow
    sys.argv = ["sweep", *sys.argv[2:]]
    from sweep.cli import main
    raise SystemExit(main())
""")


def _start(tmp_path: Path, module: str, name: str, sleep: float, argv: list[str],
           tag: str) -> tuple[subprocess.Popen, Path]:
    """``sweep ARGV`` in a fresh process that pauses ``sleep`` s at the first call of
    ``module.name`` (after creating a marker file)."""
    script = tmp_path / f"wrap_{tag}.py"
    script.write_text(WRAPPER.format(module=module, name=name, sleep=sleep))
    marker = tmp_path / f"marker_{tag}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO),
                                                       os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, str(script), str(marker), *argv], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    return proc, marker


def _wait_for(marker: Path, proc: subprocess.Popen, timeout: float = 300.0) -> None:
    t0 = time.monotonic()
    while not marker.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended first: {proc.communicate()}")
        if time.monotonic() - t0 > timeout:
            proc.kill()
            raise AssertionError("the run never reached its phase")
        time.sleep(0.05)


@pytest.mark.parametrize("sig, phase, module, name, written", [
    (signal.SIGTERM, "report", "sweep.cli.summary", "run_summary", True),
    (signal.SIGINT, "kernel", "sweep.execute.grid", "GridRun.evaluate", False),
])
def test_kill_a_real_run(setup, sig, phase, module, name, written):
    """``kill``/Ctrl-C from outside, at a phase where the run sits for a while."""
    out, before = _previous(setup, ".nc")
    proc, marker = _start(setup, module, name, 30.0,
                          ["run", str(setup / "new.toml"), "-o", str(out), "--no-progress"],
                          phase)
    _wait_for(marker, proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    if written:
        assert "after the result was written" in err and _contents(out) != before
    else:
        assert "unchanged" in err and _contents(out) == before
    assert _leftovers(setup) == []


@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
def test_two_runs_to_one_target(setup, suffix):
    """The first run holds the target; the second is refused at once (exit 2, naming the
    first's pid) and the target ends up as the first run's result."""
    out = setup / f"t{suffix}"
    first, marker = _start(setup, "sweep.execute.grid", "GridRun.evaluate", 5.0,
                           ["run", str(setup / "new.toml"), "-o", str(out), "--no-progress"],
                           "first")
    _wait_for(marker, first)  # it holds the lock and is computing
    second = subprocess.run([sys.executable, "-m", "sweep.cli", "run", str(setup / "old.toml"),
                             "-o", str(out), "--no-progress"], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=300)
    assert second.returncode == 2, second.stderr
    assert f"another sweep run (pid {first.pid}" in second.stderr
    assert "Traceback" not in second.stderr and len(second.stderr.strip().splitlines()) == 1
    assert not out.exists()  # the second run touched nothing
    stdout, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert f"wrote {out}" in stdout and is_result(out)
    assert _leftovers(setup) == []


def test_a_held_target_is_refused_before_any_computation(setup, capsys):
    out = setup / "t.nc"
    with TargetLock.acquire(out):  # this process holds it; a run in a child is refused
        child = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
            import sys
            from sweep.cli import main
            sys.exit(main(["run", {str(setup / 'old.toml')!r}, "-o", {str(out)!r},
                           "--no-progress"]))
        """)], capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)),
            timeout=300)
    assert child.returncode == 2 and "another sweep run" in child.stderr
    assert f"pid {os.getpid()}" in child.stderr
    assert not out.exists() and _leftovers(setup) == []
    # released: the lock file is gone and the next run goes through
    assert main(["run", str(setup / "old.toml"), "-o", str(out), "--no-progress"]) == 0
