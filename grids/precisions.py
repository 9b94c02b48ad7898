"""Named precision schemes: bits of weights, activations and KV cache, and the compute dtype.

A scheme name is a base name, optionally followed by ``-attn16`` (the attention projections kept at
16 bits, below) and by a KV-cache suffix ``-kv<bits>`` (``fp8-kv8``, ``w4a16-kv8``,
``fp8-attn16``). The base names:

=========  ======  ==========  =======  ====================  ====================================
name       weight  activation  KV       compute dtype(s)      meaning
=========  ======  ==========  =======  ====================  ====================================
``fp32``   32      32          32       fp32                  full precision
``tf32``   32      32          32       tf32                  fp32 storage, TF32 tensor cores
``bf16``   16      16          16       bf16, else fp16       16-bit float
``fp16``   16      16          16       fp16, else bf16       16-bit float
``fp8``    8       8           16       fp8                   W8A8 FP8 (KV stays 16-bit)
``int8``   8       8           16       int8                  W8A8 INT8 (SmoothQuant style)
``w8a16``  8       16          16       bf16, else fp16       8-bit weights dequantised to 16-bit
``w4a16``  4       16          16       bf16, else fp16       4-bit weights (AWQ/GPTQ style)
``fp4``    4       4           16       fp4                   W4A4 FP4 (NVFP4/MXFP4)
``int4``   4       4           16       int4                  W4A4 INT4
=========  ======  ==========  =======  ====================  ====================================

**Availability rule.** A point is infeasible (NaN, ``fits = 0``) on a device that has none of the
scheme's compute dtypes: A100 has no FP8 units, so ``fp8`` is infeasible there, while ``w8a16``
computes in bf16 and runs. The 16-bit float formats bf16 and fp16 have the same width, so a device
that lists only one of them (Groq, MTIA v2, GC200 publish an FP16 rate) runs a 16-bit float scheme at
that rate; no other substitution is made (an 8-bit scheme never falls back to 16-bit compute).

Embeddings and the LM head stay at 16 bits when the weight bits are below 16 (quantisers leave
them unquantised); this is applied by the kernels via ``embed_bits``.

**Attention kept at 16 bits** (``-attn16``): the attention projections (q, k, v, o) keep 16-bit
weights and run their GEMMs in 16 bits, while the MLP (dense or experts) uses the base scheme. This
is how Meta quantised its own FP8 checkpoint of Llama 3.1 405B (``fp8-attn16``; the source is in
docs/catalog.md, "Precisions"). The kernels read ``attn_bits`` for the bytes of those weights, and
time their FLOPs at the platform's 16-bit rate (docs/model.md sections 7-8). Only a base whose
weights are narrower than 16 bits takes the suffix.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from grids.errors import SpecError, suggest


@dataclass(frozen=True)
class Precision:
    name: str
    weight_bits: int
    act_bits: int
    kv_bits: int
    compute_dtypes: tuple[str, ...]  # in order of preference
    description: str
    attn_bits: int = 0  # bits of the attention projections' weights; 0 = weight_bits

    @property
    def attn_weight_bits(self) -> int:
        """Bits of the attention projections' weights (``weight_bits`` unless ``-attn16``)."""
        return self.attn_bits or self.weight_bits

    @property
    def embed_bits(self) -> int:
        """Bits of the embedding / LM-head weights (kept at 16 unless weights are wider)."""
        return max(self.weight_bits, 16)

    def compute_dtype_for(self, peak_flops: dict[str, float]) -> str | None:
        """The dtype whose peak the device uses for this scheme, or None if it has none."""
        return next((d for d in self.compute_dtypes if peak_flops.get(d, 0.0) > 0), None)

    def peak_for(self, peak_flops: dict[str, float]) -> float:
        """Dense peak [FLOP/s] of a device (its ``peak_flops`` per dtype) for this scheme's
        compute dtype; 0 when the device has none (the availability rule above)."""
        dtype = self.compute_dtype_for(peak_flops)
        return peak_flops[dtype] if dtype else 0.0

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "weight_bits": self.weight_bits, "act_bits": self.act_bits,
                "kv_bits": self.kv_bits, "attn_bits": self.attn_weight_bits,
                "compute_dtypes": list(self.compute_dtypes), "description": self.description}


