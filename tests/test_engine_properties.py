"""Engine-level properties of the model on the real catalogs, through the public point API.

``sweep.execute.points`` resolves catalog labels (hardware, engine, model, precision,
parallelism) into the kernels' tables exactly as ``sweep.evaluate`` does; its ``retable`` and
``evaluate_rows`` (what the calibration uses) evaluate the same points under other engine
parameters. Three properties, each over a fixed, broad sample of catalog points and with the
shipped calibration overlay (``None``) as well as without any (``{}``, the engine files' values):

* the ``ideal`` engine is the physics bound: at the same prefill chunking, no engine is faster
  (TTFT, TPOT) or gives more throughput, at fixed batches and at maximum load; a speculative
  engine is bounded by the ideal engine speculating as far with every draft accepted for free;
* dominance: a device at least as good in every resource is never slower under the same engine
  (H200 over H100 on the default grid; catalog devices scaled up as hypothetical devices);
* the shipped calibration is what ``resolve`` and ``evaluate`` apply by default.

Tolerances are float32 rounding (the kernels store float32).
"""

from __future__ import annotations

import dataclasses
import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

from grids.engines import ENGINE_IDS, engines_dir, load_engine, resolve, shipped_overlay
from grids.hardware import catalog_ids, load_catalog, load_device
from grids.spec import DEFAULT_MODELS, DEFAULT_PREFILL_CHUNK, DEFAULT_SPEC, load_spec
from kernels.params import HW_FIELDS, METRICS, MODE_CONTINUOUS, MODE_STATIC, PX_FIELDS
from sweep.execute.points import evaluate, evaluate_rows, max_load, resolve_points

RTOL = 2e-6
OVERLAYS = pytest.mark.parametrize("overlay", [None, {}], ids=["shipped-calibration", "files"])
LABELS = ("hardware", "engine", "model", "precision", "parallelism")
COMPARED = ("fits", "ttft", "tpot", "throughput", "concurrency", "e2e_latency")
#: layouts of the ideal-bound sample: the default grid's, a padded-heads tp3 and a spill layout
LAYOUTS = ("tp1", "tp2", "tp4", "tp8", "tp4-pp2", "ep4", "ep8", "tp2-ep4", "tp8-off0.25",
           "tp8-pp16", "tp3", "tp4-spill")
PRECISIONS = ("bf16", "fp8", "w4a16", "fp8-kv8")
BATCHES = (1, 8, 64, 512)
CONTEXTS = (128, 2048, 32768)
OUTPUT_LEN = 256.0


def product(**axes) -> pd.DataFrame:
    """The Cartesian product of label lists as a table (one row per combination)."""
    return pd.DataFrame(list(itertools.product(*axes.values())), columns=list(axes))


def run(pt, tables=None, batches=BATCHES, contexts=CONTEXTS, mode=MODE_STATIC
        ) -> dict[str, np.ndarray]:
    """Every row of ``pt`` at every (batch, context): ``{metric: (n_workloads, n_rows)}``. A
    static batch by default: every time term of sections 7-11 is monotone in every resource.
    (At a fixed concurrency in a closed loop, a faster engine cycles requests faster and more
    prompts compete for the budget, so TTFT and TPOT alone need not fall; throughput and e2e
    do, by Little's law: the maximum-load test below.)"""
    rows = np.arange(pt.index["hardware"].size)
    outs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for b, s in itertools.product(batches, contexts):
            full = np.full(rows.size, 1.0)
            outs.append(evaluate_rows(pt, rows, b * full, s * full, OUTPUT_LEN * full,
                                      mode=mode, tables=tables))
    stacked = np.stack(outs)
    return {m: stacked[:, METRICS.index(m)].astype(np.float64) for m in COMPARED}


#: the scheduler an engine states (docs/model.md section 13): the ideal engine bounds an engine
#: when it runs the same one; a different policy trades TTFT against TPOT instead
SCHEDULER = ("prefill_chunk", "chunked_prefill", "mixed_batching", "kv_block")


def ideal_at_chunks(pt, overlay, **changes) -> list[list]:
    """``[h][e]``: the ideal engine on device h with engine e's scheduler (its token budget,
    chunking, mixing and KV block; and ``changes``)."""
    engines = pt.engines(overlay)
    return [[dataclasses.replace(resolve("ideal", dev, overlay),
                                 **{f: getattr(eng, f) for f in SCHEDULER}, **changes)
             for eng in row]
            for dev, row in zip(pt.objects["hardware"], engines)]


