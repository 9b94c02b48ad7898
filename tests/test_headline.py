"""The run's headline computed from its chunks (sweep.analysis.headline) equals the figure computed
from the written result (max_variation), exactly; the running extremes do not depend on how the
values are cut into pieces or in which order they arrive; the summary never reads the file."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st

import sweep
from sweep.analysis import core as an
from sweep.analysis.headline import HeadlineVariation
from sweep.analysis.variation import RunningExtremes, label_ranks, max_variation, variation
from sweep.cli import main
from sweep.execute.local import run_with_stats

GRID = {"hardware": ["h100-sxm", "mi300x", "l40s", "groq-lpu", "gaudi3"],
        "model": ["llama-3.1-8b", "mixtral-8x7b", "llama-3.3-70b"],
        "batch": [1, 16, 256], "context": [128, 4096, 131072], "precision": ["bf16", "fp8"],
        "parallelism": ["tp1", "tp2", "tp8", "tp8-pp4", "ep8"]}
#: two engines, output_len as a dim, and a device identical to another but for its name: ties
#: between devices and between layouts
TIES = {"hardware": ["h100-sxm", "h100-twin", "mi300x"], "engine": ["native", "vllm"],
        "model": ["llama-3.1-8b", "mixtral-8x7b"], "batch": [1, 64], "context": [512, 8192],
        "output_len": [64, 1024], "precision": ["bf16"], "parallelism": ["tp1", "tp2", "dp2"],
        "hypothetical": {"h100-twin": {"base": "h100-sxm", "name": "H100 twin",
                                       "tdp": "700 W"}}}


# ------------------------------------------------------------------------------ running extremes
@st.composite
def pieces(draw):
    """Values (labels x rest) with ties, NaN and infinities, and a random cut into pieces."""
    n = draw(st.integers(1, 5))
    rest = draw(st.integers(1, 6))
    vals = np.array(draw(st.lists(st.sampled_from([1.0, 2.0, 3.0, 0.0, np.nan, np.inf]),
                                  min_size=n * rest, max_size=n * rest))).reshape(n, rest)
    labels = np.array(draw(st.permutations([f"d{i}" for i in range(n)])))
    cuts_h = sorted(set(draw(st.lists(st.integers(1, max(1, n - 1)), max_size=3))) - {n})
    cuts_r = sorted(set(draw(st.lists(st.integers(1, max(1, rest - 1)), max_size=3))) - {rest})
    order = draw(st.randoms())
    return vals, labels, cuts_h, cuts_r, order


def _split(n: int, cuts: list[int]) -> list[slice]:
    edges = [0, *cuts, n]
    return [slice(a, b) for a, b in itertools.pairwise(edges) if b > a]


@given(pieces())
def test_running_extremes_do_not_depend_on_the_pieces(case):
    vals, labels, cuts_h, cuts_r, rnd = case
    n, rest = vals.shape
    rank = label_ranks(labels)
    whole = RunningExtremes((rest,), n, carry=True)
    carried = np.arange(n * rest).reshape(n, rest) % 7
    whole.add(vals, rank, carried=carried)
    parts = [(h, r) for h in _split(n, cuts_h) for r in _split(rest, cuts_r)]
    rnd.shuffle(parts)
    cut = RunningExtremes((rest,), n, carry=True)
    for h, r in parts:
        cut.merge(RunningExtremes.piece(vals[h, r], rank[h], n, carried[h, r]), (r,))
    for side in ("hi", "lo"):
        assert np.array_equal(whole.top[side], cut.top[side])
        assert np.array_equal(whole.pick[side], cut.pick[side])
        assert np.array_equal(whole.carried[side], cut.carried[side])
    assert np.array_equal(whole.count, cut.count)
    # the same figures as the array core's variation and tie rule
    ok = np.isfinite(vals)
    ratio, hi, lo, count = an.variation(vals.T, ok.T, axis=-1)
    assert np.array_equal(cut.count, count)
    order = np.argsort(labels)
    found = cut.extreme("max")
    if found is None:
        assert not np.isfinite(ratio).any()
        return
    assert found["ratio"] == np.nanmax(np.where(np.isfinite(ratio), ratio, np.nan))
    assert found["median_ratio"] == np.median(ratio[np.isfinite(ratio)])
    i = found["index"][0]
    best = an.extreme_index(vals.T, ok.T, "max", axis=-1, order=order)[i]
    worst = an.extreme_index(vals.T, ok.T, "min", axis=-1, order=order)[i]
    assert found["best_rank"] == rank[best] and found["best_value"] == hi[i]
    assert found["worst_rank"] == rank[worst] and found["worst_value"] == lo[i]
    assert found["best_carried"] == carried[best, i]
    assert found["worst_carried"] == carried[worst, i]


# ------------------------------------------------------------------------------ streamed runs
def _streamed(spec, path, max_memory, basis="power"):
    _, stats = run_with_stats(spec, output=path, max_memory=max_memory, progress=False,
                              summarise=lambda t: HeadlineVariation(t, basis=basis),
                              reopen=False)
    return stats


@pytest.mark.parametrize("spec, max_memory, suffix, basis", [
    (GRID, "64 KiB", ".nc", "power"),     # chunks cut across devices, models and batch
    (GRID, "1 GiB", ".zarr", "power"),    # one chunk
    (GRID, "256 KiB", ".zarr", "device"),
    (TIES, "64 KiB", ".nc", "power"),
    (TIES, "64 KiB", ".zarr", "cost"),
])
def test_headline_from_the_chunks_equals_the_figure_from_the_file(tmp_path, spec, max_memory,
                                                                  suffix, basis):
    stats = _streamed(spec, tmp_path / f"r{suffix}", max_memory, basis)
    got = stats.summary.finish()
    with sweep.open(tmp_path / f"r{suffix}") as ds:
        want = max_variation(ds, "throughput", basis=basis)
        ratio = variation(ds, "throughput", basis=basis)["ratio"].values
    assert got == want  # every field: ratio, median, where, labels, values, layouts, units
    assert got["median_ratio"] == np.median(ratio[np.isfinite(ratio)])  # exact, not estimated
    if max_memory == "64 KiB":
        assert stats.chunks > 1 and stats.memory.block_points > 0


def test_headline_in_memory_and_streamed_agree():
    ds = sweep.run(GRID, progress=False)
    assert max_variation(ds, "throughput") == max_variation(ds, "throughput", slab_bytes=1)


def test_run_summary_does_not_read_the_result(tmp_path, capsys, monkeypatch):
    """The CLI prints its headline without opening what it wrote (no second pass, no memory
    beyond the budget, nothing left to do once the result is published)."""
    spec = tmp_path / "s.toml"
    spec.write_text('hardware = ["h100-sxm", "mi300x"]\nmodel = ["llama-3.1-8b"]\n'
                    'batch = [1, 16]\ncontext = [512]\nprecision = ["bf16"]\n'
                    'parallelism = ["tp1", "tp2"]\n')

    def refuse(*a, **k):
        raise AssertionError("the result was read back")

    monkeypatch.setattr(xr, "open_dataset", refuse)
    monkeypatch.setattr(xr, "open_zarr", refuse)
    for name in ("o.nc", "o.zarr"):
        assert main(["run", str(spec), "-o", str(tmp_path / name), "--no-progress"]) == 0
        out = capsys.readouterr().out
        assert "variation : throughput per kW" in out and "best h100-sxm" in out


def test_a_summary_beyond_its_memory_share_is_skipped_and_says_so(tmp_path, capsys):
    """Running extremes larger than a quarter of --max-memory are not kept: the run stays within
    its budget and the report says how to get the figure."""
    spec = tmp_path / "s.toml"
    spec.write_text('hardware = ["h100-sxm", "mi300x"]\nmodel = ["llama-3.1-8b"]\n'
                    'batch = { from = 1, to = 2048, scale = "linear", num = 2048 }\n'
                    'context = [128, 256, 512, 1024]\nprecision = ["bf16"]\n'
                    'parallelism = ["tp1"]\n')
    out = tmp_path / "o.nc"
    assert main(["run", str(spec), "-o", str(out), "--no-progress", "--max-memory",
                 "1 MiB"]) == 0
    text = capsys.readouterr().out
    assert "variation : not computed during the run" in text
    assert f"sweep variation {out}" in text
    assert main(["variation", str(out)]) == 0  # the figure, from the file
    assert "varies up to" in capsys.readouterr().out


def test_a_single_device_has_no_headline(tmp_path):
    stats = _streamed({"hardware": ["h100-sxm"], "model": ["llama-3.1-8b"], "batch": [1],
                       "context": [512], "precision": ["bf16"], "parallelism": ["tp1"]},
                      tmp_path / "r.nc", "1 GiB")
    assert stats.summary.skipped and stats.summary.finish() is None