_BASE = {
    "fp32": (32, 32, 32, ("fp32",), "full precision"),
    "tf32": (32, 32, 32, ("tf32",), "fp32 storage, TF32 matrix units"),
    "bf16": (16, 16, 16, ("bf16", "fp16"), "16-bit float weights and activations"),
    "fp16": (16, 16, 16, ("fp16", "bf16"), "16-bit float weights and activations"),
    "fp8": (8, 8, 16, ("fp8",), "W8A8 FP8; KV cache 16-bit"),
    "int8": (8, 8, 16, ("int8",), "W8A8 INT8; KV cache 16-bit"),
    "w8a16": (8, 16, 16, ("bf16", "fp16"), "8-bit weights, 16-bit activations and compute"),
    "w4a16": (4, 16, 16, ("bf16", "fp16"), "4-bit weights, 16-bit activations and compute"),
    "fp4": (4, 4, 16, ("fp4",), "W4A4 FP4; KV cache 16-bit"),
    "int4": (4, 4, 16, ("int4",), "W4A4 INT4; KV cache 16-bit"),
}
_KV = re.compile(r"^(?P<base>[a-z0-9]+?)(?P<attn>-attn16)?(?:-kv(?P<kv>\d+))?$")
KV_BITS_ALLOWED = (4, 8, 16, 32)

#: names listed by ``sweep catalog precisions``
NAMED = (*_BASE, "fp8-kv8", "bf16-kv8", "w4a16-kv8", "fp4-kv8", "fp8-attn16")


def parse_precision(name: str) -> Precision:
    """Parse a scheme name such as ``bf16``, ``fp8-kv8``, ``w4a16`` or ``fp8-attn16``."""
    text = str(name).strip().lower()
    m = _KV.match(text)
    if not m or m.group("base") not in _BASE:
        raise SpecError(f"unknown precision {name!r}{suggest(text, NAMED)}; a scheme is one of "
                        f"{', '.join(_BASE)} optionally followed by -attn16 and by -kv<bits> "
                        "(e.g. fp8-kv8, fp8-attn16)")
    w, a, kv, dtypes, desc = _BASE[m.group("base")]
    head = desc.split(";")[0]
    attn = 0
    if m.group("attn"):
        if w >= 16:
            raise SpecError(f"precision {name!r}: -attn16 keeps the attention projections at 16 "
                            f"bits, but {m.group('base')!r} weights are already {w}-bit; use it "
                            "with a narrower scheme (e.g. fp8-attn16)")
        attn = 16
        head = f"{head} in the MLP; attention projections 16-bit"
    if m.group("kv"):
        kv = int(m.group("kv"))
        if kv not in KV_BITS_ALLOWED:
            raise SpecError(f"precision {name!r}: KV bits must be one of {KV_BITS_ALLOWED}")
    if m.group("attn") or m.group("kv"):
        desc = f"{head}; KV cache {kv}-bit"
    return Precision(text, w, a, kv, dtypes, desc, attn)


def peak_table(peak_flops: Sequence[dict[str, float]], precisions: Sequence[Precision]
               ) -> np.ndarray:
    """(devices, precisions) dense peak [FLOP/s] of each device (given by its ``peak_flops``
    per dtype) for each scheme's compute dtype; 0 where the device has none."""
    return np.array([[p.peak_for(pf) for p in precisions] for pf in peak_flops],
                    dtype=np.float64).reshape(len(peak_flops), len(precisions))


def catalog_precisions() -> list[Precision]:
    return [parse_precision(n) for n in NAMED]
