"""Pins of the kernel-physics fixes of docs/model.md v2 (issue 12), each on the ``ideal`` engine
(the physics alone) through ``sweep.evaluate``. Every test states the figure the previous model
gave, which made it fail; docs/model.md says what changed."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from grids.engines import BY_DTYPE, PARAMS
from grids.hardware import load_device
from grids.models import load_model
from grids.precisions import parse_precision
from kernels.params import INFEASIBLE_MEANINGS, METRICS
from sweep.execute.points import evaluate, evaluate_rows, resolve_points

MEMORY = INFEASIBLE_MEANINGS.index("memory")
HOST = INFEASIBLE_MEANINGS.index("host_capacity")


def run(rows: list[dict], engine: str = "ideal") -> pd.DataFrame:
    df = pd.DataFrame(rows)
    if "engine" not in df:
        df["engine"] = engine
    return evaluate(df)


def point(hw: str, model: str, precision: str, layout: str, batch: int, context: int,
          output_len: int) -> dict:
    """A fixed batch (docs/model.md sections 7-11), as the fixes below were stated."""
    return {"hardware": hw, "model": model, "precision": precision, "parallelism": layout,
            "batch": batch, "context": context, "output_len": output_len, "batching": "static"}


def test_tensor_parallel_collectives_use_the_link_of_their_group(tmp_path):
    """Item 1: ``tp8-pp2`` on 8-GPU H100 nodes keeps its tp8 all-reduces on NVLink; only the
    one stage-to-stage hop crosses nodes. The previous model charged every all-reduce at
    scale-out rates because the replica (16 devices) exceeded the domain: TTFT 12.8 s vs 6.3 s
    for tp8, TPOT 34.9 vs 24.5 ms (Llama-3.1-70B, B=64, S=2048)."""
    serial = _engine_file(tmp_path, "serial", comm_overlap=0.0)  # collectives not hidden
    r = run([point("h100-sxm", "llama-3.1-70b", "bf16", lay, 64, 2048, 256)
             for lay in ("tp8", "tp8-pp2", "tp16")], engine=serial)
    tp8, pp2, tp16 = (r.iloc[i] for i in range(3))
    # two micro-batches pipelined over two stages of half the layers: at most tp8's time
    assert pp2.ttft <= tp8.ttft
    assert pp2.tpot <= 1.05 * tp8.tpot
    # a tp16 group does cross the node: its all-reduces run at scale-out rates
    assert tp16.ttft > tp8.ttft / 2 * 1.5


def test_expert_parallel_ranks_hold_whole_sequences():
    """Item 2: DeepSeek-R1 ``ep8`` at B=1 and a 131k prompt: the rank owning the sequence holds its
    whole KV cache and does all its attention. Previously 1/8 of the KV per device (1.7 GB of
    the 9.2 GB difference) and TTFT 7.7 s."""
    s_long, s_short = 131072, 128
    r = run([point("h200-sxm", "deepseek-r1", "fp8", "ep8", 1, s, 1) for s in (s_long, s_short)])
    model = load_model("deepseek-r1")
    prec = parse_precision("fp8")
    kv_seq = model.kv_bytes_per_token(prec.kv_bits) * (s_long - s_short)
    grown = r.memory_per_device.iloc[0] - r.memory_per_device.iloc[1]
    assert grown >= 0.99 * kv_seq
    # lower bound on TTFT: the prompt's causal attention FLOPs on one device at peak
    # (DeepSeek-R1 config.json: 61 layers, 128 heads, qk_nope 128 + qk_rope 64, v_head_dim 128)
    flops = 61 * 2 * 128 * (128 + 64 + 128) * s_long * (s_long + 1) / 2
    peak = load_device("h200-sxm").peak_flops["fp8"]
    assert r.ttft.iloc[0] >= flops / peak
    # B = 1 .. ep: the busiest rank holds one sequence whatever B is
    b = run([point("h200-sxm", "deepseek-r1", "fp8", "ep8", n, 8192, 1) for n in (1, 8, 9)])
    assert b.memory_per_device.iloc[0] == pytest.approx(b.memory_per_device.iloc[1], rel=1e-6)
    assert b.memory_per_device.iloc[2] > b.memory_per_device.iloc[1]


def test_expert_imbalance_binds_memory_bound_decode():
    """Item 3: in memory-bound decode the busiest EP rank's expert bytes set the step, so EP's
    step-time variation exceeds TP's. Previously the imbalance touched FLOPs and all-to-all only
    and latency_cov was the jitter alone for both (0.1203 vs 0.1200, Mixtral-8x7B, B=8)."""
    r = run([point("h100-sxm", "mixtral-8x7b", "bf16", lay, 8, 1024, 256)
             for lay in ("tp8", "ep8")])
    tp8, ep8 = r.iloc[0], r.iloc[1]
    assert ep8.bound == tp8.bound == 2  # DRAM-bound decode
    jitter = load_device("h100-sxm").efficiency.jitter
    assert tp8.latency_cov == pytest.approx(jitter, rel=1e-5)
    assert ep8.latency_cov > 1.2 * tp8.latency_cov


def _engine_file(tmp_path, name: str, **values: float) -> str:
    """A user engine file: the ideal engine's values (docs/engines.md) except ``values``."""
    lines = []
    for key, spec in PARAMS.items():
        if key == "pads_heads":
            continue
        v = values.get(key, spec.ideal)
        if spec.dimension == "bool":
            lines.append(f'{key} = {"true" if v else "false"}\n{key}_source = "test value"')
            continue
        text = '"inf"' if v == math.inf else repr(float(v))
        if key in BY_DTYPE:
            lines.append(f'{key}.bf16 = {{ value = {text}, source = "test value" }}')
        else:
            lines.append(f'{key} = {{ value = {text}, source = "test value" }}')
    path = tmp_path / f"{name}.toml"
    path.write_text(f'id = "{name}"\nname = "{name}"\ndescription = "test engine"\n'
                    'versions = "n/a"\nruns_on = ["all"]\nnotes = []\n\n[defaults]\n'
                    'pads_heads = true\npads_heads_source = "test value"\n'
                    + "\n".join(lines) + "\n")
    return str(path)


