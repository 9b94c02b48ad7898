"""The measurement table (``sweep/data/measurements/measurements.csv``) and its build
(``python -m scripts.measurements``): reproducible from the vendored inputs, one schema, every row
usable or explained, ids that parse, counts per source, units, Little's law and Splitwise medians."""

from __future__ import annotations

import csv
import re
import shutil
import statistics
import tomllib
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import grids
from grids.errors import SpecError
from scripts.measurements import SOURCES, STAGED
from scripts.measurements import __main__ as cli
from scripts.measurements.common import (
    INPUTS,
    LITTLES_RE,
    OUT_CSV,
    SCHEMA_PATH,
    STAGED_CSV,
    check_rows,
    layout_name,
    littles_law,
    read_raw,
    round_half_up,
)
from sweep.validate import measurements as M

UNITS = {"token/s", "token/J", "s", "W", "1"}
SCHEMA = tomllib.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
ROWS = list(csv.DictReader(OUT_CSV.open(newline="", encoding="utf-8")))
BY_ID = {r["id"]: r for r in ROWS}
RELATIVE = SCHEMA["skip_reasons"]["relative"]


def _key(rid: str) -> str:
    return rid.split("-")[0]


@pytest.fixture(scope="module")
def build():
    parts, problems = cli.build(INPUTS)
    assert problems == []
    return parts


# ------------------------------------------------------------------------------ reproducibility


def test_build_from_vendored_inputs_reproduces_shipped_csv(build):
    rows = [r for _, _, conv in build for r in conv.rows]
    assert cli.to_csv(rows) == OUT_CSV.read_text(encoding="utf-8")
    assert cli.main(["--check"]) == 0


def test_build_writes_a_csv_byte_identical_to_the_shipped_one(tmp_path):
    out = tmp_path / "measurements.csv"
    assert cli.main(["--out", str(out)]) == 0
    assert out.read_bytes() == OUT_CSV.read_bytes()


def test_check_detects_a_stale_csv_and_build_refuses_missing_inputs(tmp_path, capsys):
    stale = tmp_path / "m.csv"
    text = OUT_CSV.read_text(encoding="utf-8").splitlines(keepends=True)
    stale.write_text("".join(text[:-1]), encoding="utf-8")  # last row lost
    assert cli.main(["--check", "--out", str(stale)]) == 1
    assert "shipped has" in capsys.readouterr().err
    inputs = tmp_path / "inputs"
    shutil.copytree(INPUTS, inputs)
    (inputs / SOURCES[5].FILE).unlink()
    out = tmp_path / "built.csv"
    assert cli.main(["--inputs", str(inputs), "--out", str(out)]) == 1
    assert SOURCES[5].FILE in capsys.readouterr().err
    assert not out.exists()


def test_vendored_inputs_are_the_ones_the_sources_name():
    both = (*SOURCES, *STAGED)
    assert {s.FILE for s in both} == {p.name for p in INPUTS.glob("*.csv")}
    assert len({s.KEY for s in both}) == len(both)


# ------------------------------------------------------------------------------ schema and rows


def test_schema_column_list_is_the_csv_header_and_the_validators():
    header = next(csv.reader(OUT_CSV.open(newline="", encoding="utf-8")))
    assert tuple(header) == tuple(SCHEMA["columns"]) == M.COLUMNS
    assert SCHEMA["metric_units"] == M.METRIC_UNITS


def test_every_row_is_usable_or_has_known_reasons():
    reasons = set(SCHEMA["skip_reasons"].values())
    for r in ROWS:
        assert r["usable"] in ("yes", "no"), r["id"]
        parts = [p for p in r["skip_reason"].split("; ") if p]
        if r["usable"] == "yes":
            assert parts == [], r["id"]
        else:
            assert parts and set(parts) <= reasons, (r["id"], parts)
        if r["statistic"] == "p99":
            assert r["usable"] == "no", r["id"]


def test_ids_are_unique_and_carry_their_source_key():
    keys = {s.KEY for s in SOURCES}
    assert len(BY_ID) == len(ROWS)
    for r in ROWS:
        assert re.fullmatch(r"[a-z0-9]+-\d{3,4}(-[a-z0-9_-]+)?", r["id"]), r["id"]
        assert _key(r["id"]) in keys, r["id"]


def _loads(loader, value: str) -> bool:
    try:
        loader(value)
    except SpecError:
        return False
    return True


