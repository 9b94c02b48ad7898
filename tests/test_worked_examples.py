"""Worked examples: hand arithmetic, written out, against the kernel (docs/model.md v2).

Numbers are literals worked by hand from public architecture numbers and the equations of
docs/model.md; the model tables come from ``tests.strategies.build_model`` whose group counts are
checked here against the known totals. The device is ``S.simple_device``: one 80 GB DRAM tier at
3.35 TB/s (an H100-like HBM), a 450 GB/s scale-up link in 8-device domains, 700 W TDP / 100 W
idle, served by the ideal engine (no overheads, every collective algorithm at no software cost,
full communication overlap, no batch cap, 8192-token prefill chunks). Where an example needs engine
costs or serial communication, it sets them and says so.

Marked ``nojit``: a handful of points each, so they also run with ``NUMBA_DISABLE_JIT=1``.
"""

from __future__ import annotations

import math

import pytest

from tests import strategies as S

pytestmark = pytest.mark.nojit

HUGE = 1e30           # "infinite" FLOP/s or bandwidth
BF16 = {"weight_bytes": 2.0, "act_bytes": 2.0, "kv_bytes": 2.0, "embed_bytes": 2.0, "attn_weight_bytes": 2.0}
TP1 = {"tp": 1.0, "pp": 1.0, "ep": 1.0, "dp": 1.0, "offload": 0.0, "spill": 0.0}
SERIAL = {"comm_overlap": 0.0}   # an engine that does not hide communication behind compute

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
                           "px": S.simple_px(peak), "batch": batch, "context": context,
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
    # per layer: q, o 2 * 8192 * 8192 + k, v 2 * 8192 * 1024 + MLP 3 * 8192 * 28672 + norms
    assert LLAMA70["params_linear"] == 80 * 855_654_400 + 8_192 == 68_452_360_192


# ------------------------------------------------------------------------ Llama-3.1-8B on an H100
def test_llama8b_bf16_batch1_cannot_beat_its_weight_bytes_over_hbm_bandwidth():
    """Realistic efficiencies and engine overheads: decode is at least the weights read per step
    (every linear layer + LM head = 2 B * 7,504,924,672 = 15,009,849,344 B) over 3.35 TB/s."""
    hw = S.simple_device(bw=3.35e12, capacity=80e9, eff=0.85, layer_overhead=5e-6, jitter=0.05)
    r = S.evaluate_one({"hw": hw, "md": LLAMA8, "pr": BF16, "ly": TP1,
                        "px": S.simple_px(989e12, eff=0.7), "batch": 1, "context": 1024,
                        "output_len": 256})
    assert r["fits"] == 1
    lower = 15_009_849_344 / 3.35e12            # = 4.4806 ms
    assert r["tpot"] >= lower
    assert r["tpot"] < 3 * lower                # and it is memory bound, not wildly above
    assert r["bound"] == 2                      # DRAM
    assert r["throughput"] <= 256 / (r["ttft"] + 255 * lower)


