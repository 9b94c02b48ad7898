"""Worked examples: hand arithmetic, written out, against the kernel (docs/model.md).

Numbers are literals worked by hand from public architecture numbers; the model tables come from
``tests.strategies.build_model`` whose group counts are checked here against the known totals.
"""

from __future__ import annotations

import math

import pytest

from tests import strategies as S

HUGE = 1e30           # "infinite" FLOP/s or bandwidth
BF16 = {"weight_bytes": 2.0, "act_bytes": 2.0, "kv_bytes": 2.0, "embed_bytes": 2.0}
TP1 = {"tp": 1.0, "pp": 1.0, "ep": 1.0, "dp": 1.0, "offload": 0.0}

# Llama-3.1-8B: 32 layers, d 4096, 32 heads, 8 KV heads, head_dim 128, FFN 14336, vocab 128256.
#   per layer: q 4096*4096 + k,v 2*4096*1024 + o 4096*4096 = 41,943,040
#              MLP 3*4096*14336 = 176,160,768; 2 norms 8,192      -> 218,112,000
#   P_lin = 32 * 218,112,000 + final norm 4,096 = 6,979,588,096
#   P_head = P_emb = 128256 * 4096 = 525,336,576;  N = 8,030,261,248
LLAMA8 = S.LLAMA_31_8B
LLAMA70 = S.build_model(n_layers=80, d_model=8192, n_heads=64, n_kv_heads=8, head_dim=128,
                        ffn=28672, vocab=128256)
H100 = S.simple_device(bw=3.35e12, capacity=80e9)


def run(md, *, hw=H100, pr=BF16, ly=None, peak=989e12, batch=1, context=1024, output_len=256):
    return S.evaluate_one({"hw": hw, "md": md, "pr": pr, "ly": {**TP1, **(ly or {})},
                           "peak": peak, "batch": batch, "context": context,
                           "output_len": output_len})


def approx(x, rel=2e-6):
    return pytest.approx(x, rel=rel, abs=0.0)


def test_model_tables_match_known_parameter_counts():
    assert LLAMA8["params_linear"] == 6_979_588_096
    assert LLAMA8["params_head"] == LLAMA8["params_embed_only"] == 525_336_576
    assert LLAMA8["params_linear"] + 2 * LLAMA8["params_head"] == 8_030_261_248
    assert LLAMA8["kv_elems_full"] == 2 * 32 * 8 * 128 == 65_536          # K and V, per token
    assert LLAMA8["attn_flops_full_decode"] == 32 * 2 * 32 * (128 + 128) == 524_288
    assert LLAMA8["act_elems"] == 32 * (4 * 4096 + 2 * 14336) == 1_441_792
    assert LLAMA70["params_linear"] + 2 * LLAMA70["params_head"] == 70_553_706_496


# ------------------------------------------------------------------------ Llama-3.1-8B on an H100
def test_llama8b_bf16_batch1_cannot_beat_its_weight_bytes_over_hbm_bandwidth():
    """Realistic efficiencies and overheads: decode is at least the weights read per step
    (every linear layer + LM head = 2 B * 7,504,924,672 = 15,009,849,344 B) over 3.35 TB/s."""
    hw = S.simple_device(bw=3.35e12, capacity=80e9, eff=0.85, flops_efficiency=0.7,
                         layer_overhead=5e-6, jitter=0.05)
    r = run(LLAMA8, hw=hw)
    assert r["fits"] == 1
    lower = 15_009_849_344 / 3.35e12            # = 4.4806 ms
    assert r["tpot"] >= lower
    assert r["tpot"] < 3 * lower                # and it is memory bound, not wildly above
    assert r["bound"] == 2                      # DRAM
    assert r["throughput"] <= 256 / (r["ttft"] + 255 * lower)


