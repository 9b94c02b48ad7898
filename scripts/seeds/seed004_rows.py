"""Seed 004's measured numbers (single-GPU vLLM, dataflow systems at batch 1, average powers),
each with the workload the model is evaluated at and why.

The numbers are those of the seed's text (transcribed in scripts/measurements/inputs/seed004.csv,
rows 1-25; the "F8" rows are the Fig. 8 ratios of section IV-C). The seed states neither prompt
nor output lengths (its data set is a distribution, :data:`scripts.seeds.spec.WORKLOAD_RULE`),
often not the batch, the precision or how many SN40L RDUs served a model; every such choice is
stated in ``why``. Nothing here was chosen to make a prediction fit.
"""

from __future__ import annotations

from dataclasses import dataclass

from .spec import LMSYS_OUTPUT_CV

#: batch sets and precisions of the single-GPU experiments (section III-C1, Figs. 1-3)
SINGLE_GPU_MODELS = ("llama-3.1-8b", "qwen3-14b", "mistral-small-3.1-24b", "qwen3-32b")
SINGLE_GPU_BATCHES = (16, 32, 64, 128)

#: what a quantity depends on, for the independence check (``DERIVED``)
DEPENDS = {"total_throughput": ("ttft", "tpot"), "ttft": ("ttft",), "tpot": ("tpot",),
           "total_tokens_per_joule": ("ttft", "tpot", "power"), "power": ("power",),
           "system_power": ("power",), "itl_gain": ("tpot",), "ttft_gain": ("ttft",)}
#: catalog parameters whose values were derived from seed 004's measured numbers: (kind, id,
#: parameter) -> (what they influence, how). Listed rows are then not independent checks. A flag
#: is shown only while the parameter's source or rule still cites seed 004.
DERIVED = {
    ("engine", "cerebras", "request_overhead"): ("ttft", "set from seed 004's CS-3 TTFT (35% "
                                                 "below the A100's)"),
    ("engine", "sambaflow", "request_overhead"): ("ttft", "fitted to seed 004's SN40L TTFTs"),
    ("engine", "sambaflow", "prefill_compute.bf16"): ("ttft", "fitted to seed 004's SN40L "
                                                      "TTFTs"),
    ("engine", "sambaflow", "iteration_overhead"): ("tpot", "chosen with seed 004's 5.6 ms "
                                                    "SN40L ITL in view"),
    ("hardware", "cs-3", "power.idle"): ("power", "from seed 004's idle ~4.5 kW below the "
                                         "inference draw"),
    ("hardware", "cs-3", "power.host_power"): ("power", "from seed 004's 24 kW per CS-3 node "
                                               "(Table I)"),
    ("hardware", "sn40l", "power.tdp"): ("power", "from seed 004's ~10 kW per 16-RDU node "
                                         "(Table I)"),
    ("hardware", "sn40l", "power.host_power"): ("power", "from seed 004's ~10 kW per 16-RDU "
                                                "node (Table I)"),
}


@dataclass(frozen=True)
class Measured:
    """One measured number and the point(s) the model is evaluated at.

    ``kind``: ``point`` (one point), ``cap`` (the largest batch up to ``batch`` that fits: vLLM
    admits sequences up to its ``max_num_seqs``), ``peak`` (the best over batch 1..``batch``),
    ``mean`` (mean over the single-GPU experiments), ``ratio`` (A100's value / the device's, same
    workload). ``metric``: a result variable, ``total_tokens_per_joule`` (input + output tokens
    per joule at ``boundary``) or ``itl_gain`` / ``ttft_gain`` (ratios)."""

    key: str
    quantity: str
    hardware: str
    engine: str
    model: str
    layout: str
    batch: int
    value: float
    unit: str
    metric: str
    where: str
    why: str
    kind: str = "point"
    precision: str = "bf16"
    boundary: str = ""
    cause_high: str = ""  # a key of CAUSES
    cause_low: str = ""
    #: requests of the data set each replica served to the last (a ``cap`` row evaluated as a
    #: finite run, docs/model.md section 13.7; 0: the steady state at the cap; a ``mean`` row:
    #: each experiment's mean power over such a run, 0: its static batch's)
    requests: int = 0


_B1 = "batch 1 as stated"
_NOT_STATED_B1 = "batch 1 (not stated; as the paragraph's dataflow rows: 3609 / 24,200 = 0.149)"
#: the SN40L RDU count (not stated; note "SN40L" under the table): Llama-3.1-8B on 8 RDUs, and
#: Llama-3.3-70B on 16, the only count whose HBM streams its weights in the measured 5.6 ms ITL
_SN8 = "8 RDUs (`tp8`; count not stated, see the SN40L note)"
_SN16 = ("16 RDUs (`tp16`; count not stated: 8 RDUs' HBM cannot stream the weights in the "
         "measured ITL, see the SN40L note)")