#: (metric, +1 if lower is better else -1) that a bound must not lose on
FASTER_IN = (("ttft", 1), ("tpot", 1), ("throughput", -1))
#: at a fixed concurrency of continuous batching (Little's law: e2e = C / X)
FASTER_IN_A_CLOSED_LOOP = (("throughput", -1), ("e2e_latency", 1))


def assert_bounds(bound: dict, other: dict, where: pd.DataFrame, what: str,
                  names=FASTER_IN) -> int:
    """Wherever ``other`` fits: ``bound`` fits; where both run the same number of requests at
    once (a bound that admits more, where the other queues them or runs waves, runs a larger
    and slower batch on purpose) it is no slower (TTFT, TPOT) and gives no less throughput.
    Returns the number of pairs compared."""
    fits = other["fits"] == 1
    assert np.all(bound["fits"][fits] == 1), f"{what}: the bound refuses a point the engine runs"
    ok = fits & (bound["concurrency"] == other["concurrency"])
    for name, sign in names:
        b, o = bound[name][ok], other[name][ok]
        bad = sign * (o - b) < -RTOL * np.abs(b)
        if bad.any():
            idx = np.flatnonzero(ok.reshape(-1))[np.flatnonzero(bad)[:5]] % len(where)
            raise AssertionError(f"{what}: {name} beats the bound at {bad.sum()} points, e.g.\n"
                                 f"{where.iloc[idx].to_string()}\nbound {b[bad][:5]}, "
                                 f"other {o[bad][:5]}")
    return int(ok.sum())


# ------------------------------------------------------------------------ the shipped calibration
def test_shipped_calibration_is_applied():
    """``resolve(.., overlay=None)`` is the shipped overlay, ``{}`` the files alone: every
    calibrated engine resolves differently under the two on a device it runs on, to numbers of
    the overlay; ``sweep.evaluate`` applies the shipped overlay by default."""
    shipped = shipped_overlay()
    assert shipped, "grids/data/engines/calibration.toml is missing or empty"
    devices = load_catalog()
    fitted_numbers: dict[str, set[float]] = {}
    for engine, levels in shipped.items():
        nums: set[float] = set()
        stack = [levels]
        while stack:
            for v in stack.pop().values():
                if isinstance(v, dict):
                    stack.append(v)
                elif isinstance(v, (int, float)):
                    nums.add(float(v))
        fitted_numbers[engine] = nums
    # the cross-engine [pooled] table reaches the engines whose files mark a factor pooled
    pooled_numbers = fitted_numbers.pop("pooled")
    for engine in ("gaudi", "jetstream", "groq", "groq-specdec", "cerebras", "sambaflow",
                   "deepspeed-mii"):
        fitted_numbers[engine] = pooled_numbers
    for engine in fitted_numbers:
        changed = []
        for dev in devices.values():
            cal, files = resolve(engine, dev, None), resolve(engine, dev, {})
            if not cal.supported:
                continue
            diff = {k: v for k, v in cal.to_dict().items()
                    if k not in ("origin",) and v != files.to_dict()[k]}
            changed.extend(diff.items())
        assert changed, f"the shipped calibration changes nothing of {engine}"
        flat = []
        for _name, value in changed:
            flat.extend(value.values() if isinstance(value, dict) else [value])
        assert any(v in fitted_numbers[engine] for v in flat), engine
    table = pd.DataFrame({"hardware": ["h100-sxm"] * 3, "engine": ["vllm", "trtllm", "sglang"],
                          "model": "llama-3.1-8b", "batch": 8, "context": 2048,
                          "output_len": 256, "precision": "bf16", "parallelism": "tp1"})
    default, cal, files = evaluate(table), evaluate(table, calibration=shipped), \
        evaluate(table, calibration={})
    np.testing.assert_array_equal(default["tpot"], cal["tpot"])
    fitted = table["engine"].isin([e for e in shipped if e != "pooled"]).to_numpy()  # sglang
    # has too few rows to fit, and marks nothing pooled
    assert fitted.sum() == 2 and not fitted.all()
    assert np.all(default["tpot"][fitted] != files["tpot"][fitted])
    np.testing.assert_array_equal(default["tpot"][~fitted], files["tpot"][~fitted])


