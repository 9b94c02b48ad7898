"""The seeds' own numbers, each with the table or section it comes from.

Seed 002: Sharma, "AI Accelerators for Large Language Model Inference: Architecture Analysis and
Scaling Strategies" (a survey). Seed 004: Brunetta et al., "Beyond Throughput: Performance and
Energy Insights of LLM Inference Across AI Accelerators" (measurements). Nothing else in the
report is typed in by hand; seed 004's measured numbers with their assumptions are in
:mod:`scripts.seeds.seed004_rows`.
"""

from __future__ import annotations

# ------------------------------------------------------------------------------ seed 002
#: abstract, sections IV-B and VIII: "performance variations of up to 3.7x between architectures"
SEED_VARIATION = 3.7
#: abstract / section VIII: "expert parallelism: 8.4x parameter-to-compute advantage, 2.1x
#: latency variance versus tensor parallelism"
SEED_EP_PARAM_COMPUTE = 8.4
SEED_EP_LATENCY_VARIANCE = 2.1

#: the seven accelerators of seed 002 Fig. 8: catalog id -> the seed's label
FIG8 = {"b200": "NVIDIA Blackwell", "tpu-v7": "Google TPU v7", "mi300x": "AMD MI300X",
        "gaudi3": "Intel Gaudi 3", "inferentia2": "AWS Inferentia2", "cs-3": "Cerebras WSE-3",
        "groq-lpu": "Groq LPU"}
#: the four large HBM accelerators among them (Fig. 7's "HBM-focused" group plus Gaudi 3)
FIG8_HBM = ("b200", "tpu-v7", "mi300x", "gaudi3")
#: the regime columns of Fig. 8, in the order of sweep.analysis.regimes.REGIMES
REGIME_KEYS = ("low_latency", "moderate_batch", "high_throughput", "long_context",
               "multi_model", "moe")
RATING_VALUE = {"Limited": 0, "Fair": 1, "Good": 2, "Very Good": 3, "Excellent": 4}
#: seed 002 Fig. 8 (qualitative ratings), the six regime columns in REGIME_KEYS order
FIG8_RATINGS = {
    "b200": ("Very Good", "Excellent", "Excellent", "Excellent", "Excellent", "Excellent"),
    "tpu-v7": ("Very Good", "Excellent", "Excellent", "Excellent", "Very Good", "Excellent"),
    "mi300x": ("Very Good", "Very Good", "Very Good", "Excellent", "Very Good", "Very Good"),
    "gaudi3": ("Good", "Very Good", "Good", "Very Good", "Very Good", "Good"),
    "inferentia2": ("Good", "Very Good", "Very Good", "Good", "Excellent", "Good"),
    "cs-3": ("Excellent", "Very Good", "Excellent", "Good", "Good", "Very Good"),
    "groq-lpu": ("Excellent", "Good", "Fair", "Limited", "Fair", "Fair"),
}

#: the old single-device headline of the README's default grid: "throughput differs up to
#: 1846.1x across hardware (best cs-3, worst mtia-v2) at model=qwen3-14b, batch=1,
#: context=128, precision=bf16, parallelism=tp1" (grid values, one device each)
OLD_HEADLINE = {"ratio": 1846.1, "best": "cs-3", "worst": "mtia-v2",
                "where": {"model": "qwen3-14b", "batch": 1, "context": 128, "precision": "bf16"},
                "layout": "tp1"}

