"""Results that keep only each point's best layout (spec key ``best_layout``,
:mod:`sweep.analysis.keep_layout`): no parallelism dim; ``layout_index`` points into the
``layout`` coordinate of the layouts evaluated, whose per-layout coordinates (``devices``,
``tp``, ...) sit on that dim."""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from grids.errors import SpecError
from sweep.results.variables import KEPT_LAYOUT_DIM, LAYOUT_INDEX

INDEX = LAYOUT_INDEX.name


def is_kept(ds: xr.Dataset) -> bool:
    """``ds`` keeps only each point's best layout."""
    return INDEX in ds.variables and KEPT_LAYOUT_DIM in ds.dims


def kept_basis(ds: xr.Dataset) -> str:
    """The basis (text form) the layouts were chosen on."""
    return str(ds.attrs.get("best_layout_basis", ""))


def _lookup(ds: xr.Dataset, per_layout, missing, dtype) -> xr.DataArray:
    table = np.append(np.asarray(per_layout, dtype=dtype), np.array([missing], dtype=dtype))
    return xr.apply_ufunc(lambda i: table[np.asarray(i, dtype=np.intp)], ds[INDEX],
                          dask="parallelized", output_dtypes=[table.dtype])


def kept_labels(ds: xr.Dataset) -> xr.DataArray:
    """The label of the layout kept at each point (``""`` where none is)."""
    out = _lookup(ds, [str(x) for x in ds[KEPT_LAYOUT_DIM].values], "", object)
    out.name = "layout"
    return out


def kept_devices(ds: xr.Dataset) -> xr.DataArray:
    """Devices of the layout kept at each point (NaN where none is)."""
    out = _lookup(ds, ds["devices"].values, np.nan, np.float64)
    out.name = "devices"
    return out


def without_layouts(ds: xr.Dataset, over) -> tuple[tuple[str, ...], bool]:
    """``over`` (a dim name or several) without the layout dim when ``ds`` kept one layout per
    point (its layouts no longer compete), and whether it was dropped."""
    dims = (over,) if isinstance(over, str) else tuple(over)
    if is_kept(ds) and "parallelism" in dims:
        return tuple(d for d in dims if d != "parallelism"), True
    return dims, False


def check_basis(ds: xr.Dataset, basis) -> None:
    """Warn when an analysis compares ``ds``'s kept layouts on another basis than the one they
    were chosen on (the layout best on that basis may not be among them)."""
    chosen = kept_basis(ds)
    if chosen and basis is not None and basis.spec != chosen:
        warnings.warn(f"this result kept each point's best layout on the basis {chosen!r} "
                      f"(spec key best_layout); values on {basis.spec!r} compare those layouts, "
                      f"not the best ones on {basis.spec!r} (run the grid with best_layout = "
                      f"{basis.spec!r}, or without best_layout)", UserWarning, stacklevel=3)


def need_every_layout(ds: xr.Dataset, what: str) -> SpecError:
    """The error of an analysis that chooses among layouts, on a result that kept one."""
    return SpecError(f"{what} chooses among the layouts, but this result kept only each "
                     f"point's best layout on the basis {kept_basis(ds)!r} (spec key "
                     f"best_layout): run the grid without best_layout to keep every layout")
