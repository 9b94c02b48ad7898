"""Hugging Face's optimum-neuron benchmarks on an inf2.48xlarge (transformers-neuronx 0.10.0.21,
Neuron SDK 2.18, commit 707fff4f of 2024-05-03): the inter-token latency and the time to first
token of four models compiled for 8 NeuronCores (4 Inferentia2 chips), read off the bar labels of
the published charts at the 1,024-token prompt. One tidy row per raw row.

What the benchmark runs (``benchmark/text-generation/benchmark.py`` and
``optimum/neuron/modeling_decoder.py`` at that commit) sets how a row is read:

* every model is compiled with ``sequence_length`` 4,096; with a batch above 1 optimum-neuron turns
  on transformers-neuronx continuous batching with ``n_positions = [4096]`` and
  ``context_length_estimate = [4096]``, so each prompt is context-encoded alone, padded to 4,096
  positions, and every decode step attends over the 4,096 compiled positions whatever the prompt
  (the charts are flat in the prompt length: 256 to 1,792 tokens give the same bars). The rows
  take the compiled shape: a time to first token of ``B`` prompts of 4,095 tokens plus one
  generated (the catalog's Llama-2 holds 4,096 positions), a decode step at a mean KV length of
  4,095 (4,094 prompt + 2 output tokens);
* with a batch of 1 the model is compiled with ``n_positions`` 4,096 and no estimate, so its
  prompt is the printed 1,024 + 1 tokens and the decode steps run at that length;
* the inter-token latency is ``(generate(prompt, 256 more) - generate(prompt, 1)) / 256`` over the
  254 decode steps after the first token (0.8% below the step time, inside the labels' +/-0.5 ms);
* the time to first token of a batch at 0.1 s resolution is kept from 1 s up (batch 4 and more);
  the batch-1 bars read 0.1-0.2 s (+/-50%) and are not transcribed.
"""

from __future__ import annotations

from pathlib import Path

from scripts.measurements.common import KV_NOT_STATED, Converted, ms, num, read_raw
from scripts.measurements.neuron import HARDWARE, model_of
from scripts.measurements.row_builder import RowBuilder

KEY = "hfneuron"
FILE = "hf_optimum_neuron_inf2.csv"
NAME = "optimum-neuron inf2"
RAW_ROWS = 34
ROWS = RowBuilder(
    KEY,
    FILE,
    publisher="Hugging Face",
    engine="neuron",
    printed={
        "source": "{source} (chart '{chart}', {model} BS{batch_size}, input tokens {input_len})",
        "hardware_raw": "{instance_type} ({num_cores} NeuronCores)",
        "model_raw": "{model_id}",
        "engine_version": "{library}",
    },
)

#: the catalog's device and NeuronCores per chip of the instance (the AWS rows' table; their
#: instance type is printed 'Inf2.48xlarge', this source's 'inf2.48xlarge')
DEVICE, CORES_PER_CHIP, _ = HARDWARE["Inf2.48xlarge"]
#: the compiled positions of every benchmark model (``sequence_length``)
COMPILED = 4096
MODELS = {"Llama-2-7B": "llama-2-7b", "Llama-3-8B": "llama-3-8b", "Llama-2-13B": "llama-2-13b"}
PRECISION_NOTE = {
    "fp16": "auto_cast_type fp16: 16-bit weights and compute, read as bf16 (NeuronCore-v2 runs "
            "FP16 and BF16 at the same 190 TFLOPS per chip)",
    "bf16": "auto_cast_type bf16",
}


def convert(path: Path) -> Converted:
    raw = read_raw(path)
    out = []
    for i, r in enumerate(raw, 1):
        cores = int(r["num_cores"])
        if cores % CORES_PER_CHIP or int(r["sequence_length"]) != COMPILED:
            raise ValueError(f"{path.name} row {i}: unexpected cores or compiled length")
        chips = cores // CORES_PER_CHIP
        batch = int(r["batch_size"])
        prompt = int(r["input_len"]) + 1  # benchmark.py encodes input_length + 1 tokens
        ttft = r["unit"] == "s"
        if ttft:
            context, olen, metric, value = COMPILED - 1, 1, "ttft", num(r["value"])
            shape = (f"{batch} prompts of {prompt} tokens, each context-encoded alone padded to "
                     f"the {COMPILED} compiled positions (continuous-batching config): read as a "
                     f"static batch of {batch} prompts of {COMPILED - 1} tokens + 1 generated")
        elif batch > 1:
            context, olen, metric, value = COMPILED - 2, 2, "tpot", ms(r["value"])
            shape = (f"decode steps of {batch} sequences attending over the {COMPILED} compiled "
                     f"positions (continuous-batching config) whatever the {prompt}-token prompt: "
                     f"read as {COMPILED - 2} prompt + 2 output tokens (mean KV length "
                     f"{COMPILED - 1})")
        else:
            context, olen, metric, value = prompt, int(r["new_tokens"]) - 1, "tpot", ms(r["value"])
            shape = (f"batch 1 compiled without a context estimate: {prompt}-token prompt, "
                     f"{olen} generated tokens; inter-token latency = (generate with "
                     f"{r['new_tokens']} more tokens - generate with 1) / {r['new_tokens']}, over "
                     f"the {olen - 1} decode steps after the first token")
        model, m_note = MODELS.get(r["model"], ""), ""
        if not model:
            model, m_note = model_of(r["model_id"].split("/")[-1], context + olen)
        point = ROWS.point(
            r,
            hardware=DEVICE,
            tp=chips,
            model=model,
            precision="bf16",
            load="static",
            batch=batch,
            context=context,
            output_len=olen,
            notes=[
                f"{cores} NeuronCores / {CORES_PER_CHIP} per chip = {chips} Inferentia2 chips; "
                f"layout tp{chips} over chips",
                m_note,
                f"{PRECISION_NOTE[r['auto_cast_type']]}; {KV_NOT_STATED}",
                shape,
                f"value read off the chart's bar label ({r['value']} {r['unit']}, rounded as "
                "printed)",
                f"engine: transformers-neuronx through optimum-neuron ({r['script']})",
            ],
        )
        out.append(point.row(i, metric, value, suffix=metric))
    return Converted.one_each(out, len(raw))
