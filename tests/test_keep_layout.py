"""Keeping only each point's best layout (spec key ``best_layout``, sweep/analysis/keep_layout.py):
the run's reduction equals ``Dataset.sweep.best_layout`` on the full result, in memory and in
files, in one chunk or many; the analyses read a kept result or say why they cannot."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import sweep
from grids.errors import SpecError
from kernels.params import INFEASIBLE_MEANINGS
from sweep.analysis.headline import HeadlineVariation
from sweep.execute.local import run_with_stats

SPEC = {"hardware": ["h100-sxm", "mi300x", "groq-lpu", "gaudi3"],
        "model": ["llama-3.1-8b", "llama-3.3-70b"], "batch": [1, 64, 1024],
        "context": [512, 8192], "output_len": [128, 1024], "precision": ["bf16", "fp8"],
        "parallelism": "auto"}
BASES = ["power", "power:accelerator", "device", "system:8", "system:2", "power:20kW", "cost",
         "cost:40", "replica"]
OUTSIDE = INFEASIBLE_MEANINGS.index("outside_basis")


@pytest.fixture(scope="module")
def full() -> xr.Dataset:
    return sweep.run(SPEC, progress=False)


def kept_run(basis, **kw) -> xr.Dataset:
    return sweep.run({**SPEC, "best_layout": basis}, progress=False, **kw)


def at_kept(full: xr.Dataset, kept: xr.Dataset, name: str) -> np.ndarray:
    """``name`` of the full result at each point's kept layout (index 0 where none is)."""
    idx = xr.DataArray(np.maximum(kept.layout_index.values, 0), dims=kept.layout_index.dims)
    return full[name].isel(parallelism=idx).transpose(*kept[name].dims).values


@pytest.mark.parametrize("basis", BASES)
def test_kept_layout_is_the_best_one_on_the_basis(full, basis):
    kept = kept_run(basis)
    assert "parallelism" not in kept.dims and kept.sizes["layout"] == full.sizes["parallelism"]
    assert list(kept.layout.values) == list(full.parallelism.values)
    assert kept.layout_index.dtype == np.int16
    want = full.sweep.best_layout("throughput", basis)
    labels = np.array([*map(str, kept.layout.values), ""], dtype=object)
    got = labels[kept.layout_index.values]
    assert (got == want.layout.transpose(*kept.layout_index.dims).values).all()
    some = kept.layout_index.values >= 0
    assert some.any()
    for name in full.data_vars:  # every metric is the kept layout's, bit for bit
        assert np.array_equal(kept[name].values[some], at_kept(full, kept, name)[some],
                              equal_nan=True), name


@pytest.mark.parametrize("basis", ["power", "system:2", "cost"])
def test_points_without_a_layout_are_infeasible_with_a_reason(full, basis):
    kept = kept_run(basis)
    none = kept.layout_index.values < 0
    assert none.any()
    assert (kept.fits.values[none] == 0).all()
    assert np.isnan(kept.throughput.values[none]).all()
    assert (kept.bound.values[none] == -1).all()
    dims = kept.layout_index.dims
    fits_any = (full.fits == 1).any("parallelism").transpose(*dims).values
    furthest = full.infeasible_reason.max("parallelism").transpose(*dims).values
    want = np.where(fits_any, OUTSIDE, furthest)
    assert (kept.infeasible_reason.values[none] == want[none]).all()
    if basis == "system:2":  # 70B layouts beyond two devices are outside the budget
        assert (kept.infeasible_reason.values[none] == OUTSIDE).any()


