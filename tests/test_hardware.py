"""Hardware catalog (grids.hardware, grids/data/hardware/*.toml, grids/data/classes.toml).

Every catalog number is dense (no 2:4-sparsity headline figures), in SI base units, and carries a
source; estimates carry the rule used. Several values are pinned against the dense columns of
``shared/reference/accelerators.csv`` with the units converted (TB/s -> B/s, GB -> B).
"""

from __future__ import annotations

import csv
import re
import tomllib
from pathlib import Path

import pytest

from grids.errors import SpecError
from grids.hardware import (
    CLASS_FIELDS,
    CLASSES,
    COMPUTE_DTYPES,
    catalog_hash,
    catalog_ids,
    class_defaults,
    hardware_dir,
    load_catalog,
    load_device,
    parse_device,
)

REPO = Path(__file__).resolve().parents[1]
ACCELERATORS_CSV = REPO.parent / "shared" / "reference" / "accelerators.csv"

REQUIRED_IDS = {
    "a100-sxm-80g", "h100-sxm", "h200-sxm", "gh200", "b200", "gb200", "mi250x", "mi300x", "mi325x",
    "mi355x", "gaudi2", "gaudi3", "max1550", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-v7",
    "inferentia2", "trainium2", "cs-3", "sn40l", "groq-lpu", "gc200", "mtia-v2", "maia-100",
}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def raw_toml(dev_id: str) -> dict:
    with open(hardware_dir() / f"{dev_id}.toml", "rb") as fh:
        return tomllib.load(fh)


# ------------------------------------------------------------------------------ catalog content


def test_required_devices_present(catalog):
    assert len(catalog) >= 25
    missing = REQUIRED_IDS - set(catalog)
    assert not missing, f"catalog lacks {sorted(missing)}"
    assert set(catalog_ids()) == set(catalog)


def test_file_names_match_ids():
    for dev_id in catalog_ids():
        assert raw_toml(dev_id)["id"] == dev_id


def test_class_defaults_complete_and_sourced():
    defaults = class_defaults()
    assert set(defaults) == set(CLASSES)
    for cls, table in defaults.items():
        assert set(table) == set(CLASS_FIELDS), cls
        for name, s in table.items():
            assert s.source.strip(), f"[{cls}].{name} has no source"


def test_every_class_is_used(catalog):
    assert {d.cls for d in catalog.values()} == set(CLASSES)


def _walk(node, path=""):
    """Yield (path, leaf) for every sourced table and every bare number of a TOML tree."""
    if isinstance(node, dict):
        if "value" in node:
            yield path, node
            return
        for k, v in node.items():
            yield from _walk(v, f"{path}.{k}" if path else k)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, f"{path}[{i}]")
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield path, node


@pytest.mark.parametrize("dev_id", catalog_ids())
def test_every_number_in_the_file_has_a_source(dev_id):
    """No bare numbers anywhere in a device file (caches included); estimates give a rule."""
    for path, leaf in _walk(raw_toml(dev_id)):
        assert isinstance(leaf, dict), f"{dev_id}: {path} = {leaf!r} is a bare number"
        assert str(leaf.get("source", "")).strip(), f"{dev_id}: {path} has no source"
        if leaf.get("estimate"):
            assert str(leaf.get("rule", "")).strip(), f"{dev_id}: {path} estimate without rule"


def test_every_loaded_number_has_a_source(catalog):
    for dev in catalog.values():
        expected = {"release_year", "interconnect.link_bandwidth", "interconnect.link_latency",
                    "interconnect.domain_size", "interconnect.scaleout_bandwidth",
                    "interconnect.scaleout_latency", "power.tdp", "power.idle"}
        expected |= {f"peak_flops.{d}" for d in dev.peak_flops}
        for i in range(len(dev.tiers)):
            expected |= {f"memory_tiers[{i}].capacity", f"memory_tiers[{i}].bandwidth"}
        if dev.host is not None:
            expected |= {"host_tier.capacity", "host_tier.bandwidth"}
        assert expected <= set(dev.sources), f"{dev.id}: unsourced {expected - set(dev.sources)}"
        for key, s in dev.sources.items():
            assert s.source.strip(), f"{dev.id}: {key} has an empty source"
            if s.estimate:
                assert s.rule.strip(), f"{dev.id}: {key} is an estimate without a rule"


