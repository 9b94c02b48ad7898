"""Count the tp -> 2tp TPOT rises of memory-bound decode on the default grid (docs/validation.md,
"More devices, slower decode"; issue 20, "Check it").

For each serving mode (static batches, continuous batching) and for ``native`` and ``ideal``, on
the default grid's pure tensor-parallel layouts tp1, tp2, tp4, tp8: the points where tp and 2tp
both fit inside the scale-up domain, run the same number of sequences at once (``concurrency``),
the decode step at tp is memory-bound (``bound`` sram or dram) and TPOT at 2tp is higher; also
every rise at any bound and concurrency, and how many of the counted ones are on NVIDIA parts.
``tests/test_collectives.py`` attributes every static one to a named cause.

    python -m scripts.collectives.tp_rises
"""

from __future__ import annotations

import itertools

import sweep
from grids.hardware import load_device
from grids.spec import DEFAULT_SPEC

PURE_TP = ("tp1", "tp2", "tp4", "tp8")


def count(batching: str) -> dict[str, dict[str, int]]:
    """{engine: {points, all_rises, memory_bound, counted, nvidia}} for one serving mode."""
    spec = {**DEFAULT_SPEC, "engine": ["native", "ideal"], "parallelism": list(PURE_TP),
            "batching": batching}
    ds = sweep.run(spec, progress=False)
    devices = {h: load_device(h) for h in ds.hardware.values}
    out = {}
    for engine in ("native", "ideal"):
        c = {"points": int(ds.tpot.sel(engine=engine).size), "all_rises": 0, "memory_bound": 0,
             "counted": 0, "nvidia": 0}
        for a, b in itertools.pairwise(PURE_TP):
            hws = [h for h, d in devices.items() if d.domain_size >= int(b[2:])]
            s1 = ds.sel(parallelism=a, hardware=hws, engine=engine)
            s2 = ds.sel(parallelism=b, hardware=hws, engine=engine)
            rise = (s1.fits == 1) & (s2.fits == 1) & (s2.tpot > s1.tpot)
            bound = rise & s1.bound.isin([1, 2])
            same = bound & (s1.concurrency == s2.concurrency)
            nvidia = [h for h in hws if devices[h].vendor == "NVIDIA"]
            c["all_rises"] += int(rise.sum())
            c["memory_bound"] += int(bound.sum())
            c["counted"] += int(same.sum())
            c["nvidia"] += int(same.sel(hardware=nvidia).sum())
        out[engine] = c
    return out


def main() -> None:
    for batching in ("static", "continuous"):
        for engine, c in count(batching).items():
            print(f"{batching:10s} {engine:6s} points {c['points']:,}  rises {c['all_rises']:,}  "
                  f"memory-bound {c['memory_bound']:,}  at equal concurrency {c['counted']:,} "
                  f"(NVIDIA {c['nvidia']:,})")


if __name__ == "__main__":
    main()