def test_llama8b_ideal_device_decode_step_exactly():
    """eff = 1, no overheads, unlimited FLOP/s, B = 1, S = 1024, O = 256 (mean length c = 1152):
    weights read per step (linear layers + LM head; the input embedding 128,256 x 4096 is stored
    but only gathered, docs/model.md section 3):
        2 B * (8,030,261,248 - 525,336,576)  = 15,009,849,344 B
    KV  65,536 elem * 1152 * 2 B            =    150,994,944 B
    act 2 * 1,441,792 * 2 B                 =      5,767,168 B
    total 15,166,611,456 B / 3.35e12 B/s    = 4.52734670 ms"""
    r = run(LLAMA8, peak=HUGE)
    assert r["tpot"] == approx(15_166_611_456 / 3.35e12)
    assert r["tpot"] == approx(4.5273467e-3)
    assert r["bound"] == 2
    # FLOPs: 2 (P_lin + P_head) + a_dec c = 15,009,849,344 + 524,288 * 1152 = 15,613,829,120
    assert r["arithmetic_intensity"] == approx(15_613_829_120 / 15_166_611_456)
    assert r["mbu"] == approx(1.0)
    # memory: weights 16,060,522,496 + KV at S+O = 65,536 * 1280 * 2 = 167,772,160
    #       + activations 1024 tok * (1,441,792 / 32) * 2 B + fp32 logits 128256 * 4 = 92,787,712
    assert r["memory_per_device"] == approx(16_321_082_368)
    assert r["min_devices"] == 1
    # e2e = TTFT + 255 TPOT; 256 generated tokens
    assert r["e2e_latency"] == approx(r["ttft"] + 255 * r["tpot"])
    assert r["throughput"] == approx(256 / r["e2e_latency"])


def test_llama70b_bf16_needs_two_80gb_devices():
    """141.1 GB of bf16 weights (2 B * 70,553,706,496) do not fit one 80 GB device; tp = 2 does."""
    one = run(LLAMA70)
    assert one["fits"] == 0 and math.isnan(one["tpot"])
    assert one["memory_per_device"] > 2 * 70_553_706_496
    assert one["min_devices"] == 2
    two = run(LLAMA70, ly={"tp": 2.0})
    assert two["fits"] == 1
    assert two["memory_per_device"] < 80e9
    assert two["min_devices"] == 2


# --------------------------------------------------------------------- seed 004 equations (1)-(2)
# Llama-2-7B-like dense MHA (32 layers, d 4096, 32 heads = 32 KV heads, FFN 11008, vocab 32000),
# tied so that the seed's N is every parameter read per step: N = 6,476,271,616 + 131,072,000.
MHA7 = S.build_model(n_layers=32, d_model=4096, n_heads=32, n_kv_heads=32, head_dim=128,
                     ffn=11008, vocab=32000, tied=True)
N7 = 6_476_271_616 + 131_072_000
WEIGHTS_ONLY = {"kv_elems_full": 0.0, "attn_flops_full_decode": 0.0, "act_elems": 0.0}


@pytest.mark.parametrize("p_bytes", [1.0, 2.0, 4.0])
@pytest.mark.parametrize("batch", [1, 8, 64])
def test_seed004_weights_only_intensity_is_2B_over_P(p_bytes, batch):
    """Weight bytes P N and FLOPs 2 B N per step: intensity 2B/P FLOP/B (not B P / 2)."""
    md = {**MHA7, **WEIGHTS_ONLY}
    pr = dict.fromkeys(BF16, p_bytes)
    hw = S.simple_device(bw=1e12, capacity=1e13)
    r = run(md, hw=hw, pr=pr, peak=HUGE, batch=batch)
    assert md["params_linear"] + md["params_head"] == N7
    assert r["arithmetic_intensity"] == approx(2 * batch / p_bytes)
    if p_bytes != 2:
        assert r["arithmetic_intensity"] != approx(batch * p_bytes / 2, rel=1e-3)
    else:
        assert r["arithmetic_intensity"] == approx(batch * p_bytes / 2)   # the seed's coincidence
    assert r["tpot"] * 1e12 == approx(p_bytes * N7)                      # weight bytes P N
    flops = r["mfu"] * HUGE * r["tpot"]                                  # m = 1
    assert flops == approx(2 * batch * N7, rel=1e-5)                     # FLOPs 2 B N


def test_seed004_kv_traffic_counts_keys_and_values():
    """MHA KV per token: 2 n_layer d_model P = 2 * 32 * 4096 * 2 B = 524,288 B (the seed's
    n_layer n_ctx d_model P counts only one of K and V). 1000 more prompt tokens at B = 4 add
    4 * 1000 * 524,288 B = 2,097,152,000 B to each decode step's reads."""
    assert MHA7["kv_elems_full"] == 2 * 32 * 4096
    hw = S.simple_device(bw=1e12, capacity=1e13)
    short = run(MHA7, hw=hw, peak=HUGE, batch=4, context=1000)
    long_ = run(MHA7, hw=hw, peak=HUGE, batch=4, context=2000)
    extra = (long_["tpot"] - short["tpot"]) * 1e12
    assert extra == pytest.approx(2_097_152_000, rel=1e-4)
    assert extra == pytest.approx(2 * 4 * 1000 * 32 * 4096 * 2, rel=1e-4)   # twice the seed's term