# --------------------------------------------------------------------------------- ideal bound
#: every catalog engine but ``ideal``, and every older build of each (``vllm@0.2``, ...)
REAL_ENGINES_AND_BUILDS = [e for e in ENGINE_IDS if e != "ideal"] + [
    f"{e}@{b}" for e in ENGINE_IDS for b in load_engine(e).builds]

@OVERLAYS
def test_ideal_engine_bounds_every_engine_at_the_same_prefill_chunk(overlay):
    """Every catalog engine on every device it runs on, a fixed sample (32 devices x 15 models x
    4 precisions x 12 layouts x batch 1-512 x prompt 128-32768): the ideal engine with the
    engine's own prefill chunk is feasible wherever the engine is, never slower and never lower
    in throughput. (Every engine factor is <= 1, every overhead and latency >= 0, cb' >= ab, the
    overlap <= 1, the memory fraction <= 1, no batch cap, heads padded.) The chunk is a
    scheduling choice, not a resource: see the next test for what it does."""
    labels = product(hardware=catalog_ids(), engine=REAL_ENGINES_AND_BUILDS,
                     model=DEFAULT_MODELS, precision=PRECISIONS, parallelism=LAYOUTS)
    pt = resolve_points(labels, overlay=overlay)
    engine = run(pt)
    ideal = run(pt, tables=pt.retable(ideal_at_chunks(pt, overlay)))
    pairs = assert_bounds(ideal, engine, labels, "ideal at the engine's chunk")
    assert pairs > 300_000
    runs = (engine["fits"] == 1).any(axis=0)
    for name in REAL_ENGINES_AND_BUILDS:   # every real engine and build runs on some point
        assert runs[labels["engine"].to_numpy() == name].any(), name


def test_the_catalog_ideal_is_chunked_like_the_workload():
    """The catalog ``ideal`` engine chunks prompts at the workload's prefill_chunk (8192 tokens by
    default); an engine with larger chunks makes fewer passes, each re-reading the weights. With
    a quarter of DeepSeek-R1 offloaded to host memory (tp8-off0.25 on B200, 64 GB/s PCIe per
    direction) every pass streams those weights again, so SGLang's 16384-token chunks (2 passes
    of a 32768-token prompt) beat the ideal's 4 passes at TTFT. At SGLang's chunk the ideal is
    the bound again. (Reported: the ideal is a TTFT bound only at a chunk no smaller than any
    engine's, e.g. inf.)"""
    table = pd.DataFrame({"hardware": "b200", "engine": ["ideal", "sglang"],
                          "model": "deepseek-r1", "batch": 1, "context": 32768,
                          "output_len": 256, "precision": "bf16", "parallelism": "tp8-off0.25"})
    assert resolve("sglang", load_catalog()["b200"]).prefill_chunk == 16384 > DEFAULT_PREFILL_CHUNK
    at_8192 = evaluate(table)
    ideal, sglang = at_8192.iloc[0], at_8192.iloc[1]
    assert ideal.fits == sglang.fits == 1
    assert sglang.ttft < ideal.ttft
    assert sglang.tpot > ideal.tpot                      # decode does not depend on the chunk
    ideal_16k = evaluate(table.iloc[:1], prefill_chunk=16384).iloc[0]
    assert ideal_16k.ttft <= sglang.ttft


def _spec_engine(tmp_path, k: int, alpha: float, cost: float) -> str:
    """A copy of vLLM's profile with speculative decoding on (every other value the file's)."""
    text = (engines_dir() / "vllm.toml").read_text()
    text = text.replace('id = "vllm"', 'id = "vllm-spec"', 1)
    src = 'source = "test engine: speculative decoding switched on"'
    extra = (f"speculative_tokens = {{ value = {k}, {src} }}\n"
             f"speculative_acceptance = {{ value = {alpha}, {src} }}\n"
             f"speculative_draft_cost = {{ value = {cost}, {src} }}\n")
    assert text.count("\n[defaults]\n") == 1
    text = text.replace("\n[defaults]\n", "\n[defaults]\n" + extra, 1)
    path = tmp_path / "vllm-spec.toml"
    path.write_text(text)
    return str(path)


