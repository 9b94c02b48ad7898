"""Pareto fronts: the non-dominated points of two or more objectives, across chosen dims."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import xarray as xr

from sweep.analysis import core as an
from sweep.analysis.basis import DEFAULT_BASIS, normalised, parse_basis
from sweep.analysis.kept import without_layouts
from sweep.analysis.select import as_dims, parse_objectives, whole_core

DEFAULT_PARETO_OVER = ("hardware", "parallelism")


def pareto(ds: xr.Dataset, objectives, over: Iterable[str] | str = DEFAULT_PARETO_OVER,
           basis: str | None = DEFAULT_BASIS) -> xr.DataArray:
    """Boolean mask of the non-dominated points for two or more objectives.

    ``objectives``: ``{"tpot": "min", "throughput": "max"}`` or a list of metric names
    using the registry directions (``"name:min"`` overrides). ``over``: the dims across
    which candidates compete; the front is computed independently at every combination of
    the other dims. Infeasible points (``fits == 0`` or any objective NaN) are never on the
    front and never dominate; equal points are both non-dominated. Throughput objectives are
    put on ``basis`` first (default per kW at the system boundary; None = raw grid values): a
    64-device layout competes by what it delivers per kW (or per device, per dollar, within a
    budget), not in total.
    """
    objs = parse_objectives(ds, objectives)
    over, _ = without_layouts(ds, over)  # one layout per point kept: they do not compete
    core = as_dims(ds, over, "over")
    b = None if basis is None else parse_basis(basis)
    arrays = [ds[n] if b is None else normalised(ds, n, b) for n, _ in objs]
    has_fits = "fits" in ds.data_vars
    if has_fits:
        arrays.append(ds["fits"])
    arrays = list(xr.broadcast(*arrays))
    dirs = [d for _, d in objs]
    k = len(objs)
    ncore = len(core)

    def f(*arrs):
        shape = arrs[0].shape
        n = int(np.prod(shape[len(shape) - ncore:])) if ncore else 1
        x = np.stack([an.oriented(a, dd).reshape(-1, n) for a, dd in zip(arrs[:k], dirs)],
                     axis=-1)
        valid = np.isfinite(x).all(axis=-1)
        if has_fits:
            valid &= np.asarray(arrs[k]).reshape(-1, n) == 1
        return an.pareto_mask(x, valid).reshape(shape)

    arrays = [whole_core(a, core) for a in arrays]
    mask = xr.apply_ufunc(f, *arrays, input_core_dims=[list(core)] * len(arrays),
                          output_core_dims=[list(core)], dask="parallelized",
                          output_dtypes=[bool], dask_gufunc_kwargs={"allow_rechunk": True},
                          keep_attrs=False)
    mask = mask.transpose(*arrays[0].dims)
    mask.name = "pareto"
    mask.attrs = {"long_name": "non-dominated (Pareto-optimal) point",
                  "objectives": " ".join(f"{n}:{dd}" for n, dd in objs),
                  "over": " ".join(core), "basis": b.label if b else "grid values (no basis)"}
    return mask
