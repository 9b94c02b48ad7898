"""Engine builds (issue 20, item 1): ``<id>@<build>`` loads one release of an engine, whose
stated values take precedence over the file's (and their calibration) at every level; a
measurement row's ``engine_version`` picks its build. The first mechanism a build states is
``gqa_aware_attention`` (docs/model.md eq. (3b)): a decode kernel that runs one block per query
head reads each KV head once per query head."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grids import engines as E
from grids.errors import SpecError
from grids.hardware import load_catalog
from grids.models import load_model
from sweep.execute.point import evaluate_point
from tests.test_engines import parse, src, toy_raw


@pytest.fixture(scope="module")
def devices():
    return load_catalog()


def _same_numbers(a: E.EngineParams, b: E.EngineParams, skip=()) -> list[str]:
    da, db = a.to_dict(), b.to_dict()
    return [k for k in da if k not in ("engine", "delegate", "origin", "versions", *skip) and da[k] != db[k]]


# ------------------------------------------------------------------------------- resolution


def test_the_bare_id_is_the_files_own_build(devices):
    eng = E.load_engine("vllm")
    assert eng.build == "0.10" and set(eng.builds) == {"0.2", "0.6.0", "0.6.2"}
    for dev in ("h100-sxm", "mi300x", "a100-sxm-80g", "tpu-v6e"):
        bare, named = E.resolve("vllm", devices[dev]), E.resolve("vllm@0.10", devices[dev])
        assert named.engine == "vllm@0.10"
        assert _same_numbers(bare, named) == [], dev


def test_a_builds_values_win_at_every_level_and_the_rest_is_the_files(devices):
    a100, mi300x, h100 = devices["a100-sxm-80g"], devices["mi300x"], devices["h100-sxm"]
    # the file's [device.a100-sxm-80g] caps V1 at 256 / 2048; V0's defaults (256 / 512) win
    old = E.resolve("vllm@0.6.0", a100)
    assert (old.max_batch, old.prefill_chunk) == (256.0, 512.0)
    assert E.resolve("vllm", a100).prefill_chunk == 2048.0
    assert "builds.\"0.6.0\".defaults" in old.origin["prefill_chunk"] or \
        "builds.0.6.0.defaults" in old.origin["prefill_chunk"]
    # the mechanism is AMD's only; NVIDIA's 0.6 decode ran FlashAttention (GQA-aware)
    amd = E.resolve("vllm@0.6.0", mi300x)
    assert amd.gqa_aware_attention is False and amd.custom_allreduce_max_bytes == 0.0
    assert E.resolve("vllm@0.6.0", h100).gqa_aware_attention is True
    assert E.resolve("vllm@0.6.2", mi300x).gqa_aware_attention is True
    # what the build does not state is the file's build's, calibration included
    stated = ("max_batch", "prefill_chunk", "chunked_prefill", "mixed_batching",
              "gqa_aware_attention", "custom_allreduce_max_bytes", "kv_efficiency")
    for dev in (a100, mi300x, h100):
        assert _same_numbers(E.resolve("vllm", dev), E.resolve("vllm@0.6.0", dev), stated) == []
    assert amd.bandwidth == E.resolve("vllm", mi300x).bandwidth < 0.9  # AMD's fitted factor


def test_current_engines_are_gqa_aware_when_their_files_are_silent(devices):
    for eid in E.ENGINE_IDS:
        p = E.resolve(eid, devices["h100-sxm"])
        assert p.gqa_aware_attention is True, eid


def test_an_unknown_build_is_one_clear_error():
    with pytest.raises(SpecError, match=r"unknown build '0\.7' of engine 'vllm'.*0\.10, 0\.6\.0"):
        E.load_engine("vllm@0.7")
    with pytest.raises(SpecError, match="declares no builds"):
        E.load_engine("trtllm@1.0")


def test_malformed_builds_are_reported_together():
    raw = toy_raw()
    raw["builds"] = {"old": {"released": "2024", "matches": "0.1",
                             "defaults": {"max_batch": src(-3)}, "colour": "red"}}
    with pytest.raises(SpecError) as info:
        parse(raw)
    text = str(info.value)
    for part in ("build = \"<release>\"", "unknown key 'colour'", "missing text field "
                 "'description'", "matches must be a list", "builds.old.defaults", "max_batch"):
        assert part in text, part
    raw = toy_raw()
    raw["build"] = "1.0"
    raw["builds"] = {"1.0": {"released": "x", "description": "x", "source": "x"}}
    with pytest.raises(SpecError, match="is the file's own build"):
        parse(raw)


def test_a_user_files_build(devices):
    raw = toy_raw()
    raw["build"] = "2.0"
    raw["builds"] = {"1.0": {"released": "2023", "description": "no GQA kernel", "source": "t",
                             "matches": ["1."],
                             "vendor": {"NVIDIA": {"gqa_aware_attention": False,
                                                   "gqa_aware_attention_source": "t"}}}}
    eng = parse(raw)
    old = E.with_build(eng, "1.0")
    assert old.id == "toy@1.0" and old.file_id == "toy"
    assert E.resolve(old, devices["h100-sxm"], overlay={}).gqa_aware_attention is False
    assert E.resolve(eng, devices["h100-sxm"], overlay={}).gqa_aware_attention is True
    assert eng.build_for_version("1.4.2") == "1.0" and eng.build_for_version("2.0") is None
    with pytest.raises(SpecError, match="already one build of 'toy'"):
        E.with_build(old, "2.0")


@pytest.mark.parametrize("engine, version, ref", [
    ("vllm", "0.6.0 (docker vllm/vllm-openai:v0.6.0)", "vllm@0.6.0"),
    ("vllm", "0.6.1.post2", "vllm@0.6.0"),
    ("vllm", "0.6.3", "vllm@0.6.2"),
    ("vllm", "0.7.3 (ROCm 6.3.1; image notes up to 20250305_aiter)", "vllm"),
    ("vllm", "0.10.2", "vllm"),  # not the 2023 build's "0.1." prefix
    ("vllm", "0.2.7", "vllm@0.2"),
    ("vllm", "2023 (release not stated; the paper's first version is of 2023-11-30)", "vllm@0.2"),
    ("vllm", "", "vllm"),
    ("trtllm", "0.17 (trtllm-bench, TensorRT engine)", "trtllm"),
    ("not-an-engine", "0.6.0", "not-an-engine"),
])
def test_a_measurement_row_runs_as_its_build(engine, version, ref):
    assert E.engine_for_version(engine, version) == ref


# ------------------------------------------------------------------- a build's own calibration


def test_a_builds_fitted_section_applies_to_that_build_only(devices):
    """``["vllm@0.6.0"]`` of an overlay holds what was fitted on that release's rows: it comes
    before the file's fit for that build, at every level, and nothing else reads it but the build
    that names 0.6.0 as its ``fit_fallback`` (0.6.2, the same V0 engine)."""
    h100 = devices["h100-sxm"]
    overlay = {"vllm": {"vendor": {"NVIDIA": {"iteration_overhead": 0.008}}},
               "vllm@0.6.0": {"defaults": {"iteration_overhead": 0.005}}}
    E.check_overlay(overlay)
    old = E.resolve("vllm@0.6.0", h100, overlay)
    assert old.iteration_overhead == 0.005
    assert '"vllm@0.6.0".defaults' in old.origin["iteration_overhead"]
    for other in ("vllm", "vllm@0.10"):
        assert E.resolve(other, h100, overlay).iteration_overhead == 0.008, other
    assert E.resolve("vllm@0.6.2", h100, overlay).iteration_overhead == 0.005
    # what the build's section does not fit is the file's fit
    assert E.resolve("vllm@0.6.0", devices["mi300x"], overlay).iteration_overhead == 0.005
    assert _same_numbers(E.resolve("vllm@0.6.0", h100, {"vllm": overlay["vllm"]}),
                         old, ("iteration_overhead",)) == []


def test_a_build_takes_its_fit_fallbacks_section_after_its_own_and_before_the_files(devices):
    """vLLM 0.6.0 and 0.6.2 are both the V0 engine; the file's own build (0.10) is V1. A value
    that the rows of 0.6.2 fit nowhere comes from 0.6.0's section (its ``fit_fallback``), at any
    of its levels, before the file's fit; 0.6.2's own section still comes first."""
    h100, mi300x = devices["h100-sxm"], devices["mi300x"]
    overlay = {"vllm": {"defaults": {"request_overhead": 0.05},
                        "vendor": {"NVIDIA": {"iteration_overhead": 0.0015}}},
               "vllm@0.6.0": {"defaults": {"iteration_overhead": 0.0078,
                                           "request_overhead": 0.013}},
               "vllm@0.6.2": {"vendor": {"AMD": {"iteration_overhead": 0.014}}}}
    E.check_overlay(overlay)
    v0 = E.resolve("vllm@0.6.2", h100, overlay)
    assert (v0.iteration_overhead, v0.request_overhead) == (0.0078, 0.013)
    assert '"vllm@0.6.0".defaults' in v0.origin["iteration_overhead"]
    assert E.resolve("vllm@0.6.2", mi300x, overlay).iteration_overhead == 0.014
    v1 = E.resolve("vllm", h100, overlay)
    assert (v1.iteration_overhead, v1.request_overhead) == (0.0015, 0.05)
    # without the sibling's section the file's fit stands
    alone = {k: v for k, v in overlay.items() if k != "vllm@0.6.0"}
    assert E.resolve("vllm@0.6.2", h100, alone).iteration_overhead == 0.0015


def _one_build_problems(**fields) -> list[str]:
    """What the parser says of a file of build 0.10 with one other build, 0.6.0, of ``fields``."""
    from grids.engines.parse import _read_builds

    problems: list[str] = []
    table = {"0.6.0": {"released": "2024-09", "description": "V0", "source": "PyPI",
                       "matches": ["0.6.0"], **fields}}
    _read_builds({"build": "0.10", "builds": table}, "vllm.toml", problems)
    return problems


def test_a_matches_prefix_of_the_files_own_build_is_one_clear_error():
    """``"0.1"`` would take the rows of the file's own 0.10 (it did, once: V1's staged rows ran
    as the 2023 build); ``"0.1."`` does not."""
    problems = _one_build_problems(matches=["0.1", "0.2."])
    assert any("matches prefix '0.1' also matches the file's own build '0.10'" in p
               for p in problems), problems
    assert _one_build_problems(matches=["0.1.", "0.2."]) == []


def test_a_fit_fallback_naming_no_other_build_is_one_clear_error():
    problems = _one_build_problems(fit_fallback="0.5")
    assert any("fit_fallback = '0.5' names no other build" in p for p in problems), problems


@pytest.mark.parametrize("section, why", [
    ("vllm@0.7", "unknown build '0.7' of vllm"),
    ("vllm@0.10", "the file's own build is fitted as [vllm]"),
    ("vlm@0.6.0", "unknown engine"),
])
def test_an_overlay_section_of_an_unknown_build_is_one_clear_error(section, why):
    with pytest.raises(SpecError) as err:
        E.check_overlay({section: {"defaults": {"iteration_overhead": 0.005}}})
    assert why in str(err.value)


def test_by_build_the_rows_of_a_release_fit_its_own_section():
    """``sweep calibrate --by-build``: the rows whose engine_version names a build are units of
    their own and leave the file's units; a build measured on one vendor only fits that vendor's
    section (``vllm@0.6.0.vendor.NVIDIA``: APEX+'s H100 rows), so that its host costs do not
    reach the build's other vendors, while a build with rows of two vendors (0.6.2: dstack's
    H100 and MI300X) fits its defaults and then each vendor as the file's units do. Without it
    every row fits the file's sections, as the shipped overlay was fitted."""
    from sweep import validate as V
    from sweep.validate import calibration as C

    data = V.read_measurements()
    use = V.usable_mask(data) & data["engine"].eq("vllm").to_numpy()
    rows = data[use].reset_index(drop=True)
    ev = V.Evaluator(rows, overlay={})
    refs = np.array(ev.engine_ref, dtype=object)
    assert (refs == "vllm@0.6.0").sum() >= 20 and (refs == "vllm").sum() >= 20
    split = {u.name: u for u in C.plan_units(ev, 20, by_build=True)}
    assert {"vllm.defaults", "vllm@0.6.0.vendor.NVIDIA", "vllm@0.6.2.defaults"} <= set(split)
    assert "vllm@0.6.0.defaults" not in split
    assert set(refs[split["vllm@0.6.0.vendor.NVIDIA"].rows]) == {"vllm@0.6.0"}
    assert set(np.asarray(ev.vendors)[split["vllm@0.6.0.vendor.NVIDIA"].rows]) == {"NVIDIA"}
    assert set(np.asarray(ev.vendors)[split["vllm@0.6.2.defaults"].rows]) == {"NVIDIA", "AMD"}
    assert "vllm@0.6.0" not in set(refs[split["vllm.defaults"].rows])
    whole = {u.name: u for u in C.plan_units(ev, 20)}
    # without it only a build that fits apart (vllm@0.2, Splitwise's rows) has a section
    assert {name for name in whole if "@" in name} == {"vllm@0.2.vendor.NVIDIA"}
    assert len(whole["vllm.defaults"].rows) == len(rows) - (refs == "vllm@0.2").sum()