@OVERLAYS
def test_speculative_engine_is_bounded_by_perfect_speculation(tmp_path, overlay):
    """Speculative decoding legitimately beats the non-speculative ideal at TPOT: a round of
    k_s + 1 verified tokens yields tau of them for about one weight read. The true bound of a
    speculative engine is the ideal engine speculating the same k_s tokens with every draft
    accepted (tau = k_s + 1) at no draft cost: TPOT_e = (t_e(k_s+1) + k_s c_d t_e(1)) / tau_e
    >= t_e(k_s+1) / (k_s+1) >= t_ideal(k_s+1) / (k_s+1). TTFT is not affected."""
    k = 4
    engine_path = _spec_engine(tmp_path, k=k, alpha=0.8, cost=0.05)
    labels = product(hardware=["h100-sxm", "b200", "mi300x", "a100-sxm-80g", "l40s"],
                     engine=[engine_path],
                     model=["llama-3.1-8b", "llama-3.3-70b", "mixtral-8x7b", "deepseek-r1"],
                     precision=["bf16", "fp8"],
                     parallelism=["tp1", "tp4", "tp8", "tp4-pp2", "ep8", "tp8-off0.25"])
    pt = resolve_points(labels, overlay=overlay)
    assert all(e.speculative_tokens == k for row in pt.engines(overlay) for e in row
               if e.supported)
    engine = run(pt, batches=(1, 16, 256), contexts=(128, 4096))
    plain = run(pt, tables=pt.retable(ideal_at_chunks(pt, overlay)), batches=(1, 16, 256),
                contexts=(128, 4096))
    perfect = run(pt, tables=pt.retable(ideal_at_chunks(
        pt, overlay, speculative_tokens=float(k), speculative_acceptance=1.0,
        speculative_draft_cost=0.0)), batches=(1, 16, 256), contexts=(128, 4096))
    assert assert_bounds(perfect, engine, labels, "perfect speculation") > 500
    ok = engine["fits"] == 1
    # whole batches: in waves (section 11) a later wave's TTFT waits for the earlier ones'
    # decode, which speculation shortens
    batch = np.array([b for b, _ in itertools.product((1, 16, 256), (128, 4096))])[:, None]
    whole = ok & (engine["concurrency"] == batch) & (plain["concurrency"] == batch)
    assert np.all(plain["ttft"][whole] <= engine["ttft"][whole] * (1 + RTOL))
    assert (engine["tpot"][ok] < plain["tpot"][ok]).any(), "speculation never beat the plain ideal"


@OVERLAYS
def test_ideal_engine_bounds_every_engine_at_maximum_load(overlay):
    """batch = "max" (docs/model.md section 13.2): each engine runs continuous batching at its
    own maximum concurrency C*_e (its batch cap and the KV cache under its memory fraction and
    block size). With the engine's scheduler, the ideal engine (a) admits at least as many
    requests, (b) gives no less throughput and no longer e2e latency at C*_e itself (TTFT and
    TPOT alone need not fall in a closed loop, see :func:`run`), and (c) on devices with one
    memory tier its own maximum-load throughput is at least the engine's (throughput does not
    fall with the concurrency, tests/test_serving.py, to 1e-3). On tiered devices more requests
    put KV cache in slower tiers: SN40L runs Llama-3.1-8B at 4,871 requests with the ideal
    engine's memory (KV in DDR) at 0.79x the throughput of SambaFlow's 8 (all in HBM)."""
    labels = product(hardware=catalog_ids(), engine=REAL_ENGINES_AND_BUILDS,
                     model=["llama-3.1-8b", "llama-3.3-70b", "mixtral-8x7b", "qwen3-235b-a22b",
                            "deepseek-r1", "llama-4-scout"],
                     precision=["bf16", "fp8"],
                     parallelism=["tp1", "tp8", "tp4-pp2", "ep8", "tp8-off0.25"])
    pt = resolve_points(labels, overlay=overlay)
    ti = pt.retable(ideal_at_chunks(pt, overlay))
    rows = np.arange(len(labels))
    fits, thr = METRICS.index("fits"), METRICS.index("throughput")
    checked = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for s in (2048, 32768):
            ctx, out_len = np.full(rows.size, float(s)), np.full(rows.size, OUTPUT_LEN)
            out_e, c_e = max_load(pt, rows, ctx, out_len)
            out_i, c_i = max_load(pt, rows, ctx, out_len, tables=ti)
            ok = out_e[fits] == 1
            assert np.all(out_i[fits][ok] == 1) and np.all(c_i[ok] >= c_e[ok])          # (a)
            r = rows[ok]
            at_c = evaluate_rows(pt, r, c_e[ok], ctx[ok], out_len[ok], mode=MODE_CONTINUOUS,
                                 tables=ti)
            at = {m: at_c[METRICS.index(m)][None].astype(float) for m in COMPARED}
            eng = {m: out_e[METRICS.index(m)][ok][None].astype(float) for m in COMPARED}
            checked += assert_bounds(at, eng, labels.iloc[r], f"ideal at C*_e, S = {s}",
                                     FASTER_IN_A_CLOSED_LOOP)                             # (b)
            one_tier = pt.tables.hw[pt.platform, HW_FIELDS.index("tier1_capacity")] == 0
            c = ok & one_tier
            assert np.all(out_i[thr][c] >= out_e[thr][c] * (1 - 1e-3))                    # (c)
    assert checked > 5_000