def test_collective_payload_is_the_engines_communication_dtype(tmp_path):
    """Item 4: an engine that all-reduces 16-bit hidden states pays twice the bytes of the
    activation precision for fp8 models, and nothing more for 16-bit ones. Previously the payload
    was always the activation width (1 B for fp8)."""
    narrow = _engine_file(tmp_path, "narrow", comm_overlap=0.0)
    wide = _engine_file(tmp_path, "wide", comm_overlap=0.0, comm_bytes=2.0)
    rows = [point("l40s", "llama-3.1-70b", p, "tp8", 32, 2048, 64) for p in ("fp8", "bf16")]
    ideal = run(rows, engine=narrow)
    wide = run(rows, engine=wide)
    assert wide.ttft.iloc[0] > ideal.ttft.iloc[0]  # fp8: 2 B instead of 1 B per element
    assert wide.ttft.iloc[1] == pytest.approx(ideal.ttft.iloc[1], rel=1e-6)  # bf16: same


def test_power_follows_the_busy_fraction_at_the_achievable_rate(tmp_path):
    """Item 5: a compute-bound prefill keeps the device fully busy at its achievable rate: it
    draws its board power, whatever the FLOP efficiency. Previously utilisation was measured
    against peak FLOP/s: a B200 drew 399 W of 1000 W. Host time (an engine's per-iteration cost)
    idles it."""
    rows = [point(h, "llama-3.1-8b", "bf16", "tp1", 8, 8192, 1)
            for h in ("b200", "h100-sxm", "mi300x")]
    r = run(rows)
    for (_, row), h in zip(r.iterrows(), ("b200", "h100-sxm", "mi300x")):
        assert row.power == pytest.approx(load_device(h).tdp, rel=1e-5)
    slow = run([rows[0]], engine=_engine_file(tmp_path, "slow", iteration_overhead=0.05))
    dev = load_device("b200")
    assert dev.idle < slow.power.iloc[0] < dev.tdp
    # the system boundary adds the host share of every device
    assert r.system_power.iloc[0] == pytest.approx(dev.tdp + dev.host_power, rel=1e-5)


