"""Validation against published measurements and calibration of the engine catalog
(``sweep validate`` / ``sweep calibrate``, ``sweep/validate/``)."""

from __future__ import annotations

import json
import math
import re
import tomllib

import numpy as np
import pandas as pd
import pytest

from grids.engines import PARAMS, calibration_path, catalog_engines, load_engine, resolve
from grids.errors import SpecError
from grids.hardware import COMPUTE_DTYPES, catalog_ids, load_device
from grids.layouts import parse_layout
from kernels.params import METRICS, MODE_CONTINUOUS, MODE_RATE
from sweep import validate as V
from sweep.cli import main
from sweep.cli.validate import POOLED, SERVED_POOLED
from sweep.execute.points import evaluate, evaluate_rows
from sweep.validate import calibration as C
from sweep.validate import evaluator as E
from sweep.validate import measurements as M

SHIPPED = V.read_measurements()
USABLE = V.usable_mask(SHIPPED)
RAW = pd.read_csv(V.MEASUREMENTS_CSV, dtype=str, keep_default_na=False)


def _usable(metric: str | None = None) -> int:
    m = USABLE.copy()
    if metric:
        m &= SHIPPED["metric"].eq(metric).to_numpy()
    return int(m.sum())


def _write(df: pd.DataFrame, path) -> str:
    df[list(M.COLUMNS)].to_csv(path, index=False)
    return str(path)


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


def test_mean_abs_log_error_and_bias_hand_computed():
    # |ln 2| and |ln 0.5| -> mean ln 2; signed: median of (ln 2, ln 0.5) = 0
    assert V.mean_abs_log_error([2.0, 0.5], [1.0, 1.0]) == pytest.approx(math.log(2.0))
    assert V.median_log_error([2.0, 0.5], [1.0, 1.0]) == pytest.approx(0.0)
    assert V.median_log_error([2.0, 2.0, 0.5], [1.0, 1.0, 1.0]) == pytest.approx(math.log(2.0))
    assert V.mean_abs_log_error([3.0], [3.0]) == 0.0


def test_spearman_hand_computed():
    assert V.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert V.spearman([4, 3, 2, 1], [10, 20, 30, 40]) == pytest.approx(-1.0)
    # ties: ranks (1, 2.5, 2.5, 4) vs (1, 2, 3, 4): 4.5 / sqrt(4.5 * 5) = 3 / sqrt(10)
    assert V.spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(3 / math.sqrt(10))
    from scipy import stats

    rng = np.random.default_rng(0)
    a, b = rng.random(30) + 0.1, rng.random(30) + 0.1
    assert V.spearman(a, b) == pytest.approx(stats.spearmanr(a, b).statistic)
    assert math.isnan(V.spearman([1, 2], [1, 2]))  # fewer than 3 pairs
    assert math.isnan(V.spearman([1, 1, 1], [1, 2, 3]))  # constant side


# ------------------------------------------------------------------------------ validate


def test_validate_shipped_counts_and_aggregates(shipped_result):
    res = shipped_result
    assert len(res) == len(SHIPPED)
    usable = res[USABLE]
    assert set(usable["status"]) <= {"used", "skipped"}
    assert (res.loc[~USABLE, "status"] == "unusable").all()
    # nothing is dropped silently: a row that is not used says why
    assert (res.loc[res["status"] != "used", "reason"] != "").all()
    for reason in usable.loc[usable["status"] == "skipped", "reason"]:
        assert reason.startswith("infeasible in the model: "), reason
    agg = V.summarize(res)
    by_metric = agg["metric"].set_index("group")
    for metric in ("throughput", "ttft", "tpot"):
        row = by_metric.loc[metric]
        assert row["used"] > 0
        assert row["used"] + row["skipped"] == _usable(metric)
        assert 0 <= row["median_abs_rel_error"] < 1
        assert -1 <= row["spearman"] <= 1
    # every publisher and every source file appears (empty ones too: they are reported)
    assert set(agg["publisher"]["group"]) == set(SHIPPED["publisher"])
    assert set(agg["source"]["group"]) == set(SHIPPED["source_key"])
    assert int(agg["overall"]["used"][0] + agg["overall"]["skipped"][0]) == _usable()
    # engines named in the data are reported under their id, unstated ones as "(native)"
    stated = set(SHIPPED.loc[USABLE & SHIPPED["engine"].ne("").to_numpy(), "engine"])
    unstated = {"(native)"} if (USABLE & SHIPPED["engine"].eq("").to_numpy()).any() else set()
    assert stated | unstated == set(agg["engine"]["group"])


