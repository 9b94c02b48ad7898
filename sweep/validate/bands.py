"""Uncertainty bands from held-out residuals: what ``sweep bands`` computes and writes.

For every usable measurement the residual is ``e = ln(predicted / measured)`` of a prediction
that did not see the row's publisher (leave-one-publisher-out: the engines are calibrated on
every other publisher, :func:`sweep.validate.calibration.leave_one_publisher_out`). Rows are
grouped by (the engine that serves the device, the device's vendor); a group's band is the
``quantile`` (default 0.68) of ``|e|``, as a factor ``exp(q) >= 1``. The band of a vendor
without data comes from leave-one-*vendor*-out residuals (the engines calibrated without any
measurement of the vendor; an engine left without rows takes the cross-engine ``[pooled]``
factors, as a stack without measurements does), each held-out vendor weighted equally so the
vendor with most rows does not decide it. The band of the ratio of two devices of one group is the quantile of
``|e_a - e_b|`` over pairs of held-out rows that differ only in the device. The rules that turn
these into a device's band are in :mod:`grids.bands`.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from grids import tomlio
from grids.bands import BOUND_ENGINE, load_bands
from grids.engines.parameters import POOLED, engine_family
from grids.errors import SpecError
from sweep.validate import calibration as C
from sweep.validate import measurements as V
from sweep.validate.evaluator import compare

DEFAULT_QUANTILE = 0.68
#: held-out rows a group needs for a band of its own
DEFAULT_MIN_ROWS = 10
#: what identifies one measured configuration apart from its device (pairs for the ratio band)
PAIR_KEYS = ("publisher", "source", "engine", "model", "precision", "parallelism", "load",
             "batch", "context", "output_len", "metric", "scope", "statistic")

HEADER = """Uncertainty bands of the predictions, written by `sweep bands` (sweep/validate/bands.py; the
rules that pick a device's band: grids/bands.py; method and table: docs/validation.md). Do not
edit by hand: rerun the command in [provenance]. A band is a factor f >= 1: the stated quantile
of held-out measurements lies within [predicted / f, predicted x f]."""


def row_groups(res: pd.DataFrame) -> pd.DataFrame:
    """(engine, vendor) of each row of a :func:`~sweep.validate.evaluator.compare` frame: the
    engine that serves the row's device (a ``native`` or unstated engine resolves to the vendor's
    stack) and the device's vendor; both ``""`` when the row names devices of several groups or
    an id outside the catalog."""
    from grids.engines import resolve
    from grids.hardware import load_catalog

    catalog = load_catalog()
    cache: dict[tuple[str, str], tuple[str, str]] = {}

    def group(engine: str, hardware: str) -> tuple[str, str]:
        key = (engine, hardware)
        if key not in cache:
            found = set()
            for h in str(hardware).split(";"):
                dev = catalog.get(h.strip())
                if dev is None:
                    found.add(("", ""))
                    continue
                served = resolve(engine.strip("()"), dev).delegate
                found.add((engine_family(served), dev.vendor))  # a build is its engine's
            cache[key] = found.pop() if len(found) == 1 else ("", "")
        return cache[key]

    pairs = [group(e, h) for e, h in zip(res["engine"].astype(str), res["hardware"].astype(str))]
    return pd.DataFrame(pairs, columns=["group_engine", "group_vendor"], index=res.index)


def factor(abs_log_errors: np.ndarray, q: float, weights: np.ndarray | None = None) -> float:
    """``exp`` of the ``q`` quantile of ``|ln(pred/meas)|``: the smallest value whose share of
    the (``weights``-weighted) values at or below it reaches ``q`` (numpy's ``inverted_cdf``
    quantile when unweighted); NaN without values."""
    a = np.asarray(abs_log_errors, dtype=np.float64)
    if a.size == 0:
        return math.nan
    w = np.ones(a.size) if weights is None else np.asarray(weights, dtype=np.float64)
    order = np.argsort(a, kind="stable")
    cum = np.cumsum(w[order]) / w.sum()
    return float(np.exp(a[order][np.searchsorted(cum, q)]))


def _used(res: pd.DataFrame) -> pd.DataFrame:
    out = res[res["status"].eq("used") & np.isfinite(res["log_error"])]
    return out.join(row_groups(out))


def held_out_by_publisher(df: pd.DataFrame, progress: Callable[[str], None] | None = None,
                          floor_dtypes: bool = False) -> pd.DataFrame:
    """Every usable row predicted by engines calibrated without its publisher, with its group
    (``floor_dtypes``: each calibration as ``sweep calibrate --floor-dtypes`` fits it)."""
    recs = C.leave_one_publisher_out(df, progress=progress, floor_dtypes=floor_dtypes)
    return _used(pd.concat([r["results"] for r in recs.values()], ignore_index=True))


def held_out_by_vendor(df: pd.DataFrame, progress: Callable[[str], None] | None = None,
                       floor_dtypes: bool = False) -> pd.DataFrame:
    """Every usable row of each vendor predicted by engines calibrated without any of that
    vendor's rows (a vendor's rows: those whose devices are all of the vendor). An engine fitted
    on the whole data that loses all its rows with the vendor (TensorRT-LLM without NVIDIA,
    Neuron without AWS) is predicted as a stack without measurements is: with the cross-engine
    ``[pooled]`` factors of the remaining rows (docs/engines.md, "Stacks without measurements")."""
    say = progress or (lambda m: None)
    probe = _used(compare(df, overlay={}))
    named = df.loc[V.usable_mask(df), "engine"].dropna().astype(str).value_counts()
    fitted = {e for e, n in named.items() if e and n >= C.DEFAULT_MIN_ROWS}
    parts = []
    for vendor in sorted(v for v in probe["group_vendor"].unique() if v):
        test = df.index.isin(probe.index[probe["group_vendor"].eq(vendor)])
        say(f"leave out vendor {vendor} ({int(test.sum())} rows): calibrating on the others")
        try:
            overlay = C.calibrate(df.loc[~test], floor_dtypes=floor_dtypes).overlay
        except SpecError:  # nothing left to fit: the engine files' values
            overlay = {}
        pooled = overlay.get(POOLED, {})
        for engine in sorted(fitted - set(overlay)) if pooled else ():
            overlay[engine] = {"defaults": C._copy(pooled)}
        parts.append(_used(compare(df.loc[test], overlay=overlay)))
    return pd.concat(parts, ignore_index=True) if parts else probe.iloc[:0]


def pair_differences(held: pd.DataFrame) -> np.ndarray:
    """``|e_a - e_b|`` over pairs of rows of one group that differ only in the device."""
    keyed = held[held["group_engine"].ne("")].copy()
    keys = [*PAIR_KEYS, "group_engine", "group_vendor"]
    for k in keys:
        keyed[k] = keyed[k].astype(str)
    m = keyed[[*keys, "hardware", "log_error"]].merge(
        keyed[[*keys, "hardware", "log_error"]], on=keys, suffixes=("_a", "_b"))
    m = m[m["hardware_a"] < m["hardware_b"]]
    return np.abs(m["log_error_a"].to_numpy() - m["log_error_b"].to_numpy())


def compute_bands(df: pd.DataFrame, *, quantile: float = DEFAULT_QUANTILE,
                  min_rows: int = DEFAULT_MIN_ROWS,
                  progress: Callable[[str], None] | None = None,
                  floor_dtypes: bool = False) -> dict[str, Any]:
    """The tables of a bands file (without ``[provenance]``): ``settings`` (quantile, min_rows,
    no_data, same_group_ratio and their row counts) and ``groups`` ({engine: {vendor: {factor,
    rows, bias, publishers}}}). ``floor_dtypes``: every held-out calibration raises narrower-dtype
    compute factors to their floors, as the shipped overlay's fit does when it was made with
    ``sweep calibrate --floor-dtypes``."""
    if not 0 < quantile < 1:
        raise SpecError(f"--quantile must be between 0 and 1, got {quantile}")
    if min_rows < 1:
        raise SpecError(f"--min-rows must be >= 1, got {min_rows}")
    say = progress or (lambda m: None)
    held = held_out_by_publisher(df, progress, floor_dtypes)
    if held.empty:
        raise SpecError("sweep bands: no usable row could be predicted; nothing to measure")
    groups: dict[str, dict[str, Any]] = {}
    for (engine, vendor), g in held[held["group_engine"].ne("")].groupby(
            ["group_engine", "group_vendor"], sort=True):
        if engine == BOUND_ENGINE:
            continue
        e = g["log_error"].to_numpy()
        groups.setdefault(str(engine), {})[str(vendor)] = {
            "factor": factor(np.abs(e), quantile), "rows": int(e.size),
            "bias": float(np.median(e)), "publishers": int(g["publisher"].nunique())}
    say("leave-one-vendor-out: the band of a vendor without data")
    lovo = held_out_by_vendor(df, progress, floor_dtypes)
    counts = lovo["group_vendor"].value_counts()
    kept = lovo[lovo["group_vendor"].map(counts).ge(min_rows)]
    w = 1.0 / kept["group_vendor"].map(counts).to_numpy(dtype=np.float64)
    per_vendor = {str(v): {"factor": factor(np.abs(g["log_error"].to_numpy()), quantile),
                           "rows": len(g),
                           "bias": float(np.median(g["log_error"].to_numpy()))}
                  for v, g in kept.groupby("group_vendor", sort=True)}
    diffs = pair_differences(held)
    settings: dict[str, Any] = {
        "quantile": quantile, "min_rows": min_rows,
        "no_data": factor(np.abs(kept["log_error"].to_numpy()), quantile, w),
        "no_data_vendors": per_vendor,
        "pooled": factor(np.abs(held["log_error"].to_numpy()), quantile),
        "pooled_rows": len(held),
        "same_group_pairs": int(diffs.size)}
    if diffs.size >= min_rows:
        settings["same_group_ratio"] = factor(diffs, quantile)
    return {"settings": settings, "groups": groups}


def bands_toml(tables: dict[str, Any], *, data_path: str | Path, command: str,
               date: str | None = None) -> str:
    """The bands file as TOML text: ``tables`` + ``[provenance]``."""
    date = date or _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    prov = {"tool": "sweep bands", "command": command, "date": date,
            "data": C._display_path(data_path), "data_sha256": V.file_sha256(data_path),
            "code_commit": C.git_commit(),
            "method": "leave-one-publisher-out residuals ln(predicted/measured) per (engine, "
                      "vendor); a vendor without data: leave-one-vendor-out, vendors weighted "
                      "equally; the ratio of two devices of one group: pairs of held-out rows "
                      "that differ only in the device"}
    return tomlio.dumps({**tables, "provenance": prov}, header=HEADER)


def is_bands_file(path: str | Path) -> bool:
    """True if ``path`` was written by ``sweep bands`` (its ``[provenance]`` says so)."""
    try:
        prov = tomlio.load(Path(path)).get("provenance")
    except (SpecError, OSError, UnicodeDecodeError):
        return False
    return isinstance(prov, dict) and prov.get("tool") == "sweep bands"


def check_bands_output(path: str | Path, overwrite: bool = False) -> Path:
    """Check ``sweep bands -o`` before any work (as for a calibration overlay)."""
    from sweep.results.target import check_file_output

    if C.inside_installation(path):
        raise SpecError(f"-o {path}: refusing to write into the installed package "
                        f"({Path(path).resolve().parent}); write the bands to a path of your own")
    return check_file_output(path, what="a bands file", suffixes=(".toml",),
                             is_own=is_bands_file, overwrite=overwrite)


def write_bands(text: str, path: str | Path, overwrite: bool = False) -> Path:
    """Write atomically, after checking the text reads back as a bands file; when ``path`` is
    the shipped file, forget the cached copy."""
    from grids.bands import BANDS_FILE, shipped_bands
    from sweep.results.target import write_file

    path = check_bands_output(path, overwrite)

    def fill(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")
        load_bands(tmp)

    write_file(path, fill)
    if Path(path).resolve() == BANDS_FILE:
        shipped_bands.cache_clear()
    return path


__all__ = ["bands_toml", "compute_bands", "factor", "pair_differences", "row_groups",
           "write_bands"]
