"""Plan the work: cut a grid into chunks that fit a memory budget.

The grid is cut along its outer dims (hardware, model, batch, context) only, so every chunk is a
contiguous block of the result in storage order and the kernel evaluates it in one call.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from grids.errors import SpecError
from grids.units import parse_quantity
from kernels.params import METRICS

#: kernel output bytes per grid point (float32 per metric), plus the int8 casts when writing
BYTES_PER_POINT = 4 * len(METRICS) + 2
DEFAULT_MAX_MEMORY = "1 GiB"


def cache_bytes(budget: int) -> int:
    """HDF5 chunk-cache bytes per variable for a run within ``budget`` bytes.

    Every write covers whole storage chunks, so the cache needs to hold no more than one of them:
    a chunk larger than the cache is compressed and written during the write call itself (on the
    writer thread), instead of sitting in the cache until the file is closed (which compressed
    the whole result on the main thread at the end). ``budget`` only caps it."""
    return min(1 << 20, max(64 << 10, budget // (4 * len(METRICS))))


def parse_memory(value: str | int | float | None) -> int:
    if value is None:
        value = DEFAULT_MAX_MEMORY
    if isinstance(value, str) and value.strip().upper().endswith(("G", "M", "K")):
        value = value.strip() + "iB"  # '2G' -> '2GiB'
    v = parse_quantity(value, "bytes", "max_memory")
    if v < 64 << 10:
        raise SpecError(f"max_memory {value!r} is below 64 KiB; give e.g. '512 MiB' or '2 GiB'")
    return int(v)


#: the outer dims a grid is cut along (the kernel evaluates whole blocks of the inner ones)
OUTER = ("hardware", "engine", "model", "batch", "context")
N_OUTER = len(OUTER)


@dataclass(frozen=True)
class Chunk:
    """Index ranges along the outer dims (hardware, engine, model, batch, context) of one piece
    of the grid."""

    h: slice
    e: slice
    m: slice
    b: slice
    s: slice

    @property
    def slices(self) -> tuple[slice, ...]:
        return (self.h, self.e, self.m, self.b, self.s)

    def size(self, shape: tuple[int, ...]) -> int:
        n = 1
        for sl in self.slices:
            n *= sl.stop - sl.start
        return n * math.prod(shape[N_OUTER:])


def plan_chunks(shape: tuple[int, ...], max_points: int) -> list[Chunk]:
    """Cut ``shape`` = (H, E, M, B, S, O, P, L) along its outer dims into chunks of at most
    ``max_points`` points (at least one context value per chunk)."""
    max_points = max(1, max_points)
    outer = list(shape[:N_OUTER])
    inner = math.prod(shape[N_OUTER:])
    # find the first dim d whose trailing block fits; chunk along d with k values per chunk
    sizes = [1] * N_OUTER
    block = inner
    for d in range(N_OUTER - 1, -1, -1):
        if block * outer[d] <= max_points:
            sizes[d] = outer[d]
            block *= outer[d]
        else:
            sizes[d] = max(1, max_points // block)
            break
    starts = itertools.product(*(range(0, outer[d], sizes[d]) for d in range(N_OUTER)))
    return [Chunk(*(slice(x, min(x + sizes[d], outer[d])) for d, x in enumerate(st)))
            for st in starts]


def zarr_chunks(shape: tuple[int, ...], storage: tuple[int, ...], max_points: int) -> list:
    """Chunks of ``shape`` = (H, E, M, B, S, O, P, L) made of whole storage chunks along the outer
    dims (``storage`` gives their sizes), each of about ``max_points`` points but at least one
    storage chunk: no two chunks share a storage chunk."""
    sc = [max(1, int(x)) for x in storage[:N_OUTER]]
    nblocks = tuple(math.ceil(shape[d] / sc[d]) for d in range(N_OUTER))
    block_points = math.prod(sc) * math.prod(shape[N_OUTER:])
    out = []
    for c in plan_chunks(nblocks, max(1, max_points // max(1, block_points))):
        sl = [slice(s.start * sc[d], min(s.stop * sc[d], shape[d]))
              for d, s in enumerate(c.slices)]
        out.append(Chunk(*sl))
    return out


@dataclass
class MemoryPlan:
    """How a streamed run spends its ``--max-memory`` budget [B]: the two chunk buffers, the
    HDF5 chunk caches and, when a summary is computed from the chunks, its running extremes and
    the blocks it reduces at a time (``reserved`` names every part set aside before the chunk
    buffers). The summary gets at most a quarter of the budget; an ``observer`` that needs more
    is skipped (it says why), so the run still stays within the budget."""

    budget: int
    chunk_points: int
    cache_bytes: int
    block_points: int = 0
    observer: object | None = None
    reserved: dict[str, int] | None = None

    #: largest share of the budget the summary may take
    SUMMARY_SHARE = 4

    @classmethod
    def of(cls, budget: int, shape: tuple[int, ...], observer=None) -> MemoryPlan:
        cache = cache_bytes(budget)
        reserved = {"writer caches": cache * len(METRICS)}  # HDF5 chunk caches, Zarr encoding
        inner = math.prod(shape[N_OUTER:])
        block = 0
        if observer is not None and not getattr(observer, "skipped", ""):
            per_point = observer.reducer.bytes_per_point
            block = max(inner, budget // (4 * cls.SUMMARY_SHARE * per_point))
            need = observer.nbytes + block * per_point
            if need > budget // cls.SUMMARY_SHARE:
                observer.skip(f"it needs {need / 2**20:,.0f} MiB, more than a quarter of the "
                              f"memory budget ({budget / 2**20:,.0f} MiB, --max-memory)")
                block = 0
            else:
                reserved["summary"] = need
        free = max(budget - sum(reserved.values()), budget // 2)
        return cls(budget, max(1, free // (2 * BYTES_PER_POINT)), cache, block, observer,
                   reserved)

    @property
    def observing(self):
        """The summary's observer, if it is computed (None when there is none or it was
        skipped)."""
        obs = self.observer
        return obs if obs is not None and not getattr(obs, "skipped", "") else None
