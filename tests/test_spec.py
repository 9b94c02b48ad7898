"""Grid specs (grids.spec): TOML and dict forms, ranges, hypothetical devices, efficiency
overrides, and bad input reported as ONE SpecError listing every problem."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grids.errors import SpecError
from grids.hardware import catalog_ids, load_device
from grids.spec import DEFAULT_MODELS, DEFAULT_SPEC, DIMS, GridSpec, load_spec
from sweep.cli import main

SPEC_TOML = """\
name = "two GPUs"
hardware = ["h100-sxm", "mi300x"]
model = ["llama-3.1-8b", "mixtral-8x7b"]
batch = { from = 1, to = 64, scale = "log2" }
context = [128, 2048]
output_len = [128, 256]
precision = ["bf16", "fp8"]
parallelism = ["tp1", "tp2-ep4"]

[workload]
prefill_chunk = 4096

[efficiency]
flops_efficiency = 0.6

[efficiency.h100-sxm]
bandwidth_efficiency = 0.85

[hypothetical.h100-fast-hbm]
base = "h100-sxm"
hbm_bandwidth = ["4 TB/s", "8 TB/s", "16 TB/s"]
"""

VALID = {
    "hardware": ["h100-sxm", "mi300x"],
    "model": ["llama-3.1-8b", "mixtral-8x7b"],
    "batch": [1, 8],
    "context": [128, 1024],
    "output_len": 128,
    "precision": ["bf16", "fp8"],
    "parallelism": ["tp1", "tp2"],
    "workload": {"prefill_chunk": 4096},
    "efficiency": {"flops_efficiency": 0.6},
    "hypothetical": {"h-fast": {"base": "h100-sxm", "hbm_bandwidth": ["4 TB/s", "8 TB/s"]}},
}


def problems_of(spec) -> list[str]:
    with pytest.raises(SpecError) as exc:
        load_spec(spec)
    return exc.value.problems


def spec(**changes):
    out = copy.deepcopy(VALID)
    out.update(changes)
    return out


# ------------------------------------------------------------------------------ valid specs


def test_toml_file_and_dict_give_the_same_spec(tmp_path):
    path = tmp_path / "grid.toml"
    path.write_text(SPEC_TOML)
    from_file = load_spec(path)
    from_str_path = load_spec(str(path))
    from_dict = load_spec(tomllib.loads(SPEC_TOML))
    assert from_file == from_dict == from_str_path
    assert from_file.shape == (5, 1, 2, 7, 2, 2, 2, 2)  # one engine: the default
    assert from_file.n_points == 5 * 1 * 2 * 7 * 2 * 2 * 2 * 2
    assert load_spec(from_file) is from_file  # a GridSpec passes through


def test_to_toml_round_trip():
    s = load_spec(tomllib.loads(SPEC_TOML))
    assert load_spec(tomllib.loads(s.to_toml())) == s


def test_default_spec():
    s = load_spec(None)
    assert isinstance(s, GridSpec)
    assert [d.id for d in s.hardware] == list(catalog_ids())
    assert len(s.hardware) >= 25
    assert [m.id for m in s.models] == list(DEFAULT_MODELS) and len(DEFAULT_MODELS) == 15
    assert s.batch == [2**i for i in range(11)]  # 1 .. 1024
    assert s.context == [2**i for i in range(7, 18)]  # 128 .. 131072
    assert [p.name for p in s.precisions] == ["bf16", "fp8", "w4a16"]
    assert s.output_len == [256] and not s.output_len_is_dim
    assert len(s.shape) == len(DIMS) == 8
    assert [e.id for e in s.engines] == ["native"]
    assert load_spec(DEFAULT_SPEC) == s


def test_default_layouts_reach_every_device_within_twice_its_floor():
    """A fair default: for every (device, model, precision) of the default grid whose weights
    need at most 512 devices, some default layout of at most twice that many devices exists
    (else a comparison would force it onto a far larger layout)."""
    from grids.auto_layouts import weights_floor

    s = load_spec(None)
    counts = sorted({x.devices for x in s.layouts if x.ep == 1 and not x.offload})
    assert counts == [2**i for i in range(10)]
    for dev in s.hardware:
        for m in s.models:
            for p in s.precisions:
                n0 = weights_floor(dev, m, p)
                if n0 <= 512:
                    assert any(n0 <= c <= 2 * n0 for c in counts), (dev.id, m.id, p.name)


def test_minimal_spec_defaults():
    s = load_spec({"hardware": "h100-sxm", "model": "llama-3.1-8b"})
    assert s.shape == (1, 1, 1, 1, 1, 1, 1, 1)
    assert s.batch == [1] and s.context == [1024] and s.output_len == [256]
    assert [p.name for p in s.precisions] == ["bf16"] and [x.name for x in s.layouts] == ["tp1"]
    assert s.prefill_chunk == 8192


@pytest.mark.parametrize("value,expected", [
    (8, [8]),
    ([1, 8, 64], [1, 8, 64]),
    ({"from": 1, "to": 16}, [1, 2, 4, 8, 16]),
    ({"from": 3, "to": 20, "scale": "log2"}, [3, 6, 12]),
    ({"from": 0 + 1, "to": 1}, [1]),
    ({"from": 100, "to": 1000, "scale": "linear", "num": 4}, [100, 400, 700, 1000]),
    ({"from": 1, "to": 3, "scale": "linear", "num": 10}, [1, 2, 3]),  # rounded, deduplicated
    ({"from": 5, "to": 9, "scale": "linear", "num": 1}, [5]),
    (4.0, [4]),
])
def test_range_forms(value, expected):
    s = load_spec({"hardware": "h100-sxm", "model": "llama-3.1-8b", "batch": value,
                   "context": value})
    assert s.batch == expected and s.context == expected


def test_output_len_scalar_is_a_setting_and_list_is_a_dim():
    base = {"hardware": "h100-sxm", "model": "llama-3.1-8b"}
    s = load_spec({**base, "output_len": 512})
    assert s.output_len == [512] and not s.output_len_is_dim
    s = load_spec({**base, "output_len": [512]})
    assert s.output_len == [512] and s.output_len_is_dim
    s = load_spec({**base, "output_len": [128, 1024]})
    assert s.output_len == [128, 1024] and s.output_len_is_dim and s.shape[5] == 2
    s = load_spec({**base, "output_len": {"from": 64, "to": 256}})
    assert s.output_len == [64, 128, 256] and s.output_len_is_dim
    s = load_spec({**base, "workload": {"output_len": 64}})
    assert s.output_len == [64] and not s.output_len_is_dim


def test_parallelism_forms():
    s = load_spec({"hardware": "h100-sxm", "model": "mixtral-8x7b",
                   "parallelism": {"tp": [1, 2], "ep": [1, 4], "offload": [0, 0.5]}})
    assert len(s.layouts) == 8
    assert {x.name for x in s.layouts} >= {"tp1", "tp2-ep4", "tp2-ep4-off0.5"}
    s = load_spec({"hardware": "h100-sxm", "model": "mixtral-8x7b", "parallelism": "TP4-EP2"})
    assert [x.name for x in s.layouts] == ["tp4-ep2"]


def test_model_config_path_relative_to_the_spec_file(tmp_path):
    (tmp_path / "m").mkdir()
    cfg = json.loads((load_model_dir() / "llama-3.1-8b.json").read_text())
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "grid.toml").write_text('hardware = "h100-sxm"\nmodel = ["m/config.json"]\n'
                                        'precision = "bf16"\n')
    s = load_spec(tmp_path / "grid.toml")
    ref = load_spec({"hardware": "h100-sxm", "model": "llama-3.1-8b"}).models[0]
    assert s.models[0].params_total == ref.params_total
    # the directory holding config.json is the same model: given twice, it is refused
    (tmp_path / "grid.toml").write_text('hardware = "h100-sxm"\nmodel = ["m/config.json", "./m"]\n')
    with pytest.raises(SpecError, match="'m' given twice"):
        load_spec(tmp_path / "grid.toml")


def test_duplicate_references_are_refused(tmp_path):
    """Two references to one model (a catalog id and its config file) or one device would give
    two coordinates with the same label: refused, saying which."""
    cfg = (load_model_dir() / "llama-3.1-8b.json").read_text()
    (tmp_path / "llama-3.1-8b").mkdir()
    (tmp_path / "llama-3.1-8b" / "config.json").write_text(cfg)
    with pytest.raises(SpecError, match=r"'llama-3\.1-8b' given twice"):
        load_spec({"hardware": "h100-sxm",
                   "model": ["llama-3.1-8b", str(tmp_path / "llama-3.1-8b" / "config.json")]})
    raw = (load_model_dir().parent / "hardware" / "h100-sxm.toml").read_text()
    (tmp_path / "h100-sxm.toml").write_text(raw)
    with pytest.raises(SpecError, match="'h100-sxm' given twice"):
        load_spec({"hardware": ["h100-sxm", str(tmp_path / "h100-sxm.toml")],
                   "model": "llama-3.1-8b"})
    with pytest.raises(SpecError, match="the name of a catalog device"):
        load_spec({"hardware": ["h100-sxm"], "model": "llama-3.1-8b",
                   "hypothetical": {"mi300x": {"base": "h100-sxm", "tdp": "800 W"}}})
    with pytest.raises(SpecError, match=r"duplicate entries \['vllm'\]") as exc:
        load_spec({"hardware": "h100-sxm", "model": "llama-3.1-8b", "engine": ["vllm", "vllm"]})
    assert len(exc.value.problems) == 1  # one problem, said once


def load_model_dir():
    from importlib import resources
    return Path(str(resources.files("grids") / "data" / "models"))


def test_user_hardware_file_relative_to_the_spec_file(tmp_path):
    raw = (load_model_dir().parent / "hardware" / "h100-sxm.toml").read_text()
    (tmp_path / "my-h100.toml").write_text(raw.replace('id = "h100-sxm"', 'id = "my-h100"')
                                           .replace('"3.35 TB/s"', '"5 TB/s"'))
    (tmp_path / "grid.toml").write_text('hardware = ["my-h100.toml", "h100-sxm"]\n'
                                        'model = "llama-3.1-8b"\n')
    s = load_spec(tmp_path / "grid.toml")
    assert [d.id for d in s.hardware] == ["my-h100", "h100-sxm"]
    assert s.hardware[0].tiers[0].bandwidth == 5e12
    # the id of a device file is its name, as in the catalog (docs/catalog.md, 2.7)
    (tmp_path / "mine.toml").write_text((tmp_path / "my-h100.toml").read_text())
    with pytest.raises(SpecError, match="differs from the file name 'mine'"):
        load_spec({"hardware": [str(tmp_path / "mine.toml")], "model": "llama-3.1-8b"})


# --- hypothetical devices ----------------------------------------------------------------------


def test_list_valued_field_sweeps():
    s = load_spec({"hardware": ["h100-sxm"], "model": "llama-3.1-8b",
                   "hypothetical": {"h100-fast-hbm": {"base": "h100-sxm",
                                                      "hbm_bandwidth": ["4 TB/s", "8 TB/s",
                                                                        "16 TB/s"]}}})
    ids = [d.id for d in s.hardware]
    assert ids == ["h100-sxm", "h100-fast-hbm[hbm_bandwidth=4 TB/s]",
                   "h100-fast-hbm[hbm_bandwidth=8 TB/s]", "h100-fast-hbm[hbm_bandwidth=16 TB/s]"]
    assert [d.tiers[0].bandwidth for d in s.hardware] == [3.35e12, 4e12, 8e12, 16e12]
    base = load_device("h100-sxm")
    for d in s.hardware[1:]:
        assert d.base == "h100-sxm"
        assert d.tiers[0].capacity == base.tiers[0].capacity
        assert d.peak_flops == base.peak_flops
        assert "hbm_bandwidth" in d.overrides


def test_two_swept_fields_make_a_product():
    s = load_spec({"hardware": ["h100-sxm"], "model": "llama-3.1-8b",
                   "hypothetical": {"x": {"base": "h100-sxm", "name": "X",
                                          "hbm_bandwidth": ["4 TB/s", "8 TB/s"],
                                          "peak_flops.bf16": ["1 PFLOP/s", "2 PFLOP/s", 3e15],
                                          "tdp": "800 W"}}})
    hyp = [d for d in s.hardware if d.base]
    assert len(hyp) == 6 and len({d.id for d in hyp}) == 6
    assert all(d.tdp == 800 and d.name == "X" for d in hyp)
    assert "tdp" not in hyp[0].id  # only swept fields label the id
    assert {d.peak_flops["bf16"] for d in hyp} == {1e15, 2e15, 3e15}


def test_single_valued_hypothetical_keeps_its_id():
    s = load_spec({"hardware": "h100-sxm", "model": "llama-3.1-8b",
                   "hypothetical": {"h100-cool": {"base": "h100-sxm", "tdp": "500 W"}}})
    assert [d.id for d in s.hardware] == ["h100-sxm", "h100-cool"]


def test_sram_tier_added_to_a_gpu():
    s = load_spec({"hardware": "h100-sxm", "model": "llama-3.1-8b",
                   "hypothetical": {"h100-sram": {"base": "h100-sxm", "sram_capacity": "256 MB",
                                                  "sram_bandwidth": "40 TB/s"}}})
    d = s.hardware[-1]
    assert [t.kind for t in d.tiers] == ["sram", "dram"]
    assert d.tiers[0].capacity == 256e6 and d.tiers[0].bandwidth == 40e12


def test_sram_capacity_needs_sram_bandwidth():
    p = problems_of(spec(hypothetical={"h": {"base": "h100-sxm", "sram_capacity": "256 MB"}}))
    assert len(p) == 1 and "sram_bandwidth" in p[0]


def test_unknown_override_key_suggests():
    p = problems_of(spec(hypothetical={"h": {"base": "h100-sxm", "hbm_bandwith": "4 TB/s"}}))
    assert len(p) == 1
    assert "unknown field 'hbm_bandwith'" in p[0] and "did you mean 'hbm_bandwidth'" in p[0]


# --- efficiency overrides ----------------------------------------------------------------------


def test_efficiency_global_and_per_device():
    s = load_spec({"hardware": ["h100-sxm", "mi300x", "tpu-v6e"], "model": "llama-3.1-8b",
                   "efficiency": {"flops_efficiency": 0.55, "capacity_fraction": 0.8,
                                  "mi300x": {"flops_efficiency": 0.4, "jitter": 0.2}}})
    by = {d.id: d for d in s.hardware}
    assert by["h100-sxm"].efficiency.flops_efficiency == 0.55
    assert by["tpu-v6e"].efficiency.flops_efficiency == 0.55
    assert by["mi300x"].efficiency.flops_efficiency == 0.4  # per device beats global
    assert by["mi300x"].efficiency.jitter == 0.2
    assert by["h100-sxm"].efficiency.jitter == load_device("h100-sxm").efficiency.jitter
    assert all(d.efficiency.capacity_fraction == pytest.approx(0.8) for d in s.hardware)
    assert by["h100-sxm"].efficiency.origin["flops_efficiency"] != "class default (gpu)"
    assert by["h100-sxm"].id == "h100-sxm" and by["h100-sxm"].name == load_device("h100-sxm").name


def test_bandwidth_efficiency_override_reaches_the_tiers():
    s = load_spec({"hardware": ["gaudi3"], "model": "llama-3.1-8b",
                   "efficiency": {"gaudi3": {"bandwidth_efficiency": 0.5}}})
    assert all(t.efficiency == 0.5 for t in s.hardware[0].tiers)


def test_no_overrides_leave_catalog_devices_untouched():
    s = load_spec({"hardware": ["h100-sxm"], "model": "llama-3.1-8b"})
    assert s.hardware[0] == load_device("h100-sxm")


# ------------------------------------------------------------------------------ bad input


def test_unknown_ids_with_suggestions():
    p = problems_of(spec(hardware=["h100-sxn", "mi300"], model=["llama-3.1-8", "mixtral-8x7b"],
                         precision=["bf17"], parallelism=["tq4"]))
    assert len(p) == 5
    text = "\n".join(p)
    for needle in ("'h100-sxn' (did you mean 'h100-sxm'", "'mi300' (did you mean 'mi300x'",
                   "'llama-3.1-8' (did you mean 'llama-3.1-8b'", "did you mean 'bf16'",
                   "cannot read part 'tq4'"):
        assert needle in text


def test_malformed_toml(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('hardware = ["h100-sxm"\nmodel = "llama-3.1-8b"\n')
    p = problems_of(bad)
    assert len(p) == 1 and "malformed TOML" in p[0] and "line" in p[0]


def test_missing_file_and_non_utf8(tmp_path):
    p = problems_of(tmp_path / "nope.toml")
    assert len(p) == 1 and "not found" in p[0]
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe\x00hardware")
    assert len(problems_of(binary)) == 1


def test_wrong_units_and_types():
    p = problems_of(spec(hypothetical={
        "a": {"base": "h100-sxm", "hbm_bandwidth": "3 TB"},  # bytes for a bandwidth
        "b": {"base": "h100-sxm", "tdp": "3 TB/s"},  # bandwidth for a power
        "c": {"base": "h100-sxm", "peak_flops.fp8": True},  # boolean
        "d": {"base": "h100-sxm", "link_bandwidth": "fast"},  # not a number
    }, efficiency={"flops_efficiency": "0.5 W"}, batch=["8"]))
    assert len(p) == 6, p
    assert "'3 TB' is a bytes but a bandwidth (B/s) is expected" in "\n".join(p)


def test_negative_or_zero_sizes():
    p = problems_of(spec(hypothetical={
        "a": {"base": "h100-sxm", "hbm_capacity": "-80 GB"},
        "b": {"base": "h100-sxm", "sram_bandwidth": 0, "sram_capacity": "1 MB"},
        "c": {"base": "h100-sxm", "tdp": 0},
        "d": {"base": "h100-sxm", "domain_size": -8},
    }, batch=[0, 8], context=[-128]))
    assert len(p) == 6, p
    assert all("must be > 0" in x or "must be >= 1" in x for x in p)


def test_layouts_that_suit_no_model():
    p = problems_of(spec(model=["llama-3.1-8b", "mixtral-8x7b"],
                         parallelism=["tp1", "tp3", "ep3", "tp2-ep16", "pp128"]))
    assert len(p) == 4, p
    text = "\n".join(p)
    assert "layout 'tp3' suits none of the models" in text
    assert "tp3 does not divide the 32 attention heads of llama-3.1-8b" in text
    assert "ep3 does not divide the 8 experts of mixtral-8x7b" in text
    assert "ep16 does not divide the 8 experts" in text
    assert "pp128 exceeds the 32 layers" in text


def test_layout_suiting_some_models_is_fine():
    s = load_spec(spec(model=["llama-3.1-8b", "mixtral-8x7b"], parallelism=["tp1", "ep8"]))
    assert [x.name for x in s.layouts] == ["tp1", "tp1-ep8"]


def test_config_json_missing_fields(tmp_path):
    cfg = {"hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 14336,
           "model_type": "llama"}  # no num_hidden_layers, vocab_size, max_position_embeddings
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    p = problems_of(spec(model=[str(tmp_path / "config.json"), "llama-3.1-8b"]))
    assert len(p) == 3, p
    text = "\n".join(p)
    for field in ("num_hidden_layers", "vocab_size", "max_position_embeddings"):
        assert f"missing required field '{field}'" in text


def test_config_json_broken_json(tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    p = problems_of(spec(model=[str(tmp_path)]))
    assert len(p) == 1 and "JSON" in p[0]


def test_every_problem_of_a_spec_at_once(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 64}))
    raw = spec(
        hardware=["h100-sxm", "h100-sxn"],  # 1
        model=["llama-3.1-8b", str(tmp_path)],  # 2, 3, 4, 5 (four missing fields)
        batch={"from": 8, "to": 2},  # 6
        context=[128, 1.5],  # 7
        precision=["bf16", "bf17"],  # 8
        parallelism=["tp1", "tp3"],  # 9
        workload={"prefill_chunk": -1},  # 10
        efficiency={"flops_efficiency": 1.5},  # 11
        hypothetical={"h": {"base": "h100-sxm", "hbm_bandwidth": "3 TB"}},  # 12
        hardwar=["x"],  # 13
    )
    p = problems_of(raw)
    assert len(p) == 13, "\n".join(p)


def test_cli_run_bad_spec_exits_2_without_traceback(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "BAD.toml"
    bad.write_text('hardware = ["h100-sxn"]\nmodel = "llama-3.1-8b"\nbatch = [0]\n')
    code = main(["run", str(bad), "-o", str(tmp_path / "out.nc"), "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 2
    assert "error" in err and "Traceback" not in err and "Traceback" not in out
    assert err.count("sweep: error:") == 1  # one message ...
    assert "h100-sxn" in err and "batch" in err  # ... listing every problem
    assert not (tmp_path / "out.nc").exists() and not (tmp_path / "sweep.nc").exists()


def test_cli_run_malformed_toml(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "BAD.toml"
    bad.write_text("hardware = [\n")
    assert main(["run", str(bad), "--no-progress"]) == 2
    _, err = capsys.readouterr()
    assert "malformed TOML" in err and "Traceback" not in err


# --- generated bad specs ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    (d / "cfg").mkdir()
    (d / "cfg" / "config.json").write_text(json.dumps(
        {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
         "vocab_size": 32000, "intermediate_size": 14336}))  # no max_position_embeddings
    (d / "broken.toml").write_text("id = 'x'\n[peak_flops\n")
    return d


def _hyp(name, table):
    def f(s, files):
        s["hypothetical"][name] = table
    return f


def _append(key, value):
    def f(s, files):
        s[key].append(value(files) if callable(value) else value)
    return f


def _set(path, value):
    def f(s, files):
        node = s
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
    return f


# Each corruption plants exactly one problem and touches its own part of the spec.
CORRUPTIONS = {
    "unknown hardware": _append("hardware", "h100-sxn"),
    "hardware not a name": _append("hardware", 3),
    "broken hardware file": _append("hardware", lambda files: str(files / "broken.toml")),
    "unknown model": _append("model", "llama-3.1-8"),
    "config missing a field": _append("model", lambda files: str(files / "cfg" / "config.json")),
    "unknown precision": _append("precision", "bf17"),
    "precision not a name": _append("precision", None),
    "duplicate precision": _append("precision", "fp8"),
    "bad layout name": _append("parallelism", "tq4"),
    "tp divides no model": _append("parallelism", "tp3"),
    "ep divides no model": _append("parallelism", "ep3"),
    "layout twice after normalising": _append("parallelism", "TP2"),
    "bad batch range": _set(["batch"], {"from": 8, "to": 2}),
    "fractional context": _append("context", 1.5),
    "negative output_len": _set(["output_len"], -1),
    "unknown top-level key": _set(["hardwar"], ["h100-sxm"]),
    "zero prefill_chunk": _set(["workload", "prefill_chunk"], 0),
    "unknown workload key": _set(["workload", "prefil_chunk"], 4096),
    "unknown efficiency": _set(["efficiency", "flops_eficiency"], 0.5),
    "efficiency out of range": _set(["efficiency", "bandwidth_efficiency"], 1.5),
    "efficiency wrong unit": _set(["efficiency", "layer_overhead"], "5 W"),
    "efficiency of unknown device": _set(["efficiency", "h100-sxn"], {"jitter": 0.1}),
    "bandwidth in bytes": _hyp("bw-unit", {"base": "h100-sxm", "hbm_bandwidth": "3 TB"}),
    "negative capacity": _hyp("neg", {"base": "h100-sxm", "hbm_capacity": "-80 GB"}),
    "zero tdp": _hyp("zero", {"base": "mi300x", "tdp": 0}),
    "unknown override": _hyp("typo", {"base": "h100-sxm", "hbm_bandwith": "4 TB/s"}),
    "sram without bandwidth": _hyp("sram", {"base": "h100-sxm", "sram_capacity": "50 MB"}),
    "unknown base": _hyp("nobase", {"base": "h100-sxn", "tdp": "500 W"}),
    "idle above tdp": _hyp("hot", {"base": "h100-sxm", "idle": "900 W"}),
    "no override": _hyp("empty", {"base": "h100-sxm"}),
    "non-finite override": _hyp("inf", {"base": "h100-sxm", "tdp": float("inf")}),
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_each_corruption_is_exactly_one_problem(name, bad_files):
    raw = copy.deepcopy(VALID)
    CORRUPTIONS[name](raw, bad_files)
    assert len(problems_of(raw)) == 1


def test_valid_base_spec_loads():
    assert load_spec(copy.deepcopy(VALID)).shape == (4, 1, 2, 2, 2, 1, 2, 2)


@given(st.lists(st.sampled_from(sorted(CORRUPTIONS)), min_size=1, max_size=4, unique=True))
def test_generated_bad_specs_report_every_problem(bad_files, names):
    raw = copy.deepcopy(VALID)
    for name in names:
        CORRUPTIONS[name](raw, bad_files)
    try:
        load_spec(raw)
    except SpecError as exc:
        assert len(exc.problems) >= len(names), (names, exc.problems)
        assert len(exc.problems) == len(names), (names, exc.problems)
    else:
        pytest.fail(f"no SpecError for {names}")


junk = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10, 10**6), st.floats(), st.text(max_size=8),
              st.sampled_from(["h100-sxm", "llama-3.1-8b", "bf16", "tp2", "3 TB/s", "all"])),
    lambda children: st.one_of(st.lists(children, max_size=3),
                               st.dictionaries(st.sampled_from(["from", "to", "scale", "num",
                                                                "base", "tp", "hbm_bandwidth",
                                                                "prefill_chunk", "jitter"]),
                                               children, max_size=3)),
    max_leaves=6)


@given(st.dictionaries(st.sampled_from(["hardware", "model", "batch", "context", "output_len",
                                        "precision", "parallelism", "workload", "efficiency",
                                        "hypothetical", "name"]), junk, max_size=3))
def test_garbage_values_raise_only_spec_error(changes):
    raw = {**copy.deepcopy(VALID), **changes}
    try:
        s = load_spec(raw)
    except SpecError as exc:
        assert exc.problems and all(isinstance(p, str) and p for p in exc.problems)
    else:
        assert s.n_points >= 1


# --- docs/spec.md examples are real -------------------------------------------------------------

DOC = Path(__file__).resolve().parents[1] / "docs" / "spec.md"


def _toml_blocks() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    return [b.split("```", 1)[0] for b in text.split("```toml\n")[1:]]


@pytest.mark.skipif(not DOC.exists(), reason="docs/spec.md not in this tree")
def test_doc_complete_example_loads(tmp_path):
    example = _toml_blocks()[0]
    sub = tmp_path / "grids"
    (sub / "my-model").mkdir(parents=True)
    (tmp_path / "devices").mkdir()
    hw = (load_model_dir().parent / "hardware" / "h100-sxm.toml").read_text()
    (tmp_path / "devices" / "my-gpu.toml").write_text(hw.replace('"h100-sxm"', '"my-gpu"'))
    (sub / "my-model" / "config.json").write_text(
        (load_model_dir() / "qwen3-8b.json").read_text())
    (sub / "spec.toml").write_text(example)
    s = load_spec(sub / "spec.toml")
    ids = [d.id for d in s.hardware]
    assert ids[:3] == ["h100-sxm", "mi300x", "my-gpu"]
    assert "h100-fast-hbm[hbm_bandwidth=16 TB/s]" in ids and "h100-sram" in ids
    assert s.batch == [1, 2, 4, 8, 16, 32, 64, 128, 256] and not s.output_len_is_dim
    by = {d.id: d for d in s.hardware}
    assert by["mi300x"].efficiency.bandwidth_efficiency == 0.75
    assert by["h100-sxm"].efficiency.flops_efficiency == 0.6


@pytest.mark.skipif(not DOC.exists(), reason="docs/spec.md not in this tree")
def test_doc_error_example_is_what_the_cli_prints(tmp_path, capsys):
    bad = next(b for b in _toml_blocks() if "h100-sxn" in b)
    (tmp_path / "BAD.toml").write_text(bad)
    assert main(["run", str(tmp_path / "BAD.toml"), "-o", str(tmp_path / "x.nc")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sweep: error: grid spec: 7 problems:")
    doc = DOC.read_text(encoding="utf-8")
    for line in err.strip().splitlines():
        assert line in doc, line
