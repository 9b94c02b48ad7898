"""Uncertainty bands in the analyses: the band of a ratio between two devices, and ties.

A result carries ``band_factor`` per (hardware, engine) (:mod:`grids.bands`, written by
``sweep bands``): the measured value lies within ``[value / f, value x f]`` for the stated share
of held-out measurements. A *ratio* of two predictions (a winner's margin, the headline
variation) has its own band: for two devices served by one engine of one vendor the measured
band of such ratios (the ``same_group_ratio`` attribute: their systematic errors cancel), else
the two bands combined as independent log-normal errors, ``exp(sqrt(ln(f_a)^2 + ln(f_b)^2))``.
A winner whose margin over the runner-up is within that band is a tie. Bands describe
comparisons across devices and engines; they are NaN for other ``over`` dims, for the ``ideal``
engine (the physics bound) and for results written before bands existed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import xarray as xr

from grids.bands import pair_band

#: the dims bands are given over
BAND_DIMS = ("hardware", "engine")


def has_bands(ds: xr.Dataset) -> bool:
    """True when ``ds`` carries the band coordinates (results since issue 20's bands)."""
    return "band_factor" in ds.variables and "engine_used" in ds.variables \
        and "hardware_vendor" in ds.variables


def _groups(ds: xr.Dataset) -> xr.DataArray:
    """An integer code per (hardware, engine) (whichever of the two are still dims): equal codes
    = one (serving engine, vendor)."""
    used, vendor = xr.broadcast(ds["engine_used"].reset_coords(drop=True),
                                ds["hardware_vendor"].reset_coords(drop=True))
    # plain str lists: a file may hold numpy's StringDType, which does not cast to str arrays
    keys = [f"{u}|{v}" for u, v in zip(np.asarray(used.values).ravel().tolist(),
                                        np.asarray(vendor.values).ravel().tolist())]
    _, codes = np.unique(np.array(keys, dtype=object), return_inverse=True)
    return xr.DataArray(codes.reshape(used.shape), dims=used.dims,
                        coords={d: ds[d] for d in used.dims})


def _same_ratio(ds: xr.Dataset) -> float:
    v = ds["band_factor"].attrs.get("same_group_ratio", math.nan)
    return float(v) if isinstance(v, (int, float, np.floating)) else math.nan


def _at(ds: xr.Dataset, over: str, reduced: Iterable[str]) -> tuple[xr.DataArray, xr.DataArray]:
    """(band factor, group code) with the ``reduced`` band dims taken at their widest band
    (which engine won a reduction is not kept: the widest is the conservative choice) and a
    group code of -1 where two groups were reduced together."""
    f = ds["band_factor"].reset_coords(drop=True)
    g = _groups(ds)
    for d in reduced:
        if d in f.dims and d != over:
            one = (g == g.isel({d: 0})).all(d)
            f = f.max(d)
            g = g.isel({d: 0}).where(one, -1)
    return f, g


def margin_band(ds: xr.Dataset, over: str, reduced: Iterable[str], first: xr.DataArray,
                second: xr.DataArray) -> xr.DataArray | None:
    """The band of the winner/runner-up ratio at every point (``first``/``second``: their
    indices along ``over``, -1 = none), or None when ``ds`` has no bands or ``over`` is not a
    band dim."""
    if over not in BAND_DIMS or not has_bands(ds):
        return None
    f, g = _at(ds, over, reduced)
    i, j = first.clip(0), second.clip(0)
    fa, fb = f.isel({over: i}), f.isel({over: j})
    ga, gb = g.isel({over: i}), g.isel({over: j})
    fa, fb, ga, gb = xr.broadcast(fa, fb, ga, gb)
    band = pair_band(fa.values, fb.values, (ga.values == gb.values) & (ga.values >= 0),
                     _same_ratio(ds))
    ok = ((first >= 0) & (second >= 0)).broadcast_like(fa)
    out = xr.DataArray(np.where(ok.values, band, np.nan), dims=fa.dims,
                       coords={k: v for k, v in fa.coords.items() if k in fa.dims})
    return out.drop_vars([c for c in out.coords if c == over], errors="ignore")


def ratio_band(ds: xr.Dataset, over: str, a: Any, b: Any, where: dict[str, Any],
               reduced: Iterable[str] = ()) -> float:
    """The band [1] of the ratio between labels ``a`` and ``b`` of ``over`` at the point
    ``where`` ({dim: value}); NaN without bands or when ``over`` is not a band dim."""
    if over not in BAND_DIMS or not has_bands(ds):
        return math.nan
    f, g = _at(ds, over, reduced)
    at = {k: v for k, v in where.items() if k in f.dims and k != over}
    f, g = f.sel(at), g.sel(at)
    rest = [d for d in f.dims if d != over]
    if rest:  # a band dim that is neither compared nor fixed: the widest
        f, g = f.max(rest), g.max(rest).where((g == g.max(rest)).all(rest), -1)
    fa, fb = float(f.sel({over: a})), float(f.sel({over: b}))
    ga, gb = int(g.sel({over: a})), int(g.sel({over: b}))
    return float(pair_band(fa, fb, ga == gb and ga >= 0, _same_ratio(ds)))


def band_interval(ratio: float, band: float) -> tuple[float, float]:
    """``(ratio / band, ratio x band)``, NaN when either is NaN."""
    if not (math.isfinite(ratio) and math.isfinite(band)):
        return (math.nan, math.nan)
    return (ratio / band, ratio * band)


__all__ = ["BAND_DIMS", "band_interval", "has_bands", "margin_band", "pair_band",
           "ratio_band"]
