"""Validation against published measurements and calibration of the efficiency parameters
(``sweep validate`` / ``sweep calibrate``, ``sweep/validation.py``, ``sweep/calibration.py``)."""

from __future__ import annotations

import json
import math
import tomllib

import numpy as np
import pandas as pd
import pytest

import grids.hardware as gh
from grids.errors import SpecError
from grids.hardware import with_efficiency
from sweep import validate as V
from sweep.cli import main
from sweep.execute.points import evaluate
from sweep.validate import calibration as C
from sweep.validate import evaluator as E
from sweep.validate import measurements as M

SHIPPED = V.read_measurements()


def _usable(metric: str | None = None) -> int:
    m = SHIPPED["usable"].eq("yes")
    if metric:
        m &= SHIPPED["metric"].eq(metric)
    return int(m.sum())


@pytest.fixture(scope="module")
def shipped_result() -> pd.DataFrame:
    return V.compare(SHIPPED)


# ------------------------------------------------------------------------------ error metrics


def test_median_abs_rel_error_hand_computed():
    # |1.1-1|, |0.8-1|, |2-1| -> 0.1, 0.2, 1.0 -> median 0.2
    assert V.median_abs_rel_error([1.1, 0.8, 2.0], [1.0, 1.0, 1.0]) == pytest.approx(0.2)
    # pairs with a non-positive or non-finite side are ignored
    assert V.median_abs_rel_error([1.5, np.nan, 0.0], [1.0, 1.0, 1.0]) == pytest.approx(0.5)
    assert math.isnan(V.median_abs_rel_error([], []))


def test_mean_abs_log_error_hand_computed():
    # |ln 2| and |ln 0.5| -> mean ln 2
    assert V.mean_abs_log_error([2.0, 0.5], [1.0, 1.0]) == pytest.approx(math.log(2.0))
    assert V.mean_abs_log_error([3.0], [3.0]) == 0.0


def test_spearman_hand_computed():
    assert V.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert V.spearman([4, 3, 2, 1], [10, 20, 30, 40]) == pytest.approx(-1.0)
    # ties: ranks (1, 2.5, 2.5, 4) vs (1, 2, 3, 4): 4.5 / sqrt(4.5 * 5) = 3 / sqrt(10)
    assert V.spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(3 / math.sqrt(10))
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    a, b = rng.random(30) + 0.1, rng.random(30) + 0.1
    assert V.spearman(a, b) == pytest.approx(scipy_stats.spearmanr(a, b).statistic)
    assert math.isnan(V.spearman([1, 2], [1, 2]))  # fewer than 3 pairs
    assert math.isnan(V.spearman([1, 1, 1], [1, 2, 3]))  # constant side


# ------------------------------------------------------------------------------ validate


def test_validate_shipped_counts_and_aggregates(shipped_result):
    res = shipped_result
    assert len(res) == len(SHIPPED)
    usable = res[SHIPPED["usable"].eq("yes").to_numpy()]
    assert set(usable["status"]) <= {"used", "skipped"}
    assert (res.loc[SHIPPED["usable"].eq("no").to_numpy(), "status"] == "unusable").all()
    # nothing is dropped silently: a usable row is used or skipped with a reason
    skipped = usable[usable["status"] == "skipped"]
    assert (skipped["reason"] != "").all()
    assert set(skipped["reason"]) <= {V.SKIP_NO_FIT, M.SKIP_INCOMPATIBLE}
    agg = V.summarize(res)
    by_metric = agg["metric"].set_index("group")
    for metric in ("throughput", "ttft"):
        row = by_metric.loc[metric]
        assert row["used"] > 0
        assert row["used"] + row["skipped"] == _usable(metric)
        assert 0 <= row["median_abs_rel_error"] < 1
        assert row["mean_abs_log_error"] > 0
        assert -1 <= row["spearman"] <= 1
    # the table now has 18 sources (docs/measurements.md); SOURCE_GROUPS still names the first
    # three, the others (seed 004 included, whose transcription moved to a CSV) group by file
    inputs = "scripts/measurements/inputs/"
    assert set(agg["source"]["group"]) == {"trtllm v0.9.0", "trtllm v1.0", "aws neuron"} | {
        inputs + f for f in (
            "seed004.csv", "splitwise_sim_perf_model.csv", "apex_plus_h100_serving.csv",
            "trtllm_v0.14_online_serving.csv", "trtllm_v0.17_perf_overview_throughput.csv",
            "trtllm_v0.20_perf_overview_throughput.csv", "rocm_vllm_mi300x_dev_docker.csv",
            "amd_mi300x_published_vllm_results.csv",
            "dstack_llama405b_fp8_h100_vs_mi300x_offline.csv",
            "dstack_llama405b_fp8_h100_vs_mi300x_serving.csv",
            "intel_gaudi_model_performance_v1.18.csv", "jetstream_pytorch_tpu_v5e_summary.csv",
            "tpu_recipes_vllm_tpu_v6e_v7.csv", "sglang_gb200_lmsys_blog.csv", "vllm_gb200_blog.csv")}
    assert int(agg["overall"]["used"][0] + agg["overall"]["skipped"][0]) == _usable()