def test_sanity_of_every_device(catalog):
    for dev in catalog.values():
        assert set(dev.peak_flops) <= set(COMPUTE_DTYPES)
        assert {"bf16", "fp16"} & set(dev.peak_flops), dev.id
        assert all(v > 0 for v in dev.peak_flops.values()), dev.id
        assert 1 <= len(dev.tiers) <= 3, dev.id
        bws = [t.bandwidth for t in dev.tiers]
        assert bws == sorted(bws, reverse=True), f"{dev.id}: tiers not fastest first"
        if dev.host is not None:
            assert dev.host.bandwidth <= bws[-1], f"{dev.id}: host tier faster than device tiers"
        assert all(t.capacity > 0 and t.bandwidth > 0 for t in dev.tiers), dev.id
        assert 0 <= dev.idle <= dev.tdp, dev.id
        assert dev.link_bandwidth > 0 and dev.scaleout_bandwidth > 0 and dev.domain_size >= 1
        assert 2015 <= dev.release_year <= 2030
        e = dev.efficiency
        assert 0 < e.flops_efficiency <= 1 and 0 < e.bandwidth_efficiency <= 1
        assert 0 < e.capacity_fraction <= 1 and e.layer_overhead >= 0 and e.jitter >= 0


def test_no_sparse_figures(catalog):
    """Dense peaks: fp8 at most 2x, int8 and 4-bit at most 4x (Groq publishes 750 TOPS int8 vs
    188 TFLOPS fp16) the 16-bit rate, tf32 and fp32 at most the 16-bit rate."""
    for dev in catalog.values():
        p16 = max(dev.peak_flops.get("bf16", 0), dev.peak_flops.get("fp16", 0))
        pf = dev.peak_flops
        for d, ratio in (("fp8", 2), ("int8", 4), ("fp4", 4), ("int4", 4), ("tf32", 1),
                         ("fp32", 1)):
            if d in pf:
                assert pf[d] <= ratio * p16 * 1.001, f"{dev.id} {d} looks sparse"


def test_pinned_si_values(catalog):
    h100 = catalog["h100-sxm"]
    assert h100.peak_flops["bf16"] == pytest.approx(989.4e12, rel=1e-12)
    assert h100.peak_flops["fp8"] == pytest.approx(1978.9e12, rel=1e-12)
    assert h100.tiers[0].bandwidth == pytest.approx(3.35e12, rel=1e-12)
    assert h100.tiers[0].capacity == pytest.approx(80e9, rel=1e-12)
    assert h100.tdp == 700.0
    assert h100.link_bandwidth == pytest.approx(450e9)  # 900 GB/s bidirectional, per direction
    assert catalog["mi300x"].peak_flops["bf16"] == pytest.approx(1307.4e12, rel=1e-12)
    assert catalog["mi300x"].peak_flops["fp8"] == pytest.approx(2614.9e12, rel=1e-12)
    assert catalog["b200"].peak_flops["bf16"] == pytest.approx(2.25e15, rel=1e-12)
    a100 = catalog["a100-sxm-80g"]
    assert "fp8" not in a100.peak_flops and a100.peak_flops["bf16"] == pytest.approx(312e12)
    groq = catalog["groq-lpu"]
    assert set(groq.peak_flops) == {"fp16", "int8"} and groq.host is None
    assert [t.kind for t in groq.tiers] == ["sram"]
    assert catalog["inferentia2"].tiers[0].capacity == 32 * 2**30  # 32 GiB
    assert [t.kind for t in catalog["gaudi3"].tiers] == ["sram", "dram"]
    assert len(catalog["sn40l"].tiers) == 3


# --- pins against shared/reference/accelerators.csv (dense columns, units converted) ---------

CSV_ROW = {  # catalog id -> start of the CSV 'accelerator' cell
    "a100-sxm-80g": "NVIDIA A100 80GB SXM", "h100-sxm": "NVIDIA H100 SXM",
    "h200-sxm": "NVIDIA H200 SXM", "gh200": "NVIDIA GH200", "b200": "NVIDIA B200",
    "gb200": "NVIDIA GB200", "mi250x": "AMD Instinct MI250X", "mi300x": "AMD Instinct MI300X",
    "mi325x": "AMD Instinct MI325X", "mi355x": "AMD Instinct MI355X", "gaudi2": "Intel Gaudi 2",
    "gaudi3": "Intel Gaudi 3", "max1550": "Intel Data Center GPU Max 1550",
    "tpu-v5e": "Google TPU v5e", "tpu-v5p": "Google TPU v5p", "tpu-v6e": "Google TPU v6e",
    "tpu-v7": "Google TPU7x", "inferentia2": "AWS Inferentia2", "trainium2": "AWS Trainium2",
    "cs-3": "Cerebras WSE-3", "sn40l": "SambaNova SN40L", "groq-lpu": "Groq LPU",
    "gc200": "Graphcore GC200", "mtia-v2": "Meta MTIA v2", "maia-100": "Microsoft Maia 100",
}
FLOP_COLS = {"fp32": "fp32_tflops", "tf32": "tf32_tflops_dense", "bf16": "bf16_fp16_tflops_dense",
             "fp16": "bf16_fp16_tflops_dense", "fp8": "fp8_tflops_dense",
             "int8": "int8_tops_dense"}
