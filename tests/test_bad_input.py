"""The bad-input battery (issue 22): every CLI subcommand and the Python entry points, given bad
input, stop with the project's error: exit code 2 (Python: SpecError), one line, no traceback,
and every file that was in the working directory before is byte-identical afterwards (nothing
replaced, created or removed)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import sweep
from grids.errors import SpecError
from sweep.cli import main

REPO = Path(__file__).resolve().parents[1]
SPEC = """hardware = ["h100-sxm", "mi300x"]
model = ["llama-3.1-8b"]
batch = [1, 16]
context = [512, 2048]
precision = ["bf16"]
parallelism = ["tp1", "tp2"]
"""
ROW = {"hardware": "h100-sxm", "model": "llama-3.1-8b", "batch": 1, "context": 512,
       "output_len": 128, "precision": "bf16", "parallelism": "tp1"}


@pytest.fixture(scope="module")
def template_dir(tmp_path_factory) -> Path:
    """A working directory as a user has it: a spec, results, and files that are not sweep's."""
    d = tmp_path_factory.mktemp("battery")
    (d / "s.toml").write_text(SPEC)
    assert main(["run", str(d / "s.toml"), "-o", str(d / "r.nc"), "--no-progress"]) == 0
    assert main(["run", str(d / "s.toml"), "-o", str(d / "r.zarr"), "--no-progress"]) == 0
    (d / "notes.txt").write_text("my notes\n")
    xr.Dataset({"temperature": ("x", np.arange(3.0))}).to_netcdf(d / "foreign.nc")
    xr.Dataset({"temperature": ("x", np.arange(3.0))}).to_zarr(d / "foreign.zarr", zarr_format=2)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1])
    fig.savefig(d / "photo.png")  # an image of the user's (matplotlib's own metadata)
    plt.close(fig)
    (d / "dir.png").mkdir()
    (d / "dir.toml").mkdir()
    (d / "cal-typo.toml").write_text("[trtlm.defaults]\nbandwidth = 0.3\n")
    hw = (REPO / "grids" / "data" / "hardware" / "h100-sxm.toml").read_text()
    (d / "my-gpu.toml").write_text(hw)  # its id is h100-sxm
    cfg = json.loads((REPO / "grids" / "data" / "models" / "llama-3.1-8b.json").read_text())
    (d / "moe0.json").write_text(json.dumps({**cfg, "num_local_experts": 0,
                                             "num_experts_per_tok": 2}))
    base = SPEC.replace('model = ["llama-3.1-8b"]\n', "")
    specs = {
        "spec-cal.toml": SPEC + 'engine = ["trtllm"]\ncalibration = "cal-typo.toml"\n',
        "spec-dev.toml": SPEC.replace('["h100-sxm", "mi300x"]', '["my-gpu.toml"]'),
        "spec-moe.toml": base + 'model = ["moe0.json"]\n',
        "spec-pp.toml": SPEC.replace('["tp1", "tp2"]', '["pp99999999999"]'),
        "spec-chunk.toml": SPEC + "[workload]\nprefill_chunk = 0\n",
        "spec-dup.toml": SPEC.replace('["h100-sxm", "mi300x"]', '["h100-sxm", "h100-sxm"]'),
        "spec-key.toml": SPEC + 'hardwar = ["h100-sxm"]\n',
    }
    for name, text in specs.items():
        (d / name).write_text(text)
    return d


@pytest.fixture()
def workdir(template_dir, tmp_path, monkeypatch) -> Path:
    d = tmp_path / "work"
    shutil.copytree(template_dir, d)
    monkeypatch.chdir(d)
    return d


