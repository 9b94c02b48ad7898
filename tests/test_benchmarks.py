"""The benchmark harness's pure logic (benchmarks/): parsing the CLI's printed wall time, the grid
specs it writes as TOML, targets, tables and the bit-for-bit comparison. No timing is asserted."""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str):
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


rb = _load("run_benchmarks")
child = _load("_child")
ci = _load("check_identical")


def test_printed_wall_and_summary_are_parsed_from_the_cli_line():
    from sweep.cli.run import wall_line

    stats = SimpleNamespace(seconds=3.25, points_per_second=123456.0)
    text = f"wrote x.zarr\npoints    : 10 in 1 chunk(s)\n{wall_line(7.5, 0.4, stats, 1.75)}\n"
    assert rb._printed_wall(text) == 7.5
    assert rb._printed_summary(text) == 1.75
    # an earlier CLI printed no summary time and no start-up
    old = "wall time : 12.34 s (kernel+write 11.00 s, 1,000 points/s)\nfeasible  : 40.0%"
    assert rb._printed_wall(old) == 12.34
    assert rb._printed_summary(old) is None
    assert rb._printed_wall("no such line") is None


@settings(max_examples=15, deadline=None)
@given(nb=st.integers(1, 50), ns=st.integers(1, 50))
def test_grid_specs_written_as_toml_load_to_the_same_grid(nb, ns):
    from grids.spec import load_spec

    spec = child.grid_spec(f"linear:{nb}:{ns}")
    text = child.spec_toml(spec)
    again = load_spec(tomllib.loads(text))
    direct = load_spec(spec)
    assert again.shape == direct.shape
    assert list(again.batch) == list(direct.batch)
    assert list(again.context) == list(direct.context)


def _summary(**over) -> dict:
    s = {"cold_run_s": 30.0, "installed_run_s": 4.0, "warm_start_s": 1.2, "max_variants": 1,
         "inmem": {"fraction_of_kernel": 0.9, "rss_over_output": 1.5, "points_per_s": 1e7,
                   "points": 10, "peak_rss_bytes": 3 * 2**30, "output_bytes": 2 * 2**30},
         "stream_zarr": {"fraction_of_inmem": 0.4, "summary_fraction": 0.02,
                         "points_per_s": 4e6, "points": 10}}
    s.update(over)
    return s


def test_targets_are_judged_per_tree_and_missing_figures_are_none():
    rows = {r["key"]: r for r in rb.evaluate_targets({"before": {}, "after": _summary()})}
    assert rows["cold_run"]["after"] == 30.0 and rows["cold_run"]["after_met"] is False
    assert rows["installed_run"]["after_met"] is True
    assert rows["warm_start"]["after_met"] is True
    assert rows["inmem_fraction"]["after_met"] is True
    assert rows["inmem_rss"]["after_met"] is False
    assert rows["zarr_fraction"]["after_met"] is False
    # no figure: no value and no verdict, never an exception
    assert all(r["before"] is None and r["before_met"] is None for r in rows.values())
    assert rows["summary_fraction"]["after"] is None  # no large run in this summary
    # a figure without a numeric target gets no verdict
    assert rows["netcdf_fraction"]["after_met"] is None


def _res(labels, summary) -> dict:
    return {"labels": labels, "summary": summary, "figures": {},
            "targets": rb.evaluate_targets(summary), "generated_utc": "2025-01-01T00:00:00Z",
            "reps": 1, "cold_reps": 1, "command": "run_benchmarks.py --quick",
            "machine": {"cpu_count": 2, "cpu_model": "cpu", "numba": "0", "load_average_start":
                        [1.0, 1.0, 1.0], "load_average_end": [2.0, 2.0, 2.0]}}


def test_table_has_one_column_per_tree_and_marks_missing_figures_na():
    res = _res(["before", "after"], {"before": {}, "after": _summary()})
    rows = rb.table_rows(res)
    assert all(len(r) == 5 for r in rows)  # figure, before, after, target, met
    cold = next(r for r in rows if r[0].startswith("cold first `sweep run`, default grid, edit"))
    assert cold[1] == "n/a" and cold[2] == "30.0 s" and cold[-1] == "**no**"
    md = rb.markdown(res).splitlines()
    table = [ln for ln in md if ln.startswith("|")]
    assert table[0] == "| figure | before | after | target | met |"
    assert len(table) == len(rows) + 2
    assert all(ln.count("|") == 6 for ln in table[2:])


def test_summarise_takes_the_best_rep_and_skips_failed_ones():
    fig = {"inmem": {"after": [
        {"error": "n/a"},
        {"points": 100, "run_s": 2.0, "points_per_s": 50.0, "kernel_points_per_s": 80.0,
         "rss_over_output": 1.4, "peak_rss_bytes": 14, "output_bytes": 10},
        {"points": 100, "run_s": 1.0, "points_per_s": 100.0, "kernel_points_per_s": 125.0,
         "rss_over_output": 1.2, "peak_rss_bytes": 12, "output_bytes": 10}]}}
    s = rb.summarise(fig, ["after"])["after"]["inmem"]
    assert s["points_per_s"] == 100.0
    assert s["kernel_points_per_s"] == 125.0
    assert s["fraction_of_kernel"] == 100.0 / 125.0
    assert s["rss_over_output"] == 1.2


