"""Plan the work: cut a grid into chunks that fit a memory budget.

The grid is cut along its outer dims (hardware, model, batch, context) only, so every chunk is a
contiguous block of the result in storage order and the kernel evaluates it in one call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from grids.errors import SpecError
from grids.units import parse_quantity
from kernels.params import METRICS

#: kernel output bytes per grid point (float32 per metric), plus the int8 casts when writing
BYTES_PER_POINT = 4 * len(METRICS) + 2
DEFAULT_MAX_MEMORY = "1 GiB"


def cache_bytes(budget: int) -> int:
    """HDF5 chunk-cache bytes per variable for a run within ``budget`` bytes."""
    return max(1 << 20, budget // (4 * len(METRICS)))


def parse_memory(value: str | int | float | None) -> int:
    if value is None:
        value = DEFAULT_MAX_MEMORY
    if isinstance(value, str) and value.strip().upper().endswith(("G", "M", "K")):
        value = value.strip() + "iB"  # '2G' -> '2GiB'
    v = parse_quantity(value, "bytes", "max_memory")
    if v < 64 << 10:
        raise SpecError(f"max_memory {value!r} is below 64 KiB; give e.g. '512 MiB' or '2 GiB'")
    return int(v)


@dataclass(frozen=True)
class Chunk:
    """Index ranges along (hardware, model, batch, context) of one piece of the grid."""

    h: slice
    m: slice
    b: slice
    s: slice

    def size(self, shape: tuple[int, ...]) -> int:
        n = 1
        for sl in (self.h, self.m, self.b, self.s):
            n *= sl.stop - sl.start
        return n * math.prod(shape[4:])


def plan_chunks(shape: tuple[int, ...], max_points: int) -> list[Chunk]:
    """Cut ``shape`` = (H, M, B, S, O, P, L) along its first four dims into chunks of at most
    ``max_points`` points (at least one context value per chunk)."""
    max_points = max(1, max_points)
    outer = list(shape[:4])
    inner = math.prod(shape[4:])
    # find the first dim d whose trailing block fits; chunk along d with k values per chunk
    sizes = [1] * 4
    block = inner
    for d in range(3, -1, -1):
        if block * outer[d] <= max_points:
            sizes[d] = outer[d]
            block *= outer[d]
        else:
            sizes[d] = max(1, max_points // block)
            break
    chunks = []
    for h0 in range(0, outer[0], sizes[0]):
        for m0 in range(0, outer[1], sizes[1]):
            for b0 in range(0, outer[2], sizes[2]):
                for s0 in range(0, outer[3], sizes[3]):
                    chunks.append(Chunk(slice(h0, min(h0 + sizes[0], outer[0])),
                                        slice(m0, min(m0 + sizes[1], outer[1])),
                                        slice(b0, min(b0 + sizes[2], outer[2])),
                                        slice(s0, min(s0 + sizes[3], outer[3]))))
    return chunks


def zarr_chunks(shape: tuple[int, ...], storage: tuple[int, ...], max_points: int) -> list:
    """Chunks of ``shape`` = (H, M, B, S, O, P, L) made of whole storage chunks along the first
    four dims (``storage`` gives their sizes), each of about ``max_points`` points but at least
    one storage chunk: no two chunks share a storage chunk."""
    sc = [max(1, int(x)) for x in storage[:4]]
    nblocks = tuple(math.ceil(shape[d] / sc[d]) for d in range(4))
    block_points = math.prod(sc) * math.prod(shape[4:])
    out = []
    for c in plan_chunks(nblocks, max(1, max_points // max(1, block_points))):
        sl = [slice(s.start * sc[d], min(s.stop * sc[d], shape[d]))
              for d, s in enumerate((c.h, c.m, c.b, c.s))]
        out.append(Chunk(*sl))
    return out