def test_llama8b_ideal_device_decode_step_exactly():
    """eff = 1, ideal engine, unlimited FLOP/s, B = 1, S = 1024, O = 256 (mean length c = 1152):
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
    assert r["host_fraction"] == 0.0
    # e2e = TTFT + 255 TPOT; 256 generated tokens
    assert r["e2e_latency"] == approx(r["ttft"] + 255 * r["tpot"])
    assert r["throughput"] == approx(256 / r["e2e_latency"])


def test_llama8b_ideal_device_prefill_exactly():
    """The prompt of 1024 tokens in one pass (1024 <= the 8192-token chunk), unlimited FLOP/s:
    weights read once 15,009,849,344 B
    + KV written 65,536 * 1024 * 2 B =       134,217,728 B
    + activations 2 * 1024 * 1,441,792 * 2 B = 5,905,580,032 B
    = 21,049,647,104 B / 3.35e12 B/s = 6.28347675 ms (no request or iteration overheads).
    Power (section 9): the device streams DRAM at 3.35 TB/s all of every phase (no FLOP energy
    here), so with a 145 W static floor and 160 pJ per DRAM byte it draws 145 + 160e-12 * 3.35e12
    = 681 W, below the 700 W TDP; tokens/J = throughput / 681 W. (Before issue 21: the TDP, as
    any busy phase drew it.)"""
    hw = S.simple_device(bw=3.35e12, capacity=80e9, idle=145.0, energy_dram=160e-12)
    r = run(LLAMA8, hw=hw, peak=HUGE)
    assert r["ttft"] == approx(21_049_647_104 / 3.35e12)
    assert r["ttft"] == approx(6.28347675e-3)
    assert r["power"] == approx(681.0)
    assert r["tokens_per_joule"] == approx(256 / (6.28347675e-3 + 255 * 4.5273467e-3) / 681)
    # with 280 pJ/B the activity exceeds the board's limit: capped at the 700 W TDP
    capped = run(LLAMA8, hw={**hw, "energy_dram": 280e-12}, peak=HUGE)
    assert capped["power"] == approx(700.0)


def test_engine_overheads_worked_numbers():
    """The same point under an engine with vLLM-like host costs (2.5 ms per forward pass, 8 ms
    per request, 3 us per layer and pass) and nothing else (sections 7-9):
        TPOT = 4.52734670 + 2.5 + 32 * 0.003 ms                 =  7.12334670 ms
        TTFT = 6.28347675 + 2.5 + 32 * 0.003 + 8 ms (one pass)  = 16.87947675 ms
    The device moves the same bytes as without the engine, now over longer phases (section 9,
    145 W static, 160 pJ per DRAM byte): a decode step's 4.52734670 ms x 3.35 TB/s =
    15,166,611,445 B in 7.12334670 ms, P_dec = 145 + 160e-12 * 15,166,611,445 / 7.1233467e-3
    = 485.6626 W; the prompt's 21,049,647,104 B in 16.87947675 ms, P_pre = 344.5289 W;
    e2e = 16.87947675 + 255 * 7.12334670 ms = 1.83333289 s;
    power = (344.5289 * 0.01687948 + 485.6626 * 255 * 0.00712335) / 1.83333289 = 484.363 W
    (before issue 21, busy-fraction power with a 100 W idle: 479.884 W)."""
    hw = S.simple_device(iteration_overhead=2.5e-3, request_overhead=8e-3, layer_overhead=3e-6,
                         idle=145.0, energy_dram=160e-12)
    r = run(LLAMA8, hw=hw, peak=HUGE)
    assert r["tpot"] == approx(7.1233467e-3)
    assert r["ttft"] == approx(16.87947675e-3)
    assert r["e2e_latency"] == approx(1.83333289, rel=1e-6)
    p_dec = 145 + 160e-12 * 4.5273467e-3 * 3.35e12 / 7.1233467e-3
    p_pre = 145 + 160e-12 * 21_049_647_104 / 16.87947675e-3
    assert p_dec == approx(485.6626, rel=1e-6) and p_pre == approx(344.5289, rel=1e-6)
    energy = p_pre * 16.87947675e-3 + p_dec * 255 * 7.1233467e-3
    assert r["power"] == approx(energy / 1.83333289, rel=1e-5)
    assert r["power"] == approx(484.363, rel=1e-5)
    assert r["bound"] == 2   # the step is mostly memory time (4.53 of 7.12 ms)


def test_llama70b_bf16_needs_two_80gb_devices():
    """141.1 GB of bf16 weights (2 B * 70,553,706,496) do not fit one 80 GB device (code 9, the
    memory and min_devices kept to say why); tp = 2 does."""
    one = run(LLAMA70)
    assert one["fits"] == 0 and math.isnan(one["tpot"])
    assert one["infeasible_reason"] == 9
    assert one["memory_per_device"] > 2 * 70_553_706_496
    assert one["min_devices"] == 2
    two = run(LLAMA70, ly={"tp": 2.0})
    assert two["fits"] == 1
    assert two["memory_per_device"] < 80e9
    assert two["min_devices"] == 2


# --------------------------------------------------------------------------- pipeline, rule P
def test_llama70b_pp2_balanced_ends_worked_numbers():
    """Llama-3.1-70B, pp = 2, B = 1, S = 1024, O = 256 (section 3, rule P).
    Layer unit w_L = 2 B * 68,452,360,192 / 80 = 1,711,309,004.8 B; head and embedding
    h = e = 2 * 1,050,673,152 / w_L = 1.227918 units; (80 + 2.455835) / 2 = 41.23 -> the busiest
    stage holds L_s = 42 layers and no end (W_end = max(0, 2,101,346,304 - 42 w_L) = 0),
    sf = 42 / 80 = 0.525.
    Memory per device: weights 2 * 68,452,360,192 * 0.525 = 71,874,978,201.6
      + KV at S + O: 163,840 * 1280 * 2 * 0.525 = 220,200,960
      + activations 1024 * 90,112 * 2 + logits 128,256 * 4 = 185,062,400 -> 72,280,241,561.6 B.
    Decode (one micro-batch through both stages, section 7): a stage pass reads
      71,874,978,201.6 + KV 163,840 * 1152 * 2 * 0.525 = 198,180,864
      + activations 2 * 7,208,960 * 0.525 * 2 = 15,138,816 -> 72,088,297,881.6 B = 21.5188949 ms;
      TPOT = 2 * 21.5188949 ms + one hop of 8192 * 2 B / 450e9 = 43.0378262 ms.
    Prefill (compute bound at 989 TFLOP/s): a stage computes 2 * 1024 * 68,452,360,192 * 0.525
      + 2,621,440 * 1024 * 1025 / 2 * 0.525 = 74,322,236,827,238.4 FLOP = 75.1488744 ms, and
      TTFT = (m + pp - 1) * that + a hop of 1024 * 8192 * 2 B / 450e9 = 150.335032 ms.
    On one device large enough for the whole model the step reads 139.41 GB (41.62 ms): the
    pipeline's busiest stage (42 of 80 layers) makes pp = 2 slower at B = 1, never faster."""
    assert LLAMA70["attn_flops_full_prefill"] == 80 * 2 * 64 * 256 == 2_621_440
    assert LLAMA70["act_elems"] == 80 * (4 * 8192 + 2 * 28672) == 7_208_960
    w_layer = 2 * 68_452_360_192 / 80
    assert math.ceil((80 + 2 * 2 * 1_050_673_152 / w_layer) / 2) == 42
    r = run(LLAMA70, ly={"pp": 2.0})
    assert r["fits"] == 1
    assert r["memory_per_device"] == approx(72_280_241_561.6)
    assert r["tpot"] == approx(2 * 72_088_297_881.6 / 3.35e12 + 16_384 / 450e9)
    assert r["tpot"] == approx(43.0378262e-3)
    assert r["ttft"] == approx(2 * 74_322_236_827_238.4 / 989e12 + 16_777_216 / 450e9)
    assert r["ttft"] == approx(150.335032e-3)
    big = run(LLAMA70, hw=S.simple_device(capacity=200e9))
    assert big["tpot"] == approx(41.6156388e-3)
    assert big["tpot"] < r["tpot"]


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
FP8 = {"weight_bytes": 1.0, "act_bytes": 2.0, "kv_bytes": 1.0, "embed_bytes": 2.0, "attn_weight_bytes": 1.0}