def test_a_build_that_fits_apart_leaves_the_files_and_the_pooled_fit():
    """``fit_apart = true`` (vLLM's 2023 build, an eager engine): its rows fit only its own section,
    even when every other release fits the file's; the parameters the build states itself
    (its sourced host cost per step) are not fitted, since they beat any fit; and the
    cross-engine ``pooled`` unit, which stacks without measurements inherit, leaves its rows out."""
    from sweep import validate as V
    from sweep.validate import calibration as C
    from sweep.validate.units import build_stated, fits_apart, plan_pooled

    assert fits_apart("vllm@0.2") and not fits_apart("vllm@0.6.0") and not fits_apart("vllm")
    assert "iteration_overhead" in build_stated("vllm@0.2", "NVIDIA")
    data = V.read_measurements()
    rows = data[V.usable_mask(data)].reset_index(drop=True)
    ev = V.Evaluator(rows, overlay={})
    refs = np.array(ev.engine_ref, dtype=object)
    old = np.flatnonzero(refs == "vllm@0.2")
    assert len(old) >= 20
    units = {u.name: u for u in C.plan_units(ev, 20)}
    own = units["vllm@0.2.vendor.NVIDIA"]
    assert sorted(own.rows) == sorted(old)
    assert "iteration_overhead" not in own.params and "bandwidth" in own.params
    for name, u in units.items():
        if name != own.name:
            assert not set(u.rows) & set(old), name
    pooled = plan_pooled(ev, 20)
    assert pooled is not None and not set(pooled.rows) & set(old)
    assert len(pooled.rows) == (~np.asarray(ev.engine_assumed)).sum() - len(old)


