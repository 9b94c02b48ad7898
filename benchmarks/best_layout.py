"""What keeping only each point's best layout (spec key ``best_layout``) saves on an automatic-
layout grid: the whole catalog x the 15 default models x ``parallelism = "auto"`` (527
layouts), run in memory and streamed to netCDF and to Zarr, with every layout and with the best one
kept; interleaved rounds, the fastest of each.

    PYTHONPATH=<tree> python benchmarks/best_layout.py [--reps 2] [--json]

Reports per variant: wall time of ``sweep.run`` (the kernels loaded from the cache first), the
result's bytes in memory and the files' bytes on disk.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

#: the grid: every catalog device, the default models, a few loads, auto layouts
SPEC = {"hardware": "all", "batch": [1, 16, 256], "context": [1024, 8192],
        "precision": ["bf16", "fp8"], "parallelism": "auto"}


def path_bytes(p: Path) -> int:
    if p.is_dir():
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    return p.stat().st_size


def measure(reps: int) -> dict:
    import sweep
    from grids.spec import load_spec

    spec = load_spec(SPEC)
    tmp = Path(tempfile.mkdtemp(prefix="best-layout-"))
    variants = {"every layout": SPEC, "best layout": {**SPEC, "best_layout": True}}
    sweep.run({**SPEC, "hardware": ["h100-sxm"], "model": ["llama-3.1-8b"]}, progress=False)
    best: dict[str, dict] = {}
    try:
        for _ in range(reps):
            for name, s in variants.items():
                row = best.setdefault(name, {"memory_s": float("inf"), "netcdf_s": float("inf"),
                                             "zarr_s": float("inf")})
                t0 = time.perf_counter()
                ds = sweep.run(s, progress=False, max_memory="16 GiB")
                row["memory_s"] = min(row["memory_s"], time.perf_counter() - t0)
                row["result_bytes"] = int(ds.nbytes)
                del ds
                for fmt, suffix in (("netcdf", ".nc"), ("zarr", ".zarr")):
                    out = tmp / f"r{suffix}"
                    t0 = time.perf_counter()
                    sweep.run(s, progress=False, output=out, overwrite=True).close()
                    row[f"{fmt}_s"] = min(row[f"{fmt}_s"], time.perf_counter() - t0)
                    row[f"{fmt}_bytes"] = path_bytes(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"points_evaluated": spec.n_points, "layouts": len(spec.layouts),
            "variants": best, "load_average": os.getloadavg()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    res = measure(args.reps)
    if args.json:
        print(json.dumps(res, indent=1))
        return
    print(f"{res['points_evaluated']:,} points evaluated ({res['layouts']} layouts), "
          f"load average {res['load_average'][0]:.1f}")
    for name, r in res["variants"].items():
        print(f"{name:13s}: in memory {r['memory_s']:.2f} s, {r['result_bytes'] / 2**20:,.1f} "
              f"MiB; netCDF {r['netcdf_s']:.2f} s, {r['netcdf_bytes'] / 2**20:,.1f} MiB; "
              f"Zarr {r['zarr_s']:.2f} s, {r['zarr_bytes'] / 2**20:,.1f} MiB")


if __name__ == "__main__":
    main()
