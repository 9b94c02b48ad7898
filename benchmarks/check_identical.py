"""Check that two source trees produce identical results: same specs, every variable compared bit
for bit (NaN pattern included), every coordinate and attribute compared, except the provenance
attributes that say when the result was made.

    PYTHONPATH=. python3 benchmarks/check_identical.py --before /tmp/base [--after DIR]

Each tree runs in its own interpreter (``PYTHONPATH`` = the tree) and writes, per case: the
in-memory result of ``sweep.run`` (pickled), the same spec streamed in small chunks to netCDF and
to Zarr, and ``sweep.evaluate`` of a random table of points (with ``batch = "max"`` rows). The
results are then compared here with xarray and pandas only. Exit status 0 if everything is
identical, 1 otherwise: every difference is listed, per variable with how many values differ,
NaN only in one tree, and the largest absolute and relative difference (the physics of an earlier
commit may differ on purpose: e.g. against 6417765, spec-decoding ``mfu``/``mbu``). A case one tree
cannot run is reported, not fatal.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

#: global attributes that record when (not what) a result was made
TIMING_ATTRS = ("created_utc",)

CASES = {
    "default": None,
    "engines-output_len-hypothetical": {
        "hardware": ["h100-sxm", "mi300x", "groq-lpu", "cs-3", "sn40l", "tpu-v5e", "gaudi3"],
        "engine": ["ideal", "native", "vllm"],
        "model": ["llama-3.1-8b", "mixtral-8x7b", "deepseek-r1", "llama-3.3-70b"],
        "batch": {"from": 1, "to": 512, "scale": "log2"},
        "context": [128, 1000, 4096, 32768],
        "output_len": [1, 64, 1024],
        "precision": ["bf16", "fp8", "w4a16"],
        "parallelism": ["tp1", "tp2", "tp8", "ep8", "tp4-pp2", "tp8-off0.25", "tp2-ep4"],
        "efficiency": {"mi300x": {"bandwidth_efficiency": 0.7}},
        "hypothetical": {"h100-fast": {"base": "h100-sxm",
                                       "hbm_bandwidth": ["4 TB/s", "8 TB/s"]}},
    },
    # request rates (the steady state solved for the concurrency that serves each rate) and
    # speculative decoding (groq-specdec's rounds), which the cases above do not reach
    "rate-speculative": {
        "hardware": ["h100-sxm", "mi300x", "gaudi3", "groq-lpu"],
        "engine": ["native", "vllm", "groq-specdec"],
        "model": ["llama-3.1-8b", "llama-3.3-70b", "mixtral-8x7b"],
        "request_rate": [0.05, 0.3, 1, 3, 10, 30, 100],
        "context": [128, 2048, 8192],
        "output_len": [2, 16, 256, 2048],
        "precision": ["bf16", "fp8"],
        "parallelism": ["tp1", "tp2", "tp8", "ep8", "tp8-pp8", "tp8-pp16", "tp32-pp4"],
    },
}

#: layouts in the default grids of 6417765 and of later trees: the random point table draws from
#: these, so both trees evaluate the same points
TABLE_LAYOUTS = ["tp1", "tp2", "tp4", "tp8", "ep4", "ep8", "tp2-ep4", "tp8-off0.25", "tp8-pp16"]

_CHILD = r"""
import json, pickle, sys, traceback
import numpy as np, pandas as pd
import sweep
from sweep.execute.local import run_with_stats

case, spec, out, layouts = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
errors = {}
ds = sweep.run(spec, progress=False, max_memory="8 GiB")
with open(f"{out}/{case}.pkl", "wb") as f:
    pickle.dump(ds, f)
for fmt, ext in (("netcdf", ".nc"), ("zarr", ".zarr")):
    try:
        r, _ = run_with_stats(spec, output=f"{out}/{case}{ext}", format=fmt, max_memory="4 MiB",
                              progress=False)
        r.close()
    except Exception as exc:
        errors[ext] = f"{type(exc).__name__}: {exc}"
        traceback.print_exc()