def test_pipeline_ends_are_balanced_so_sram_parts_fit():
    """Item 6: Llama-3.1-70B in 8-bit on 576 Groq LPUs (Groq's public deployment size) fits as
    tp16-pp36 or tp32-pp18 once the LM head and embedding are balanced over the stages. Previously
    a 2.1 GB head on one stage made both fail (300 and 206 MB per chip vs 230 MB of SRAM)."""
    r = run([point("groq-lpu", "llama-3.1-70b", "int8", lay, 1, 1024, 256)
             for lay in ("tp16-pp36", "tp32-pp18")])
    assert (r.fits == 1).all()
    sram = load_device("groq-lpu").tiers[0].capacity
    assert (r.memory_per_device <= sram).all()


def test_offload_fraction_is_what_the_layout_says():
    """Item 7: ``off0.25`` puts a quarter of the weights in the host tier; what does not fit
    beyond that is infeasible unless the layout says ``spill``. Previously GC200 DeepSeek-R1 bf16
    ``tp64-off0.25`` 'fit' with 97% of its bytes in host memory."""
    r = run([point("gc200", "deepseek-r1", "bf16", lay, 1, 1024, 256)
             for lay in ("tp64-off0.25", "tp64-off0.25-spill")])
    plain, spill = r.iloc[0], r.iloc[1]
    assert plain.fits == 0 and plain.infeasible_reason == MEMORY
    assert plain.host_fraction > 0.9  # says why: the host share it would need
    assert spill.fits == 1 and spill.host_fraction == pytest.approx(plain.host_fraction)
    # a model that fits: the host share is the offloaded quarter of the weights
    ok = run([point("gc200", "llama-3.1-8b", "bf16", "tp32-off0.25", 1, 1024, 256)]).iloc[0]
    model = load_model("llama-3.1-8b")
    weights = 2 * model.params_total / 32
    assert ok.fits == 1
    assert ok.host_fraction * ok.memory_per_device == pytest.approx(0.25 * weights, rel=0.02)
    # the host tier has a size too
    big = run([point("gc200", "deepseek-r1", "bf16", "tp8-off0.25-spill", 1, 1024, 256)]).iloc[0]
    assert big.fits == 0 and big.infeasible_reason == HOST