def test_engine_not_stated_is_evaluated_with_native_and_says_so(shipped_result):
    """Every usable shipped row names its engine (since Splitwise's went to vLLM's 2023 build),
    so rows with the engine (and its version) blanked stand in for a source that states none."""
    res = shipped_result
    stated = USABLE & SHIPPED["engine"].ne("").to_numpy()
    assert not res.loc[stated, "assumption"].str.contains("engine not stated").any()
    some = SHIPPED[stated & SHIPPED["load"].eq("static").to_numpy()].head(6)
    blank = V.compare(some.assign(engine="", engine_version=""), overlay={})
    as_native = V.compare(some.assign(engine=E.ASSUME_ENGINE, engine_version=""), overlay={})
    assert (blank["engine"] == f"({E.ASSUME_ENGINE})").all()
    assert blank["assumption"].str.contains(E.ENGINE_ASSUMED, regex=False).all()
    assert blank["predicted"].to_numpy() == pytest.approx(as_native["predicted"].to_numpy())


def _static_rows(res: pd.DataFrame) -> pd.DataFrame:
    ok = (res["status"].eq("used") & SHIPPED["load"].eq("static")
          & ~res["assumption"].str.contains("context window"))
    return res[ok]


def test_static_predictions_match_sweep_evaluate(shipped_result):
    """The validator's numbers are sweep.evaluate's, in the measurement's convention."""
    res = _static_rows(shipped_result)
    pick = pd.concat([res[res["metric"] == m].groupby("engine").head(2)
                      for m in ("throughput", "ttft", "tpot")])
    assert len(pick) >= 12
    src = SHIPPED.set_index("id").loc[pick["id"]]
    engine = pd.Series(E.engine_refs(src), index=src.index)  # the build the row runs as
    table = pd.DataFrame({
        "hardware": src["hardware"].to_numpy(), "engine": engine.to_numpy(),
        "model": src["model"].to_numpy(), "batch": pick["model_batch"].astype(int).to_numpy(),
        "context": pick["context"].astype(int).to_numpy(),
        "output_len": pick["output_len"].fillna(1).astype(int).to_numpy(),
        "precision": src["precision"].to_numpy(), "parallelism": src["parallelism"].to_numpy(),
        "batching": "static"})  # the fixed-batch rows (docs/validation.md)
    out = evaluate(table)
    for (_, r), (_, e), dev in zip(pick.iterrows(), out.iterrows(), src["devices"]):
        if r["metric"] == "throughput":
            lay = parse_layout(e["parallelism"]).devices
            system = dev if np.isfinite(dev) else lay
            expect = e["throughput"] * (1 / lay if r["scope"] == "per_device" else system / lay)
        else:
            expect = e[r["metric"]]
        assert r["predicted"] == pytest.approx(float(expect), rel=1e-5), r["id"]


def test_max_load_rows_run_the_scheduler_at_its_maximum_concurrency():
    """Maximum-load rows are continuous batching at the most requests the engine admits (its
    batch cap and the KV cache, docs/model.md section 13.2), capped by a stated max_num_seqs."""
    ids = SHIPPED.loc[USABLE & SHIPPED["load"].eq("max_load").to_numpy(), "id"].head(6)
    ev = V.Evaluator(SHIPPED[SHIPPED["id"].isin(ids)])
    out, used = ev.outputs()
    pt, n = ev.points, ev.n
    rows = np.arange(n)
    cap = ev._cap(rows)
    fits, maxc = METRICS.index("fits"), METRICS.index("max_concurrency")
    free = evaluate_rows(pt, rows, np.full(n, np.inf), ev.context, ev.output_len,
                         mode=MODE_CONTINUOUS)
    assert (free[fits] == 1).all()
    np.testing.assert_array_equal(used, np.minimum(free[maxc], cap))
    again = evaluate_rows(pt, rows, used, ev.context, ev.output_len, mode=MODE_CONTINUOUS)
    np.testing.assert_allclose(out, again, rtol=1e-6, equal_nan=True)
    # one more request than the engine admits waits: the throughput does not rise
    thr = METRICS.index("throughput")
    more = evaluate_rows(pt, rows, free[maxc] + 1.0, ev.context, ev.output_len,
                         mode=MODE_CONTINUOUS)
    np.testing.assert_allclose(more[thr], free[thr], rtol=1e-6)


