"""What the converters of NVIDIA's TensorRT-LLM performance-overview pages share: their row builder
and the note on the layout of MoE models."""

from __future__ import annotations

from scripts.measurements.row_builder import RowBuilder

MOE_NOTE = "MoE model: expert-parallel degree not printed; layout assumes experts tensor-split (ep = 1)"


def trtllm_rows(key: str, file: str, source: str, **printed: str) -> RowBuilder:
    """Rows published by NVIDIA for the trtllm engine; ``source`` and ``printed`` are templates of
    the raw row (see :class:`RowBuilder`)."""
    return RowBuilder(key, file, publisher="NVIDIA", engine="trtllm", printed={"source": source, **printed})