def test_dsv3_like_parameter_groups():
    """MHA attention 4 * 7168 * 16384 = 469,762,048 and two norms per layer, 3 dense MLP layers
    of 3 * 7168 * 18432, 58 MoE layers of a router 7168 * 256 and a shared expert
    3 * 7168 * 2048, a final norm: P_lin = 32,506,213,376; LM head 129,280 * 7168 = 926,679,040."""
    assert DSV3["params_linear"] == (61 * (469_762_048 + 2 * 7168) + 3 * 3 * 7168 * 18432
                                     + 58 * (7168 * 256 + 3 * 7168 * 2048) + 7168)
    assert DSV3["params_linear"] == 32_506_213_376
    assert DSV3["params_head"] == 926_679_040
    assert DSV3["params_expert"] == 44_040_192


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
    r = run(DSV3, hw=hw, pr=FP8, peak=HUGE, batch=batch)
    # dense bytes read per step: linear layers at 1 B + the LM head at 2 B (the input embedding
    # is stored but only gathered)
    dense = 32_506_213_376 * 1.0 + 926_679_040 * 2.0
    touched = (r["tpot"] * 1e12 - dense) / (58 * 44_040_192 * 1.0)
    assert touched == pytest.approx(experts, rel=1e-5)
    assert touched == pytest.approx(256 * (1 - (1 - 8 / 256) ** batch), rel=1e-5)


