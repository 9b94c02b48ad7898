"""Ranking flips between ``ideal`` and ``native`` on the default grid (issue 20, "Check it";
docs/validation.md, "Ranking flips between ideal and native").

A flip: at one workload point (model, batch, context, precision), with each device at its best
layout on a basis, device A beats device B under ``ideal`` (the physics bound) and B beats A under
``native`` (each vendor's reference stack). The physics says A is faster; the engine layer turns
the answer around. What turns it is each device's engine share, native / ideal: a flip happens
where B keeps more of its physics than A. The evidence behind a share is the calibration: an
engine x vendor with held-out measurements (``calibrated = 1``) or the engine files' estimates
alone (``calibrated = 0``). A flip is *within the band* when the native margin is no larger than
the uncertainty band of the two devices' ratio (docs/analysis.md, "Uncertainty bands"): then the
published measurements cannot tell the two apart either.

    python -m scripts.engine_flips [--basis power] [--top 15] [--example]

``--example`` also prints the issue's example on the same grid: Llama-3.3-70B fp8 at a
1,024-token prompt, tokens/s per device meeting TTFT <= 2 s and TPOT <= 50 ms
(``ds.sweep.goodput``), under ``ideal`` and ``native``.
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np

import sweep
from grids.bands import pair_band
from grids.spec import DEFAULT_SPEC
from sweep.analysis.basis import parse_basis
from sweep.analysis.select import candidates


def engine_shares(ds, basis: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(native, ideal) as (hardware, points) arrays of throughput on ``basis``, each device at its
    best layout, and the device labels."""
    c = candidates(ds, "throughput", ("parallelism",), basis=parse_basis(basis))
    rest = [d for d in c.dims if d not in ("hardware", "engine")]
    c = c.stack(point=rest).transpose("engine", "hardware", "point")
    nat = np.asarray(c.sel(engine="native").values, dtype=np.float64)
    idl = np.asarray(c.sel(engine="ideal").values, dtype=np.float64)
    return nat, idl, np.asarray(ds.hardware.values)


def flips(ds, basis: str) -> tuple[list[dict], dict]:
    """One record per device pair with a flip, and totals."""
    nat, idl, hw = engine_shares(ds, basis)
    band = np.asarray(ds.band_factor.sel(engine="native").values, dtype=np.float64)
    used = [str(x) for x in ds.engine_used.sel(engine="native").values]
    vendor = [str(x) for x in ds.hardware_vendor.values]
    calibrated = np.asarray(ds.calibrated.sel(engine="native").values)
    same_ratio = float(ds.band_factor.attrs.get("same_group_ratio", np.nan))
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(np.isfinite(nat) & np.isfinite(idl), nat / idl, np.nan)
    med = np.nanmedian(np.where(np.isfinite(share), share, np.nan), axis=1)
    rows, total = [], {"pairs_points": 0, "flips": 0, "within_band": 0, "uncalibrated_gains": 0}
    for i, j in itertools.combinations(range(len(hw)), 2):
        ok = np.isfinite(nat[i]) & np.isfinite(nat[j]) & np.isfinite(idl[i]) & np.isfinite(idl[j])
        n = int(ok.sum())
        if n == 0:
            continue
        s_ideal = np.sign(idl[i, ok] - idl[j, ok])
        s_native = np.sign(nat[i, ok] - nat[j, ok])
        flip = s_ideal * s_native < 0
        total["pairs_points"] += n
        k = int(flip.sum())
        if k == 0:
            continue
        ratio = np.maximum(nat[i, ok], nat[j, ok])[flip] / np.minimum(nat[i, ok],
                                                                      nat[j, ok])[flip]
        same = used[i] == used[j] and vendor[i] == vendor[j]
        b = float(pair_band(band[i], band[j], same, same_ratio))
        within = int((ratio <= b).sum()) if np.isfinite(b) else 0
        # who gains from the engine layer: the device that loses under ideal and wins natively
        gainer = np.where(s_native[flip] > 0, i, j)
        gains_uncal = int(sum(1 for g in gainer
                              if not calibrated[g] and calibrated[i + j - g]))
        total["flips"] += k
        total["within_band"] += within
        total["uncalibrated_gains"] += gains_uncal
        rows.append({"a": str(hw[i]), "b": str(hw[j]), "points": n, "flips": k,
                     "within_band": within, "band": b, "uncalibrated_gains": gains_uncal,
                     "a_engine": used[i], "b_engine": used[j],
                     "a_calibrated": int(calibrated[i]), "b_calibrated": int(calibrated[j]),
                     "a_share": float(med[i]), "b_share": float(med[j]),
                     "median_native_margin": float(np.median(ratio))})
    rows.sort(key=lambda r: (-r["flips"], r["a"], r["b"]))
    return rows, total


def markdown(rows: list[dict], total: dict, top: int, basis: str) -> str:
    lines = [f"Basis: {parse_basis(basis).label}, each device at its best layout; "
             f"{total['flips']:,} flips over {total['pairs_points']:,} (device pair, workload "
             f"point) comparisons where both devices fit under both engines; "
             f"{total['within_band']:,} of them ({total['within_band'] / max(total['flips'], 1):.0%})"
             f" within the band of the two devices' ratio; in "
             f"{total['uncalibrated_gains']:,} the device that gains has no measurements of "
             f"its engine while the one that loses has.", "",
             "| A | B | points | flips | within band (band) | median native margin | A: engine, "
             "calibrated, native/ideal | B: engine, calibrated, native/ideal |",
             "|---|---|---:|---:|---:|---:|---|---|"]
    for r in rows[:top]:
        lines.append(
            f"| {r['a']} | {r['b']} | {r['points']:,} | {r['flips']:,} | {r['within_band']:,} "
            f"({r['band']:.2f}x) | {r['median_native_margin']:.2f}x | {r['a_engine']}, "
            f"{r['a_calibrated']}, {r['a_share']:.2f} | {r['b_engine']}, {r['b_calibrated']}, "
            f"{r['b_share']:.2f} |")
    if len(rows) > top:
        lines.append(f"| ... {len(rows) - top} more pairs | | | "
                     f"{sum(r['flips'] for r in rows[top:]):,} | | | | |")
    return "\n".join(lines)


EXAMPLE_DEVICES = ("mi300x", "h100-sxm", "gaudi3", "tpu-v7")


def example(ds) -> str:
    """The issue's example (module docstring) as one line per engine."""
    sub = ds.sel(model="llama-3.3-70b", precision="fp8", context=1024,
                 hardware=list(EXAMPLE_DEVICES))
    g = sub.sweep.goodput(ttft=2.0, tpot=0.050, per="device")["goodput"]
    return "\n".join(
        f"{e}: " + ", ".join(f"{h} {float(g.sel(engine=e, hardware=h)):,.0f}"
                             for h in EXAMPLE_DEVICES) + " tokens/s per device"
        for e in ("ideal", "native"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--basis", default="power", help="comparison basis (default power: per kW)")
    p.add_argument("--top", type=int, default=15, help="pairs to list (default 15)")
    p.add_argument("--example", action="store_true",
                   help="also print the issue's Llama-3.3-70B fp8 goodput example")
    args = p.parse_args(argv)
    ds = sweep.run({**DEFAULT_SPEC, "engine": ["native", "ideal"]}, progress=False)
    rows, total = flips(ds, args.basis)
    print(markdown(rows, total, args.top, args.basis))
    if args.example:
        print("\n" + example(ds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
