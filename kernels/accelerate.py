"""The one place where numba options are set (``cache=True``, ``nogil``, parallel flags) and where
the compiled kernels are cached.

Set ``NUMBA_DISABLE_JIT=1`` to run every kernel as plain Python (for coverage and debugging);
numba honours that variable itself, and ``prange`` then degrades to ``range``.

Cache safety: numba invalidates a cached kernel only when *its own* source file changes, not when
a helper it inlines from another file does. Unless the user sets ``NUMBA_CACHE_DIR``, the cache is
therefore kept in a directory named after a hash of every kernel source file and of the numba,
numpy and Python versions (:func:`cache_key`), so editing any of them (or upgrading) can never
serve a stale compiled kernel.

A relocatable cache: numba's own locator for ``NUMBA_CACHE_DIR`` files each function under a
sub-directory named after a hash of the *absolute path* of its source, so a cache built in one
place is never found in another. :class:`KernelCacheLocator` files the functions of this package
directly in the chosen directory (file names carry the module, the function and its first line;
numba's index still checks the source's sha256, the numba version and the CPU it was compiled
for). That is what lets ``pip install .`` build the cache once, in the build tree (``setup.py``
runs ``python -m kernels`` there), and ship it inside the installed package: the first
``sweep run`` after the install loads the kernels instead of compiling them. If the installed
package is read-only, the shipped cache is copied to the user cache directory once.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numba
import numba.core.caching
import numpy as np

#: the directory of the kernel sources (the only files :class:`KernelCacheLocator` handles)
KERNELS_DIR = Path(__file__).resolve().parent


def cache_key() -> str:
    """16 hex digits naming the cache directory: every kernel source file, and the numba, numpy
    and Python versions the cached machine code was compiled with."""
    h = hashlib.sha256()
    for path in sorted(KERNELS_DIR.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    h.update(f"numba {numba.__version__} numpy {np.__version__} python {sys.version_info[:2]}".encode())
    return h.hexdigest()[:16]


def _writable_dir(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


def _choose_cache_dir() -> str | None:
    """The cache directory: in the package (``kernels/__pycache__/numba-KEY``, where ``pip
    install`` puts the cache it builds), else the user cache directory, else the temp dir.
    None when the user set ``NUMBA_CACHE_DIR`` (their choice wins)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    key = cache_key()
    shipped = KERNELS_DIR / "__pycache__" / f"numba-{key}"
    if _writable_dir(shipped):
        return str(shipped)
    user = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "accel-sweep" / f"numba-{key}"
    for cand in (user, Path(tempfile.gettempdir()) / f"accel-sweep-numba-{key}"):
        if _writable_dir(cand):
            if shipped.is_dir() and not any(cand.iterdir()):  # a read-only install's shipped cache
                for f in shipped.iterdir():
                    try:
                        shutil.copy2(f, cand / f.name)
                    except OSError:
                        break
            return str(cand)
    return None


#: numba's settings module; typed Any because numba sets its settings (``CACHE_DIR``,
#: ``DISABLE_JIT``...) at run time, so its type information does not list them
numba_config: Any = numba.config

#: numba's locator for ``NUMBA_CACHE_DIR``; :class:`KernelCacheLocator` changes only its path
_Provided = getattr(numba.core.caching, "UserProvidedCacheLocator", None)
#: the base class, a run-time choice (Any: mypy needs a static one)
_LocatorBase: Any = _Provided or object


class KernelCacheLocator(_LocatorBase):
    """numba's ``NUMBA_CACHE_DIR`` locator, for this package's functions only, filing them in
    ``numba.config.CACHE_DIR`` itself, without the sub-directory named after a hash of the
    source's absolute path (see the module docstring); source stamp, disambiguator and the
    writability check are numba's own."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        self._cache_path = numba_config.CACHE_DIR

    @classmethod
    def from_function(cls, py_func, py_file):
        if _cache_dir is None or _cache_dir != numba_config.CACHE_DIR:
            return None
        try:
            if Path(py_file).resolve().parent != KERNELS_DIR:
                return None
        except OSError:
            return None
        return super().from_function(py_func, py_file)


def _install_locator() -> None:
    caching = numba.core.caching  # the class is CacheImpl in numba 0.68, _CacheImpl before
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    classes = getattr(impl, "_locator_classes", None)
    if _Provided is not None and isinstance(classes, list) and KernelCacheLocator not in classes:
        classes.insert(0, KernelCacheLocator)


_cache_dir = _choose_cache_dir()
if _cache_dir is not None:
    numba_config.CACHE_DIR = _cache_dir
    _install_locator()

#: options for scalar helpers inlined into the kernels
SCALAR: dict[str, Any] = {"cache": True, "nogil": True, "fastmath": False, "inline": "always"}
#: options for the serial block functions called from the parallel loops
SERIAL: dict[str, Any] = {"cache": True, "nogil": True, "fastmath": False}
#: options for large helpers called (not inlined) from several places: inlining them at every
#: call site multiplies the intermediate representation and the compile time
CALLED: dict[str, Any] = {"cache": True, "nogil": True, "fastmath": False}
#: options for the entry-point kernels that loop over a grid in parallel
PARALLEL: dict[str, Any] = {"cache": True, "nogil": True, "fastmath": False, "parallel": True}


def scalar_jit(func):
    return numba.njit(**SCALAR)(func)


def serial_jit(func):
    return numba.njit(**SERIAL)(func)


def called_jit(func):
    return numba.njit(**CALLED)(func)


def parallel_jit(func):
    return numba.njit(**PARALLEL)(func)


prange = numba.prange

if numba_config.DISABLE_JIT:
    def fixed_tuple(array, n):
        """Pure-Python stand-in for numba's ``to_fixed_tuple`` (``NUMBA_DISABLE_JIT=1``)."""
        return tuple(array[:n])
else:
    # numba's intrinsic: typed as its (typingctx, array, n) typing function, called from jitted
    # code as fixed_tuple(array, n) like the stand-in above
    from numba.np.unsafe.ndarray import (  # type: ignore[assignment]  # noqa: F401
        to_fixed_tuple as fixed_tuple,
    )


if numba_config.DISABLE_JIT:
    def row_pointer(row):
        """Pure-Python stand-in for :func:`row_pointer`: the row itself."""
        return row
else:
    from numba.core import types as _types
    from numba.extending import intrinsic as _intrinsic

    @_intrinsic
    def row_pointer(typingctx, row):
        """The address of a contiguous float64 row as a typed pointer, indexed like the row
        (``p[i]``). Called functions take it as one argument where a row converted to a tuple
        would be spread over one argument per field (numba passes tuples element by element),
        and unlike an array it carries no reference count to update at every call. The caller
        keeps the row's array alive."""
        if not (isinstance(row, _types.Array) and row.dtype == _types.float64 and row.ndim == 1
                and row.layout == "C"):
            return None
        sig = _types.CPointer(_types.float64)(row)

        def codegen(context, builder, signature, args):
            return context.make_array(signature.args[0])(context, builder, args[0]).data

        return sig, codegen