def test_ep_imbalance_worked_numbers():
    """ep = 8, B = 1, k = 8: n = 8 assignments, mean 1 per rank, sigma = sqrt(8 * 1/8 * 7/8)
    = 0.935414; E[max] = 1 + 0.935414 sqrt(2 ln 8) = 2.907622 = phi (below the cap of 8);
    std[max] = 0.935414 pi / sqrt(12 ln 8) = 0.588277, r = 0.588277 / 2.907622 = 0.202326.
    Whole sequences (section 3 (2)): the rank that owns the sequence holds g' = ceil(1/8) = 1 of
    it. An all-to-all (eq. (10)) moves the larger of what the busiest rank sends, its own token's
    k = 8 assignments, 7/8 of them off the rank: 7; and what it receives, phi times its share of
    all of them, 2.907622 * 8 / 8 * 7/8 = 2.544169: so n_a2a = 7 * 7168 * 2 = 100,352 B (before
    issue 21: its own token's assignments times phi, 291,785.71 B), 2 * 58 of them per step: on a
    switched 450e9 B/s link with 1 us per step and no software cost, one round each (section 5):
    t_a2a = 116 * (100,352 / 450e9 + 1e-6) = 1.4186852e-4 s (an engine that does not overlap
    communication: with the ideal engine's full overlap it hides behind the 41.6 ms memory time).
    The busiest rank holds 32 experts per layer and receives phi k / ep = 2.907622 assignments,
    each to one of them (section 6): u = 1 - (31/32)^2.907622 = 0.0881805 of 58 * 32 *
    44,040,192 B = 81,738,596,352 B, i.e. 7,207,750,063 B, on top of 32,506,213,376 * 1 +
    926,679,040 * 2 = 34,359,571,456 B dense: t_mem = 41.5673215 ms at 1 TB/s, TPOT = t_mem +
    t_a2a = 41.7091900 ms. Memory bound, no jitter (section 10): latency_cov = r (t_a2a + t_mem *
    expert bytes / all bytes) / t_s = 0.202326 * (0.1418685 + 41.5673215 * 7,207,750,063 /
    41,567,321,519) / 41.7091900 = 0.0356521."""
    phi, r_imb = 2.907622262907338, 0.20232611052506427
    sigma = math.sqrt(8 * (1 / 8) * (7 / 8))
    assert phi == approx(1 + sigma * math.sqrt(2 * math.log(8)), rel=1e-12)
    assert r_imb == approx(sigma * math.pi / math.sqrt(12 * math.log(8)) / phi, rel=1e-12)
    sent, received = 1 * 8 * 7 / 8, phi * 1 * 8 / 8 * 7 / 8
    assert received == pytest.approx(2.544169, rel=1e-6)
    n_a2a = max(sent, received) * 7168 * 2
    assert n_a2a == 100_352
    t_a2a = 116 * (n_a2a / 450e9 + 1e-6)
    assert t_a2a == pytest.approx(1.4186852e-4, rel=1e-6)
    u = 1 - (31 / 32) ** phi
    experts = 81_738_596_352 * u
    dense = 34_359_571_456
    t_mem = (dense + experts) / 1e12
    assert t_mem == pytest.approx(41.5673215e-3, rel=1e-8)

    serial = S.simple_device(bw=1e12, capacity=1e13, link_latency=1e-6, **SERIAL)
    free = S.simple_device(bw=1e12, capacity=1e13, link_bandwidth=HUGE, **SERIAL)
    r = run(DSV3, hw=serial, pr=FP8, peak=HUGE, ly={"ep": 8.0})
    r0 = run(DSV3, hw=free, pr=FP8, peak=HUGE, ly={"ep": 8.0})
    assert r0["tpot"] == pytest.approx(t_mem, rel=1e-6)
    assert r["tpot"] == pytest.approx(41.7091900e-3, rel=1e-6)
    assert r["tpot"] - r0["tpot"] == pytest.approx(t_a2a, rel=1e-4)
    cov = r_imb * (t_a2a + t_mem * experts / (dense + experts)) / (t_mem + t_a2a)
    assert cov == pytest.approx(0.0356521, rel=1e-5)
    assert r["latency_cov"] == pytest.approx(cov, rel=1e-5)
    # the ideal engine hides the all-to-alls behind the memory time
    hidden = run(DSV3, hw=S.simple_device(bw=1e12, capacity=1e13, link_latency=1e-6), pr=FP8,
                 peak=HUGE, ly={"ep": 8.0})
    assert hidden["tpot"] == pytest.approx(t_mem, rel=1e-6)