def test_usable_rows_parse_with_the_catalog():
    usable = [r for r in ROWS if r["usable"] == "yes"]
    assert len(usable) > 1000
    cache: dict[tuple[str, str], bool] = {}
    for r in usable:
        for kind, loader in (("hardware", grids.load_device), ("model", grids.load_model)):
            key = (kind, r[kind])
            if key not in cache:
                cache[key] = _loads(loader, r[kind])
            assert cache[key], (r["id"], kind, r[kind])
        grids.parse_precision(r["precision"])
        layout = grids.parse_layout(r["parallelism"])
        assert layout.devices == int(r["devices"]), r["id"]
        for deg in ("tp", "pp", "ep", "dp"):
            if r[deg]:
                assert getattr(layout, deg) == int(r[deg]), (r["id"], deg)
        assert r["load"] in ("static", "max_load", "online"), r["id"]
        assert (r["batch"] == "max") == (r["load"] == "max_load"), r["id"]
        if r["load"] == "online":
            assert Decimal(r["request_rate"]) > 0
        assert int(r["context"]) >= 1
        if r["metric"] != "ttft":
            assert int(r["output_len"]) >= 1, r["id"]


def test_units_have_one_spelling_per_metric():
    for r in ROWS:
        assert r["unit"] in UNITS, r["id"]
        if RELATIVE in r["skip_reason"]:
            assert r["unit"] in ("1", SCHEMA["metric_units"][r["metric"]]), r["id"]
        else:
            assert r["unit"] == SCHEMA["metric_units"][r["metric"]], r["id"]
        assert Decimal(r["value"]) > 0


def test_publishers_and_engines_per_source():
    expect = {
        "trtllm090": {"NVIDIA"},
        "trtllm10": {"NVIDIA"},
        "trtllm014": {"NVIDIA"},
        "trtllm017": {"NVIDIA"},
        "trtllm020": {"NVIDIA"},
        "neuron": {"AWS"},
        "hfneuron": {"Hugging Face"},
        "splitwise": {"Microsoft"},
        "apexplus": {"Microsoft"},
        "rocmvllm": {"AMD"},
        "amdmi300x": {"AMD", "Oracle"},
        "dstackoff": {"dstack"},
        "dstacksrv": {"dstack"},
        "gaudi": {"Intel"},
        "jetstream": {"Google"},
        "tpurecipes": {"Google"},
        "sglanggb200": {"LMSYS"},
        "vllmgb200": {"vLLM"},
        "seed004": {"Brunetta et al."},
    }
    got: dict[str, set[str]] = {}
    for r in ROWS:
        got.setdefault(_key(r["id"]), set()).add(r["publisher"])
    assert got == expect
    # Splitwise's data files do not name the engine, the paper does (vLLM, release not stated):
    # its rows run as vLLM's 2023 build, and their notes say where the attribution comes from
    split = [r for r in ROWS if r["id"].startswith("splitwise-")]
    assert {(r["engine"], r["engine_version"][:4]) for r in split} == {("vllm", "2023")}
    assert all("Unless stated otherwise, we run BLOOM-176B and Llama-70B on vLLM" in r["mapping_note"]
               for r in split)


def test_optimum_neuron_rows_take_the_compiled_shape():
    """optimum-neuron compiles every model for 4,096 positions and, above batch 1, pads each
    prompt to them and decodes over all of them: those rows fill 4,096 positions (TTFT: 4,095 +
    1 generated; TPOT: 4,094 + 2, mean KV length 4,095); batch 1 keeps the printed prompt
    (1,024 + 1 tokens) and its 255 generated tokens. All on 4 Inferentia2 chips (8 cores)."""
    rows = [r for r in ROWS if r["id"].startswith("hfneuron-")]
    assert len(rows) == 34 and all(r["usable"] == "yes" for r in rows)
    assert {(r["hardware"], r["parallelism"], r["engine"], r["load"]) for r in rows} == {
        ("inferentia2", "tp4", "neuron", "static")}
    for r in rows:
        ctx, out, batch = int(r["context"]), int(r["output_len"]), int(r["batch"])
        if r["metric"] == "ttft":
            assert (ctx, out) == (4095, 1) and batch >= 4, r["id"]
        elif batch > 1:
            assert (ctx, out) == (4094, 2), r["id"]
        else:
            assert (ctx, out) == (1025, 255), r["id"]