def test_fit_apart_must_be_a_boolean():
    problems = _one_build_problems(fit_apart="yes")
    assert any("fit_apart must be true or false, got 'yes'" in p for p in problems), problems


# ---------------------------------------------------------------------------- the mechanism


def _tpot(engine: str, model: str, batch: int, context: int, parallelism: str = "tp1") -> float:
    p = evaluate_point("mi300x", model, "fp16", parallelism, context=context, output_len=256,
                       batch=batch, engine=engine, batching="static")
    return float(p["tpot"])


def test_a_gqa_unaware_kernel_reads_the_kv_cache_once_per_query_head():
    """Eq. (3b) in the limit where KV reads dominate: the decode step's extra time is (g - 1) x the
    KV read time, so the slowdown grows with the context toward g = 8 (Llama-3.1-8B: 32 query
    heads over 8 KV heads)."""
    g = load_model("llama-3.1-8b").tp_divisor / load_model("llama-3.1-8b").n_kv_heads
    assert g == 4.0
    ratios = [_tpot("vllm@0.6.0", "llama-3.1-8b", 64, c) / _tpot("vllm@0.6.2", "llama-3.1-8b", 64, c)
              for c in (512, 4096, 32000)]
    assert 1.0 < ratios[0] < ratios[1] < ratios[2] <= g
    assert ratios[2] > 0.7 * g  # KV-dominated: most of the way to g