# ---------------------------------------------------------------------------------------- MLA
# DeepSeek-V3 attention (MLA: kv_lora_rank 512, qk_rope 64, qk_nope 128, v_head 128, 128 heads)
# on a dense 61-layer trunk. The cache holds one latent of 512 + 64 = 576 elements per layer and
# token, replicated over tp; decode attends in the absorbed form (d_qk = 576, d_v = 512),
# prefill in the expanded one (d_qk = 128 + 64 = 192, d_v = 128).
MLA = S.build_model(n_layers=61, d_model=7168, n_heads=128, n_kv_heads=128, head_dim=128,
                    ffn=18432, vocab=129280, mla=(512, 64, 128, 128))


def test_mla_cache_and_attention_per_token():
    assert MLA["kv_elems_full"] == 61 * (512 + 64) == 35_136
    assert MLA["kv_tp_shardable"] == 0.0
    assert MLA["attn_flops_full_decode"] == 61 * 2 * 128 * (576 + 512) == 16_990_208
    assert MLA["attn_flops_full_prefill"] == 61 * 2 * 128 * (192 + 128) == 4_997_120


def test_mla_latent_is_replicated_but_its_attention_is_split_over_tp():
    """tp = 8, B = 4, prompt 1000 -> 2000 tokens (section 3 (3), section 7):
    memory bound (unlimited FLOP/s): every device reads the whole latent (f_kv = 1 for MLA), so a
    decode step reads 4 * 1000 * 35,136 * 2 B = 281,088,000 B more per device, 1000 tokens'
    worth at 1 TB/s = 0.281088 ms;
    compute bound (unlimited bandwidth, 1 PFLOP/s): the heads are split, so attention adds
    4 * 1000 * 16,990,208 / 8 FLOP = 8.495104e9 FLOP per device = 8.495104 us."""
    free_link = {"link_bandwidth": HUGE}
    mem = S.simple_device(bw=1e12, capacity=1e13, **free_link)
    a, b = (run(MLA, hw=mem, peak=HUGE, batch=4, context=s, ly={"tp": 8.0}) for s in (1000, 2000))
    assert (b["tpot"] - a["tpot"]) * 1e12 == pytest.approx(281_088_000, rel=1e-4)
    comp = S.simple_device(bw=HUGE, capacity=1e13, **free_link)
    a, b = (run(MLA, hw=comp, peak=1e15, batch=4, context=s, ly={"tp": 8.0}) for s in (1000, 2000))
    assert b["tpot"] - a["tpot"] == pytest.approx(4 * 1000 * 16_990_208 / 8 / 1e15, rel=1e-4)
    assert b["tpot"] - a["tpot"] == pytest.approx(8.495104e-6, rel=1e-4)


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


def test_chunked_window_decode_mean_keys():
    """Chunked attention (Llama 4) with W = 128, S = 1000, O = 16: token i attends (i mod 128) + 1
    keys; tokens 1000..1015 sit at positions 104..119 of their chunk, so they attend 105..120
    keys, mean 112.5 (not min(c, W) = 128 of a sliding window)."""
    md = dict(LLAMA8, window=128.0, window_chunked=1.0, attn_flops_window_decode=A_WIN)
    base = dict(md, attn_flops_window_decode=0.0)
    hw = S.simple_device(bw=HUGE, capacity=1e13)
    with_w = run(md, hw=hw, peak=1e15, context=1000, output_len=16)
    without = run(base, hw=hw, peak=1e15, context=1000, output_len=16)
    assert sum(range(105, 121)) / 16 == 112.5
    assert with_w["tpot"] - without["tpot"] == pytest.approx(A_WIN * 112.5 / 1e15, rel=1e-4)


# --------------------------------------------------------------------------- all-reduce
#: a collective library with a ring only: no custom all-reduce, no in-switch reduction, no cost
RING_ONLY = {"custom_ar_max_bytes": 0.0, "in_switch_overhead": math.inf, "fastest_collective": 0.0}