def test_online_rows_are_continuous_batching_at_their_concurrency_or_rate():
    on = SHIPPED[USABLE & SHIPPED["load"].eq("online").to_numpy()]
    rows = pd.concat([on[on["metric"] == m].head(3) for m in ("e2e_latency", "ttft", "tpot")])
    ev = V.Evaluator(rows)
    out, used = ev.outputs()
    r = np.arange(len(rows))
    rated = ev.online & np.isfinite(ev.rate)
    load = np.where(rated, ev.rate, ev.batch)
    mode = np.where(rated, MODE_RATE, MODE_CONTINUOUS)
    again = evaluate_rows(ev.points, r, load, ev.context, ev.output_len, mode=mode)
    np.testing.assert_allclose(out, again, rtol=1e-6, equal_nan=True)
    conc = METRICS.index("concurrency")
    np.testing.assert_array_equal(used, out[conc].astype(np.float64))
    assert (used[~rated] <= ev.batch[~rated]).all()


def test_user_csv_round_trip(tmp_path, capsys):
    ids = ["trtllm090-002", "trtllm090-085", "trtllm10-311"]
    path = _write(RAW[RAW["id"].isin(ids)], tmp_path / "mine.csv")
    assert main(["validate", "--data", path, "--json", "--rows"]) == 0
    out = json.loads(capsys.readouterr().out)
    got = {r["id"]: r for r in out["rows"]}
    assert set(got) == set(ids)
    assert all(r["status"] == "used" for r in got.values())
    metric = {r["group"]: r for r in out["aggregates"]["metric"]}
    assert sum(m["used"] for m in metric.values()) == 3
    assert out["data_sha256"] == V.file_sha256(path)
    # same predictions as from the shipped file
    full = V.compare(SHIPPED).set_index("id")
    for i in ids:
        assert got[i]["predicted"] == pytest.approx(full.loc[i, "predicted"], rel=1e-6)
    # text output with rows and an uncalibrated run also work, and say which model ran
    assert main(["validate", "--data", path, "--rows", "--uncalibrated"]) == 0
    text = capsys.readouterr().out
    assert "trtllm090-085" in text and "uncalibrated" in text


@pytest.mark.parametrize("breakage", ["missing_column", "bad_batch", "unknown_hardware",
                                      "unknown_engine", "bad_value", "not_csv"])
