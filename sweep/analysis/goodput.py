"""SLO-constrained goodput and the serving front (the capacity planner's questions).

* :func:`goodput`: at every other point, the best throughput over batch and layout whose TTFT
  and TPOT meet the targets, on a comparison basis (per device, per kW, per dollar, ...), with
  the batch and layout that achieve it;
* :func:`serving_front`: per device, the Pareto front of tokens/s per user (``1 / TPOT``)
  against throughput on a basis, over batch and layout: the chart serving teams draw.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable

import numpy as np
import pandas as pd
import xarray as xr

from grids.errors import SpecError
from sweep.analysis import core as an
from sweep.analysis.basis import EXTENSIVE, normalised, parse_basis
from sweep.analysis.kept import kept_labels, without_layouts
from sweep.analysis.select import as_dims, masked

#: the ``per`` shorthands of :func:`goodput` and the basis each means
PER = {"device": "device", "kw": "power", "kW": "power", "$": "cost", "usd": "cost",
       "replica": "replica"}
GOODPUT_OVER = ("batch", "parallelism")


def per_basis(per: str):
    """The :class:`~sweep.analysis.basis.Basis` of a ``per`` value: ``device``, ``kW``, ``$``,
    ``replica`` or any basis text (``system:8``, ``power:accelerator``, ...)."""
    text = str(per).strip()
    return parse_basis(PER.get(text, PER.get(text.lower(), text)))


def _limit(ds: xr.Dataset, name: str, bound: float | None) -> xr.DataArray | None:
    if bound is None:
        return None
    if not (isinstance(bound, (int, float)) and np.isfinite(bound) and bound > 0):
        raise SpecError(f"{name} target must be a positive number of seconds, got {bound!r}")
    if name not in ds.data_vars:
        raise SpecError(f"a {name} target needs the {name!r} metric in the result")
    return masked(ds, name) <= bound


def goodput(ds: xr.Dataset, ttft: float | None = None, tpot: float | None = None,
            per: str = "device", metric: str = "throughput",
            over: Iterable[str] | str = GOODPUT_OVER, percentile: str | None = None
            ) -> xr.Dataset:
    """Best ``metric`` over ``over`` (default batch and layout; request rate and layout for a
    result over ``request_rate``) meeting ``TTFT <= ttft`` and ``TPOT <= tpot`` [s] (None: no
    target), at every combination of the other dims. TTFT and TPOT are per request (continuous
    batching, docs/model.md section 13; a result with ``batching = "static"`` gives the static
    batch's); ``percentile`` (``p50``, ``p90``, ``p99``) reads the TTFT target against that
    percentile of a result over request rates.

    ``per``: ``"device"`` (tokens/s per accelerator), ``"kW"`` (per kW at the system boundary),
    ``"$"`` (tokens per US dollar), ``"replica"`` (the layout's own throughput) or any basis
    text of :func:`sweep.analysis.basis.parse_basis` (``"system:8"``: an 8-device budget).
    Returns ``goodput`` (NaN where nothing meets the targets), the ``batch`` and ``parallelism``
    that achieve it (``""``/NaN there), and ``ttft``, ``tpot`` at that point.
    """
    if metric not in EXTENSIVE:
        raise SpecError(f"goodput is a throughput: metric must be one of {list(EXTENSIVE)}, "
                        f"got {metric!r}")
    if ttft is None and tpot is None:
        raise SpecError("give a ttft or tpot target (seconds), or both")
    b = per_basis(per)
    if over == GOODPUT_OVER and "request_rate" in ds.dims:  # a result over arrival rates
        over = ("request_rate", "parallelism")
    over, kept = without_layouts(ds, over)
    if kept:  # each point has its layout already (spec key best_layout): reported below
        warnings.warn("this result kept one layout per point, the best throughput without "
                      "latency targets (spec key best_layout); where it misses a target, a "
                      "layout it dropped may meet it, so this goodput is a lower bound (run "
                      "the grid without best_layout for the exact one)", UserWarning,
                      stacklevel=2)
    dims = as_dims(ds, over, "over", allow_scalar=True)
    vals = normalised(ds, metric, b)
    if percentile is not None and percentile not in ("p50", "p90", "p99"):
        raise SpecError(f"percentile must be one of ['p50', 'p90', 'p99'], got {percentile!r}")
    first = "ttft" if percentile is None else f"ttft_{percentile}"
    if percentile is not None and first not in ds.data_vars:
        raise SpecError(f"a {percentile} TTFT target needs a result over request_rate (the "
                        "latency percentiles exist only there)")
    for name, bound in ((first, ttft), ("tpot", tpot)):
        ok = _limit(ds, name, bound)
        if ok is not None:
            vals = vals.where(ok)
    rest = [d for d in vals.dims if d not in dims]
    vals = vals.transpose(*rest, *dims)
    shape = [vals.sizes[d] for d in rest]
    flat = np.asarray(vals.values, dtype=np.float64).reshape(*shape, -1)
    idx = an.extreme_index(flat, np.isfinite(flat), "max", axis=-1)
    found = idx >= 0
    safe = np.where(found, idx, 0)
    best = np.where(found, np.take_along_axis(flat, safe[..., None], -1)[..., 0], np.nan)
    coords = {d: vals[d] for d in rest}
    out = xr.Dataset(coords=coords)
    out["goodput"] = xr.DataArray(best, dims=rest, attrs={
        "units": vals.attrs.get("units", ""), "basis": b.label,
        "long_name": f"best {metric} meeting the latency targets ({b.label})"})
    sub = [vals.sizes[d] for d in dims]
    pos = np.unravel_index(safe, sub) if dims else ()
    for d, p in zip(dims, pos):
        labels = np.asarray(vals[d].values)
        if labels.dtype.kind in "iuf":
            col = np.where(found, labels[p].astype(np.float64), np.nan)
        else:
            col = np.where(found, labels[p].astype(object), "")
        out[d] = xr.DataArray(col, dims=rest, attrs={"long_name": f"{d} that achieves it"})
    if kept:
        lab = kept_labels(ds).broadcast_like(vals).transpose(*rest, *dims)
        lf = np.asarray(lab.values, dtype=object).reshape(*shape, -1)
        at = np.take_along_axis(lf, safe[..., None], -1)[..., 0]
        out["parallelism"] = xr.DataArray(np.where(found, at, ""), dims=rest, attrs={
            "long_name": "parallelism that achieves it (the layout the result kept)"})
    for name in dict.fromkeys(("ttft", first, "tpot")):
        if name in ds.data_vars:
            m = masked(ds, name).transpose(*rest, *dims)
            mf = np.asarray(m.values, dtype=np.float64).reshape(*shape, -1)
            at = np.take_along_axis(mf, safe[..., None], -1)[..., 0]
            out[f"{name}_at"] = xr.DataArray(np.where(found, at, np.nan), dims=rest,
                                             attrs={"units": "s",
                                                    "long_name": f"{name} at that point"})
    out.attrs = {"metric": metric, "basis": b.label, "ttft_target_s": -1.0 if ttft is None
                 else float(ttft), "tpot_target_s": -1.0 if tpot is None else float(tpot),
                 "over": " ".join(dims)}
    return out


def serving_front(ds: xr.Dataset, per: str = "device", metric: str = "throughput",
                  over: Iterable[str] | str = GOODPUT_OVER) -> pd.DataFrame:
    """The per-user vs per-unit throughput front at every combination of the dims not in
    ``over`` (one front per device, engine, model, ...): rows of the non-dominated points with
    ``per_user`` (tokens/s per user = 1 / TPOT), ``per_unit`` (``metric`` on the ``per`` basis,
    as :func:`goodput`), the ``over`` coordinates and ``tpot``, sorted by ``per_user``."""
    if "tpot" not in ds.data_vars:
        raise SpecError("the serving front needs the 'tpot' metric")
    b = per_basis(per)
    dims = as_dims(ds, over, "over", allow_scalar=True)
    y = normalised(ds, metric, b)
    x = 1.0 / masked(ds, "tpot")
    x, y = xr.broadcast(x, y)
    rest = [str(d) for d in y.dims if d not in dims]  # xarray types dims as Hashable
    x, y = x.transpose(*rest, *dims), y.transpose(*rest, *dims)
    n = int(np.prod([y.sizes[d] for d in dims])) if dims else 1
    xv = np.asarray(x.values, dtype=np.float64).reshape(-1, n)
    yv = np.asarray(y.values, dtype=np.float64).reshape(-1, n)
    mask = an.pareto_mask(np.stack([xv, yv], axis=-1))
    g, j = np.nonzero(mask)  # front points, group by group, in storage order
    columns: dict[str, np.ndarray] = {}
    for names, flat in ((rest, g), (dims, j)):
        if not names:
            continue
        pos = np.unravel_index(flat, [y.sizes[d] for d in names])
        for d, p in zip(names, pos):
            columns[d] = np.asarray(y[d].values)[p]
    columns.update(per_user=xv[g, j], per_unit=yv[g, j], tpot=1.0 / xv[g, j])
    cols = [*rest, *dims, "per_user", "per_unit", "tpot"]
    table = pd.DataFrame(columns, columns=cols)
    table = table.sort_values([*rest, "per_user"], kind="stable").reset_index(drop=True)
    table.attrs = {"metric": metric, "basis": b.label, "units_per_user": "token/s per user",
                   "units_per_unit": y.attrs.get("units", "")}
    return table