floats = st.floats(allow_nan=True, allow_infinity=False, width=32)


@settings(max_examples=50, deadline=None)
@given(st.lists(floats, min_size=1, max_size=40), st.data())
def test_value_diff_finds_every_changed_value_and_nan(values, data):
    x = np.array(values, dtype=np.float32)
    assert ci.value_diff(x, x.copy()) is None
    i = data.draw(st.integers(0, len(x) - 1))
    y = x.copy()
    y[i] = np.nan if not np.isnan(x[i]) else np.float32(1.0)
    d = ci.value_diff(x, y)
    assert d is not None and d["differ"] == 1 and d["of"] == len(x)
    assert d["nan_only_after"] + d["nan_only_before"] == 1


def test_value_diff_reports_the_largest_relative_difference():
    x = np.array([1.0, 2.0, 4.0, np.nan], dtype=np.float32)
    y = np.array([1.0, 2.5, 4.0, np.nan], dtype=np.float32)
    d = ci.value_diff(x, y)
    assert d["differ"] == 1 and d["nan_only_before"] == 0 and d["nan_only_after"] == 0
    assert abs(d["max_abs"] - 0.5) < 1e-12 and abs(d["max_rel"] - 0.2) < 1e-12
    assert "1 of 4 values differ" in ci.describe(d)


def test_datasets_with_different_labels_are_compared_on_the_common_ones():
    import xarray as xr

    v = np.arange(4, dtype=np.float32).reshape(2, 2)
    before = xr.Dataset({"tpot": (("model", "parallelism"), v)},
                        coords={"model": ["a", "b"], "parallelism": ["tp1", "tp2"]})
    # a layout only the after tree has: left out of the comparison
    after = before.reindex(parallelism=["tp1", "tp2", "tp4"], fill_value=-1.0)
    diffs: dict = {}
    problems = ci.compare_datasets(before, after, "case", diffs)
    assert len(problems) == 1 and "parallelism 2 common of 2 before / 3 after" in problems[0]
    assert diffs == {}
    after["tpot"].loc[{"parallelism": "tp2", "model": "b"}] = 99.0
    problems = ci.compare_datasets(before, after, "case", diffs)
    assert any("tpot: 1 of 4 values differ" in p for p in problems)
    assert diffs[("case", "tpot")]["differ"] == 1


mb = _load("memory_budget")


def test_memory_budget_figure_and_table():
    """benchmarks/memory_budget.py: memory above the one-point baseline over the budget."""
    mib = 2**20
    assert mb.parse_budget("256MiB") == 256 * mib and mb.parse_budget("1G") == 1024 * mib
    ok = mb.judge(peak=600 * mib, baseline=230 * mib, budget=256 * mib)
    assert ok["above_baseline_bytes"] == 370 * mib and ok["met"]
    assert ok["ratio"] == 370 / 256
    over = mb.judge(peak=700 * mib, baseline=230 * mib, budget=256 * mib)
    assert not over["met"] and over["ratio"] > mb.TARGET
    res = {"grid": "linear:2:2", "target": "x", "runs": [
        {"format": "netcdf", "budget": "256MiB", "wall_s": 1.0, **ok},
        {"format": "zarr", "budget": "256MiB", "wall_s": 2.0, **over}]}
    table = mb.markdown(res)
    assert "| netcdf | 256MiB | 600 MiB | 230 MiB | 1.45x | 1.0 s | met |" in table
    assert "| zarr | 256MiB | 700 MiB | 230 MiB | 1.84x | 2.0 s | not met |" in table


def test_the_peer_benchmark_reports_a_peer_it_cannot_load_and_times_the_rest(tmp_path,
                                                                              monkeypatch):
    """benchmarks/peers.py: without a LLM-Viewer checkout, and with llm-analysis not importable,
    both peers are reported as not measured (with the reason) and the two accel-sweep calls
    still run; each point of issue 24's 36 is a row sweep.evaluate accepts."""
    peers = _load("peers")
    monkeypatch.setitem(sys.modules, "llm_analysis", None)  # import fails as when not installed
    monkeypatch.setitem(sys.modules, "llm_analysis.analysis", None)
    calls, missing = peers.paths(None, tmp_path)
    assert set(calls) == {"`sweep.evaluate`, a dict of one row's values", "`sweep.evaluate_point`"}
    assert missing["LLM-Viewer `analyze()`"] == "no --llm-viewer checkout given"
    assert "llm_analysis" in missing["llm-analysis `inference()`"]
    assert len(peers.POINTS) == 36
    broken = tmp_path / "not-a-checkout"
    broken.mkdir()
    _, missing = peers.paths(broken, tmp_path)
    assert "LLM-Viewer `analyze()`" in missing  # its module is not there: reported, not raised
    seen = []
    assert peers.time_cycle(seen.append, 2) >= 0 and len(seen) == 72
    row = calls["`sweep.evaluate`, a dict of one row's values"](peers.POINTS[0])
    assert len(row) == 1 and row["hardware"].iloc[0] == "a100-sxm-80g"