# ---------------------------------------------------------------------------- MoE experts touched
# DeepSeek-V3-like routing: E = 256 routed experts, k = 8, 58 MoE layers,
# one expert 3 * 7168 * 2048 = 44,040,192 params, fp8 weights (1 B).
DSV3 = {**S.build_model(n_layers=61, d_model=7168, n_heads=128, n_kv_heads=128, head_dim=128,
                        ffn=18432, vocab=129280, n_moe_layers=58, n_experts=256, top_k=8,
                        expert_ffn=2048, shared_ffn=2048),
        "kv_elems_full": 0.0, "attn_flops_full_decode": 0.0, "act_elems": 0.0}
FP8 = {"weight_bytes": 1.0, "act_bytes": 2.0, "kv_bytes": 1.0, "embed_bytes": 2.0}


@pytest.mark.parametrize(("batch", "experts"), [
    (1, 8.0),                     # 256 (1 - (1 - 8/256)^1) = k
    (2, 15.75),                   # 256 (1 - (248/256)^2) = 256 - 240.25
    (64, 222.4424876855104),      # 256 (1 - (31/32)^64)
    (4096, 256.0),                # (31/32)^4096 ~ 1e-57: every expert
])
def test_moe_expected_experts_touched(batch, experts):
    """Memory-bound step on one tier: the expert bytes read are (experts touched per layer)
    * 58 layers * 44,040,192 params * 1 B on top of the dense bytes."""
    hw = S.simple_device(bw=1e12, capacity=1e13)
    assert DSV3["params_expert"] == 44_040_192
    r = run(DSV3, hw=hw, pr=FP8, peak=HUGE, batch=batch)
    # dense bytes read per step: linear layers at 1 B + the LM head at 2 B (the input embedding
    # is stored but only gathered)
    dense = DSV3["params_linear"] * 1.0 + DSV3["params_head"] * 2.0
    touched = (r["tpot"] * 1e12 - dense) / (58 * 44_040_192 * 1.0)
    assert touched == pytest.approx(experts, rel=1e-5)
    assert touched == pytest.approx(256 * (1 - (1 - 8 / 256) ** batch), rel=1e-5)


def test_ep_imbalance_worked_numbers():
    """ep = 8, B = 1, k = 8: n = 8 assignments, mean 1 per rank, sigma = sqrt(8 * 1/8 * 7/8)
    = 0.935414; E[max] = 1 + 0.935414 sqrt(2 ln 8) = 2.907622 = phi (below the cap of 8);
    std[max] = 0.935414 pi / sqrt(12 ln 8) = 0.588277, r = 0.588277 / 2.907622 = 0.202326.
    All-to-all bytes n_a2a = Bg' k d ab (ep-1)/ep phi / tp = (1/8) 8 * 7168 * 2 * 7/8 * 2.907622
    = 36,473.21 B, 2 * 58 of them per step: over 450e9 B/s with 1 us latency,
    t_a2a = 116 * (36,473.21 / 450e9 + 7e-6) = 8.214020e-4 s. Memory bound, no jitter:
    latency_cov = r t_a2a / t_s."""
    n_a2a = (1 / 8) * 8 * 7168 * 2 * 7 / 8 * 2.9076222629073376
    assert n_a2a == pytest.approx(36_473.21, rel=1e-6)
    t_a2a = 116 * (n_a2a / 450e9 + 7e-6)
    assert t_a2a == pytest.approx(8.214020e-4, rel=1e-6)
    hw = S.simple_device(bw=1e12, capacity=1e13, link_latency=1e-6, domain_size=8.0)
    ideal = S.simple_device(bw=1e12, capacity=1e13, link_bandwidth=HUGE, domain_size=8.0)
    r = run(DSV3, hw=hw, pr=FP8, peak=HUGE, ly={"ep": 8.0})
    r0 = run(DSV3, hw=ideal, pr=FP8, peak=HUGE, ly={"ep": 8.0})
    assert r["tpot"] - r0["tpot"] == pytest.approx(t_a2a, rel=1e-4)
    assert r["latency_cov"] == pytest.approx(0.20232611 * t_a2a / r["tpot"], rel=1e-5)