def test_files_and_chunks_give_the_same_result(tmp_path, full):
    mem = kept_run("device")
    chunked, stats = run_with_stats({**SPEC, "best_layout": "device"}, progress=False,
                                    max_memory="64 KiB")
    assert stats.chunks > 1
    for name in mem.data_vars:
        assert np.array_equal(chunked[name].values, mem[name].values, equal_nan=True), name
    outs = {}
    for suffix in (".nc", ".zarr"):
        path = tmp_path / f"kept{suffix}"
        ds, stats = run_with_stats({**SPEC, "best_layout": "device"}, progress=False,
                                   output=path, max_memory="64 KiB",
                                   summarise=HeadlineVariation)
        assert stats.chunks > 1
        assert stats.kept == (full.sizes["parallelism"], "device")
        # feasible: of the points evaluated (every layout), as without best_layout
        assert stats.feasible == int((full.fits == 1).sum())
        assert stats.sizes is not None and "parallelism" not in stats.sizes
        outs[suffix] = stats.summary.finish()
        assert ds.attrs["best_layout_basis"] == "device"
        assert "coordinates" not in ds.attrs
        assert {"devices", "tp", "pp", "ep"} <= set(ds.coords)
        assert set(ds.data_vars) == set(mem.data_vars)
        for name in mem.data_vars:
            assert ds[name].dtype == mem[name].dtype
            assert np.array_equal(ds[name].values, mem[name].values, equal_nan=True), name
        ds.close()
    # the run's headline sees every layout of each chunk: that of the full result
    _, ref = run_with_stats(SPEC, progress=False, output=tmp_path / "all.nc",
                            summarise=HeadlineVariation)
    want = ref.summary.finish()
    for got in outs.values():
        assert got["ratio"] == want["ratio"] and got["best_layout"] == want["best_layout"]


def test_analyses_on_a_kept_result(full):
    kept = kept_run("power")
    bl = kept.sweep.best_layout("throughput")  # the basis it was kept on: no warning
    ref = full.sweep.best_layout("throughput")
    assert np.array_equal(bl.value.values, ref.value.transpose(*bl.value.dims).values,
                          equal_nan=True)
    assert (bl.layout.values == ref.layout.transpose(*bl.layout.dims).values).all()
    with pytest.warns(UserWarning, match="kept each point's best layout on the basis 'power'"):
        kept.sweep.best_layout("throughput", "device")
    with pytest.raises(SpecError, match="without best_layout"):
        kept.sweep.fewest_devices()
    with pytest.raises(SpecError, match="without best_layout"):
        kept.sweep.strategies()
    front = kept.sweep.pareto(["throughput", "ttft"])  # across hardware at each kept layout
    assert "parallelism" not in front.dims and front.any()
    assert (kept.sweep.winner("throughput").values != "").any()
    mv = kept.sweep.max_variation("throughput")
    assert mv["ratio"] == full.sweep.max_variation("throughput")["ratio"]
    assert mv["best_layout"] and mv["worst_layout"]
    with pytest.warns(UserWarning, match="lower bound"):
        g = kept.sweep.goodput(ttft=2.0, tpot=0.05, per="kW")
    found = np.isfinite(g.goodput.values)
    assert found.any() and (g.parallelism.values[found] != "").all()
    exact = full.sweep.goodput(ttft=2.0, tpot=0.05, per="kW")
    # a lower bound of the goodput over every layout
    assert (g.goodput.values[found] <= exact.goodput.transpose(*g.goodput.dims).values[found]
            ).all()


@pytest.mark.parametrize("value, match", [
    (3, "best_layout: true"), ("", "best_layout: true"),
    ("watts", "best_layout: basis 'watts': unknown kind"),
    ("system:0", "best_layout: basis 'system:0'")])
def test_bad_best_layout_is_one_clear_error(value, match):
    with pytest.raises(SpecError, match=match):
        sweep.run({**SPEC, "best_layout": value}, progress=False)


def test_false_keeps_every_layout(full):
    ds = sweep.run({**SPEC, "best_layout": False}, progress=False)
    assert "parallelism" in ds.dims and "layout_index" not in ds


def test_cli_says_what_was_kept_and_warns_once(tmp_path, capsys):
    import json

    from sweep.cli import main

    spec = tmp_path / "s.toml"
    spec.write_text('hardware = ["h100-sxm", "mi300x"]\nmodel = "llama-3.3-70b"\n'
                    'batch = [1, 64]\ncontext = 2048\nparallelism = "auto"\n'
                    'best_layout = "system:8"\n')
    out = tmp_path / "r.nc"
    assert main(["run", str(spec), "-o", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "each point's best of" in text and "basis system:8" in text
    assert main(["run", str(spec), "-o", str(out), "--no-progress", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["best_layout"]["basis"] == "system:8" and "parallelism" not in record["dims"]
    assert main(["pareto", str(out), "--objectives", "throughput", "ttft"]) == 0
    err = capsys.readouterr().err
    # the default basis (per kW) is not the one the layouts were kept on: one line, once
    assert err.count("sweep: warning:") == 1 and "'system:8'" in err
