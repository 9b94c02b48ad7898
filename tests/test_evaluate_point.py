"""``sweep.evaluate_point``: the same values as ``sweep.evaluate``'s row, its inputs checked with
the same rules, one clear error for bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sweep
from grids.errors import SpecError
from sweep.execute.point import _cached_tables, number_ok
from sweep.execute.points import RATE_COLUMN, bad_numbers
from sweep.execute.points import evaluate as evaluate_table

DEVICES = [("h100-sxm", "llama-3.1-8b", "bf16", "tp1"), ("a100-sxm-80g", "llama-3.1-70b", "bf16",
                                                         "tp8"),
           ("mi300x", "mixtral-8x7b", "fp8", "tp2"), ("h100-sxm", "llama-3.3-70b", "bf16", "tp1"),
           ("tpu-v6e", "llama-3.1-8b", "bf16", "tp1")]
ENGINES = ["native", "vllm", "trtllm", "ideal"]

loads = st.one_of(
    st.fixed_dictionaries({"batch": st.one_of(st.integers(1, 4096), st.just("max")),
                           "batching": st.sampled_from(["continuous", "static"])}),
    st.fixed_dictionaries({"request_rate": st.floats(0.01, 500.0)}))
points = st.builds(
    lambda combo, engine, load, context, output_len: {
        **dict(zip(("hardware", "model", "precision", "parallelism"), combo)), "engine": engine,
        **load, "context": context, "output_len": output_len},
    st.sampled_from(DEVICES), st.sampled_from(ENGINES), loads,
    st.sampled_from([1, 128, 2048, 32768, 500_000]), st.sampled_from([1, 16, 256, 4096]))


def _same(a, b) -> bool:
    a, b = float(a), float(b)
    return (math.isnan(a) and math.isnan(b)) or a == b


def _row(p: dict) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return evaluate_table(pd.DataFrame([p])).iloc[0].to_dict()


@given(st.lists(points, min_size=1, max_size=4))
def test_evaluate_point_is_the_row_of_evaluate(ps):
    """Every metric (and batch_used) of evaluate_point equals the one-row table's (the table
    path, which a one-row ``sweep.evaluate`` of catalog ids does not take), in every
    serving mode, at the maximum load and at infeasible points; flags and codes are ints."""
    for p in ps:
        got = sweep.evaluate_point(**p)
        want = _row(p)
        keys = [k for k in want if k not in p]
        assert sorted(got) == sorted(keys)
        for k in keys:
            assert _same(got[k], want[k]), (p, k, got[k], want[k])
        assert isinstance(got["fits"], int) and isinstance(got["infeasible_reason"], int)
        assert isinstance(got["throughput"], float)


def test_a_larger_table_gives_the_same_values_as_one_call_each():
    """The table path packs many combinations at once; each row equals its own call."""
    rows = [{**dict(zip(("hardware", "model", "precision", "parallelism"), c)), "batch": b,
             "context": 2048, "output_len": 256} for c in DEVICES for b in (1, 64, "max")]
    table = sweep.evaluate(pd.DataFrame(rows))
    for i, p in enumerate(rows):
        got = sweep.evaluate_point(**p)
        for k, v in got.items():
            assert _same(v, table.iloc[i][k]), (p, k)


def test_the_cache_holds_catalog_combinations_and_is_keyed_by_all_of_them():
    """A second call reuses the packed tables; another precision is another entry."""
    _cached_tables.cache_clear()
    p = {"hardware": "h100-sxm", "model": "llama-3.1-8b", "precision": "bf16", "parallelism": "tp1",
             "batch": 8, "context": 1024, "output_len": 128}
    a = sweep.evaluate_point(**p)
    b = sweep.evaluate_point(**p)
    assert a == b and _cached_tables.cache_info().hits == 1
    c = sweep.evaluate_point(**{**p, "precision": "fp8"})
    assert _cached_tables.cache_info().currsize == 2 and c["memory_per_device"] < \
        a["memory_per_device"]


def test_an_explicit_calibration_is_not_served_from_the_cache():
    """calibration={} (no overlay) gives the files' estimates, as evaluate does with it."""
    p = {"hardware": "h100-sxm", "model": "llama-3.1-8b", "precision": "bf16", "parallelism": "tp1",
             "engine": "vllm", "batch": 8, "context": 1024, "output_len": 128}
    bare = sweep.evaluate_point(**p, calibration={})
    want = sweep.evaluate(pd.DataFrame([p]), calibration={}).iloc[0]
    assert _same(bare["tpot"], want["tpot"])
    assert not _same(bare["tpot"], sweep.evaluate_point(**p)["tpot"])


