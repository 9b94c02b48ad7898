"""Result files: chunked, streamed writes (netCDF4 by default, Zarr as an option) and reading.

Chunks of the grid are written as they are computed, so memory stays near the chunk size whatever
the grid size; every file is published atomically by :mod:`sweep.results.target`. Storage
encodings (compression, fill values, dtypes) come from the variable registry.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import xarray as xr

from grids.errors import SpecError
from sweep.results.target import _Atomic, check_output, diagnose_write
from sweep.results.variables import VARIABLES


def storage_chunks(shape: tuple[int, ...], target: int = 1 << 20) -> tuple[int, ...]:
    """On-disk chunk shape: whole trailing dims, leading dims cut until ~``target`` elements."""
    chunks = list(shape)
    i = 0
    while int(np.prod(chunks)) > target and i < len(chunks):
        excess = int(np.prod(chunks)) / target
        chunks[i] = max(1, int(chunks[i] / excess)) if chunks[i] > 1 else 1
        if int(np.prod(chunks)) > target:
            chunks[i] = 1
        i += 1
    return tuple(max(1, c) for c in chunks)


class ResultWriter:
    """Stream a grid result into a file chunk by chunk; ``close()`` publishes it atomically.

    ``template`` is a Dataset holding the coordinates and attributes (no metric data); metric
    chunks are written with :meth:`write` as ``{name: array}`` for an index region of the dims.
    ``before_publish`` is called right before the result is renamed onto the target (the runs
    pass their interrupt checkpoint: a swallowed interrupt still stops the publication).
    """

    def __init__(self, path: str | Path, template: xr.Dataset, dims: tuple[str, ...],
                 fmt: str | None = None, write_shape: tuple[int, ...] | None = None,
                 cache_bytes: int = 4 << 20, *, overwrite: bool = False,
                 before_publish: Callable[[], None] | None = None) -> None:
        path, self.fmt = check_output(path, fmt, overwrite=overwrite)
        self.dims = dims
        self.shape = tuple(template.sizes[d] for d in dims)
        # storage chunks follow the shape of the pieces written, so every write covers whole
        # chunks and the HDF5 chunk cache (bounded by ``cache_bytes`` per variable) stays small
        self.chunks = storage_chunks(write_shape or self.shape)
        self.cache_bytes = int(cache_bytes)
        self.atomic = _Atomic(path, ".zarr" if self.fmt == "zarr" else ".nc", overwrite=overwrite,
                              before_publish=before_publish)
        self.closed = False
        self._nc = None
        self._zarr_arrays = None  # the open store's arrays, kept between writes
        try:
            with diagnose_write(self.atomic.tmp.parent):
                if self.fmt == "netcdf":
                    self._open_netcdf(template)
                else:
                    self._open_zarr(template)
        except BaseException:
            self.abort()
            raise

    # ---- netCDF4 via the netCDF4 library (streamed region writes)
    def _open_netcdf(self, template: xr.Dataset) -> None:
        import netCDF4

        nc = netCDF4.Dataset(self.atomic.tmp, "w", format="NETCDF4")
        self._nc = nc
        for d in self.dims:
            nc.createDimension(d, template.sizes[d])
        for name, var in template.coords.items():
            _nc_put(nc, name, var)
        for name, meta in VARIABLES.items():
            enc = meta.encoding(self.chunks)
            v = nc.createVariable(name, np.dtype(enc["dtype"]), self.dims, zlib=enc["zlib"],
                                  complevel=enc["complevel"], shuffle=enc["shuffle"],
                                  chunksizes=enc["chunksizes"],
                                  fill_value=enc["_FillValue"] if enc["_FillValue"] is not None
                                  else False)
            v.set_var_chunk_cache(size=self.cache_bytes, nelems=61, preemption=1.0)
            attrs = dict(meta.attrs())
            attrs["coordinates"] = " ".join(c for c in template.coords if c not in self.dims
                                            and set(template[c].dims) <= set(self.dims))
            for k, val in attrs.items():
                v.setncattr(k, val)
        for k, val in template.attrs.items():
            nc.setncattr(k, val)

    # ---- Zarr via xarray (region writes into a store whose metadata is written first)
    def _open_zarr(self, template: xr.Dataset) -> None:
        try:
            import dask.array as da
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise SpecError("Zarr output needs dask and zarr: pip install 'accel-sweep[dask]'"
                            ) from exc
        lazy = {}
        enc = {}
        for name, meta in VARIABLES.items():
            arr = da.zeros(self.shape, dtype=meta.dtype, chunks=self.chunks)
            lazy[name] = xr.Variable(self.dims, arr, meta.attrs())
            enc[name] = {"chunks": self.chunks, "_FillValue": meta.encoding()["_FillValue"]}
        ds = xr.Dataset(lazy, coords=template.coords, attrs=template.attrs)
        ds.to_zarr(self.atomic.tmp, mode="w", compute=False, encoding=enc, consolidated=True,
                   zarr_format=2)
        self._zarr_coords = list(ds.coords)

    def write(self, region: tuple[slice, ...], arrays: dict[str, np.ndarray]) -> None:
        nbytes = sum(a.nbytes for a in arrays.values())
        with diagnose_write(self.atomic.tmp.parent, nbytes):
            if self.fmt == "netcdf":
                for name, arr in arrays.items():
                    self._nc.variables[name][region] = arr
            else:
                if self._zarr_arrays is None:
                    import zarr

                    group = zarr.open_group(str(self.atomic.tmp), mode="r+", zarr_format=2)
                    self._zarr_arrays = {name: group[name] for name in VARIABLES}
                for name, arr in arrays.items():
                    self._zarr_arrays[name][region] = arr

    def close(self) -> None:
        """Finish and publish the file under the target name."""
        if self.closed:
            return
        self._zarr_arrays = None
        with diagnose_write(self.atomic.tmp.parent):
            if self._nc is not None:
                self._nc.close()
                self._nc = None
        self.closed = True
        self.atomic.commit()

    def abort(self) -> None:
        """Remove the partial file; the target is left as it was."""
        self._zarr_arrays = None
        if self._nc is not None:
            with contextlib.suppress(Exception):
                self._nc.close()
            self._nc = None
        self.closed = True
        self.atomic.discard()


def _nc_put(nc, name: str, var: xr.Variable | xr.DataArray) -> None:
    values = np.asarray(var.values)
    dims = tuple(var.dims)
    if values.dtype == object or values.dtype.kind in "US":
        v = nc.createVariable(name, str, dims)
        if dims:
            v[:] = np.array([str(x) for x in values.ravel()], dtype=object)
        else:
            v.assignValue(str(values))
    else:
        v = nc.createVariable(name, values.dtype, dims)
        if dims:
            v[:] = values
        else:
            v.assignValue(values)
    for k, val in var.attrs.items():
        v.setncattr(k, val)


def write_dataset(ds: xr.Dataset, path: str | Path, fmt: str | None = None, *,
                  overwrite: bool = False) -> Path:
    """Write an in-memory result Dataset atomically (same layout as the streamed writer)."""
    dims = tuple(d for d in ds["ttft"].dims)
    template = ds.drop_vars(list(VARIABLES))
    writer = ResultWriter(path, template, dims, fmt, overwrite=overwrite)
    try:
        writer.write(tuple(slice(None) for _ in dims),
                     {name: ds[name].values for name in VARIABLES})
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return Path(path)


def open_result(path: str | Path, **kwargs) -> xr.Dataset:
    """Open a result (netCDF or Zarr), lazily; ``bound``/``fits`` stay int8 CF flag variables
    (decode them to strings with :func:`flag_labels`)."""
    p = Path(path)
    if not p.exists():
        raise SpecError(f"result {str(p)!r} not found")
    try:
        if p.is_dir() or str(p).endswith(".zarr"):
            ds = xr.open_zarr(p, **kwargs)
        else:
            ds = xr.open_dataset(p, engine="netcdf4", **kwargs)
    except (OSError, ValueError) as exc:
        raise SpecError(f"cannot open {str(p)!r} as a sweep result: {exc}") from exc
    return ds


def flag_labels(da: xr.DataArray) -> xr.DataArray:
    """A CF flag variable (``bound``, ``fits``) decoded to its string meanings."""
    values = np.asarray(da.attrs["flag_values"]).astype(int)
    meanings = np.array(str(da.attrs["flag_meanings"]).split(), dtype=object)
    lut = dict(zip(values.tolist(), meanings))
    codes = np.asarray(da.values).astype(int)
    out = np.vectorize(lambda c: lut.get(c, "unknown"), otypes=[object])(codes)
    return xr.DataArray(out, dims=da.dims, coords=da.coords, name=f"{da.name}_label")