def _chunked_vs_sliding(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    out = []
    for chunked in (True, False):
        def model(name: str, chunked=chunked):
            return dataclasses.replace(load_model(name), window_chunked=chunked)

        pt = resolve_points(rows, {"model": model})
        n = len(rows)
        out.append(evaluate_rows(pt, np.arange(n), rows.batch.to_numpy(np.float64),
                                 rows.context.to_numpy(np.float64),
                                 rows.output_len.to_numpy(np.float64)))
    return out[0], out[1]


def test_llama4_chunked_attention_is_not_a_sliding_window():
    """Item 8: Llama-4's local layers attend within fixed 8192-token chunks (each token to the
    earlier tokens of its chunk, on average W/2), not to the last W tokens. Previously they were
    taken as sliding windows, the "sliding" figures below."""
    s_long, w, tp = 131072, 8192, 8
    rows = pd.DataFrame([point("h100-sxm", "llama-4-scout", "bf16", f"tp{tp}", 1, s, 256)
                         | {"engine": "ideal"} for s in (4096, s_long)])
    chunked, sliding = _chunked_vs_sliding(rows)
    ttft = METRICS.index("ttft")
    # within one window the two forms are the same attention
    assert chunked[ttft, 0] == pytest.approx(sliding[ttft, 0], rel=1e-6)
    # far beyond it: causal pairs of the local layers, sliding W(W+1)/2 + (S-W) W, chunked
    # (S/W) W(W+1)/2 (S a multiple of W): the prefill differs by that attention work alone
    pairs_sliding = w * (w + 1) / 2 + (s_long - w) * w
    pairs_chunked = (s_long // w) * w * (w + 1) / 2
    model, dev = load_model("llama-4-scout"), load_device("h100-sxm")
    rate = dev.achievable_flops("bf16")
    saved = model.attn_flops_window_prefill * (pairs_sliding - pairs_chunked) / tp / rate
    assert sliding[ttft, 1] - chunked[ttft, 1] == pytest.approx(saved, rel=0.01)
    assert pairs_chunked / pairs_sliding == pytest.approx(0.52, abs=0.01)  # "about half"
    # the KV cache a local layer keeps is at most one window in both forms
    mem = METRICS.index("memory_per_device")
    assert chunked[mem, 1] == pytest.approx(sliding[mem, 1], rel=1e-6)


def test_flop_efficiency_is_per_compute_dtype():
    """Item 9: the Max 1550's achievable GEMM rates are sourced per dtype (ALCF: bf16 0.53, int8
    0.54 of peak; fp32 uses the class default 0.75). A compute-bound prefill's time follows the
    achievable rate of the precision's own dtype; one efficiency for every dtype would give the
    peak ratio instead."""
    dev = load_device("max1550")
    rows = [point("max1550", "llama-3.1-8b", p, "tp1", 4, 8192, 1) for p in ("bf16", "fp32")]
    r = run(rows)
    eff = dev.efficiency.flops_efficiency_by_dtype
    rate = {"bf16": dev.peak_flops["bf16"] * eff["bf16"],
            "fp32": dev.peak_flops["fp32"] * dev.efficiency.flops_efficiency}
    assert r.ttft.iloc[1] / r.ttft.iloc[0] == pytest.approx(rate["bf16"] / rate["fp32"],
                                                            rel=0.02)
    peak_ratio = dev.peak_flops["bf16"] / dev.peak_flops["fp32"]
    assert not math.isclose(r.ttft.iloc[1] / r.ttft.iloc[0], peak_ratio, rel_tol=0.1)


def test_narrow_dtypes_compute_at_their_serving_shape_rates():
    """FP8 GEMMs at the shapes inference runs reach less of their peak than 16-bit ones (H100:
    0.60 against the 16-bit rule 0.75; docs/catalog.md 2.5), so a compute-bound prefill in fp8
    is 2 x 0.60 / 0.75 = 1.6x faster than in bf16 on an H100, not the peaks' 2x. With 0.75 for
    both it was 2x. The Hopper parts without a figure of their own take the H100's (one die),
    each marked an estimate whose rule names it."""
    h100 = load_device("h100-sxm")
    f8 = h100.efficiency.flops_efficiency_for("fp8")
    f16 = h100.efficiency.flops_efficiency_for("bf16")
    assert f8 < f16
    rows = [point("h100-sxm", "llama-3.1-8b", p, "tp1", 8, 8192, 1) for p in ("bf16", "fp8")]
    r = run(rows)
    rate = {p: h100.achievable_flops(p) for p in ("bf16", "fp8")}
    speedup = r.ttft.iloc[0] / r.ttft.iloc[1]
    assert speedup == pytest.approx(rate["fp8"] / rate["bf16"], rel=0.05)
    assert not math.isclose(speedup, h100.peak_flops["fp8"] / h100.peak_flops["bf16"],
                            rel_tol=0.1)
    for sibling in ("h200-sxm", "gh200", "h100-nvl", "h100-pcie"):
        dev = load_device(sibling)
        assert dev.efficiency.flops_efficiency_for("fp8") == f8, sibling
        src = dev.sources["efficiency.flops_efficiency_by_dtype.fp8"]
        assert src.estimate and "H100 SXM" in src.rule, sibling


def test_evaluate_warns_about_columns_it_does_not_read():
    rows = pd.DataFrame([point("h100-sxm", "llama-3.1-8b", "bf16", "tp1", 1, 128, 8)])
    with pytest.warns(UserWarning, match="not inputs of the model"):
        out = evaluate(rows.assign(enigne="vllm"))
    assert out["enigne"].iloc[0] == "vllm"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        evaluate(rows.assign(engine="vllm"))
