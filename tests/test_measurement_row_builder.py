"""The converters' row builder (scripts/measurements/row_builder.py): what it derives, and that a
column given explicitly always wins."""

from __future__ import annotations

from scripts.measurements.common import COLUMNS, check_rows
from scripts.measurements.row_builder import RowBuilder

ROWS = RowBuilder("demo", "demo.csv", publisher="NVIDIA", engine="trtllm", printed={"hardware_raw": "{gpu}"})
RAW = {"gpu": "H100 SXM", "model": "Llama 3.1 8B", "engine_version": "0.17"}


def test_a_row_derives_id_printed_columns_layout_load_defaults_and_catalog_reasons():
    r = ROWS.row(
        7,
        "throughput",
        "123.5",
        raw=RAW,
        hardware="no-such-gpu",
        tp=2,
        pp=2,
        model="llama-3.1-8b",
        load="max_load",
        skip="convention",
        notes=["a", "", "a", "b"],
    )
    assert tuple(r) == COLUMNS
    assert (r["id"], r["source_file"]) == ("demo-007", "scripts/measurements/inputs/demo.csv")
    assert (r["hardware_raw"], r["model_raw"], r["engine_version"]) == ("H100 SXM", "Llama 3.1 8B", "0.17")
    assert (r["devices"], r["parallelism"]) == ("4", "tp2-pp2")
    assert (r["batch"], r["unit"], r["scope"], r["statistic"]) == ("max", "token/s", "per_system", "max_load")
    assert r["usable"] == "no"
    assert r["skip_reason"] == "device not in the catalog; throughput convention not stated"
    assert r["mapping_note"] == "a; b"


def test_a_point_adds_skip_keys_and_notes_and_explicit_columns_win():
    point = ROWS.point(
        RAW,
        hardware="h100-sxm",
        devices=8,
        model="llama-3.1-8b",
        precision="fp8",
        load="static",
        batch=4,
        context=128,
        output_len=64,
        notes="point",
    )
    r = point.row(3, "ttft", "0.25", suffix="ttft-p99", hardware_raw="as given", statistic="p99", skip="p99")
    assert r["id"] == "demo-003-ttft-p99"
    assert (r["hardware_raw"], r["devices"], r["tp"], r["parallelism"]) == ("as given", "8", "", "tp8")
    assert (r["unit"], r["statistic"], r["mapping_note"]) == ("s", "p99", "point")
    assert r["skip_reason"] == "tail percentile (p99): the model predicts typical values"
    ok = point.row(4, "e2e_latency", "1.5", source="a table", notes="row")
    assert (ok["usable"], ok["statistic"], ok["mapping_note"]) == ("yes", "as_published", "point; row")
    assert check_rows([ok]) == []
