"""The one place where numba options are set (``cache=True``, ``nogil``, parallel flags).

Set ``NUMBA_DISABLE_JIT=1`` to run every kernel as plain Python (for coverage and debugging);
numba honours that variable itself, and ``prange`` then degrades to ``range``.
"""

from __future__ import annotations

import numba

#: options for scalar helpers inlined into the kernels
SCALAR = {"cache": True, "nogil": True, "fastmath": False, "inline": "always"}
#: options for the entry-point kernels that loop over a grid in parallel
PARALLEL = {"cache": True, "nogil": True, "fastmath": False, "parallel": True}


def scalar_jit(func):
    return numba.njit(**SCALAR)(func)


def parallel_jit(func):
    return numba.njit(**PARALLEL)(func)


prange = numba.prange