# (device, catalog field) pairs whose CSV cell is an unambiguous dense figure. Left out on purpose:
# MI250X fp32 (vector/matrix pair), MI325X compute (CSV rounds to 1300 / 2610), TPU v5p memory
# ("95 GB" in the CSV, 95 GiB in Google's doc), Inferentia2 bandwidth (CSV 0.82 TB/s for
# 820 GiB/s), CS-3 compute (sparse only; the catalog's dense value is an estimate).
PINS = {
    "a100-sxm-80g": ["fp32", "tf32", "bf16", "fp16", "int8", "mem", "bw", "tdp"],
    "h100-sxm": ["fp32", "tf32", "bf16", "fp16", "fp8", "int8", "mem", "bw", "tdp"],
    "h200-sxm": ["fp32", "tf32", "bf16", "fp8", "int8", "mem", "bw", "tdp"],
    "gh200": ["bf16", "fp8", "int8", "mem", "bw"],
    "b200": ["tf32", "bf16", "fp8", "int8", "mem", "bw", "tdp"],
    "gb200": ["fp32", "tf32", "bf16", "fp8", "int8", "mem", "bw"],
    "mi250x": ["bf16", "int8", "mem", "bw", "tdp"],
    "mi300x": ["fp32", "tf32", "bf16", "fp16", "fp8", "int8", "mem", "bw", "tdp"],
    "mi325x": ["mem", "bw"],
    "mi355x": ["fp32", "bf16", "fp8", "int8", "mem", "bw", "tdp"],
    "gaudi2": ["bf16", "mem", "bw", "tdp"],
    "gaudi3": ["bf16", "fp8", "mem", "bw", "tdp", "sram", "sram_bw"],
    "max1550": ["fp32", "mem", "bw", "tdp"],
    "tpu-v5e": ["bf16", "int8", "mem", "bw"],
    "tpu-v5p": ["bf16", "bw"],
    "tpu-v6e": ["bf16", "int8", "mem", "bw"],
    "tpu-v7": ["bf16", "fp8", "mem", "bw"],
    "inferentia2": ["fp32", "tf32", "bf16", "int8", "mem"],
    "trainium2": ["fp32", "tf32", "bf16", "fp8", "mem", "bw"],
    "cs-3": ["sram", "sram_bw"],
    "sn40l": ["bf16", "mem", "sram"],
    "groq-lpu": ["fp16", "int8", "tdp", "sram", "sram_bw"],
    "gc200": ["fp16", "sram"],
    "mtia-v2": ["bf16", "int8", "mem", "tdp", "sram"],
    "maia-100": ["bf16", "mem", "bw", "tdp"],
}
UNIT = {"B": 1.0, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "GiB": 2.0**30, "MiB": 2.0**20,
        "TB/s": 1e12, "PB/s": 1e15, "GB/s": 1e9}


def _lead(cell: str) -> float:
    m = re.match(r"\s*~?\s*([\d.]+)", cell)
    assert m, f"no number in {cell!r}"
    return float(m.group(1))


def _with_unit(cell: str) -> float:
    m = re.search(r"([\d.]+)\s*(GiB|MiB|GB|MB|TB/s|PB/s|GB/s|TB|KB)", cell)
    assert m, f"no quantity in {cell!r}"
    return float(m.group(1)) * UNIT[m.group(2)]