def test_multi_head_attention_reads_the_same_either_way():
    """g = 1 (Llama-2-7B: as many KV heads as query heads): nothing to share, no difference."""
    m = load_model("llama-2-7b")
    assert m.tp_divisor == m.n_kv_heads
    for c in (512, 3000):
        assert math.isclose(_tpot("vllm@0.6.0", "llama-2-7b", 32, c),
                            _tpot("vllm@0.6.2", "llama-2-7b", 32, c), rel_tol=1e-12)


def test_a_newer_build_is_not_slower_on_the_same_point():
    """vllm@0.6.2 differs from 0.6.0 only by ROCm's GQA-aware kernel (its release notes' and PR
    #8310's speed-up): on every AMD point tried it is at least as fast."""
    for model in ("llama-3.1-70b", "llama-3.1-8b", "mixtral-8x7b"):
        for batch in (1, 16, 128):
            for lay in ("tp1", "tp4"):
                old = _tpot("vllm@0.6.0", model, batch, 2048, lay)
                new = _tpot("vllm@0.6.2", model, batch, 2048, lay)
                assert new <= old * (1 + 1e-12) or (math.isnan(old) and math.isnan(new)), \
                    (model, batch, lay)


def test_vllms_2024_build_is_not_slower_than_its_2023_build_on_nvidia():
    """vllm@0.2 (eager, every all-reduce on NCCL, 2023) against vllm@0.6.0 (CUDA graphs and the
    custom all-reduce, 2024) with the shipped calibration: the later release decodes at least
    as fast on every NVIDIA point tried, and its prompt pass is at least as fast where both run
    the prompt in one pass (0.6.0 chunks prompts at 512 tokens, 'the best balance between ITL
    and TTFT on A100' in its config.py: a longer TTFT for shorter decode steps)."""
    for dev in ("a100-sxm-80g", "h100-sxm"):
        for model, lay in (("llama-2-70b", "tp8"), ("llama-2-70b", "tp4"), ("llama-3.1-8b", "tp1")):
            for batch, context in ((1, 256), (1, 2048), (16, 1024), (64, 512)):
                got = {}
                for engine in ("vllm@0.2", "vllm@0.6.0"):
                    p = evaluate_point(dev, model, "fp16", lay, context=context, output_len=128,
                                       batch=batch, engine=engine, batching="static")
                    got[engine] = (float(p["ttft"]), float(p["tpot"]))
                (ttft_old, tpot_old), (ttft_new, tpot_new) = got["vllm@0.2"], got["vllm@0.6.0"]
                assert tpot_new <= tpot_old * (1 + 1e-12), (dev, model, lay, batch, got)
                if batch * context <= 512:
                    assert ttft_new <= ttft_old * (1 + 1e-12), (dev, model, lay, batch, got)