def test_validate_predictions_match_sweep_evaluate(shipped_result):
    """The validator's numbers are sweep.evaluate's, in the measurement's convention."""
    res = shipped_result
    used = res[res["status"] == "used"]
    pick = pd.concat([used[used["batch"] == "max"].head(3),
                      used[(used["batch"] != "max") & (used["metric"] == "throughput")].head(3),
                      used[used["metric"] == "ttft"].head(2)])
    table = pd.DataFrame({
        "hardware": pick["hardware"], "model": pick["model"],
        "batch": pick["model_batch"].astype(int), "context": pick["context"].astype(int),
        "output_len": pick["output_len"].fillna(1).astype(int),
        "precision": pick["precision"], "layout": pick["layout"]})
    ev = evaluate(table)
    for (_, r), (_, e) in zip(pick.iterrows(), ev.iterrows()):
        if r["metric"] == "ttft":
            expect = e["ttft"]
        elif r["scope"] == "per_device":
            expect = e["throughput_per_device"]
        else:
            expect = e["throughput"]
        assert r["predicted"] == pytest.approx(float(expect), rel=1e-5)


def test_max_load_takes_best_of_candidate_batches():
    rows = SHIPPED[SHIPPED["id"].isin(["trtllm10-001", "trtllm10-311"])]
    ev = V.Evaluator(rows)
    pred = ev.predict()
    for i in range(len(rows)):
        cand = ev.candidates[i][np.isfinite(ev.candidates[i])]
        largest = ev.largest_fit[i]
        assert cand[-1] == largest
        assert list(cand[:-1]) == [b for b in E.MAX_LOAD_BATCHES if b < largest]
        r = rows.iloc[i]
        table = pd.DataFrame({"hardware": r["hardware"], "model": r["model"], "batch": cand,
                              "context": int(r["context"]), "output_len": int(r["output_len"]),
                              "precision": r["precision"], "layout": r["layout"]})
        out = evaluate(table)
        assert pred["predicted"].iloc[i] == pytest.approx(float(out["throughput"].max()),
                                                          rel=1e-5)
        # one more sequence does not fit
        over = table.iloc[[-1]].assign(batch=int(largest) + 1)
        assert int(evaluate(over)["fits"].iloc[0]) == 0


def _write(df: pd.DataFrame, path) -> None:
    df[list(M.COLUMNS)].to_csv(path, index=False)


def test_user_csv_round_trip(tmp_path, capsys):
    ids = ["trtllm090-002", "trtllm090-085", "trtllm10-311"]
    raw = pd.read_csv(V.MEASUREMENTS_CSV, dtype=str, keep_default_na=False)
    three = raw[raw["id"].isin(ids)]
    path = tmp_path / "mine.csv"
    _write(three, path)
    assert main(["validate", "--data", str(path), "--json", "--rows"]) == 0
    out = json.loads(capsys.readouterr().out)
    got = {r["id"]: r for r in out["rows"]}
    assert set(got) == set(ids)
    assert all(r["status"] == "used" for r in got.values())
    metric = {r["group"]: r for r in out["aggregates"]["metric"]}
    assert metric["throughput"]["used"] == 2 and metric["ttft"]["used"] == 1
    # same predictions as from the shipped file
    full = V.compare(SHIPPED).set_index("id")
    for i in ids:
        assert got[i]["predicted"] == pytest.approx(full.loc[i, "predicted"], rel=1e-6)
    # text output with rows and an uncalibrated run also work
    assert main(["validate", "--data", str(path), "--rows", "--uncalibrated"]) == 0
    assert "trtllm090-085" in capsys.readouterr().out