#: seed 002 Table III (Llama-2-70B, single stream, 1024-token input):
#: id -> (TTFT s or None, generation tok/s or None, power W or None, tokens/J or None, note)
SEED2_T3 = {
    "b200": (0.450, 7783.0, 1000.0, 7.8, "TTFT is the MLPerf limit; 7 783 is marked as an "
             "MLPerf figure (‡), not single-stream"),
    "tpu-v7": (None, None, None, None, "ND (~10 000 tok/s 'anecdotal')"),
    "mi300x": (None, 2908.0, 750.0, 3.9, "server scenario (‡), not single-stream"),
    "gaudi3": (None, None, 900.0, None, "ND"),
    "cs-3": (None, 2100.0, 23000.0, 0.09, "'2 100 (system)'; the text of the same section "
             "says 86.5 tok/s"),
    "gc200": (None, None, 300.0, None, "ND"),
    "groq-lpu": (0.220, 185.0, 215.0, 0.86, "LLMPerf '24"),
}
#: seed 002 Table IV (Llama-2-70B batch processing): id -> (system, devices, tok/s, batch, CoV)
SEED2_T4 = {
    "b200": ("B200 NVL8", 8, 4560.0, "128†", "0.12†"),
    "tpu-v7": ("TPU v7 8-chip", 8, 4380.0, "96†", "0.08†"),
    "mi300x": ("MI300X x8", 8, 3240.0, "64†", "0.15†"),
    "gaudi3": ("Gaudi 3 x8", 8, 1840.0, "32†", "0.23†"),
    "cs-3": ("single CS-3", 1, 5280.0, "64†", "0.05†"),
    "gc200": ("IPU-POD64", 64, 780.0, "16", "0.32†"),
    "groq-lpu": ("Groq LPU-Quad", 4, 450.0, "8", "0.02†"),
}
#: seed 002 Table II values to set against the catalog: id -> {field: seed value in SI units}
SEED2_T2 = {
    "b200": {"bf16 peak": 2.2e15, "fp8 peak": 4.5e15, "memory": 192e9, "DRAM bw": 8e12,
             "TDP": 1000.0},
    "tpu-v7": {"fp8 peak": 4.6e15, "memory": 192e9, "DRAM bw": 7.37e12},
    "mi300x": {"bf16 peak": 1.307e15, "memory": 192e9, "DRAM bw": 5.3e12, "TDP": 750.0},
    "gaudi3": {"bf16 peak": 1.835e15, "memory": 128e9, "DRAM bw": 3.7e12, "TDP": 900.0},
    "cs-3": {"bf16 peak": 125e15, "memory": 44e9, "SRAM bw": 21e15, "TDP": 23000.0},
    "gc200": {"bf16 peak": 250e12, "memory": 0.9e9, "SRAM bw": 45e12, "TDP": 275.0},
    "groq-lpu": {"bf16 peak": 188e12, "memory": 0.23e9, "SRAM bw": 80e12, "TDP": 215.0},
    "mtia-v2": {"bf16 peak": 177e12, "memory": 128e9, "DRAM bw": 0.205e12, "TDP": 90.0},
    "inferentia2": {"bf16 peak": 190e12, "memory": 32e9, "DRAM bw": 0.82e12},
}

# ------------------------------------------------------------------------------ seed 004
#: section IV-C: total (input + output) tokens/s of Llama-3.1-8B bf16 at batch 1
SEED4_B1 = {"a100-sxm-80g": 215.0, "cs-3": 3609.0, "sn40l": 2024.0}
SEED4_CS3_B8 = 12327.0  # section IV-C, peak-throughput paragraph
SEED4_SN40L_PEAK = 3907.0  # same paragraph
#: Fig. 8 text: ITL 18.8x / 13.1x lower than the A100's (A100 ITL / device ITL)
SEED4_ITL_GAIN = {"cs-3": 18.8, "sn40l": 13.1}
#: Fig. 8 text: "the improvement in TTFT is only 35% for Cerebras and 20% for SambaNova", read
#: as a TTFT 35% / 20% lower than the A100's (A100 TTFT / device TTFT = 1 / (1 - x))
SEED4_TTFT_LOWER = {"cs-3": 0.35, "sn40l": 0.20}
#: section IV-A, Fig. 3: W8A8 over bf16 on Hopper (throughput, energy), on MI300X (throughput)
SEED4_FP8_HOPPER = (0.20, 0.38)
SEED4_FP8_HOPPER_ENERGY = (0.34, 0.46)
SEED4_FP8_MI300X = (0.0, 0.20)
#: section IV-B, Fig. 4: TP throughput gain over one GPU at batch 128 x T ("12% to 34%",
#: "32% to 140%"), i.e. scaling efficiency at most 67% (TP2) and 60% (TP4)
SEED4_TP_GAIN = {2: (0.12, 0.34), 4: (0.32, 1.40)}
SEED4_TP_EFF = {2: 0.67, 4: 0.60}
#: section IV-B, Fig. 5 (FP8, best configuration, per GPU): Llama-4 Scout over Llama-3.3-70B
SEED4_SCOUT_VS_70B = 1.17
SEED4_SCOUT_VS_70B_ENERGY = 1.52
#: section IV-B, Fig. 6: throughput TP4 / EP4, FP8 ("up to" where the seed says so)
SEED4_TP_OVER_EP = {
    ("mixtral-8x22b", "h100-sxm"): 1.61, ("mixtral-8x22b", "mi300x"): 2.7,
    ("qwen3-235b-a22b", "h100-sxm"): 1.04, ("qwen3-235b-a22b", "mi300x"): 1.16,
    ("llama-4-scout", "h100-sxm"): 1.34, ("llama-4-scout", "mi300x"): 1.06,
}