def test_a_build_without_fp8_kernels_or_an_8bit_kv_cache_does_not_run_them(devices):
    """vLLM 0.2 had neither (its source distributions): ``fp8`` and ``-kv8`` points under
    ``vllm@0.2`` are infeasible with reason 2 (``no_compute_dtype``), while its 16-bit and
    weight-only (AWQ, 16-bit compute) points run, as does ``fp8`` under 0.6.0; an engine that
    leaves both parameters out runs them (absent: true); the calibration's dtype floors skip
    what the build does not compute."""
    from kernels.params import INFEASIBLE_MEANINGS

    def point(engine: str, precision: str) -> dict:
        return evaluate_point("h100-sxm", "llama-2-70b", precision, "tp4", context=512,
                              output_len=128, batch=4, engine=engine, batching="static")

    old = E.resolve("vllm@0.2", devices["h100-sxm"])
    assert old.narrow_float_compute is False and old.narrow_kv_cache is False
    no_dtype = INFEASIBLE_MEANINGS.index("no_compute_dtype")
    for precision in ("fp8", "fp16-kv8", "fp8-kv8"):
        p = point("vllm@0.2", precision)
        assert p["fits"] == 0 and p["infeasible_reason"] == no_dtype, precision
        assert math.isnan(float(p["tpot"])) and math.isnan(float(p["ttft"]))
    for precision in ("fp16", "w4a16"):
        assert point("vllm@0.2", precision)["fits"] == 1, precision
    for engine in ("vllm@0.6.0", "vllm", "trtllm", "sglang"):
        assert point(engine, "fp8")["fits"] == 1 and point(engine, "fp16-kv8")["fits"] == 1
        p = E.resolve(engine, devices["h100-sxm"])
        assert p.narrow_float_compute and p.narrow_kv_cache
        assert "absent from every level" in p.origin["narrow_float_compute"]
    from sweep.validate import calibration as C

    unit = C.Unit("vllm@0.2", "vendor", "NVIDIA", np.array([], dtype=np.int64), [])
    assert C.dtype_floors(unit, E.shipped_overlay()) == {}
    unit = C.Unit("vllm@0.6.0", "vendor", "NVIDIA", np.array([], dtype=np.int64), [])
    assert C.dtype_floors(unit, E.shipped_overlay())  # its fp8 prefill (0.35) stays a finding


