"""Headline per-GPU numbers of disaggregated (prefill/decode) serving of DeepSeek V3/R1 on GB200: the LMSYS
SGLang blog posts and a vLLM blog post. Decode output tokens/s per decode GPU and prefill input tokens/s
per prefill GPU. One tidy row per raw row; none usable (disaggregation, unstated parallel degrees and
lengths): order-of-magnitude checks only."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scripts.measurements.common import Converted, num, read_raw
from scripts.measurements.row_builder import RowBuilder

MODEL_NOTE = "'DeepSeek V3/R1' (exact checkpoint not stated): V3 and R1 share one architecture -> deepseek-v3"


def _precision(r: dict[str, str]) -> tuple[str, str, bool]:
    """(scheme, note, mixed)."""
    p, kv = r["precision"], r["kv_cache_dtype"]
    if "NVFP4" in p:
        return (
            "",
            f"printed '{p}' (KV '{kv or 'not stated'}'): NVFP4 experts with FP8 attention is no catalog "
            "scheme",
            True,
        )
    if "FP8" in p:
        kv_note = (
            "KV cache bf16 (16-bit, the fp8 scheme's default)" if kv == "bf16" else "KV dtype not stated"
        )
        return "fp8", f"printed '{p}' -> fp8 (DeepSeek's FP8 block-scaled weights); {kv_note}", False
    raise KeyError(f"unmapped precision {p!r}")


def _convert(path: Path, key: str, publisher: str, engine: str) -> Converted:
    rows = RowBuilder(
        key,
        path.name,
        publisher=publisher,
        engine=engine,
        engine_version="",
    )
    raw = read_raw(path)
    out = []
    for i, r in enumerate(raw, 1):
        hw, model = "gb200", "deepseek-v3"
        prec, p_note, mixed = _precision(r)
        stage = "PREFILL" if "PREFILL" in r["notes"] else "DECODE"
        skip = ["disaggregated", "degrees", "batch"]
        if mixed:
            skip.append("precision_mixed")
        if stage == "PREFILL":
            metric = "prefill_throughput"
            m_note = "input tokens/s per GPU of the prefill instances"
        else:
            metric = "throughput"
            m_note = "output tokens/s per GPU of the decode instances"
        ctx = int(r["input_len"]) if r["input_len"].isdigit() else None
        osl = int(r["output_len"]) if r["output_len"].isdigit() else None
        if ctx is None or (stage == "DECODE" and osl is None):
            skip.append("lengths")
        devices = int(r["n_devices"]) if r["n_devices"] else None
        notes = [
            m_note,
            MODEL_NOTE,
            p_note,
            "load and batch per row not stated",
            f"parallelism printed as ep '{r['ep']}', dp '{r['dp'] or 'not stated'}'",
            f"engine version printed as '{r['engine_version']}'",
            f"source note: {r['notes']}",
        ]
        if r["input_len"] and ctx is None:
            notes.append(f"lengths printed as '{r['input_len']}'/'{r['output_len']}' only")
        out.append(
            rows.row(
                i,
                metric,
                num(r["value"]),
                raw=r,
                source=f"{r['source']} ({r['hardware']}, {r['model']}, {stage.lower()} stage)",
                hardware=hw,
                devices=devices,
                parallelism="",
                model=model,
                precision=prec,
                context=ctx,
                output_len=osl,
                scope="per_device",
                skip=skip,
                notes=notes,
            )
        )
    return Converted.one_each(out, len(raw))


@dataclass(frozen=True)
class Blog:
    """One blog's transcription (the interface of a source: KEY, FILE, NAME, RAW_ROWS, convert)."""

    KEY: str
    FILE: str
    NAME: str
    RAW_ROWS: int
    publisher: str
    engine: str

    def convert(self, path: Path) -> Converted:
        return _convert(path, self.KEY, self.publisher, self.engine)


SGLang = Blog("sglanggb200", "sglang_gb200_lmsys_blog.csv", "SGLang GB200 (LMSYS blog)", 5, "LMSYS", "sglang")
VLLM = Blog("vllmgb200", "vllm_gb200_blog.csv", "vLLM GB200 (vLLM blog)", 2, "vLLM", "vllm")