# ------------------------------------------------------------------------------ counts


def _raw(name: str) -> list[dict[str, str]]:
    return read_raw(INPUTS / name)


def test_per_source_row_counts():
    raw = {s.KEY: _raw(s.FILE) for s in SOURCES}
    tidy: dict[str, int] = {}
    for r in ROWS:
        tidy[_key(r["id"])] = tidy.get(_key(r["id"]), 0) + 1
    # raw rows of the vendored transcriptions (their README's counts; seed 004: 57 values)
    assert {k: len(v) for k, v in raw.items()} == {
        "trtllm090": 126,
        "trtllm10": 328,
        "neuron": 94,
        "hfneuron": 34,
        "seed004": 57,
        "splitwise": 2280,
        "apexplus": 291,
        "trtllm014": 360,
        "trtllm017": 373,
        "trtllm020": 180,
        "rocmvllm": 40,
        "amdmi300x": 59,
        "dstackoff": 93,
        "dstacksrv": 15,
        "gaudi": 46,
        "jetstream": 14,
        "tpurecipes": 92,
        "sglanggb200": 5,
        "vllmgb200": 2,
    }
    one_each = (
        "trtllm090",
        "trtllm10",
        "hfneuron",
        "seed004",
        "apexplus",
        "trtllm017",
        "trtllm020",
        "rocmvllm",
        "gaudi",
        "jetstream",
        "sglanggb200",
        "vllmgb200",
    )
    for key in one_each:
        assert tidy[key] == len(raw[key]), key
    # Splitwise: five repeats per point -> one median row per point
    assert tidy["splitwise"] * 5 == len(raw["splitwise"])
    # Neuron: five values per row, three for the rows without p99
    assert tidy["neuron"] == sum(5 if r["ttft_p99_ms"] else 3 for r in raw["neuron"])
    # request-throughput rows are folded into the notes, every other raw row is one tidy row
    for key in ("trtllm014", "tpurecipes"):
        folded = sum(r["metric"] == "requests_per_s" for r in raw[key])
        assert folded > 0 and tidy[key] == len(raw[key]) - folded, key
    # Oracle's latency sweep gives latency and output tokens/s per row
    assert tidy["amdmi300x"] == len(raw["amdmi300x"]) + sum(
        bool(r["latency_s"]) and r["publisher"] != "AMD" for r in raw["amdmi300x"]
    )
    assert tidy["dstackoff"] == 2 * len(raw["dstackoff"])
    assert tidy["dstacksrv"] == 11 * len(raw["dstacksrv"])
    assert sum(tidy.values()) == len(ROWS)


def test_counts_in_the_docs_are_current(build):
    """docs/measurements.md carries the build's summary tables verbatim."""
    from scripts.measurements.common import summary

    docs = (Path(__file__).resolve().parents[1] / "docs" / "measurements.md").read_text(encoding="utf-8")
    assert summary(build) in docs


# ------------------------------------------------------------------------------ derived values


def test_littles_law_rows_recompute():
    online = [r for r in ROWS if r["load"] == "online" and r["batch"]]
    assert len(online) > 100
    for r in online:
        if "closed loop at --max-concurrency" in r["mapping_note"]:
            continue  # the client holds the concurrency: batch = --max-concurrency, not derived
        m = LITTLES_RE.search(r["mapping_note"])
        assert m, r["id"]
        rate, replicas, e2e, batch = Decimal(m[1]), int(m[2]), Decimal(m[3]), int(m[4])
        assert rate == Decimal(r["request_rate"]), r["id"]
        assert replicas == int(r["dp"] or 1), r["id"]
        assert batch == int(r["batch"]), r["id"]
        exact = rate / replicas * e2e
        assert batch == max(1, int((exact + Decimal("0.5")).to_integral_value(rounding="ROUND_FLOOR")))
        ref = re.search(r"e2e from row (\S+) ", r["mapping_note"])
        if ref:  # the run's own mean e2e row
            assert Decimal(BY_ID[ref[1]]["value"]) == e2e, r["id"]
            assert BY_ID[ref[1]]["metric"] == "e2e_latency"
        else:  # derived: ttft + (output - 1) x tpot, with the terms written out
            terms = re.search(r"= ([0-9.]+) \+ ([0-9]+) x ([0-9.]+)", r["mapping_note"])
            assert terms, r["id"]
            assert Decimal(terms[1]) + int(terms[2]) * Decimal(terms[3]) == e2e, r["id"]
            assert int(terms[2]) == int(r["output_len"]) - 1, r["id"]