# -------------------------------------------------------------------------------- native vintage


def test_native_names_the_vintage_it_delegates_to(devices):
    native = E.load_engine("native")
    refs = dict(native.delegate)
    assert refs["vendor:AMD"] == refs["vendor:Google"] == refs["vendor:Intel"] == "vllm@0.10"
    p = E.resolve("native", devices["mi300x"])
    assert p.engine == "native" and p.delegate == "vllm@0.10"
    # the build's overlay section is its file's: AMD's fitted bandwidth reaches native
    assert p.bandwidth == E.resolve("vllm", devices["mi300x"]).bandwidth


def test_a_delegate_to_an_unknown_build_is_reported():
    raw = toy_raw(runs_on=("all",))
    raw["delegate"] = {"vendor:AMD": "vllm@0.99", "vendor:Google": "nope@1"}
    eng = parse({**raw, "delegate": {"vendor:AMD": "vllm@0.99"}})  # the file itself parses
    assert dict(eng.delegate)["vendor:AMD"] == "vllm@0.99"
    with pytest.raises(SpecError, match="unknown engine"):
        parse(raw)
    with pytest.raises(SpecError, match=r"unknown build '0\.99'"):
        E.load_engine(dict(eng.delegate)["vendor:AMD"])


def test_a_build_shares_its_engines_uncertainty_band():
    from grids.bands import shipped_bands

    bands = shipped_bands()
    assert bands.band("vllm@0.6.0", "AMD") == bands.band("vllm", "AMD")
    assert bands.band("vllm@0.6.0", "AMD").calibrated


def test_a_grid_spec_names_builds_and_reports_an_unknown_one():
    from grids import load_spec

    spec = load_spec({"hardware": ["mi300x"], "engine": ["vllm", "vllm@0.6.0"],
                      "model": ["llama-3.1-8b"], "precision": ["bf16"], "parallelism": ["tp1"]})
    assert [e.id for e in spec.engines] == ["vllm", "vllm@0.6.0"]
    with pytest.raises(SpecError, match=r"engine: unknown build '0\.5' of engine 'vllm'"):
        load_spec({"hardware": ["mi300x"], "engine": ["vllm@0.5"], "model": ["llama-3.1-8b"]})