def test_allreduce_worked_numbers():
    """Llama-3.1-70B at tp = 8, B = 1 decode, an engine that does not overlap communication:
    each all-reduce moves the hidden state, M = 8192 * 2 B = 16,384 B (section 5, eq. (9)).
    Ring on a switched 450e9 B/s link, 1 us per step, no software cost: 2 (7/8) 16,384 / 450e9
    + 2 * 7 * 1e-6 = 1.40637156e-5 s; 2 per layer * 80 layers = 2.25019449e-3 s per token.
    A custom one-shot all-reduce as TensorRT-LLM's (2.5 us per call, 0.7 of an 0.82-efficient
    link, one-shot below 500 kB at 8 devices): 2.5e-6 + ceil(log2 8) * 1e-6 + 7 * 16,384 /
    (450e9 * 0.82 * 0.7) = 5.94401084e-6 s; * 160 = 9.51041734e-4 s.
    Beyond a 4-device domain the group runs over scale-out (50e9 B/s, 5 us per step), where the
    library takes the faster of a ring, 2 (7/8) 16,384 / 50e9 + 14 * 5e-6 = 7.057344e-5 s, and a
    tree, 2 * 3 * 5e-6 + 2 * 16,384 / 50e9 = 3.065536e-5 s: * 160 = 4.9048576e-3 s."""
    ideal = S.simple_device(link_bandwidth=HUGE, scaleout_bandwidth=HUGE, domain_size=8.0,
                            **SERIAL)
    nvlink = S.simple_device(link_bandwidth=450e9, link_latency=1e-6, domain_size=8.0,
                             **SERIAL, **RING_ONLY)
    base = run(LLAMA70, hw=ideal, ly={"tp": 8.0})
    ring = run(LLAMA70, hw=nvlink, ly={"tp": 8.0})
    assert ring["tpot"] - base["tpot"] == pytest.approx(2.25019449e-3, rel=1e-5)
    custom = S.simple_device(link_bandwidth=450e9, link_latency=1e-6, domain_size=8.0,
                             link_efficiency=0.82, custom_ar_overhead=2.5e-6,
                             custom_ar_efficiency=0.7, custom_ar_max_bytes=8e6,
                             custom_ar_max_group=8.0, oneshot_max_bytes=1e6,
                             oneshot_max_bytes_large=5e5, fastest_collective=0.0,
                             in_switch_overhead=math.inf, **SERIAL)
    one = run(LLAMA70, hw=custom, ly={"tp": 8.0})
    assert one["tpot"] - base["tpot"] == pytest.approx(9.51041734e-4, rel=1e-5)
    small_domain = S.simple_device(link_bandwidth=450e9, link_latency=1e-6, domain_size=4.0,
                                   scaleout_bandwidth=50e9, scaleout_latency=5e-6, **SERIAL,
                                   **RING_ONLY)
    ideal_so = S.simple_device(link_bandwidth=HUGE, scaleout_bandwidth=HUGE, domain_size=4.0,
                               **SERIAL)
    so = run(LLAMA70, hw=small_domain, ly={"tp": 8.0})
    base_so = run(LLAMA70, hw=ideal_so, ly={"tp": 8.0})
    assert so["tpot"] - base_so["tpot"] == pytest.approx(4.9048576e-3, rel=1e-5)


def test_full_overlap_hides_the_ring_behind_the_weight_reads():
    """The same tp = 8 step with full overlap (comm_overlap = 1): the stage pass is
    max(t_mem, t_comm) (section 5), and the 2.25 ms of ring all-reduces hide behind the weight reads
    of one device: its share of the linear layers alone, 2 * 68,452,360,192 / 8 = 17.1 GB,
    takes 5.1 ms at 3.35 TB/s."""
    free = run(LLAMA70, hw=S.simple_device(link_bandwidth=HUGE), ly={"tp": 8.0})
    ring = run(LLAMA70, hw=S.simple_device(link_bandwidth=450e9, link_latency=1e-6,
                                           **RING_ONLY), ly={"tp": 8.0})
    assert free["tpot"] > 2 * 68_452_360_192 / 8 / 3.35e12 > 2.25019449e-3
    assert ring["tpot"] == pytest.approx(free["tpot"], rel=1e-6)