def test_bad_user_csv_exits_2_with_one_line(tmp_path, capsys, breakage):
    three = RAW[RAW["id"].isin(["trtllm090-002", "trtllm090-085", "trtllm10-311"])].copy()
    path = tmp_path / "bad.csv"
    if breakage == "missing_column":
        three.drop(columns=["scope"]).to_csv(path, index=False)
    elif breakage == "not_csv":
        path.write_bytes(b"\x00\xff\xfe garbage")
    else:
        col, val = {"bad_batch": ("batch", "lots"), "unknown_hardware": ("hardware", "h900"),
                    "unknown_engine": ("engine", "tensorrt"),
                    "bad_value": ("value", "-3")}[breakage]
        three.iloc[1, three.columns.get_loc(col)] = val
        _write(three, path)
    assert main(["validate", "--data", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sweep: error:")
    assert len(err.splitlines()) == 1
    if breakage == "missing_column":
        assert "scope" in err
    elif breakage == "unknown_engine":
        assert "tensorrt" in err and "trtllm" in err  # names it and suggests the id
    elif breakage != "not_csv":
        assert "trtllm090-085" in err or "h900" in err


def test_validate_plot_and_option_conflicts(tmp_path, capsys):
    path = tmp_path / "parity.png"
    assert main(["validate", "--plot", str(path)]) == 0
    assert path.stat().st_size > 10_000
    assert main(["validate", "--plot", str(tmp_path / "parity.pdf")]) == 2
    assert main(["validate", "--uncalibrated", "--calibration", str(calibration_path())]) == 2
    capsys.readouterr()


def test_read_measurements_rejects_bad_tables(tmp_path):
    with pytest.raises(SpecError, match="file not found"):
        V.read_measurements(tmp_path / "nope.csv")
    p = tmp_path / "empty.csv"
    p.write_text(",".join(M.COLUMNS) + "\n")
    with pytest.raises(SpecError, match="no data rows"):
        V.read_measurements(p)


# ------------------------------------------------------------------------------ calibrate


def _subset() -> pd.DataFrame:
    """A small two-publisher table: NVIDIA's TensorRT-LLM rows on H100 (8 static batches, 4 at
    maximum load) and AMD's vLLM rows (static batches)."""
    use = RAW["usable"].eq("yes")
    trt = RAW[use & RAW["engine"].eq("trtllm") & RAW["hardware"].eq("h100-sxm")]
    nv = pd.concat([trt[trt["load"].eq("static")].head(8),
                    trt[trt["load"].eq("max_load")].head(4)])
    amd = RAW[use & RAW["publisher"].eq("AMD")].head(12)
    unusable = RAW[~use & RAW["publisher"].eq("NVIDIA")].head(2)
    return pd.concat([nv, amd, unusable])


def test_calibration_fits_only_parameters_the_engine_catalog_has():
    """Every parameter a unit fits, and every bound calibrate states, is an engine parameter that
    exists (issue 20 retired link_efficiency and collective_latency): an overlay of its output
    loads. The shipped rows include multi-device ones, which used to add the retired pair."""
    ev = V.Evaluator(SHIPPED[USABLE])
    assert (pd.to_numeric(ev.rows["devices"], errors="coerce") > 1).any()
    fitted = {p for u in C.plan_units(ev, 20) for p in u.params}
    assert fitted
    for name in fitted:
        base = name.split(".")[0]
        assert base in PARAMS, name
        if "." in name:
            assert name.split(".")[1] in COMPUTE_DTYPES, name
    for name in C.BOUNDS:
        assert name == "compute" or name in PARAMS, name
    assert not set(C.PRIOR_TIME_SCALE) - set(PARAMS)


def test_calibrate_subset_writes_loadable_overlay(tmp_path, capsys):
    shipped = C.default_output()
    before = shipped.read_bytes() if shipped.exists() else None
    data = _write(_subset(), tmp_path / "subset.csv")
    out = tmp_path / "cal.toml"
    # 12 rows an engine pin none of its parameters (every standard error exceeds its value, so
    # the default rule would keep them all at their priors): this test of the overlay's form
    # keeps every fitted value (--weak-stderr inf)
    assert main(["calibrate", "--data", data, "-o", str(out), "--max-nfev", "8",
                 "--min-rows", "5", "--weak-stderr", "inf"]) == 0
    text = capsys.readouterr().out
    assert "leave-one-publisher-out" in text and "| held-out publisher |" in text
    assert "fitting trtllm.defaults" in text and "fitting vllm.defaults" in text
    cal = tomllib.loads(out.read_text())
    prov = cal.pop("provenance")
    # two engines with rows: the cross-engine [pooled] table too (tests/test_pooled.py)
    assert set(cal) == {"trtllm", "vllm", "pooled"}
    pooled = cal.pop("pooled")
    assert "bandwidth" in pooled and "iteration_overhead" not in pooled
    for engine, sec in cal.items():
        for name, v in sec["defaults"].items():
            vals = v.values() if isinstance(v, dict) else [v]
            lo, hi, _ = C._bounds_of(name)
            assert all(lo <= x <= hi for x in vals), (engine, name, v)
    assert prov["data_sha256"] == V.file_sha256(data)
    assert "sweep calibrate" in prov["command"] and prov["date"]
    assert "--weak-stderr inf" in prov["command"] and "times it keeps its prior" in prov["method"]
    # each held-out publisher, the pooled row over all of them, and the pooled row over those at
    # maximum load or online (issue 19's targets): NVIDIA's 4 maximum-load rows
    lopo = prov["leave_one_publisher_out"]
    assert set(lopo) == {"AMD", "NVIDIA", POOLED, SERVED_POOLED}
    sub = _subset()
    served = V.served_load(sub) & sub["usable"].eq("yes").to_numpy()
    assert served.sum() == 4 and set(sub.loc[served, "load"]) == {"max_load"}
    assert lopo[SERVED_POOLED]["rows"] == 4 < lopo[POOLED]["rows"]
    assert set(prov["unit"]) == {"trtllm.defaults", "vllm.defaults", "pooled"}
    # the shipped overlay is untouched by -o
    assert (shipped.read_bytes() if shipped.exists() else None) == before
    # the engine catalog applies it: a fitted value is what resolve gives, and says so
    overlay = C.read_overlay_file(out)
    checked = 0
    for engine in ("trtllm", "vllm"):  # (a parameter that reached a bound kept its prior)
        p = resolve(engine, load_device("h100-sxm"), overlay)
        for name, v in cal[engine]["defaults"].items():
            got = getattr(p, name)
            for dtype, x in (v.items() if isinstance(v, dict) else [(None, v)]):
                assert (got[dtype] if dtype else got) == pytest.approx(x), (engine, name)
                assert "fitted" in p.origin[f"{name}.{dtype}" if dtype else name]
                checked += 1
    assert checked >= 3
    assert resolve("gaudi", load_device("gaudi3"), overlay).bandwidth == pytest.approx(
        pooled["bandwidth"])
    # validate with that overlay file
    assert main(["validate", "--data", data, "--calibration", str(out), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    ov = rep["aggregates"]["overall"][0]
    assert ov["used"] + ov["skipped"] == 24 and ov["unusable"] == 2
    assert "cal.toml" in rep["model"]


def test_calibration_recovers_known_parameters():
    """Synthetic measurements made by the model with known engine parameters are fitted back
    (multi-device rows among them: their collectives are the engine file's, not fitted)."""
    use = USABLE & SHIPPED["engine"].eq("trtllm").to_numpy() \
        & SHIPPED["hardware"].eq("h100-sxm").to_numpy() & SHIPPED["precision"].eq("fp8").to_numpy()
    rows = SHIPPED[use]
    rows = pd.concat([rows[rows["metric"] == "ttft"].head(12),
                      rows[rows["metric"] != "ttft"].sample(40, random_state=1)])
    assert (pd.to_numeric(rows["devices"], errors="coerce") > 1).sum() >= 10
    truth = {"trtllm": {"defaults": {
        "bandwidth": 0.7, "iteration_overhead": 2e-3, "request_overhead": 12e-3,
        "decode_compute": {"fp8": 0.6}, "prefill_compute": {"fp8": 0.55}}}}
    synth = V.compare(rows, overlay=truth)
    ok = synth["status"].eq("used").to_numpy()
    assert ok.sum() >= 40
    data = rows[ok].assign(value=synth.loc[ok, "predicted"].to_numpy())
    cal = C.calibrate(data, prior_weight=0.0, max_nfev=60)
    (fit,) = cal.fits
    got = cal.overlay["trtllm"]["defaults"]
    for name in ("bandwidth", "iteration_overhead", "request_overhead"):
        assert got[name] == pytest.approx(truth["trtllm"]["defaults"][name], rel=0.02), name
    assert got["decode_compute"]["fp8"] == pytest.approx(0.6, rel=0.02)
    assert got["prefill_compute"]["fp8"] == pytest.approx(0.55, rel=0.02)
    assert fit.after < 0.005 < fit.before


def test_a_parameter_no_row_responds_to_is_not_written_as_fitted():
    """Splitwise's TPOTs at 1-16 requests (vllm@0.2, fitted apart) are memory-bound steps: the
    decode compute factor moves none of them, so the fit neither writes it nor reports a standard
    error for it (it keeps its prior); the bandwidth they do inform is fitted."""
    use = (USABLE & SHIPPED["engine_version"].fillna("").str.startswith("2023").to_numpy()
           & SHIPPED["metric"].eq("tpot").to_numpy())
    rows = SHIPPED[use]
    rows = rows[pd.to_numeric(rows["batch"], errors="coerce") <= 16].head(30)
    assert len(rows) >= 20
    cal = C.calibrate(rows, max_nfev=30)
    (fit,) = cal.fits
    assert fit.unit.name == "vllm@0.2.vendor.NVIDIA"
    assert "decode_compute.bf16" in fit.unit.params
    assert fit.uninformed == ["decode_compute.bf16"]
    assert "decode_compute.bf16" not in fit.values and "decode_compute.bf16" not in fit.stderr
    section = cal.overlay["vllm@0.2"]["vendor"]["NVIDIA"]
    assert "decode_compute" not in section and "bandwidth" in section
    assert 0 < fit.stderr["bandwidth"] < 1


def _unit_fit(unit, values: dict[str, float], stderr: dict[str, float],
              at_bound: list[str] | None = None):
    """A UnitFit of ``unit`` with these fitted values and standard errors (a stand-in for
    :func:`fit_unit`'s result in the tests of the refit rules)."""
    return C.UnitFit(unit=unit, start=dict.fromkeys(unit.params, 0.6), values=dict(values),
                     stderr=dict(stderr), at_bound=list(at_bound or []), rows=10, before=0.4,
                     after=0.2, male_before=0.5, male_after=0.3, success=True)


def _vllm_nvidia(params: list[str]):
    return C.Unit("vllm", "vendor", "NVIDIA", np.arange(3), list(params))


def test_weakly_informed_is_a_standard_error_above_the_value():
    f = _unit_fit(_vllm_nvidia(["bandwidth", "decode_compute.bf16", "request_overhead",
                                "kv8_efficiency"]),
                  {"bandwidth": 0.8, "decode_compute.bf16": 0.69, "request_overhead": 8e-3,
                   "kv8_efficiency": 0.7},
                  {"bandwidth": 0.05, "decode_compute.bf16": 19.9, "request_overhead": 1.06,
                   "kv8_efficiency": math.nan})
    assert C.weakly_informed(f) == {"decode_compute.bf16": (0.69, 19.9),
                                    "request_overhead": (8e-3, 1.06)}


def test_a_weakly_informed_parameter_keeps_its_prior_and_the_rest_is_refitted(monkeypatch):
    """A fitted value whose standard error exceeds it is not shipped: fit_within_bounds fits the
    unit again without it, and reports it with its value and standard error."""
    calls = []

    def fake_fit(ev, unit, overlay, **opts):
        calls.append(list(unit.params))
        if len(calls) == 1:
            return _unit_fit(unit, {"bandwidth": 0.8, "decode_compute.bf16": 0.69},
                             {"bandwidth": 0.05, "decode_compute.bf16": 19.9})
        return _unit_fit(unit, {"bandwidth": 0.82}, {"bandwidth": 0.04})

    monkeypatch.setattr(C, "fit_unit", fake_fit)
    unit = _vllm_nvidia(["bandwidth", "decode_compute.bf16"])
    f = C.fit_within_bounds(None, unit, {})
    assert calls == [["bandwidth", "decode_compute.bf16"], ["bandwidth"]]
    assert f.values == {"bandwidth": 0.82}
    assert f.weak == {"decode_compute.bf16": (0.69, 19.9)}
    assert f.unit.params == ["bandwidth", "decode_compute.bf16"]


def test_the_shipped_overlay_has_no_weakly_informed_value():
    """Every value `sweep calibrate` wrote carries a standard error below the value."""
    prov = tomllib.loads(calibration_path().read_text())["provenance"]["unit"]
    for name, u in prov.items():
        for p, v, se in zip(u["parameters"], u["values"], u["stderr"]):
            assert not se > C.WEAK_RELATIVE_STDERR * abs(v), (name, p, v, se)


def test_a_narrower_dtype_slower_than_a_wider_one_is_reported_or_floored():
    """Synthetic fp8 rows made with an fp8 decode factor that makes fp8 slower than bf16 on
    every Hopper/Blackwell part: by default the fit recovers it and reports it as a finding;
    with ``floor_dtypes`` it is raised (at the NVIDIA vendor level) to the least factor at which
    no device computes fp8 slower than bf16, and nothing is left below a floor."""
    use = USABLE & SHIPPED["engine"].eq("trtllm").to_numpy() \
        & SHIPPED["hardware"].eq("h100-sxm").to_numpy() & SHIPPED["precision"].eq("fp8").to_numpy()
    rows = SHIPPED[use]
    rows = rows[rows["metric"] != "ttft"].sample(30, random_state=2)
    truth = {"trtllm": {"defaults": {"decode_compute": {"fp8": 0.2}}}}
    synth = V.compare(rows, overlay=truth)
    ok = synth["status"].eq("used").to_numpy()
    data = rows[ok].assign(value=synth.loc[ok, "predicted"].to_numpy())
    key = ("vendor", "NVIDIA", "decode_compute.fp8")
    plain = C.calibrate(data, prior_weight=0.0, max_nfev=40)
    (fit,) = plain.fits
    assert not fit.floored
    assert fit.values["decode_compute.fp8"] == pytest.approx(0.2, rel=0.05)
    was, floor = plain.dtype_violations["trtllm.defaults"][key]
    assert was == pytest.approx(0.2, rel=0.05) and floor > 0.3
    floored = C.calibrate(data, prior_weight=0.0, max_nfev=40, floor_dtypes=True)
    (fit,) = floored.fits
    assert key in fit.floored and "decode_compute.fp8" not in fit.values
    got = floored.overlay["trtllm"]["vendor"]["NVIDIA"]["decode_compute"]["fp8"]
    assert got == pytest.approx(fit.floored[key][1])
    assert not floored.dtype_violations
    assert not C.dtype_floors(fit.unit, floored.overlay)


def test_the_shipped_overlay_reports_every_narrower_dtype_below_its_floor():
    """The shipped calibration's provenance lists exactly the narrower-dtype factors that
    :func:`dtype_floors` finds below their floor under it (the finding is current)."""
    shipped = C.read_overlay_file(C.default_output())
    with open(C.default_output(), "rb") as fh:
        prov = tomllib.load(fh)["provenance"]
    listed = prov["dtype_violations"]
    for name in prov["unit"]:
        if name == "pooled":  # the cross-engine unit: no engine level of its own
            continue
        # <engine>.<level>[.<key>], where a build's engine id has dots of its own (vllm@0.2)
        engine, level, key = re.fullmatch(r"(.+?)\.(defaults|vendor)(?:\.(.+))?", name).groups()
        unit = C.Unit(engine, level, key or "", np.array([], dtype=np.int64), [])
        found = {C.floor_label(*k): v for k, v in C.dtype_floors(unit, shipped).items()}
        want = listed.get(name, {})
        assert set(found) == set(want), name
        for k, (was, fl) in found.items():
            assert [was, fl] == pytest.approx(want[k], rel=1e-9), (name, k)


def test_vendor_units_need_rows_and_a_second_vendor():
    ev = V.Evaluator(SHIPPED[USABLE])
    units = {u.name: u for u in C.plan_units(ev, 20)}
    # vLLM runs on NVIDIA and AMD parts in the data: each vendor with >= 20 rows gets a unit
    assert "vllm.defaults" in units and "vllm.vendor.NVIDIA" in units
    for name, u in units.items():
        if u.level == "vendor":
            assert len(u.rows) >= 20
            assert set(ev.vendors[u.rows]) == {u.key}
            assert u.engine in name
    # an engine measured on one vendor only (Neuron) has no vendor unit
    assert not any(n.startswith("neuron.vendor") for n in units)
    # rows without a stated engine are never fitted
    fitted = np.concatenate([u.rows for u in units.values()])
    assert not ev.engine_assumed[fitted].any()
    # a higher threshold drops the thin vendors
    few = {u.name for u in C.plan_units(ev, 10_000)}
    assert not any(".vendor." in n for n in few)


def test_leave_one_publisher_out_never_sees_the_held_out_rows(monkeypatch):
    seen: list[set[str]] = []

    def spy(df, **opts):
        seen.append(set(df["publisher"]))
        return C.Calibration([], {}, df)

    monkeypatch.setattr(C, "calibrate", spy)
    df = V.read_measurements(None)
    sub = df[df["publisher"].isin(["AMD", "Oracle", "Intel"])]
    out = C.leave_one_publisher_out(sub)
    # Intel has no usable row: nothing to test on
    assert set(out) == {"AMD", "Oracle"}
    assert seen == [{"Intel", "Oracle"}, {"AMD", "Intel"}]
    for pub, rec in out.items():
        assert set(rec["results"]["publisher"]) == {pub}
        assert rec["rows"] == int((V.usable_mask(sub) & sub["publisher"].eq(pub)).sum())


def test_calibrate_rejects_bad_options(tmp_path, capsys):
    assert main(["calibrate", "--min-rows", "0", "-o", str(tmp_path / "c.toml")]) == 2
    assert main(["calibrate", "-o", str(tmp_path / "c.json")]) == 2
    assert main(["calibrate", "--f-scale", "0", "-o", str(tmp_path / "c.toml")]) == 2
    err = capsys.readouterr().err
    assert err.count("sweep: error:") == 3
    with pytest.raises(SystemExit):  # -o is required: the shipped overlay is never implied
        main(["calibrate"])
    capsys.readouterr()


def test_bad_overlay_file_is_one_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("[vllm.defaults]\nbandwidth = 1.7\n[vllm.vendor.nvidia]\nbandwidth = 0.5\n")
    assert main(["validate", "--calibration", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    # one error listing every problem of the file, with the fix
    assert err.startswith("sweep: error: engine overlay: 2 problems")
    assert "bandwidth = 1.7" in err and "did you mean 'NVIDIA'" in err


def test_shipped_overlay_is_current_in_bounds_and_applied():
    """grids/data/engines/calibration.toml was fitted on the shipped measurements (rerun
    `sweep calibrate -o grids/data/engines/calibration.toml` when measurements.csv changes), every
    value lies within the fit's bounds, and the engine catalog applies it."""
    path = C.default_output()
    assert path.exists(), "run `sweep calibrate -o grids/data/engines/calibration.toml`"
    cal = tomllib.loads(path.read_text())
    prov = cal.pop("provenance")
    assert prov["data_sha256"] == V.file_sha256(V.MEASUREMENTS_CSV)
    assert prov["leave_one_publisher_out"], "the shipped overlay reports its held-out check"
    engines = catalog_engines()
    devices = [load_device(d) for d in catalog_ids()]
    checked = 0
    cal.pop("pooled")  # the cross-engine level: tests/test_pooled.py
    builds = 0  # values of a build's own section checked
    for engine, sec in cal.items():
        # an engine's section, or one of its builds' (["vllm@0.2"]: fitted on that release's rows)
        assert engine in engines or load_engine(engine).family in engines
        for level, key, table in [("defaults", "", sec.get("defaults", {}))] + [
                ("vendor", v, t) for v, t in sec.get("vendor", {}).items()]:
            for name, v in table.items():
                for dtype, x in (v.items() if isinstance(v, dict) else [("", v)]):
                    lo, hi, _ = C._bounds_of(name)
                    assert lo <= x <= hi, (engine, level, key, name, dtype)
                    tol = 1e-3 * (hi - lo)  # the fit's own test of a value at a bound
                    assert lo + tol < x < hi - tol, ("a value at a bound ships", engine, name)
            # a device of that vendor on which the engine runs takes the value, unless the
            # engine file sets it for the device or its class (a more specific level wins)
            for dev in devices:
                if level == "vendor" and dev.vendor != key:
                    continue
                p = resolve(engine, dev)
                if not p.supported or p.delegate != engine:
                    continue
                for name, v in table.items():
                    items = v.items() if isinstance(v, dict) else [("", v)]
                    for dtype, x in items:
                        flat = f"{name}.{dtype}" if dtype else name
                        origin = p.origin[flat]
                        quoted = f'"{engine}"' if "@" in engine else engine
                        label = f"[{quoted}.{level}" + (f".{key}]" if key else "]")
                        if label in origin:
                            got = getattr(p, name)[dtype] if dtype else getattr(p, name)
                            assert got == pytest.approx(x), (engine, dev.id, flat)
                            checked += 1
                            builds += "@" in engine
    assert checked > 50 and builds > 0


def test_a_parameter_that_reaches_a_bound_keeps_its_prior(monkeypatch):
    """fit_within_bounds refits without every parameter whose fit ended at a bound, until none
    does, and reports the bound each one reached (issue 20: such a value is a finding)."""
    calls = []

    def fake_fit(ev, unit, overlay, **opts):
        calls.append(list(unit.params))
        # "bandwidth" always runs to its bound; "kv8_efficiency" only while bandwidth is free
        at = [p for p in unit.params if p == "bandwidth"
              or (p == "kv8_efficiency" and "bandwidth" in unit.params)]
        values = {p: (1.0 if p in at else 0.5) for p in unit.params}
        return _unit_fit(unit, values, dict.fromkeys(unit.params, 0.01), at)

    monkeypatch.setattr(C, "fit_unit", fake_fit)
    unit = C.Unit("vllm", "defaults", "", np.arange(10),
                  ["bandwidth", "kv8_efficiency", "iteration_overhead"])
    f = C.fit_within_bounds(None, unit, {})
    assert calls == [["bandwidth", "kv8_efficiency", "iteration_overhead"],
                     ["iteration_overhead"]]
    assert f.reverted == {"bandwidth": 1.0, "kv8_efficiency": 1.0}
    assert f.values == {"iteration_overhead": 0.5} and f.unit.params == unit.params
    # every parameter at a bound: nothing is fitted, the unit keeps its priors
    monkeypatch.setattr(C, "fit_unit", lambda ev, u, o, **k: fake_fit(ev, u, o) if u.params
                        != ["iteration_overhead"] else None)
    g = C.fit_within_bounds(None, C.Unit("vllm", "defaults", "", np.arange(3), ["bandwidth"]),
                            {})
    assert g.values == {} and g.reverted == {"bandwidth": 1.0} and g.after == g.before


def test_an_engine_with_too_few_rows_keeps_its_file_values(tmp_path, capsys):
    sub = _subset()
    sub = sub[~(sub["engine"].eq("vllm") & sub["usable"].eq("yes")).cumsum().gt(8)]  # 8 vLLM
    data = _write(sub, tmp_path / "subset.csv")
    rows = pd.read_csv(data)
    counts = rows.loc[rows["usable"].eq("yes"), "engine"].value_counts()
    lo, hi = int(counts.min()), int(counts.max())
    assert (lo, hi) == (8, 12)
    out = tmp_path / "cal.toml"
    # (--weak-stderr inf: 12 rows inform a 4-evaluation fit weakly, and this test is about the
    # row count, not about which values the weak rule keeps at their prior)
    assert main(["calibrate", "--data", data, "-o", str(out), "--max-nfev", "4",
                 "--min-rows", str(hi), "--no-lopo", "--weak-stderr", "inf"]) == 0
    assert "not fitted, the engine file's values stand" in capsys.readouterr().out
    cal = tomllib.loads(out.read_text())
    assert set(cal) - {"provenance"} == {counts.idxmax()}
    assert cal["provenance"]["not_fitted_too_few_rows"] == {counts.idxmin(): lo}
    assert main(["calibrate", "--data", data, "-o", str(out), "--min-rows", str(hi + 1)]) == 2
    assert "nothing to fit" in capsys.readouterr().err
