"""Large output arrays whose memory is mapped in one go.

The first write to each 4 KiB page of a fresh allocation is a page fault. On virtual machines that
hand memory back to the host when it is freed (balloon drivers, free page reporting: Firecracker,
many cloud VMs) every such fault also exits to the host, and writing a fresh 2 GB array took 5.5 s
on this project's VM against 0.1 s for the same writes to memory already mapped. Mapping the whole
array at once (``mmap`` with ``MAP_POPULATE``: the kernel faults the pages in a single call) took
1.7 s. :func:`populated_empty` does that on Linux for arrays of at least :data:`MIN_BYTES`, and is
``numpy.empty`` elsewhere; the contents are zeros, not garbage, and the array behaves as any other
(its memory is released when the last view of it goes).
"""

from __future__ import annotations

import math
import mmap

import numpy as np

#: below this size numpy's own allocation is as fast
MIN_BYTES = 64 << 20


def populated_empty(shape: tuple[int, ...], dtype) -> np.ndarray:
    """A C-contiguous array of ``shape`` whose pages are mapped up front (zero-filled)."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    flag = getattr(mmap, "MAP_POPULATE", None)
    if nbytes < MIN_BYTES or flag is None:
        return np.empty(shape, dtype=dtype)
    try:
        buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | flag)
    except (OSError, ValueError):  # e.g. no address space for it: numpy reports the error better
        return np.empty(shape, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype).reshape(shape)