@pytest.mark.parametrize("breakage", ["missing_column", "bad_batch", "unknown_hardware",
                                      "bad_value", "not_csv"])
def test_bad_user_csv_exits_2_with_one_line(tmp_path, capsys, breakage):
    raw = pd.read_csv(V.MEASUREMENTS_CSV, dtype=str, keep_default_na=False)
    three = raw[raw["id"].isin(["trtllm090-002", "trtllm090-085", "trtllm10-311"])].copy()
    path = tmp_path / "bad.csv"
    if breakage == "missing_column":
        three = three.drop(columns=["scope"])
        three.to_csv(path, index=False)
    elif breakage == "not_csv":
        path.write_bytes(b"\x00\xff\xfe garbage")
    else:
        col, val = {"bad_batch": ("batch", "lots"), "unknown_hardware": ("hardware", "h900"),
                    "bad_value": ("value", "-3")}[breakage]
        three.iloc[1, three.columns.get_loc(col)] = val
        _write(three, path)
    assert main(["validate", "--data", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sweep: error:")
    assert len(err.splitlines()) == 1
    if breakage == "missing_column":
        assert "scope" in err
    elif breakage != "not_csv":
        assert "trtllm090-085" in err or "h900" in err


def test_validate_plot(tmp_path, capsys):
    path = tmp_path / "parity.png"
    assert main(["validate", "--plot", str(path)]) == 0
    assert path.stat().st_size > 10_000
    assert main(["validate", "--plot", str(tmp_path / "parity.pdf")]) == 2


# ------------------------------------------------------------------------------ calibrate


def test_calibrate_subset_writes_loadable_overlay(tmp_path, capsys, monkeypatch):
    shipped = C.default_output()
    before = shipped.read_bytes() if shipped.exists() else None
    raw = pd.read_csv(V.MEASUREMENTS_CSV, dtype=str, keep_default_na=False)
    # h200: 8+ rows from two sources (device fit, leave-one-source-out); a100: 3 rows (class fit)
    h200 = raw[(raw["hardware"] == "h200-sxm") & (raw["usable"] == "yes")]
    sub = pd.concat([h200[h200["source_file"].str.contains("v0.9.0")].head(6),
                     h200[h200["source_file"].str.contains("v1.0")].head(6),
                     raw[(raw["hardware"] == "a100-sxm-80g") & (raw["usable"] == "yes")].head(3),
                     # two unusable v0.9.0 rows (as the L40S rows were before l40s was mapped; the
                     # table's first unusable rows are now Neuron's, another source group)
                     raw[raw["hardware"] == "l40s"].head(2).assign(
                         usable="no", skip_reason="device not in the catalog")])
    data = tmp_path / "subset.csv"
    _write(sub, data)
    out = tmp_path / "cal.toml"
    assert main(["calibrate", "--data", str(data), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "leave-one-source-out" in text and "before" in text
    cal = tomllib.loads(out.read_text())
    assert set(cal["device"]) == {"h200-sxm", "a100-sxm-80g"}
    for vals in cal["device"].values():
        assert 0.05 <= vals["bandwidth_efficiency"] <= 1.0
        assert 0.05 <= vals["flops_efficiency"] <= 1.0
        assert 0.0 <= vals["layer_overhead"] <= 200e-6
    prov = cal["provenance"]
    assert prov["data_sha256"] == V.file_sha256(data)
    assert "sweep calibrate" in prov["command"] and prov["date"]
    assert cal["provenance"]["device"]["h200-sxm"]["basis"] == "device"
    assert cal["provenance"]["device"]["a100-sxm-80g"]["basis"].startswith("class gpu")
    assert set(cal["provenance"]["leave_one_source_out"]) == {"trtllm v0.9.0", "trtllm v1.0"}
    # the shipped overlay is untouched by -o
    assert (shipped.read_bytes() if shipped.exists() else None) == before
    # grids loads it: parse a catalog device with this overlay
    monkeypatch.setattr(gh, "calibration_overlay", lambda: cal)
    raw_dev = gh._load_toml(gh.hardware_dir() / "h200-sxm.toml")
    dev = gh.parse_device(raw_dev, "h200-sxm", calibrated=True)
    want = cal["device"]["h200-sxm"]
    assert dev.efficiency.flops_efficiency == pytest.approx(want["flops_efficiency"])
    assert dev.efficiency.layer_overhead == pytest.approx(want["layer_overhead"])
    assert all(t.efficiency == pytest.approx(want["bandwidth_efficiency"]) for t in dev.tiers)
    assert dev.efficiency.origin["flops_efficiency"] == "calibrated (device)"
    monkeypatch.undo()
    # validate with that overlay file
    assert main(["validate", "--data", str(data), "--calibration", str(out), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    ov = rep["aggregates"]["overall"][0]
    assert ov["used"] + ov["skipped"] == 15 and ov["used"] >= 10


def test_calibration_recovers_known_parameters(tmp_path):
    """Synthetic measurements made by the model with known efficiencies are fitted back."""
    truth = {"bandwidth_efficiency": 0.62, "flops_efficiency": 0.41, "layer_overhead": 35e-6}
    dev = with_efficiency(gh.load_device("h100-sxm", calibrated=False), truth)
    raw = pd.read_csv(V.MEASUREMENTS_CSV, dtype=str, keep_default_na=False)
    rows = raw[(raw["hardware"] == "h100-sxm") & (raw["usable"] == "yes")].copy()
    df = V.read_measurements(_tmp_csv(rows, tmp_path / "h100.csv"))
    synth = V.compare(df, devices={"h100-sxm": dev})
    ok = synth["status"].eq("used").to_numpy()
    rows = rows[ok].copy()
    rows["value"] = [f"{v:.6g}" for v in synth.loc[ok, "predicted"]]
    data = V.read_measurements(_tmp_csv(rows, tmp_path / "synthetic.csv"))
    cal = C.calibrate(data, prior_weight=0.0)
    got = cal.overlay["h100-sxm"]
    assert got["bandwidth_efficiency"] == pytest.approx(truth["bandwidth_efficiency"], rel=0.03)
    assert got["flops_efficiency"] == pytest.approx(truth["flops_efficiency"], rel=0.03)
    assert got["layer_overhead"] == pytest.approx(truth["layer_overhead"], abs=3e-6)
    assert cal.device_fits["h100-sxm"].after < 0.005


def _tmp_csv(rows: pd.DataFrame, path) -> str:
    _write(rows, path)
    return str(path)


def test_calibrate_rejects_bad_options(tmp_path, capsys):
    assert main(["calibrate", "--min-rows", "0", "-o", str(tmp_path / "c.toml")]) == 2
    # what-if options never go into the shipped overlay
    assert main(["calibrate", "--kv-bits", "8", "-o", str(C.default_output())]) == 2
    assert main(["calibrate", "-o", str(tmp_path / "c.json")]) == 2
    capsys.readouterr()


def test_shipped_overlay_is_current_and_in_bounds():
    """grids/data/calibration.toml was fitted on the shipped measurements (rerun
    `sweep calibrate` when measurements.csv changes) and the catalog applies it."""
    path = C.default_output()
    assert path.exists(), "run `sweep calibrate` to write grids/data/calibration.toml"
    cal = tomllib.loads(path.read_text())
    assert cal["provenance"]["data_sha256"] == V.file_sha256(V.MEASUREMENTS_CSV)
    for dev_id, vals in cal["device"].items():
        for name, (lo, hi, _) in C.PARAMS.items():
            assert lo <= vals[name] <= hi, (dev_id, name)
        dev = gh.load_device(dev_id)
        assert dev.efficiency.flops_efficiency == pytest.approx(vals["flops_efficiency"])
        assert dev.efficiency.origin["flops_efficiency"].startswith("calibrated")
    # devices without rows keep their documented class defaults
    for dev_id in gh.catalog_ids():
        if dev_id not in cal["device"]:
            assert gh.load_device(dev_id) == gh.load_device(dev_id, calibrated=False)


def test_read_measurements_rejects_bad_tables(tmp_path):
    with pytest.raises(SpecError, match="file not found"):
        V.read_measurements(tmp_path / "nope.csv")
    p = tmp_path / "empty.csv"
    p.write_text(",".join(M.COLUMNS) + "\n")
    with pytest.raises(SpecError, match="no data rows"):
        V.read_measurements(p)