_TP_A100 = "4 A100s with tensor parallelism as stated"
#: the data set each instance processed (section III-B: the first 1,000 conversations; III-C2:
#: "tasking each DP instance to process the whole dataset")
SEED004_REQUESTS = 1000
_RUN = ("a finite run: the 1,000 conversations queued at once and served to the last "
        "(section III-C1: \"the entire inference dataset as a batch workload\"; docs/model.md "
        "section 13.7), output lengths spread as LMSYS-Chat-1M's responses (`output_cv` "
        f"{LMSYS_OUTPUT_CV}, see the workload note)")
#: likely causes of misses: key -> text (listed under the table). ``{name}`` fields are filled
#: from the predictions by :func:`scripts.seeds.seed004.cause_values`.
CAUSES = {
    "sn40l": ("the SN40L configuration, which seed 004 does not state, and the model's step for "
              "it: see the note \"SN40L: which configuration?\" below (what bounds the step on "
              "8 and 16 RDUs, and what the measured ITL needs)"),
    "sn40l-batch": ("the model's SN40L step on 8 RDUs is {bound_11}-bound and hardly grows with "
                    "batch, so its throughput at batch {batch_11} is {growth_11} its batch-1 "
                    "figure (row 3), where the measured peak is {seed_growth_11} the measured "
                    "batch-1 throughput; the model's batch-1 row is {ratio_3} of the measured and "
                    "this one {ratio_11}, so the step's growth with batch is what the model "
                    "misses, not its level"),
    "cs3-batch": ("the model's CS-3 decode step is fixed costs ({bound_10}-bound): the layer "
                  "pipeline on the wafer plus the `cerebras` engine's {cs3_layer_us} us per layer "
                  "x {cs3_layers} layers and {cs3_iter_ms} ms per iteration, set from Cerebras' "
                  "published 1,800 tokens/s; it hardly grows with batch, so the throughput at "
                  "batch 8 is {growth_10} the batch-1 figure (row 2), where the measured one is "
                  "{seed_growth_10}: the prototype engine's step grows with batch (on-wafer "
                  "pipeline occupancy, I/O), which the model does not contain"),
    "cs3-energy": ("tokens/J is row 2's throughput over row 24's chassis power at the same point: "
                   "model / measured {ratio_2} and {ratio_24}, each within 1.5x alone, "
                   "{ratio_15} together. The power is low because the model's wafer draws its "
                   "{cs3_idle_kw} kW static power plus {cs3_activity_w} W for the FLOPs and SRAM "
                   "bytes of a batch-1 decode (activity power, docs/model.md section 9), where "
                   "seed 004 saw the chassis ~4.5 kW above its idle"),
    "sn40l-power": ("the power behind it: the measured Llama-3.3-70B throughput over its tokens/J "
                    "is {sn_kw_meas_19} kW, what the Llama-3.1-8B run drew on half the RDUs "
                    "(row 25), so both readings fit a boundary that holds the whole 16-RDU node "
                    "(section III-C3: rack PDU readings) better than the RDUs that served; the "
                    "model's 16 RDUs draw {sn_kw_model_19} kW at the system boundary, from the "
                    "catalog's estimated socket TDP and host share (~10 kW per node, seed 004 "
                    "Table I)"),
    "gpu-power": ("the model's board power is the static power plus the energy of each phase's "
                  "FLOPs and bytes moved, capped at TDP (docs/model.md section 9; the coefficients "
                  "are not fitted); which runs and phases the seed's power readings cover is not "
                  "stated"),
    "vllm-load": ("the model serves at most the cap in flight ({conc_12} on the MI300X, "
                  "{conc_13} on 4 H100s) and ends the run with the tail of the longest requests "
                  "(docs/model.md section 13.7); what it still misses is not identified: the "
                  "spread of the first 1,000 conversations' replies (only the whole data set's "
                  "is published, see the workload note), prompts of different lengths, "
                  "preemption"),
}
_SN_TP = "sn40l"
_CS3_BATCH = "cs3-batch"
_GPU_POWER = "gpu-power"
_VLLM_LOAD = "vllm-load"
_SN_BATCH = "sn40l-batch"
_CS3_ENERGY = "cs3-energy"
_SN_POWER = "sn40l-power"

