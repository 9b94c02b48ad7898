"""What the converters of NVIDIA's TensorRT-LLM performance-overview pages share: their row builder
and the note on the layout of MoE models."""

from __future__ import annotations

from scripts.measurements.row_builder import RowBuilder

MOE_NOTE = "MoE model: expert-parallel degree not printed; layout assumes experts tensor-split (ep = 1)"

#: the FP4 ModelOpt checkpoint whose quantization config states an FP8 KV cache, which the PyTorch
#: backend uses by default: NVIDIA/TensorRT-LLM tests/integration/defs/accuracy/
#: test_llm_api_pytorch.py (TestLlama3_3_70BInstruct, NVFP4 test) loads the checkpoint without a KV
#: override and asserts quant_config.kv_cache_quant_algo == FP8; tensorrt_llm/_torch/pyexecutor/
#: model_loader.py validate_and_set_kv_cache_quant: with KvCacheConfig dtype "auto" (trtllm-bench's
#: default) "Using checkpoint KV quantization". The pages print no KV dtype; the other checkpoints'
#: KV dtype is not confirmed (the Llama-3.1 FP8 ones state none per perf-benchmarking.md), so they
#: keep the scheme's default.
FP4_KV8_NOTE = ("FP4 checkpoint nvidia/Llama-3.3-70B-Instruct-FP4 -> fp4-kv8 (W4A4 NVFP4 with the "
                "FP8 KV cache its quantization config states and the PyTorch backend uses by "
                "default; the page prints no KV dtype)")
FP4_KV8_MODELS = {"llama-3.3-70b"}


def trtllm_rows(key: str, file: str, source: str, **printed: str) -> RowBuilder:
    """Rows published by NVIDIA for the trtllm engine; ``source`` and ``printed`` are templates of
    the raw row (see :class:`RowBuilder`)."""
    return RowBuilder(key, file, publisher="NVIDIA", engine="trtllm", printed={"source": source, **printed})
