"""``python -m kernels``: compile the kernels now (or check that the cache has them), so that the
first ``sweep run`` or ``sweep.evaluate`` does not wait for numba. Prints where the cache is."""

from __future__ import annotations

import sys


def main() -> int:
    from kernels import cache_dir, compile_kernels

    times = compile_kernels()
    where = cache_dir() or "numba's default cache"
    done = ", ".join(f"{name} {sec:.1f} s" for name, sec in times.items())
    print(f"kernels ready ({done}); cache: {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