def test_online_rows_without_concurrency_are_not_usable():
    for r in ROWS:
        if r["load"] == "online" and not r["batch"]:
            assert r["usable"] == "no", r["id"]


def test_splitwise_rows_are_medians_of_five_repeats():
    rows = [r for r in ROWS if r["id"].startswith("splitwise-")]
    for r in rows:
        m = re.search(
            r"median of (\d+) repeats \(transcription rows [0-9, ]+: ([0-9., ]+) s\)", r["mapping_note"]
        )
        assert m and int(m[1]) == 5, r["id"]
        values = [Decimal(v) for v in m[2].split(", ")]
        assert len(values) == 5
        assert Decimal(r["value"]) == statistics.median(values), r["id"]
        assert r["statistic"] == "median"


def test_times_are_seconds():
    # the v0.9.0 first-token latencies are printed in ms: the table holds them / 1000
    raw = _raw("trtllm_perf_overview_v0.9.0.csv")
    for i, src in enumerate(raw, 1):
        if src["first_token_latency_ms"]:
            assert Decimal(BY_ID[f"trtllm090-{i:03d}"]["value"]) * 1000 == Decimal(
                src["first_token_latency_ms"]
            )


# ------------------------------------------------------------------------------ helpers (properties)


@given(
    rate=st.decimals(min_value="0.01", max_value="100", places=2),
    e2e=st.decimals(min_value="0.01", max_value="500", places=3),
    replicas=st.integers(1, 8),
)
def test_littles_law_is_the_rounded_mean_concurrency(rate, e2e, replicas):
    batch = littles_law(rate, e2e, replicas)
    exact = rate / replicas * e2e
    assert batch >= 1
    if exact >= Decimal("0.5"):
        assert abs(batch - exact) <= Decimal("0.5")
    else:
        assert batch == 1


@given(tp=st.integers(1, 64), pp=st.integers(1, 8), ep=st.integers(1, 16), dp=st.integers(1, 8))
def test_layout_names_parse_back(tp, pp, ep, dp):
    layout = grids.parse_layout(layout_name(tp, pp, ep, dp))
    assert (layout.tp, layout.pp, layout.ep, layout.dp) == (tp, pp, ep, dp)
    assert layout.devices == tp * pp * ep * dp


def test_dstack_rows_run_as_the_release_their_environment_printed():
    """dstack's data tables print no vLLM version, so its rows ran as the default V1 build; the
    README beside them prints each environment's (collect_env): 0.6.3.post2 on the H100s, 0.6.3.dev
    and 0.6.4.dev on the MI300Xs by checkpoint. Every dstack row carries its version, and each
    resolves to the V0 build of that series (vllm@0.6.2)."""
    from grids.engines.catalog import engine_for_version

    rows = [r for r in ROWS if _key(r["id"]) in ("dstackoff", "dstacksrv")]
    assert len(rows) == 2 * 93 + 11 * 15
    by_device = {(r["hardware"], r["precision"]): r["engine_version"] for r in rows}
    assert by_device[("h100-sxm", "fp8-attn16")].startswith("0.6.3.post2")
    assert by_device[("mi300x", "fp8-attn16")].startswith("0.6.3.dev109")
    assert by_device[("mi300x", "fp8-kv8")].startswith("0.6.4.dev4")
    assert {engine_for_version(r["engine"], r["engine_version"]) for r in rows} == {"vllm@0.6.2"}


# ------------------------------------------------------------------------------ staged sources

STAGED_ROWS = list(csv.DictReader(STAGED_CSV.open(newline="", encoding="utf-8")))