ROWS: tuple[Measured, ...] = (
    Measured("1", "total tokens/s", "a100-sxm-80g", "vllm", "llama-3.1-8b", "tp1", 1, 215.0,
             "token/s", "total_throughput", "IV-C, Fig. 7 text", f"{_B1}; one GPU"),
    Measured("2", "total tokens/s", "cs-3", "cerebras", "llama-3.1-8b", "tp1", 1, 3609.0,
             "token/s", "total_throughput", "IV-C, Fig. 7 text",
             f"{_B1}; one CS-3"),
    Measured("3", "total tokens/s", "sn40l", "sambaflow", "llama-3.1-8b", "tp8", 1, 2024.0,
             "token/s", "total_throughput", "IV-C, Fig. 7 text", f"{_B1}; {_SN8}",
             cause_low=_SN_TP),
    Measured("4", "total tokens/s", "sn40l", "sambaflow", "llama-3.3-70b", "tp16", 1, 353.0,
             "token/s", "total_throughput", "IV-C, Fig. 7 text",
             f"{_B1}; bf16 (the paper's default); {_SN16}", cause_low=_SN_TP),
    Measured("5", "total tokens/s", "a100-sxm-80g", "vllm", "llama-3.3-70b", "tp4", 1, 88.0,
             "token/s", "total_throughput", "IV-C, Fig. 7 text",
             f"{_B1}; bf16 (the paper's default); {_TP_A100}"),
    Measured("6", "TTFT", "sn40l", "sambaflow", "llama-3.3-70b", "tp16", 1, 0.099, "s", "ttft",
             "IV-C, Fig. 8 text", f"batch 1 (Fig. 8 is at batch 1); {_SN16}"),
    Measured("7", "TTFT", "a100-sxm-80g", "vllm", "llama-3.3-70b", "tp4", 1, 0.091, "s", "ttft",
             "IV-C, Fig. 8 text", f"batch 1 (Fig. 8 is at batch 1); {_TP_A100}"),
    Measured("8", "ITL", "sn40l", "sambaflow", "llama-3.3-70b", "tp16", 1, 0.0056, "s", "tpot",
             "IV-C, Fig. 8 text", f"batch 1 (Fig. 8 is at batch 1); {_SN16}",
             cause_high=_SN_TP),
    Measured("9", "ITL", "a100-sxm-80g", "vllm", "llama-3.3-70b", "tp4", 1, 0.029, "s", "tpot",
             "IV-C, Fig. 8 text", f"batch 1 (Fig. 8 is at batch 1); {_TP_A100}"),
    Measured("10", "total tokens/s", "cs-3", "cerebras", "llama-3.1-8b", "tp1", 8, 12327.0,
             "token/s", "total_throughput", "IV-C, peak-throughput paragraph",
             "batch 8 as stated; one CS-3", cause_high=_CS3_BATCH),
    Measured("11", "total tokens/s (peak)", "sn40l", "sambaflow", "llama-3.1-8b", "tp8", 8,
             3907.0, "token/s", "total_throughput", "IV-C, peak-throughput paragraph",
             f"best over batch 1-8 (section IV-C's pre-compiled artifacts; the SN40L runs of "
             f"section III-C3 reached batch 32, see 4b); {_SN8}",
             kind="peak", cause_high=_SN_BATCH, cause_low=_SN_TP),
    Measured("12", "total tokens/s (max load)", "mi300x", "vllm", "llama-3.3-70b", "tp1", 128,
             2017.0, "token/s", "total_throughput", "IV-B, Fig. 4 text",
             f"max_num_seqs 128 (128 x T): at most 128 in flight; bf16 (Fig. 4); {_RUN}",
             kind="cap", cause_high=_VLLM_LOAD, requests=SEED004_REQUESTS),
    Measured("13", "total tokens/s (max load)", "h100-sxm", "vllm", "llama-3.3-70b", "tp4", 512,
             7634.0, "token/s", "total_throughput", "IV-B, Fig. 4 text",
             f"one instance, max_num_seqs 512 (128 x 4): at most 512 in flight; bf16; {_RUN}",
             kind="cap", cause_high=_VLLM_LOAD, requests=SEED004_REQUESTS),
    Measured("14", "total tokens/s (max load)", "mi300x", "vllm", "llama-3.3-70b", "tp1-dp4",
             128, 8068.0, "token/s", "total_throughput", "IV-B, Fig. 4 text",
             "four replicas of row 12 (8068 = 4 x 2017 exactly: row 12 scaled, not a separate "
             f"measurement); {_RUN}", kind="cap",
             cause_high=_VLLM_LOAD, requests=SEED004_REQUESTS),
    Measured("15", "total tokens/J", "cs-3", "cerebras", "llama-3.1-8b", "tp1", 1, 0.15,
             "token/J", "total_tokens_per_joule", "IV-C, energy paragraph",
             f"{_NOT_STATED_B1}; chassis = `system_power`", boundary="system",
             cause_high=_CS3_ENERGY),
    Measured("16", "total tokens/J", "sn40l", "sambaflow", "llama-3.1-8b", "tp8", 1, 0.38,
             "token/J", "total_tokens_per_joule", "IV-C, energy paragraph",
             f"{_NOT_STATED_B1}; {_SN8}; rack = `system_power`", boundary="system",
             cause_low=_SN_TP),
    Measured("17", "total tokens/J", "a100-sxm-80g", "vllm", "llama-3.1-8b", "tp1", 1, 0.73,
             "token/J", "total_tokens_per_joule", "IV-C, energy paragraph",
             f"{_NOT_STATED_B1}; board power = `power`",
             boundary="accelerator", cause_low=_GPU_POWER),
    Measured("18", "total tokens/J", "h100-sxm", "vllm", "llama-3.1-8b", "tp1", 1, 0.91,
             "token/J", "total_tokens_per_joule", "IV-C, energy paragraph",
             f"{_NOT_STATED_B1}; board power = `power`",
             boundary="accelerator", cause_low=_GPU_POWER),
    Measured("19", "total tokens/J", "sn40l", "sambaflow", "llama-3.3-70b", "tp16", 1, 0.067,
             "token/J", "total_tokens_per_joule", "IV-C, energy paragraph",
             f"batch 1 as stated; {_SN16}; rack = `system_power`", boundary="system",
             cause_low=_SN_POWER),
    Measured("20", "total tokens/J", "a100-sxm-80g", "vllm", "llama-3.3-70b", "tp4", 1, 0.074,
             "token/J", "total_tokens_per_joule", "IV-C, energy paragraph",
             f"batch 1 as stated; {_TP_A100}; board power = `power`",
             boundary="accelerator", cause_low=_GPU_POWER),
    Measured("21", "average power", "a100-sxm-80g", "vllm", "", "tp1", 0, 337.0, "W", "power",
             "IV-A, single-GPU results",
             "mean board `power` over the single-GPU runs (Figs. 1-3: Llama-3.1-8B, Qwen3-14B, "
             "Mistral-Small-24B, Qwen3-32B; batch 16-128; bf16 and W8A16), each the mean over a "
             "run of the data set's 1,000 requests, at most the batch in flight (`run_power`, "
             "docs/model.md 13.7); which runs the seed averaged is not stated",
             kind="mean", precision="bf16,w8a16", cause_high=_GPU_POWER,
             requests=SEED004_REQUESTS),
    Measured("22", "average power", "h100-sxm", "vllm", "", "tp1", 0, 478.0, "W", "power",
             "IV-A, single-GPU results", "as row 21, bf16 and FP8 (W8A8)", kind="mean",
             precision="bf16,fp8", cause_high=_GPU_POWER, requests=SEED004_REQUESTS),
    Measured("23", "average power", "mi300x", "vllm", "", "tp1", 0, 625.0, "W", "power",
             "IV-A, single-GPU results", "as row 21, bf16 and FP8 (W8A8)", kind="mean",
             precision="bf16,fp8", cause_high=_GPU_POWER, requests=SEED004_REQUESTS),
    Measured("24", "average power", "cs-3", "cerebras", "llama-3.1-8b", "tp1", 1, 24200.0, "W",
             "system_power", "IV-C, energy paragraph",
             f"{_NOT_STATED_B1}; chassis = `system_power` (wafer + system)",
             boundary="system"),
    Measured("25", "average power", "sn40l", "sambaflow", "llama-3.1-8b", "tp8", 1, 5230.0, "W",
             "system_power", "IV-C, energy paragraph",
             f"{_NOT_STATED_B1}; {_SN8}; `system_power` (sockets + their node share; IV-C says "
             "RDU-level, III-C3 rack PDU readings)",
             boundary="system"),
    Measured("F8a", "ITL, A100 / CS-3", "cs-3", "cerebras", "llama-3.1-8b", "tp1", 1, 18.8, "1",
             "itl_gain", "IV-C, Fig. 8 text", "batch 1; A100 `tp1` (vLLM) against one CS-3"),
    Measured("F8b", "ITL, A100 / SN40L", "sn40l", "sambaflow", "llama-3.1-8b", "tp8", 1, 13.1,
             "1", "itl_gain", "IV-C, Fig. 8 text", f"batch 1; A100 `tp1` against {_SN8}",
             cause_low=_SN_TP),
    Measured("F8c", "TTFT, A100 / CS-3", "cs-3", "cerebras", "llama-3.1-8b", "tp1", 1,
             1 / (1 - 0.35), "1", "ttft_gain", "IV-C, Fig. 8 text",
             "batch 1; 'the improvement in TTFT is only 35%' read as 35% lower (1 / 0.65)"),
    Measured("F8d", "TTFT, A100 / SN40L", "sn40l", "sambaflow", "llama-3.1-8b", "tp8", 1,
             1 / (1 - 0.20), "1", "ttft_gain", "IV-C, Fig. 8 text",
             f"batch 1; '20%' read as 20% lower (1 / 0.8); {_SN8}"),
)
