"""``sweep catalog hardware|models|precisions|layouts [--json]`` (sweep.cli.catalog)."""

from __future__ import annotations

import json

import pytest

from grids.hardware import catalog_ids
from grids.layouts import CATALOG_LAYOUTS, parse_layout
from grids.models import MODEL_IDS
from grids.precisions import NAMED
from sweep.cli import main

from .test_hardware import REQUIRED_IDS

HW_FIELDS = {"id", "name", "class", "peak_flops", "memory_tiers", "host_tier",
             "link_bandwidth_bytes_per_s", "tdp_w", "idle_w", "sources"}
TIER_FIELDS = {"name", "capacity_bytes", "bandwidth_bytes_per_s"}
MODEL_FIELDS = {"id", "params_total", "params_active", "kv_bytes_per_token", "layers", "sources"}


def run_json(capsys, what: str) -> list[dict]:
    assert main(["catalog", what, "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    records = json.loads(out)
    assert isinstance(records, list) and records
    return records


def run_table(capsys, what: str) -> str:
    assert main(["catalog", what]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.strip()
    return out


# ------------------------------------------------------------------------------ hardware JSON


def test_hardware_json(capsys):
    records = run_json(capsys, "hardware")
    ids = [r["id"] for r in records]
    assert len(records) >= 25 and len(set(ids)) == len(ids)
    assert set(ids) >= REQUIRED_IDS, sorted(REQUIRED_IDS - set(ids))
    assert set(ids) == set(catalog_ids())
    for r in records:
        assert set(r) >= HW_FIELDS, f"{r['id']}: missing {HW_FIELDS - set(r)}"
        assert isinstance(r["name"], str) and r["name"]
        assert isinstance(r["peak_flops"], dict) and r["peak_flops"]
        assert all(isinstance(v, float) and v > 1e12 for v in r["peak_flops"].values()), r["id"]
        assert isinstance(r["memory_tiers"], list) and r["memory_tiers"]
        for t in r["memory_tiers"] + ([r["host_tier"]] if r["host_tier"] else []):
            assert set(t) >= TIER_FIELDS, r["id"]
            assert t["capacity_bytes"] > 0 and t["bandwidth_bytes_per_s"] > 0
        bws = [t["bandwidth_bytes_per_s"] for t in r["memory_tiers"]]
        assert bws == sorted(bws, reverse=True), f"{r['id']}: tiers not fastest first"
        assert 0 <= r["idle_w"] <= r["tdp_w"], r["id"]
        assert r["link_bandwidth_bytes_per_s"] > 0


def test_hardware_json_sources(capsys):
    for r in run_json(capsys, "hardware"):
        sources = r["sources"]
        for dtype in r["peak_flops"]:
            assert sources[f"peak_flops.{dtype}"]["source"].strip()
            assert sources[f"peak_flops.{dtype}"]["value"] == r["peak_flops"][dtype]
        for i, t in enumerate(r["memory_tiers"]):
            assert sources[f"memory_tiers[{i}].capacity"]["value"] == t["capacity_bytes"]
            assert sources[f"memory_tiers[{i}].bandwidth"]["value"] == t["bandwidth_bytes_per_s"]
        assert sources["power.tdp"]["value"] == r["tdp_w"]
        assert sources["power.idle"]["value"] == pytest.approx(r["idle_w"])
        assert sources["interconnect.link_bandwidth"]["value"] == r["link_bandwidth_bytes_per_s"]
        for key, s in sources.items():
            assert isinstance(s["source"], str) and s["source"].strip(), f"{r['id']} {key}"
            if s.get("estimate"):
                assert s["rule"].strip(), f"{r['id']} {key}: estimate without rule"


def test_hardware_json_si_units_and_dense_values(capsys):
    by = {r["id"]: r for r in run_json(capsys, "hardware")}
    h100 = by["h100-sxm"]
    assert h100["peak_flops"]["bf16"] == pytest.approx(989.4e12, rel=1e-12)
    assert h100["peak_flops"]["fp8"] == pytest.approx(1978.9e12, rel=1e-12)
    assert h100["memory_tiers"][0]["bandwidth_bytes_per_s"] == pytest.approx(3.35e12, rel=1e-12)
    assert h100["memory_tiers"][0]["capacity_bytes"] == 81_559 * 2**20  # what nvidia-smi reports
    assert h100["tdp_w"] == 700.0 and h100["class"] == "gpu"
    assert by["mi300x"]["peak_flops"]["bf16"] == pytest.approx(1307.4e12, rel=1e-12)
    assert "fp8" not in by["a100-sxm-80g"]["peak_flops"]
    assert by["groq-lpu"]["host_tier"] is None
    assert by["groq-lpu"]["class"] == "deterministic-pipeline"
    assert by["cs-3"]["sources"]["peak_flops.bf16"]["estimate"] is True  # dense = sparse / 2


# ------------------------------------------------------------------------------ models JSON


def test_models_json(capsys):
    records = run_json(capsys, "models")
    ids = [r["id"] for r in records]
    assert len(records) >= 25 and ids == list(MODEL_IDS)
    for r in records:
        assert set(r) >= MODEL_FIELDS, f"{r['id']}: missing {MODEL_FIELDS - set(r)}"
        assert isinstance(r["params_total"], int) and r["params_total"] > 1e9
        assert 0 < r["params_active"] <= r["params_total"]
        assert r["kv_bytes_per_token"] > 0 and r["layers"] >= 1
        assert r["sources"] and all(isinstance(s, str) and s.strip() for s in r["sources"])
    by = {r["id"]: r for r in records}
    assert by["mixtral-8x22b"]["params_total"] == 140_620_634_112
    assert by["mixtral-8x22b"]["params_active"] == 39_152_031_744
    assert by["llama-3.1-8b"]["kv_bytes_per_token"] == 2 * 32 * 8 * 128 * 2  # K+V, 16-bit
    assert by["llama-3.1-8b"]["layers"] == 32


# ------------------------------------------------------------------------------ precisions, layouts


def test_precisions_json(capsys):
    records = run_json(capsys, "precisions")
    assert [r["name"] for r in records] == list(NAMED)
    for r in records:
        assert {"weight_bits", "act_bits", "kv_bits", "compute_dtypes", "description"} <= set(r)


def test_layouts_json(capsys):
    records = run_json(capsys, "layouts")
    assert len(records) == len(CATALOG_LAYOUTS)
    for r, name in zip(records, CATALOG_LAYOUTS):
        assert parse_layout(r["name"]) == parse_layout(name)
        assert r["devices"] == r["tp"] * r["pp"] * r["ep"] * r["dp"]


# ------------------------------------------------------------------------------ tables


def test_hardware_table(capsys):
    out = run_table(capsys, "hardware")
    lines = out.strip().splitlines()
    assert lines[0].split()[:2] == ["id", "class"]
    for dev_id in catalog_ids():
        assert any(line.split()[0] == dev_id for line in lines[2:]), dev_id
    h100 = next(line for line in lines if line.startswith("h100-sxm "))
    assert "989 TFLOP/s" in h100 and "3.35 TB/s" in h100 and "85.5 GB" in h100 and "700 W" in h100


def test_models_table(capsys):
    out = run_table(capsys, "models")
    for mid in MODEL_IDS:
        assert mid in out
    assert "params total" in out and "140.62 B" in out


def test_precisions_table(capsys):
    out = run_table(capsys, "precisions")
    for name in NAMED:
        assert name in out
    assert "bf16/fp16" in out


def test_layouts_table(capsys):
    out = run_table(capsys, "layouts")
    for name in CATALOG_LAYOUTS:
        assert parse_layout(name).name in out
    assert "offload" in out and "devices" in out


def test_bad_catalog_name_is_bad_input(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["catalog", "gpus"])
    assert exc.value.code == 2
    _, err = capsys.readouterr()
    assert "error" in err and "Traceback" not in err