@pytest.fixture(scope="module")
def csv_rows():
    if not ACCELERATORS_CSV.exists():
        pytest.skip("shared/reference/accelerators.csv not beside the repo")
    with open(ACCELERATORS_CSV, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    out = {}
    for dev_id, start in CSV_ROW.items():
        match = [r for r in rows if r["accelerator"].startswith(start)]
        assert len(match) == 1, f"{start!r} matches {len(match)} CSV rows"
        out[dev_id] = match[0]
    return out


@pytest.mark.parametrize("dev_id", sorted(PINS))
def test_pinned_against_accelerators_csv(dev_id, catalog, csv_rows):
    dev, row = catalog[dev_id], csv_rows[dev_id]
    dram = next(t for t in dev.tiers if t.kind == "dram") if "mem" in PINS[dev_id] else None
    sram = dev.tier_of_kind("sram")
    for field in PINS[dev_id]:
        if field in FLOP_COLS:
            got, want = dev.peak_flops[field], _lead(row[FLOP_COLS[field]]) * 1e12
        elif field == "mem":
            got, want = dram.capacity, _with_unit(row["device_memory"])
        elif field == "bw":
            got = next(t for t in dev.tiers if t.kind == "dram").bandwidth
            want = _lead(row["device_memory_bw_TBps"]) * 1e12
        elif field == "tdp":
            got, want = dev.tdp, _lead(row["tdp_W"])
        elif field == "sram":
            got, want = sram.capacity, _with_unit(row["onchip_sram"])
        else:  # sram_bw
            got, want = sram.bandwidth, _with_unit(row["onchip_sram_bandwidth"])
        assert got == pytest.approx(want, rel=1e-9), f"{dev_id} {field}: {got} != CSV {want}"


def test_mi325x_matches_csv_within_rounding(catalog, csv_rows):
    row, dev = csv_rows["mi325x"], catalog["mi325x"]
    assert dev.peak_flops["bf16"] == pytest.approx(_lead(row["bf16_fp16_tflops_dense"]) * 1e12,
                                                   rel=0.01)
    assert dev.peak_flops["fp8"] == pytest.approx(_lead(row["fp8_tflops_dense"]) * 1e12, rel=0.01)


def test_no_catalog_peak_is_a_csv_sparse_headline(catalog, csv_rows):
    """The 'with sparsity' figures in the CSV notes (2x dense) never appear as a 16-bit peak."""
    for dev_id, row in csv_rows.items():
        dense = row["bf16_fp16_tflops_dense"]
        if not re.match(r"\s*[\d.]+", dense):
            continue
        p16 = max(catalog[dev_id].peak_flops.get(d, 0.0) for d in ("bf16", "fp16"))
        assert p16 < 1.5 * _lead(dense) * 1e12, dev_id


# ------------------------------------------------------------------------------ loading API


def test_load_device_by_id_and_path(tmp_path, catalog):
    assert load_device("h100-sxm") == catalog["h100-sxm"]
    p = tmp_path / "my-h100.toml"
    p.write_bytes((hardware_dir() / "h100-sxm.toml").read_bytes())
    dev = load_device(p)
    assert dev.id == "h100-sxm" and dev.peak_flops == catalog["h100-sxm"].peak_flops


def test_unknown_id_suggests():
    with pytest.raises(SpecError) as exc:
        load_device("h100-sxn")
    assert "h100-sxm" in str(exc.value) and len(exc.value.problems) == 1
    with pytest.raises(SpecError, match="a100-sxm-80g"):
        load_device("a100-sxm")


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(SpecError, match="not found"):
        load_device(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("id = 'x'\n[peak_flops\n")
    with pytest.raises(SpecError, match="malformed TOML"):
        load_device(bad)


def test_user_device_with_many_problems_is_one_error(tmp_path):
    raw = raw_toml("h100-sxm")
    raw["class"] = "gpux"  # 1 unknown class
    raw["peak_flops"]["bf16"] = {"value": "989.4 TFLOP/s"}  # 2 no source
    raw["peak_flops"]["fp9"] = {"value": 1e15, "source": "x"}  # 3 unknown dtype
    raw["memory_tiers"][0]["bandwidth"] = {"value": "3.35 TB", "source": "x"}  # 4 wrong unit
    raw["memory_tiers"][0]["capacity"] = {"value": -1, "source": "x"}  # 5 negative size
    raw["power"]["idle"] = {"value": "900 W", "source": "x"}  # 6 idle > tdp
    raw["interconnect"]["link_bandwidth"] = 450e9  # 7 bare number, no source
    raw["power"]["tdp"]["estimate"] = True  # 8 estimate without rule
    with pytest.raises(SpecError) as exc:
        parse_device(raw, "mine.toml")
    problems = exc.value.problems
    assert len(problems) == 8, "\n".join(problems)
    text = str(exc.value)
    for needle in ("unknown class", "missing 'source'", "fp9", "is a bytes", "must be > 0",
                   "exceeds power.tdp", "needs a source", "needs a 'rule'"):
        assert needle in text, needle


def test_missing_fields_reported(tmp_path):
    with pytest.raises(SpecError) as exc:
        parse_device({"id": "x", "name": "X", "class": "gpu"}, "x.toml")
    text = str(exc.value)
    for needle in ("release_year", "peak_flops", "memory_tiers", "link_bandwidth", "tdp"):
        assert needle in text


def test_catalog_hash_is_stable():
    h = catalog_hash()
    assert h == catalog_hash() and len(h) == 64