def test_staged_table_is_a_fresh_build_of_the_staged_sources_and_not_the_shipped_one(tmp_path):
    """The staged sources build into their own table (docs/measurements.md, "Staged sources"):
    byte-identical to a fresh build, checked like the shipped one, none of its rows in the
    shipped table that the calibration reads."""
    out = tmp_path / "staged.csv"
    assert cli.main(["--staged", "--out", str(out)]) == 0
    assert out.read_bytes() == STAGED_CSV.read_bytes()
    assert check_rows(STAGED_ROWS) == []
    assert {_key(r["id"]) for r in STAGED_ROWS} == {s.KEY for s in STAGED}
    assert not {s.KEY for s in STAGED} & {s.KEY for s in SOURCES}
    assert not {r["id"] for r in STAGED_ROWS} & set(BY_ID)
    raw = {s.KEY: len(_raw(s.FILE)) for s in STAGED}
    assert raw == {"gpustack": 138, "vllmv1": 13}
    assert {r["publisher"] for r in STAGED_ROWS if r["id"].startswith("gpustack-")} == {"GPUStack"}
    assert {r["publisher"] for r in STAGED_ROWS if r["id"].startswith("vllmv1-")} == {"vLLM"}


def test_staged_counts_in_the_docs_are_current():
    from scripts.measurements.common import summary

    parts, problems = cli.build(INPUTS, STAGED)
    assert problems == []
    docs = (Path(__file__).resolve().parents[1] / "docs" / "measurements.md").read_text(encoding="utf-8")
    assert summary(parts) in docs


def test_staged_vllm_rows_run_as_the_default_build_and_bursts_stay_out_of_the_fit():
    """The GPUStack and vllm-project vLLM rows are vLLM 0.8 or later (the V1 engine): each
    resolves to the default build, never to a V0 build. Runs at an unlimited request rate (a
    burst of every request at once), of any engine, are flagged and not usable; the closed-loop
    runs (a fixed --max-concurrency) hold that concurrency as their batch and the measured
    request throughput as their rate, so their tokens/s rows repeat the rate and only their TTFT
    and TPOT are checks."""
    from grids.engines.catalog import engine_for_version

    vllm = [r for r in STAGED_ROWS if r["engine"] == "vllm"]
    assert {engine_for_version("vllm", r["engine_version"]) for r in vllm} == {"vllm"}
    assert {r["engine"] for r in STAGED_ROWS} == {"vllm", "sglang", "trtllm"}
    burst = SCHEMA["skip_reasons"]["burst"]
    for r in STAGED_ROWS:
        if r["load"] in ("max_load", "static"):
            assert burst in r["skip_reason"].split("; "), r["id"]
            assert r["usable"] == "no", r["id"]
        else:
            assert burst not in r["skip_reason"], r["id"]
    closed = [r for r in STAGED_ROWS if r["load"] == "online"]
    assert closed and all(r["batch"] and r["request_rate"] for r in closed)
    raw = {(s.KEY, i): r for s in STAGED for i, r in enumerate(_raw(s.FILE), 1)}
    for r in closed:
        number = int(r["id"].split("-")[1])
        assert int(r["batch"]) == int(raw[(_key(r["id"]), number)]["max_concurrency"]), r["id"]
        if r["metric"] in ("throughput", "total_throughput"):
            assert r["usable"] == "no" and "closed loop" in r["mapping_note"], r["id"]
    assert {r["metric"] for r in closed if r["usable"] == "yes"} == {"ttft", "tpot"}


def test_staged_lengths_are_the_runs_mean_tokens_and_a_block_printed_twice_counts_once():
    """ShareGPT runs print their token totals: a row's context and output are the totals over
    the completed requests, rounded half up. A result block that a page prints in two sections
    is one run: the second copy is a duplicate."""
    checked = 0
    for src in STAGED:
        for i, r in enumerate(_raw(src.FILE), 1):
            done = r["completed"] or r["num_prompts"]
            if not (r["total_input_tokens"] and r["total_output_tokens"] and done):
                continue
            isl = round_half_up(Decimal(r["total_input_tokens"]) / Decimal(done))
            osl = round_half_up(Decimal(r["total_output_tokens"]) / Decimal(done))
            for t in (t for t in STAGED_ROWS if t["id"].startswith(f"{src.KEY}-{i:03d}-")):
                assert (int(t["context"]), int(t["output_len"])) == (isl, osl), t["id"]
                checked += 1
    assert checked > 100
    dup = SCHEMA["skip_reasons"]["dup"]
    dups = {_key(r["id"]) + "-" + r["id"].split("-")[1] for r in STAGED_ROWS
            if dup in r["skip_reason"].split("; ")}
    assert dups == {"gpustack-137"}
    assert all("raw row 130" in r["mapping_note"] for r in STAGED_ROWS
               if r["id"].startswith("gpustack-137-"))