if case == "default":
    rng = np.random.default_rng(7)
    pick = lambda vals, n: [str(v) for v in rng.choice(np.asarray(vals), n)]
    n = 400
    table = pd.DataFrame({"hardware": pick(ds["hardware"].values, n),
                          "model": pick(ds["model"].values, n),
                          "batch": [str(int(b)) if i % 5 else "max"
                                    for i, b in enumerate(rng.choice(ds["batch"].values, n))],
                          "context": rng.choice(ds["context"].values, n),
                          "output_len": rng.integers(1, 2048, n),
                          "precision": pick(ds["precision"].values, n),
                          "parallelism": pick(layouts, n)})
    try:
        sweep.evaluate(table).to_pickle(f"{out}/{case}-evaluate.pkl")
    except Exception as exc:
        errors["evaluate"] = f"{type(exc).__name__}: {exc}"
with open(f"{out}/{case}-errors.json", "w") as f:
    json.dump(errors, f)
"""


def run_tree(root: Path, out: Path) -> dict[str, str]:
    """Run every case in ``root``'s interpreter; returns {case: error} for cases it could not
    run (an earlier tree may lack a feature a case uses)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["PYTHONPATH"] = str(root)
    failed = {}
    for case, spec in CASES.items():
        p = subprocess.run([sys.executable, "-c", _CHILD, case, json.dumps(spec), str(out),
                            json.dumps(TABLE_LAYOUTS)],
                           env=env, cwd=str(out), capture_output=True, text=True)
        if p.returncode != 0:
            failed[case] = (p.stderr.strip().splitlines() or ["?"])[-1][-400:]
            print(f"  {case}: failed in {root}: {failed[case]}", file=sys.stderr, flush=True)
    return failed


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else a


def value_diff(x: np.ndarray, y: np.ndarray) -> dict | None:
    """How two same-shaped arrays differ (None: bit-identical): values differing, NaN in only
    one of them, and the largest absolute and relative difference where both are finite."""
    if x.dtype.kind != "f" or y.dtype.kind != "f":
        if np.array_equal(x, y):
            return None
        return {"differ": int(np.count_nonzero(x != y)), "of": int(x.size)}
    if np.array_equal(_bits(x), _bits(y)):
        return None
    nx, ny = np.isnan(x), np.isnan(y)
    both = np.isfinite(x) & np.isfinite(y)
    xd, yd = x[both].astype(np.float64), y[both].astype(np.float64)
    diff = np.abs(xd - yd)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(diff > 0, diff / np.maximum(np.abs(xd), np.abs(yd)), 0.0)
    differ = (_bits(x) != _bits(y)) & ~(nx & ny)
    return {"differ": int(np.count_nonzero(differ)), "of": int(x.size),
            "nan_only_before": int(np.count_nonzero(nx & ~ny)),
            "nan_only_after": int(np.count_nonzero(ny & ~nx)),
            "max_abs": float(diff.max()) if diff.size else 0.0,
            "max_rel": float(rel.max()) if rel.size else 0.0}


def describe(d: dict) -> str:
    text = f"{d['differ']:,} of {d['of']:,} values differ"
    if "max_rel" in d:
        text += f" (max rel {d['max_rel']:.3g}, max abs {d['max_abs']:.3g}"
        if d["nan_only_before"] or d["nan_only_after"]:
            text += (f"; NaN only before {d['nan_only_before']:,}, only after "
                     f"{d['nan_only_after']:,}")
        text += ")"
    return text


def common_labels(a, b, where: str) -> tuple:
    """``a`` and ``b`` on the labels both have along every dim (a later tree's default grid may
    have more layouts), and a note of what was left out."""
    import xarray as xr

    notes = []
    for d in sorted(set(a.dims) & set(b.dims)):
        na, nb = a.sizes[d], b.sizes[d]
        if d in a.indexes and d in b.indexes:
            common = a.indexes[d].intersection(b.indexes[d])
            if len(common) != na or len(common) != nb:
                notes.append(f"{d} {len(common)} common of {na} before / {nb} after")
    if notes:
        a, b = xr.align(a, b, join="inner")
        return a, b, [f"{where}: compared on the common labels: {'; '.join(notes)}"]
    return a, b, []