# ---------------------------------------------------------------------------------- dominance
#: platform-row fields by the direction in which a device or engine is "at least as good"
HIGHER = (*(f"tier{i}_{x}" for i in range(3) for x in ("capacity", "bandwidth", "efficiency")),
          "host_capacity", "host_bandwidth", "host_efficiency", "package_bandwidth",
          "link_bandwidth", "scaleout_bandwidth", "capacity_fraction", "link_efficiency",
          "switch_efficiency", "custom_ar_efficiency", "comm_overlap", "max_batch", "supported",
          "kv_free_fraction", "gqa_aware")
LOWER = ("package_latency", "link_latency", "scaleout_latency", "jitter", "layer_overhead",
         "iteration_overhead", "request_overhead", "comm_bytes", "collective_overhead",
         "in_switch_overhead", "custom_ar_overhead", "kv_reserve")
#: the fabric's topology and the engine's collective rules change which algorithm runs, not how
#: good a resource is: equal for "at least as good"
SAME = (*(f"tier{i}_kind" for i in range(3)),
        "package_size", "domain_size", "prefill_chunk", "pads_heads", "spec_tokens",
        "spec_acceptance", "spec_draft_cost", "chunked_prefill", "mixed_batching", "kv_block",
        "peer_links", "custom_ar_max_bytes", "custom_ar_max_group", "oneshot_max_bytes",
        "oneshot_max_bytes_large", "fastest_collective", "spatial_layers")
NOT_SPEED = ("tdp", "idle", "host_power", "energy_sram", "energy_dram", "energy_host",
             "energy_link", "cost_fixed", "cost_energy")


def worse_fields(t, better: int, base: int) -> list[str]:
    """Fields in which platform row ``better`` of tables ``t`` is worse than row ``base``
    (every precision's px row included); empty = at least as good in every resource."""
    assert set(HIGHER + LOWER + SAME + NOT_SPEED) == set(HW_FIELDS)
    hw = dict(zip(HW_FIELDS, t.hw[better])), dict(zip(HW_FIELDS, t.hw[base]))
    bad = [f for f in HIGHER if hw[0][f] < hw[1][f]] + [f for f in LOWER if hw[0][f] > hw[1][f]]
    bad += [f for f in SAME if hw[0][f] != hw[1][f]]
    for p in range(t.px.shape[1]):
        bad += [f"px[{p}].{f}" for j, f in enumerate(PX_FIELDS)
                if t.px[better, p, j] < t.px[base, p, j]]
    return bad