# ------------------------------------------------------------------------ sliding-window prefill
# gpt-oss-like attention: 64 heads of 64 dims; 12 windowed layers with W = 128:
# a_win = 12 * 2 * 64 * (64 + 64) = 196,608 FLOP per (query, key) pair.
A_WIN = 196_608.0


@pytest.mark.parametrize(("s", "pairs"), [
    (100, 5_050),                 # S <= W: 100 * 101 / 2
    (128, 8_256),                 # S = W:  128 * 129 / 2
    (1000, 119_872),              # W(W+1)/2 + (S-W) W = 8,256 + 872 * 128
    (10_000, 1_271_872),          # 8,256 + 9,872 * 128 = 8,256 + 1,263,616
])
def test_sliding_window_prefill_pairs(s, pairs):
    """Compute-bound prompt pass (unlimited bandwidth, 1 PFLOP/s, no overheads): the windowed
    attention adds a_win * pairs(S, W) FLOPs."""
    md = dict(LLAMA8, window=128.0, attn_flops_window_prefill=A_WIN)
    base = dict(LLAMA8, window=128.0, attn_flops_window_prefill=0.0)
    hw = S.simple_device(bw=HUGE, capacity=1e13)
    with_w = run(md, hw=hw, peak=1e15, context=s, output_len=1)
    without = run(base, hw=hw, peak=1e15, context=s, output_len=1)
    assert with_w["ttft"] - without["ttft"] == pytest.approx(A_WIN * pairs / 1e15, rel=1e-4)
    if s > 128:
        assert pairs < s * (s + 1) / 2


def test_sliding_window_decode_reads_at_most_w_keys():
    """Decode at c = S + O/2 = 1000 + 8 = 1008 > W: windowed attention costs a_win * 128."""
    md = dict(LLAMA8, window=128.0, attn_flops_window_decode=A_WIN)
    base = dict(LLAMA8, window=128.0, attn_flops_window_decode=0.0)
    hw = S.simple_device(bw=HUGE, capacity=1e13)
    with_w = run(md, hw=hw, peak=1e15, context=1000, output_len=16)
    without = run(base, hw=hw, peak=1e15, context=1000, output_len=16)
    assert with_w["tpot"] - without["tpot"] == pytest.approx(A_WIN * 128 / 1e15, rel=1e-4)


# --------------------------------------------------------------------------- ring all-reduce
def test_ring_allreduce_worked_number():
    """Llama-3.1-70B at tp = 8, B = 1 decode: each all-reduce moves the hidden state,
    n = 8192 * 2 B = 16,384 B. Ring: 2 (7/8) 16,384 / 450e9 + 2 * 7 * 1e-6
    = 6.3716e-8 + 1.4e-5 = 1.40637156e-5 s; 2 per layer * 80 layers = 2.25019449e-3 s per token.
    Beyond the 4-device domain the same ring runs over scale-out (50e9 B/s, 5 us):
    2 (7/8) 16,384 / 50e9 + 14 * 5e-6 = 7.057344e-5 s; * 160 = 1.12917504e-2 s."""
    ideal = S.simple_device(link_bandwidth=HUGE, scaleout_bandwidth=HUGE, domain_size=8.0)
    nvlink = S.simple_device(link_bandwidth=450e9, link_latency=1e-6, domain_size=8.0)
    base = run(LLAMA70, hw=ideal, ly={"tp": 8.0})
    ring = run(LLAMA70, hw=nvlink, ly={"tp": 8.0})
    assert ring["tpot"] - base["tpot"] == pytest.approx(2.25019449e-3, rel=1e-5)
    small_domain = S.simple_device(link_bandwidth=450e9, link_latency=1e-6, domain_size=4.0,
                                   scaleout_bandwidth=50e9, scaleout_latency=5e-6)
    ideal_so = S.simple_device(link_bandwidth=HUGE, scaleout_bandwidth=HUGE, domain_size=4.0)
    so = run(LLAMA70, hw=small_domain, ly={"tp": 8.0})
    base_so = run(LLAMA70, hw=ideal_so, ly={"tp": 8.0})
    assert so["tpot"] - base_so["tpot"] == pytest.approx(1.12917504e-2, rel=1e-5)