def compare_datasets(a, b, where: str, diffs: dict | None = None) -> list[str]:
    """Problems found comparing ``a`` (before) with ``b`` (after), on their common labels;
    per-variable value differences also go to ``diffs[(where, name)]``."""
    a, b, problems = common_labels(a, b, where)
    if set(a.data_vars) != set(b.data_vars):
        problems.append(f"{where}: variables only in one: "
                        f"{sorted(set(a.data_vars) ^ set(b.data_vars))}")
    for name in sorted(set(a.data_vars) & set(b.data_vars)):
        x, y = a[name], b[name]
        if x.dims != y.dims or x.shape != y.shape or x.dtype != y.dtype:
            problems.append(f"{where}: {name}: dims/shape/dtype {x.dims} {x.shape} {x.dtype} vs "
                            f"{y.dims} {y.shape} {y.dtype}")
            continue
        d = value_diff(np.asarray(x.values), np.asarray(y.values))
        if d is not None:
            problems.append(f"{where}: {name}: {describe(d)}")
            if diffs is not None:
                diffs[(where, name)] = d
        if _attrs(x.attrs) != _attrs(y.attrs):
            problems.append(f"{where}: {name}: attributes differ")
    for name in sorted(set(a.coords) | set(b.coords)):
        if name not in a.coords or name not in b.coords:
            problems.append(f"{where}: coordinate {name} only in one")
            continue
        xa, xb = np.asarray(a[name].values), np.asarray(b[name].values)
        if xa.shape != xb.shape or not np.array_equal(
                xa, xb, equal_nan=xa.dtype.kind == "f" and xb.dtype.kind == "f"):
            problems.append(f"{where}: coordinate {name} values differ")
        if _attrs(a[name].attrs) != _attrs(b[name].attrs):
            problems.append(f"{where}: coordinate {name} attributes differ")
    ga = {k: v for k, v in a.attrs.items() if k not in TIMING_ATTRS}
    gb = {k: v for k, v in b.attrs.items() if k not in TIMING_ATTRS}
    if _attrs(ga) != _attrs(gb):
        diff = sorted(k for k in set(ga) | set(gb) if str(ga.get(k)) != str(gb.get(k)))
        problems.append(f"{where}: global attributes differ: {diff}")
    return problems


def _attrs(d: dict) -> dict:
    """Attributes in a comparable form: arrays as lists, NaN (e.g. a ``_FillValue``) as a string,
    since NaN != NaN would make two identical files differ."""
    def norm(v):
        v = np.asarray(v).tolist() if isinstance(v, np.ndarray) else v
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, float | np.floating) and np.isnan(v):
            return "nan"
        return v

    return {k: norm(v) for k, v in d.items()}


