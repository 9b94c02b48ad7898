"""The one place where numba options are set (``cache=True``, ``nogil``, parallel flags).

Set ``NUMBA_DISABLE_JIT=1`` to run every kernel as plain Python (for coverage and debugging);
numba honours that variable itself, and ``prange`` then degrades to ``range``.

Cache safety: numba invalidates a cached kernel only when *its own* source file changes, not when
a helper it inlines from another file does. Unless the user sets ``NUMBA_CACHE_DIR``, the cache is
therefore kept in a directory named after a hash of every kernel source file, so editing any of
them (or upgrading the package) can never serve a stale compiled kernel.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import numba


def _sources_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _choose_cache_dir() -> str | None:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None  # the user's choice wins
    digest = _sources_digest()
    candidates = [Path(__file__).parent / "__pycache__" / f"numba-{digest}",
                  Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                  / "accel-sweep" / f"numba-{digest}",
                  Path(tempfile.gettempdir()) / f"accel-sweep-numba-{digest}"]
    for cand in candidates:
        try:
            cand.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(cand, os.W_OK):
            return str(cand)
    return None


_cache_dir = _choose_cache_dir()
if _cache_dir is not None:
    numba.config.CACHE_DIR = _cache_dir

#: options for scalar helpers inlined into the kernels
SCALAR = {"cache": True, "nogil": True, "fastmath": False, "inline": "always"}
#: options for the serial block functions called from the parallel loops
SERIAL = {"cache": True, "nogil": True, "fastmath": False}
#: options for the entry-point kernels that loop over a grid in parallel
PARALLEL = {"cache": True, "nogil": True, "fastmath": False, "parallel": True}


def scalar_jit(func):
    return numba.njit(**SCALAR)(func)


def serial_jit(func):
    return numba.njit(**SERIAL)(func)


def parallel_jit(func):
    return numba.njit(**PARALLEL)(func)


prange = numba.prange

if numba.config.DISABLE_JIT:
    def fixed_tuple(array, n):
        """Pure-Python stand-in for numba's ``to_fixed_tuple`` (``NUMBA_DISABLE_JIT=1``)."""
        return tuple(array[:n])
else:
    from numba.np.unsafe.ndarray import to_fixed_tuple as fixed_tuple  # noqa: F401