def assert_dominates(devices: dict, pairs: list[tuple[str, str]], overlay, spec) -> int:
    """For every (better, base) device pair and every engine that runs on both: the better
    device is at least as good in every resource, and on the spec's points that the base runs,
    it fits and is never slower. Returns the number of points compared."""
    labels = product(hardware=list(devices), engine=list(ENGINE_IDS), model=[m.id for m in spec.models],
                     precision=[p.name for p in spec.precisions],
                     parallelism=[lay.name for lay in spec.layouts])
    pt = resolve_points(labels, loaders={"hardware": devices.__getitem__}, overlay=overlay)
    res = run(pt, batches=spec.batch, contexts=spec.context)
    hw_ids = pt.labels["hardware"]
    n_e = pt.tables.n_engines
    key = ["engine", "model", "precision", "parallelism"]
    compared = 0
    for better, base in pairs:
        for e, name in enumerate(pt.labels["engine"]):
            h_b, h_0 = hw_ids.index(better), hw_ids.index(base)
            if not (pt.tables.hw[h_b * n_e + e, HW_FIELDS.index("supported")]
                    and pt.tables.hw[h_0 * n_e + e, HW_FIELDS.index("supported")]):
                continue
            assert not worse_fields(pt.tables, h_b * n_e + e, h_0 * n_e + e), \
                (better, base, name, worse_fields(pt.tables, h_b * n_e + e, h_0 * n_e + e))
            sel_b = np.flatnonzero((labels["hardware"] == better) & (labels["engine"] == name))
            sel_0 = np.flatnonzero((labels["hardware"] == base) & (labels["engine"] == name))
            assert (labels.iloc[sel_b][key].to_numpy() == labels.iloc[sel_0][key].to_numpy()).all()
            compared += assert_bounds({m: v[:, sel_b] for m, v in res.items()},
                                      {m: v[:, sel_0] for m, v in res.items()},
                                      labels.iloc[sel_0], f"{better} over {base}, {name}")
    return compared


@OVERLAYS
def test_h200_is_never_slower_than_h100(overlay):
    """H200 SXM has the H100 SXM's compute (same GH100 peaks and efficiencies), more and faster
    HBM (141 GB at 4.8 TB/s against 80 GB at 3.35 TB/s), the same links and host; every engine
    that runs on both is at least as good on it (checked field by field). Over the default grid
    (15 models x batch 1-1024 x prompt 128-131072 x 3 precisions x 10 layouts), with the shipped
    calibration and without: every point the H100 runs, the H200 runs, no slower."""
    spec = load_spec(None)
    devices = {d.id: d for d in spec.hardware if d.id in ("h100-sxm", "h200-sxm")}
    assert assert_dominates(devices, [("h200-sxm", "h100-sxm")], overlay, spec) > 100_000


def _scaled_up(dev) -> dict:
    """Hypothetical-device overrides (docs/spec.md) doubling every rate and capacity the device
    has (peaks per dtype, each tier kind's first tier, host, links) and halving link latencies;
    uniform factors keep the tiers ordered fastest first."""
    over = {f"peak_flops.{d}": 2 * v for d, v in dev.peak_flops.items()}
    for kind in ("sram", "dram"):
        tier = dev.tier_of_kind(kind)
        if tier is not None:
            over.update({f"{kind}_capacity": 2 * tier.capacity, f"{kind}_bandwidth": 2 * tier.bandwidth})
    if dev.host is not None:
        over.update(host_capacity=2 * dev.host.capacity, host_bandwidth=2 * dev.host.bandwidth)
    over.update(link_bandwidth=2 * dev.link_bandwidth, link_latency=dev.link_latency / 2,
                scaleout_bandwidth=2 * dev.scaleout_bandwidth)
    if dev.package_size > 1:
        over.update(package_bandwidth=2 * dev.package_bandwidth,
                    package_latency=dev.package_latency / 2)
    return over


@OVERLAYS
def test_scaled_up_hypothetical_devices_are_never_slower(overlay):
    """Hypothetical devices from a grid spec's [hypothetical] tables (docs/spec.md), each a
    catalog device with every rate and capacity doubled, resolve every engine as their base
    (docs/engines.md section 3), so they are at least as good in every resource; over the default
    grid's points they run everything the base runs, never slower. Bases cover every memory
    structure of the catalog: HBM GPUs with a host tier (H100, MI300X, the 2-die MI250X), SRAM +
    HBM (Gaudi 3), SRAM + HBM + DDR (SN40L), SRAM with a host tier (CS-3), SRAM only (Groq),
    a TPU."""
    catalog = load_catalog()
    bases = ("h100-sxm", "mi300x", "mi250x", "gaudi3", "sn40l", "cs-3", "groq-lpu", "tpu-v6e")
    raw = {**{k: v for k, v in DEFAULT_SPEC.items() if k != "hardware"}, "hardware": list(bases),
           "hypothetical": {f"{b}-x2": {"base": b, **_scaled_up(catalog[b])} for b in bases}}
    spec = load_spec(raw)
    devices = {d.id: d for d in spec.hardware}
    assert set(devices) == set(bases) | {f"{b}-x2" for b in bases}
    for b in bases:
        assert devices[f"{b}-x2"].base == b
        if b != "sn40l":   # the SN40L's DDR is a second DRAM tier, not scaled
            assert devices[f"{b}-x2"].device_capacity == pytest.approx(
                2 * catalog[b].device_capacity)
    pairs = [(f"{b}-x2", b) for b in bases]
    assert assert_dominates(devices, pairs, overlay, spec) > 200_000