@given(st.sampled_from(["batch", "context", "output_len", RATE_COLUMN]),
       st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 2 ** 32),
                 st.sampled_from([0.5, 1.0, 2.0 ** 31, 2.0 ** 31 + 1, 1e9, 1e9 + 1])))
def test_scalar_number_rule_is_the_table_rule(col, x):
    x = float(x)
    assert number_ok(col, x) == (bad_numbers(col, np.array([x]))[0].size == 0)


@pytest.mark.parametrize("kwargs, says", [
    ({"batch": 8, "request_rate": 1.0}, "exactly one"),
    ({}, "exactly one"),
    ({"batch": 0}, "batch: 0 is not one of the whole numbers"),
    ({"batch": True}, "batch: True"),
    ({"batch": "lots"}, "'max' (maximum load)"),
    ({"batch": 8, "context": -3}, "context: -3"),
    ({"request_rate": 0.0}, "request_rate: 0.0 is not one of the positive request rates"),
    ({"request_rate": 2.0, "batching": "static"}, "needs continuous batching"),
    ({"batch": 8, "batching": "dynamic"}, "batching: 'dynamic'"),
    ({"batch": 8, "prefill_chunk": 0}, "prefill_chunk"),
    ({"batch": 8, "hardware": "h100"}, "unknown hardware id 'h100'"),
    ({"batch": 8, "model": "llama-9"}, "llama-9"),
])
def test_bad_input_is_one_clear_error(kwargs, says):
    p = {"hardware": "h100-sxm", "model": "llama-3.1-8b", "precision": "bf16", "parallelism": "tp1",
             "context": 1024, "output_len": 128}
    with pytest.raises(SpecError) as info:
        sweep.evaluate_point(**{**p, **kwargs})
    assert says in str(info.value), str(info.value)


def test_every_problem_is_reported_together():
    with pytest.raises(SpecError) as info:
        sweep.evaluate_point("h100", "llama-3.1-8b", "bf16", "tp1", batch=0, context=-1,
                             output_len=8)
    text = str(info.value)
    assert "h100" in text and "batch: 0" in text and "context: -1" in text


def _quiet(fn, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*a, **kw)


@given(points, st.sampled_from(["frame", "dict", "indexed"]))
def test_one_row_evaluate_is_the_table_paths_frame(p, form):
    """A one-row ``sweep.evaluate`` (served by evaluate_point's cached tables) returns the frame
    the table path returns: the same columns in the same order, dtypes, index and values (NaN
    where NaN), from a DataFrame, a dict of one row's values or a frame with its own index."""
    table = {"frame": pd.DataFrame([p]), "dict": dict(p),
             "indexed": pd.DataFrame([p], index=pd.Index(["mine"], name="id"))}[form]
    got = _quiet(sweep.evaluate, table)
    want = _quiet(evaluate_table, table)
    pd.testing.assert_frame_equal(got, want, check_exact=True)


@pytest.mark.parametrize("row, says", [
    ({"hardware": "h100-sxmm"}, "unknown hardware"),
    ({"batch": 0}, "batch"),
    ({"batch": 2.5}, "batch"),
    ({"engine": "vllmm"}, "unknown engine"),
    ({"batching": "static", "request_rate": 1.0, "batch": None}, "request_rate"),
])
def test_one_row_evaluate_rejects_bad_input_as_the_table_path_does(row, says):
    """A row the fast path cannot serve goes to the table path, whose error is the one the user
    gets, word for word."""
    p = {"hardware": "h100-sxm", "model": "llama-3.1-8b", "precision": "bf16",
         "parallelism": "tp1", "batch": 8, "context": 1024, "output_len": 256, **row}
    p = {k: v for k, v in p.items() if v is not None}
    with pytest.raises(SpecError) as fast:
        sweep.evaluate(pd.DataFrame([p]))
    with pytest.raises(SpecError) as table:
        evaluate_table(pd.DataFrame([p]))
    assert str(fast.value) == str(table.value)
    assert says in str(fast.value)