def snapshot(d: Path) -> dict[str, str]:
    """Every path under ``d`` with the SHA-256 of its bytes ('dir' for directories)."""
    return {str(p.relative_to(d)): ("dir" if p.is_dir() else
                                    hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(d.rglob("*"))}


#: (argv, words the one line must contain); every case is bad input
CLI_CASES = [
    ([], "required: command"),
    (["nope"], "invalid choice"),
    # run
    (["run", "missing.toml"], "not found"),
    (["run", "s.toml", "-o", "notes.txt"], "cannot tell the format"),
    (["run", "s.toml", "-o", "foreign.nc"], "not a result written by sweep"),
    (["run", "s.toml", "-o", "nodir/x.nc"], "does not exist"),
    (["run", "s.toml", "-o", "dir.png", "--format", "zarr"], "needs a name ending in .zarr"),
    (["run", "s.toml", "--max-memory", "lots"], "max_memory"),
    (["run", "s.toml", "--max-memory", "1 KiB"], "below 64 KiB"),
    (["run", "s.toml", "--compression", "foo"], "invalid choice"),
    (["run", "s.toml", "--scheduler", "local:0"], "whole number of workers"),
    (["run", "spec-cal.toml"], "unknown engine (did you mean 'trtllm'?)"),
    (["run", "spec-dev.toml"], "differs from the file name 'my-gpu'"),
    (["run", "spec-moe.toml"], "'num_local_experts' = 0"),
    (["run", "spec-pp.toml"], ">= 1 and <= 65,536"),
    (["run", "spec-chunk.toml"], "prefill_chunk"),
    (["run", "spec-dup.toml"], "duplicate entries ['h100-sxm']"),
    (["run", "spec-key.toml"], "unknown key 'hardwar'"),
    # info and the analyses
    (["info", "missing.nc"], "not found"),
    (["info", "foreign.nc"], "not a result written by sweep"),
    (["info", "foreign.zarr"], "not a result written by sweep"),
    (["info", "notes.txt"], "cannot open"),
    (["variation", "r.nc", "--metric", "speed"], "unknown metric"),
    (["variation", "r.nc", "--over", "nope"], "not a dim"),
    (["variation", "r.nc", "--sel", "batch=1,"], "write DIM=VALUE or DIM=A,B"),
    (["variation", "r.nc", "--basis", "watts"], "unknown kind"),
    (["frontier", "r.zarr", "--along", "nope"], "not a dim"),
    (["pareto", "r.nc", "--objectives", "tpot"], "two or more"),
    (["regimes", "r.nc", "--basis", "system:0"], "whole number of devices"),
    (["strategies", "foreign.nc"], "not a result written by sweep"),
    (["goodput", "r.nc", "--ttft", "2", "--per", "parsec"], "parsec"),
    (["plot", "r.nc", "-o", "dir.png"], "is a directory"),
    (["plot", "r.nc", "-o", "photo.png"], "not an image written by sweep"),
    (["plot", "r.nc", "-o", "nodir/p.png"], "does not exist"),
    (["plot", "r.nc", "-o", "p.bmp"], "format"),
    (["plot", "r.nc", "-o", "p.png", "--model", "gpt-9"], "gpt-9"),
    (["catalog", "nope"], "invalid choice"),
    (["glossary", "extra"], "unrecognized arguments"),
    # validate and calibrate
    (["validate", "--data", "missing.csv"], "file not found"),
    (["validate", "--calibration", "cal-typo.toml"], "unknown engine"),
    (["validate", "--uncalibrated", "--calibration", "cal-typo.toml"], "not both"),
    (["validate", "--plot", "nodir/p.png"], "does not exist"),
    (["validate", "--plot", "photo.png"], "not an image written by sweep"),
    (["validate", "--plot", "p.jpg"], ".png"),
    (["calibrate"], "required: -o"),
    (["calibrate", "-o", "s.toml", "--no-lopo"], "not a calibration overlay written by sweep"),
    (["calibrate", "-o", "nodir/c.toml", "--no-lopo"], "does not exist"),
    (["calibrate", "-o", "c.txt", "--no-lopo"], ".toml"),
    (["calibrate", "-o", "dir.toml", "--no-lopo"], "is a directory"),
    (["calibrate", "-o", "c.toml", "--max-nfev", "0"], "--max-nfev must be >= 1"),
    (["calibrate", "-o", "c.toml", "--weak-stderr", "0"], "--weak-stderr must be > 0"),
    (["calibrate", "-o", "c.toml", "--min-rows", "0"], "--min-rows"),
]


@pytest.mark.parametrize("argv, words", CLI_CASES, ids=[" ".join(a) or "(none)"
                                                         for a, _ in CLI_CASES])
def test_cli_bad_input(workdir, capsys, argv, words):
    before = snapshot(workdir)
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sweep: error:"), err
    assert words in lines[0] and "Traceback" not in err
    assert snapshot(workdir) == before


def _df(**over) -> pd.DataFrame:
    return pd.DataFrame([{**ROW, **over}])


#: (call, words of the SpecError); called in the working directory
PY_CASES = [
    (lambda: sweep.run(123), "a grid spec is a TOML file path"),
    (lambda: sweep.run(["h100-sxm"]), "belongs under a key"),
    (lambda: sweep.run({"hardware": ["nope"]}), "unknown hardware id 'nope'"),
    (lambda: sweep.run({"batch": (0, 1)}), "must be >= 1"),
    (lambda: sweep.run("s.toml", output="notes.txt"), "cannot tell the format"),
    (lambda: sweep.run("s.toml", output="foreign.nc"), "not a result written by sweep"),
    (lambda: sweep.run("s.toml", max_memory="lots"), "max_memory"),
    (lambda: sweep.evaluate([1, 2]), "give the points as a pandas DataFrame"),
    (lambda: sweep.evaluate(_df(), prefill_chunk=0), "prefill_chunk"),
    (lambda: sweep.evaluate(_df(), prefill_chunk=-8), "prefill_chunk"),
    (lambda: sweep.evaluate(_df(), prefill_chunk=0.5), "prefill_chunk"),
    (lambda: sweep.evaluate(_df(), calibration="cal-typo.toml"), "unknown engine"),
    (lambda: sweep.evaluate(_df(), calibration="missing.toml"), "not found"),
    (lambda: sweep.evaluate(_df(), calibration={"trtlm": {"defaults": {"bandwidth": 0.3}}}),
     "unknown engine"),
    (lambda: sweep.evaluate(_df(hardware=None)), "rows 0 have no value"),
    (lambda: sweep.evaluate(_df(batch=0)), "whole numbers"),
    (lambda: sweep.open(5), "give the path of a result file"),
    (lambda: sweep.open("foreign.nc"), "not a result written by sweep"),
    (lambda: sweep.open("notes.txt"), "cannot open"),
    (lambda: sweep.open("r.nc").sweep.max_variation("speed"), "unknown metric"),
    (lambda: sweep.open("r.nc").sweep.variation("throughput", over="nope"), "not a dim"),
]


@pytest.mark.parametrize("call, words", PY_CASES, ids=[w for _, w in PY_CASES])
def test_python_bad_input(workdir, call, words):
    before = snapshot(workdir)
    with pytest.raises(SpecError) as exc:
        call()
    text = str(exc.value)
    assert words in text and len(text.splitlines()) == 1, text
    assert snapshot(workdir) == before


def test_the_inputs_the_battery_refuses_are_accepted_when_right(workdir, capsys):
    """The counterparts of some cases above (items 7 and 10 of issue 22)."""
    assert main(["variation", "r.nc", "--over", "batch"]) == 0  # any numeric dim
    assert "varies up to" in capsys.readouterr().out
    with sweep.open("r.nc") as ds:
        mv = ds.sweep.max_variation("throughput", over="batch")
        assert mv["best"] in ("1", "16") and mv["worst"] in ("1", "16")
    # spec axes as tuples, numpy arrays and scalars, ranges: the same grid as lists
    lists = sweep.run({"hardware": ["h100-sxm"], "model": ["llama-3.1-8b"], "batch": [1, 2, 3],
                       "context": [512, 1024], "output_len": 64, "precision": ["bf16"]},
                      progress=False)
    other = sweep.run({"hardware": ("h100-sxm",), "model": np.array(["llama-3.1-8b"]),
                       "batch": range(1, 4), "context": np.array([512, 1024]),
                       "output_len": np.int64(64), "precision": ("bf16",)}, progress=False)
    xr.testing.assert_identical(lists.drop_attrs(), other.drop_attrs())
    # evaluate: a row as a dict, a list of row dicts, a calibration file
    want = sweep.evaluate(_df())
    for table in (ROW, [ROW], {k: [v] for k, v in ROW.items()}):
        pd.testing.assert_frame_equal(sweep.evaluate(table), want)
    from grids.engines import calibration_path, shipped_overlay

    by_path = sweep.evaluate(_df(engine="vllm"), calibration=calibration_path())
    by_dict = sweep.evaluate(_df(engine="vllm"), calibration=shipped_overlay())
    pd.testing.assert_frame_equal(by_path, by_dict)