def test_dominance_check_sees_a_worse_resource():
    """The field-by-field premise is not vacuous: H100 is worse than H200 in HBM capacity and
    bandwidth, and a scaled-up device's base is worse than it."""
    spec = load_spec(None)
    devices = {d.id: d for d in spec.hardware if d.id in ("h100-sxm", "h200-sxm")}
    labels = product(hardware=list(devices), engine=["trtllm"], model=["llama-3.1-8b"],
                     precision=["bf16"], parallelism=["tp1"])
    pt = resolve_points(labels, loaders={"hardware": devices.__getitem__})
    h100, h200 = pt.labels["hardware"].index("h100-sxm"), pt.labels["hardware"].index("h200-sxm")
    assert set(worse_fields(pt.tables, h100, h200)) == {"tier0_capacity", "tier0_bandwidth"}
    assert worse_fields(pt.tables, h200, h100) == []


def test_a_slower_attention_kernel_never_makes_decode_faster():
    """``kv_efficiency`` is the rate the decode attention kernel reads a 16-bit KV cache at,
    relative to the weight stream (and the 8-bit cache's rate scales with it): lowering it
    never shortens TPOT, and lengthens it where the KV cache is read in quantity; at the file's
    value (TensorRT-LLM's XQA on Hopper and Ampere, 0.81) the results are the file's."""
    rows = pd.DataFrame([{"hardware": h, "model": "llama-3.1-8b", "precision": p,
                          "parallelism": "tp1", "context": c, "output_len": 1024, "batch": b,
                          "engine": "trtllm"}
                         for h in ("h100-sxm", "a100-sxm-80g") for p in ("fp8", "fp8-kv8", "bf16")
                         for c in (128, 4096) for b in (1, 64, 256)])
    rows = rows[~(rows["hardware"].eq("a100-sxm-80g") & rows["precision"].str.startswith("fp8"))]
    base = evaluate(rows, calibration={})
    tpot = {}
    for x in (1.0, 0.81, 0.5):
        out = evaluate(rows, calibration={"trtllm": {"defaults": {"kv_efficiency": x}}})
        tpot[x] = out["tpot"].to_numpy()
    np.testing.assert_array_equal(tpot[0.81], base["tpot"].to_numpy())
    assert np.all(np.isfinite(tpot[1.0]))
    assert np.all(tpot[0.81] >= tpot[1.0] * (1 - RTOL))
    assert np.all(tpot[0.5] >= tpot[0.81] * (1 - RTOL))
    long_batched = (rows["context"].eq(4096) & rows["batch"].eq(256)).to_numpy()
    assert np.all(tpot[0.5][long_batched] > tpot[1.0][long_batched] * 1.2)


def test_trtllm_reads_the_kv_cache_at_its_kernel_rate_per_architecture():
    """TensorRT-LLM's decode attention is XQA on Ampere to Hopper (0.81 of the weight stream,
    from vllm-project/vllm#43232's kernel timings) and trtllm-gen on data-centre Blackwell (as
    fast as the weight stream): the file states both, at the defaults and per device."""
    got = {d: resolve("trtllm", load_device(d)).kv_efficiency
           for d in ("a100-sxm-80g", "h100-sxm", "h200-sxm", "b200", "gb200")}
    assert got == {"a100-sxm-80g": 0.81, "h100-sxm": 0.81, "h200-sxm": 0.81, "b200": 1.0,
                   "gb200": 1.0}