def test_tables_the_fast_path_does_not_serve_take_the_table_path():
    """Several rows, a column that is not an input (passed through, with the table path's
    warning), and explicit keywords all give the table path's result."""
    p = {"hardware": "h100-sxm", "model": "llama-3.1-8b", "precision": "bf16",
         "parallelism": "tp1", "batch": 8, "context": 1024, "output_len": 256}
    with pytest.warns(UserWarning, match="not inputs of the model"):
        got = sweep.evaluate(pd.DataFrame([{**p, "note": "a"}]))
    assert got["note"].tolist() == ["a"]
    two = pd.DataFrame([p, {**p, "batch": 16}])
    pd.testing.assert_frame_equal(sweep.evaluate(two), evaluate_table(two))
    pd.testing.assert_frame_equal(sweep.evaluate(pd.DataFrame([p]), calibration={}),
                                  evaluate_table(pd.DataFrame([p]), calibration={}))


def test_repeated_one_row_calls_fill_a_fresh_frame_each_time():
    """The second and later one-row frames of an input layout are copies of the first, filled
    with their own numbers: each equals the table path's frame, and an earlier result is not
    changed by a later call."""
    p = {"hardware": "h100-sxm", "model": "llama-3.1-8b", "precision": "bf16",
         "parallelism": "tp1", "batch": 8, "context": 1024, "output_len": 256}
    first = sweep.evaluate(pd.DataFrame([p]))
    kept = first.copy()
    for q in ({**p, "batch": 64}, {**p, "context": 128, "batch": 1}, {**p, "batch": 10**6}):
        got = _quiet(sweep.evaluate, pd.DataFrame([q]))
        pd.testing.assert_frame_equal(got, _quiet(evaluate_table, pd.DataFrame([q])),
                                      check_exact=True)
    pd.testing.assert_frame_equal(first, kept, check_exact=True)


def test_writing_into_a_one_row_result_leaves_later_results_alone():
    """A frame the fast path returned is the caller's: writing into its text and number columns
    changes neither the template it was filled from nor the next call's frame."""
    p = {"hardware": "h100-sxm", "model": "llama-3.1-8b", "precision": "bf16",
         "parallelism": "tp1", "batch": 4, "context": 512, "output_len": 64}
    sweep.evaluate(p)  # the template of this layout
    mine = sweep.evaluate(p)
    mine.loc[0, "hardware"] = "mine"
    mine.loc[0, "throughput"] = -1.0
    mine.loc[0, "fits"] = 0
    pd.testing.assert_frame_equal(sweep.evaluate(p), evaluate_table(p), check_exact=True)


def test_a_fill_that_differs_from_the_table_path_is_never_used(monkeypatch):
    """The fill of a template (pandas internals) is checked once against the table path's frame;
    where it differs, as it would on a pandas whose internals changed, no template is kept and
    every frame is the table path's."""
    from sweep.execute import point
    right = point._fill

    def wrong(template, plan, row, index):
        frame = right(template, plan, row, index)
        frame.iloc[0, -1] = 12345.0
        return frame

    monkeypatch.setattr(point, "_fill", wrong)
    monkeypatch.setattr(point, "_TEMPLATES", {})
    p = {"hardware": "a100-sxm-80g", "model": "llama-3.1-8b", "precision": "bf16",
         "parallelism": "tp1", "batch": 2, "context": 256, "output_len": 32}
    for q in (p, {**p, "batch": 8}, {**p, "context": 1024}):
        pd.testing.assert_frame_equal(sweep.evaluate(q), evaluate_table(q), check_exact=True)
    assert point._TEMPLATES == {}