def compare(before: Path, after: Path, skip: set[str] = frozenset(),
            diffs: dict | None = None) -> list[str]:
    import pandas as pd
    import xarray as xr

    problems: list[str] = []
    for case in CASES:
        if case in skip:
            continue
        with open(before / f"{case}.pkl", "rb") as f:
            a = pickle.load(f)
        with open(after / f"{case}.pkl", "rb") as f:
            b = pickle.load(f)
        problems += compare_datasets(a, b, f"{case} (in memory)", diffs)
        for ext, opener in ((".nc", lambda p: xr.open_dataset(p, engine="netcdf4",
                                                              mask_and_scale=False)),
                            (".zarr", lambda p: xr.open_zarr(p, mask_and_scale=False))):
            missing = [lab for lab, d in (("before", before), ("after", after))
                       if not (d / f"{case}{ext}").exists()]
            if missing:
                errs = {lab: json.loads((d / f"{case}-errors.json").read_text()).get(ext, "?")
                        for lab, d in (("before", before), ("after", after)) if lab in missing}
                problems.append(f"{case} ({ext} file): not written by the "
                                + "; ".join(f"{lab} tree ({e})" for lab, e in errs.items()))
                continue
            with opener(before / f"{case}{ext}") as x, opener(after / f"{case}{ext}") as y:
                problems += compare_datasets(x.load(), y.load(), f"{case} ({ext} file)")
            with opener(after / f"{case}{ext}") as y:  # the file holds the in-memory result
                problems += [f"after tree: {p}" for p in
                             compare_datasets(b, y.load(), f"{case} (memory vs {ext})")
                             if "attributes" not in p]
        ev = f"{case}-evaluate.pkl"
        if (before / ev).exists() and (after / ev).exists():
            x, y = pd.read_pickle(before / ev), pd.read_pickle(after / ev)
            if len(x) != len(y):
                problems.append(f"{case} (evaluate): {len(x)} rows before, {len(y)} after")
                continue
            only = sorted(set(x.columns) ^ set(y.columns))
            if only:
                problems.append(f"{case} (evaluate): columns only in one: {only}")
            for col in [c for c in x.columns if c in y.columns]:
                xv, yv = x[col].to_numpy(), y[col].to_numpy()
                if xv.dtype.kind == "f" and yv.dtype.kind == "f":
                    d = value_diff(xv, yv)
                elif np.array_equal(xv.astype(str), yv.astype(str)):
                    d = None
                else:
                    d = {"differ": int(np.count_nonzero(xv.astype(str) != yv.astype(str))),
                         "of": len(xv)}
                if d is not None:
                    problems.append(f"{case} (evaluate): column {col}: {describe(d)}")
                    if diffs is not None:
                        diffs[(f"{case} (evaluate)", col)] = d
    return problems


def by_variable(diffs: dict) -> list[str]:
    """One line per variable that differs anywhere: in which results, and by how much."""
    names: dict[str, list] = {}
    for (where, name), d in diffs.items():
        names.setdefault(name, []).append((where, d))
    lines = []
    for name in sorted(names):
        rows = names[name]
        rel = [d["max_rel"] for _, d in rows if "max_rel" in d]
        worst = f"; max rel {max(rel):.3g}" if rel else ""
        n = sum(d["differ"] for _, d in rows)
        lines.append(f"  {name:24s} {n:>12,} values differ in {len(rows)} result(s){worst}: "
                     + "; ".join(where for where, _ in rows))
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="the earlier source tree")
    ap.add_argument("--after", type=Path, default=ROOT, help="the later one (default: this tree)")
    ap.add_argument("--tmpdir", type=Path, default=None)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="sweep-identical-", dir=args.tmpdir))
    failed: dict[str, dict[str, str]] = {}
    diffs: dict = {}
    try:
        dirs = {}
        for label, root in (("before", args.before), ("after", args.after)):
            d = work / label
            d.mkdir()
            print(f"running {label} ({root}) ...", file=sys.stderr, flush=True)
            failed[label] = run_tree(root.resolve(), d)
            dirs[label] = d
        not_run = set(failed["before"]) | set(failed["after"])
        problems = compare(dirs["before"], dirs["after"], not_run, diffs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for label, cases in failed.items():
        for case, err in cases.items():
            problems.append(f"{case}: not compared: the {label} tree could not run it ({err})")
    cases = ", ".join(CASES)
    print(f"before = {args.before}, after = {args.after}")
    if problems:
        print(f"DIFFERENT ({len(problems)} problems) for cases {cases}:")
        for p in problems:
            print("  " + p)
        if diffs:
            print("by variable (value differences; NaN patterns included):")
            print("\n".join(by_variable(diffs)))
        return 1
    print(f"identical: cases {cases}: in-memory results, streamed netCDF and Zarr files and "
          f"sweep.evaluate (bit for bit, NaN pattern included; every coordinate and attribute, "
          f"except {', '.join(TIMING_ATTRS)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
