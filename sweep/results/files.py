"""Result files: chunked, streamed writes (netCDF4 by default, Zarr as an option) and reading.

Chunks of the grid are written as they are computed, so memory stays near the chunk size whatever
the grid size; every file is published atomically by :mod:`sweep.results.target`. Dtypes and fill
values come from the variable registry; the compression is a named preset (:data:`COMPRESSIONS`,
chosen with the measurements in docs/performance.md, "Files"): netCDF defaults to zlib level 1,
which every netCDF-4 reader can decompress, Zarr to Zstandard level 1.

Zarr chunks are encoded and written by :class:`ZarrChunks` straight into the store's files (the
store's metadata is written by xarray first): every write covers whole storage chunks, so no chunk
is read back or merged, and the per-chunk overhead of zarr-python's asynchronous write path
(several times the cost of the compression itself here) is avoided. The files are the ones
zarr-python writes (same keys, codecs and padding of edge chunks); reading goes through zarr.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

import numpy as np
import xarray as xr

from grids.errors import SpecError
from sweep.results.target import RESULT_MARK, _Atomic, check_output, diagnose_write
from sweep.results.variables import BATCH_VARIABLES, RESULT_VARIABLES

if TYPE_CHECKING:
    import netCDF4
    from netCDF4 import CompressionLevel, CompressionType

#: compression presets (``compression=`` of :class:`ResultWriter`, ``--compression`` of
#: ``sweep run``); every one is lossless
COMPRESSIONS = ("zlib", "zstd", "lz4", "none")
#: threads that encode and write the variables of one Zarr chunk side by side (the writer thread
#: alone, one variable after the other, was the bottleneck of long streamed runs: busy 18.9 of
#: 20.5 s for 1e8 points with a core to spare; docs/performance.md, "Streaming")
ZARR_ENCODE_THREADS = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                                 else os.cpu_count() or 1))
DEFAULT_COMPRESSION = {"netcdf": "zlib", "zarr": "zstd"}


class NetcdfCodec(TypedDict, total=False):
    """``netCDF4.Dataset.createVariable`` compression arguments (:func:`netcdf_compression`)."""

    compression: CompressionType | None
    complevel: CompressionLevel
    shuffle: bool
    blosc_shuffle: Literal[0, 1, 2]


def netcdf_compression(name: str) -> NetcdfCodec:
    """``netCDF4.Dataset.createVariable`` arguments of a preset. zlib is the netCDF-4 standard
    (any reader); zstd and lz4 (Blosc) are HDF5 filter plugins: the netCDF4 wheels ship them, but
    a reader built without them cannot decompress the file."""
    presets: dict[str, NetcdfCodec] = {
        "zlib": {"compression": "zlib", "complevel": 1, "shuffle": False},
        "zstd": {"compression": "zstd", "complevel": 1, "shuffle": True},
        "lz4": {"compression": "blosc_lz4", "blosc_shuffle": 1},
        "none": {"compression": None},
    }
    return presets[_check_compression(name)]


#: smallest storage chunk [B] given to HDF5's Blosc filter (lz4). The filter fails a write
#: ("Buffer is uncompressible", then "NetCDF: HDF error") when the compressed chunk with Blosc's
#: 16-byte header is not smaller than the chunk, which tiny chunks never are: float32 chunks of
#: 128 values and int8 chunks of 256 failed, 256 and 1,024 passed (netCDF4 1.7, random values);
#: 4 KiB leaves a margin
BLOSC_MIN_CHUNK_BYTES = 4096


def _fit_codec(codec: NetcdfCodec, chunks: tuple[int, ...], dtype: np.dtype
               ) -> NetcdfCodec:
    """The netCDF compression of one variable: ``codec``, except that chunks too small for the
    Blosc filter are stored uncompressed (see :data:`BLOSC_MIN_CHUNK_BYTES`)."""
    small = int(np.prod(chunks)) * dtype.itemsize < BLOSC_MIN_CHUNK_BYTES
    if small and str(codec.get("compression", "")).startswith("blosc"):
        return {"compression": None}
    return codec


def zarr_compressor(name: str):
    """The numcodecs compressor of a preset (None: uncompressed)."""
    import numcodecs

    name = _check_compression(name)
    if name == "none":
        return None
    return {"zlib": lambda: numcodecs.Zlib(level=1), "zstd": lambda: numcodecs.Zstd(level=1),
            "lz4": lambda: numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE)}[name]()


def _check_compression(name: str) -> str:
    if name not in COMPRESSIONS:
        raise SpecError(f"unknown compression {name!r}: use one of {', '.join(COMPRESSIONS)}")
    return name


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


class ZarrChunks:
    """Write whole storage chunks of the metric arrays of a Zarr v2 directory store: each chunk is
    encoded with the array's own filters and compressor (read from its ``.zarray``) and written to
    its chunk file. As zarr-python does, edge chunks are padded to the full chunk shape with the
    fill value, and a float chunk that is all fill value (NaN: every point infeasible) is not
    written (a missing chunk reads as its fill value). Writing a chunk again overwrites it (a
    re-run Dask task is harmless)."""

    def __init__(self, root: str | Path, names) -> None:
        import numcodecs

        self.root = Path(root)
        self.meta = {}
        for name in names:
            meta = json.loads((self.root / name / ".zarray").read_text(encoding="utf-8"))
            codec = numcodecs.get_codec(meta["compressor"]) if meta.get("compressor") else None
            filters = [numcodecs.get_codec(f) for f in meta.get("filters") or []]
            fill = meta.get("fill_value")
            dtype = np.dtype(meta["dtype"])
            pad = (np.nan if fill in ("NaN", None) and dtype.kind == "f"
                   else 0 if fill is None else fill)
            self.meta[name] = (tuple(meta["shape"]), tuple(meta["chunks"]), dtype, codec, filters,
                               pad, meta.get("dimension_separator", "."))

    def aligned(self, name: str, region: tuple[slice, ...]) -> bool:
        shape, chunks = self.meta[name][:2]
        for sl, n, c in zip(region, shape, chunks):
            start, stop, _ = sl.indices(n)
            if start % c or (stop % c and stop != n):
                return False
        return True

    def write(self, name: str, region: tuple[slice, ...], arr: np.ndarray) -> None:
        shape, chunks, dtype, codec, filters, pad, sep = self.meta[name]
        bounds = [sl.indices(n)[:2] for sl, n in zip(region, shape)]
        ranges = [range(a // c, -(-b // c)) for (a, b), c in zip(bounds, chunks)]
        for idx in itertools.product(*ranges):
            lo = [i * c for i, c in zip(idx, chunks)]
            sel = tuple(slice(x - a, min(x + c, n) - a)
                        for x, (a, _), c, n in zip(lo, bounds, chunks, shape))
            block = arr[sel]
            if block.shape != chunks:
                full = np.full(chunks, pad, dtype=dtype)
                full[tuple(slice(0, k) for k in block.shape)] = block
                block = full
            # an ndarray, then what the codecs return (a buffer)
            data: Any = np.ascontiguousarray(block, dtype=dtype)
            path = self.root / name / sep.join(str(i) for i in idx)
            if dtype.kind == "f" and pad != pad and np.isnan(data).all():
                path.unlink(missing_ok=True)
                continue
            for f in filters:
                data = f.encode(data)
            if codec is not None:
                data = codec.encode(data)
            if sep == "/":
                path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "wb") as fh:
                fh.write(memoryview(data))


class ResultWriter:
    """Stream a grid result into a file chunk by chunk; ``close()`` publishes it atomically.

    ``template`` is a Dataset holding the coordinates and attributes (no metric data); metric
    chunks are written with :meth:`write` as ``{name: array}`` for an index region of the dims.
    ``before_publish`` is called right before the result is renamed onto the target (the runs
    pass their interrupt checkpoint: a swallowed interrupt still stops the publication).
    ``compression``: a preset of :data:`COMPRESSIONS` (default :data:`DEFAULT_COMPRESSION`).
    Storage chunks follow ``write_shape`` (the shape of the pieces written), so every write covers
    whole chunks: netCDF chunks are compressed and written during :meth:`write` (the HDF5 chunk
    cache, ``cache_bytes`` per variable, only has to hold partial writes), Zarr chunks go straight
    to their files (:class:`ZarrChunks`). ``open_later``: the file is created by
    :meth:`prepare` (or the first :meth:`write`) instead of here, so that a writer thread can
    create it while the first chunk is computed (creating a Zarr store's ~70 arrays, metrics and
    coordinates, takes ~0.6 s).
    """

    def __init__(self, path: str | Path, template: xr.Dataset, dims: tuple[str, ...],
                 fmt: str | None = None, write_shape: tuple[int, ...] | None = None,
                 cache_bytes: int = 1 << 20, *, overwrite: bool = False,
                 before_publish: Callable[[], None] | None = None,
                 compression: str | None = None, metrics: tuple[str, ...] | None = None,
                 open_later: bool = False) -> None:
        path, self.fmt = check_output(path, fmt, overwrite=overwrite)
        #: the metric variables of the file (default: all but the request-rate percentiles)
        self.metrics = BATCH_VARIABLES if metrics is None else tuple(metrics)
        self.compression = _check_compression(compression or DEFAULT_COMPRESSION[self.fmt])
        self.dims = dims
        self.shape = tuple(template.sizes[d] for d in dims)
        self.chunks = storage_chunks(write_shape or self.shape)
        self.cache_bytes = int(cache_bytes)
        self.atomic = _Atomic(path, ".zarr" if self.fmt == "zarr" else ".nc", overwrite=overwrite,
                              before_publish=before_publish)
        self.closed = False
        self._nc: netCDF4.Dataset | None = None
        self._zarr: ZarrChunks | None = None
        # zarr-python arrays, for writes not aligned to chunks
        self._zarr_arrays: dict[str, Any] | None = None
        self._pool: ThreadPoolExecutor | None = None  # encodes Zarr variables side by side
        #: the template of a file not created yet (``open_later``)
        self._template: xr.Dataset | None = template
        if not open_later:
            try:
                self.prepare()
            except BaseException:
                self.abort()
                raise

    def prepare(self) -> None:
        """Create the file (its coordinates, attributes and empty metric variables), once; the
        caller aborts the writer if this raises."""
        if self._template is None:
            return
        template, self._template = self._template, None
        with diagnose_write(self.atomic.tmp.parent):
            if self.fmt == "netcdf":
                self._open_netcdf(template)
            else:
                self._open_zarr(template)

    # ---- netCDF4 via the netCDF4 library (streamed region writes)
    def _open_netcdf(self, template: xr.Dataset) -> None:
        import netCDF4

        nc = netCDF4.Dataset(self.atomic.tmp, "w", format="NETCDF4")
        self._nc = nc
        for d in template.sizes:  # the result's dims and any dim only coordinates have
            nc.createDimension(str(d), template.sizes[d])
        for name, var in template.coords.items():
            _nc_put(nc, str(name), var)
        codec = netcdf_compression(self.compression)
        for name in self.metrics:
            meta = RESULT_VARIABLES[name]
            enc = meta.encoding(self.chunks)
            dtype = np.dtype(enc["dtype"])
            v = nc.createVariable(name, dtype, self.dims, **_fit_codec(codec, self.chunks, dtype),
                                  chunksizes=enc["chunksizes"],
                                  fill_value=enc["_FillValue"] if enc["_FillValue"] is not None
                                  else False)
            v.set_var_chunk_cache(size=self.cache_bytes, nelems=61, preemption=1.0)
            attrs = dict(meta.attrs())
            attrs["coordinates"] = " ".join(str(c) for c in template.coords if c not in self.dims
                                            and set(template[c].dims) <= set(self.dims))
            for k, val in attrs.items():
                v.setncattr(k, val)
        for k, val in template.attrs.items():
            nc.setncattr(k, val)
        # coordinates on dims no variable has (the layouts evaluated, when only each point's
        # best one is kept): named in the global attribute xarray reads them back from
        alone = [str(c) for c in template.coords if c not in template.dims
                 and not set(template[c].dims) <= set(self.dims)]
        if alone:
            nc.setncattr("coordinates", " ".join(alone))

    # ---- Zarr: metadata via xarray, chunks by ZarrChunks
    def _open_zarr(self, template: xr.Dataset) -> None:
        try:
            import dask.array as da
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise SpecError("Zarr output needs dask and zarr, dependencies of accel-sweep: "
                            "reinstall it (python3 -m pip install .)") from exc
        lazy = {}
        enc = {}
        compressor = zarr_compressor(self.compression)
        for name in self.metrics:
            meta = RESULT_VARIABLES[name]
            arr = da.zeros(self.shape, dtype=meta.dtype, chunks=self.shape)
            lazy[name] = xr.Variable(self.dims, arr, meta.attrs())
            enc[name] = {"chunks": self.chunks, "_FillValue": meta.encoding()["_FillValue"],
                         "compressors": () if compressor is None else (compressor,)}
        ds = xr.Dataset(lazy, coords=template.coords, attrs=template.attrs)
        ds.to_zarr(self.atomic.tmp, mode="w", compute=False, encoding=enc, consolidated=True,
                   zarr_format=2)
        self._zarr = ZarrChunks(self.atomic.tmp, self.metrics)

    def write(self, region: tuple[slice, ...], arrays: dict[str, np.ndarray]) -> None:
        self.prepare()
        nbytes = sum(a.nbytes for a in arrays.values())
        with diagnose_write(self.atomic.tmp.parent, nbytes):
            if self.fmt == "netcdf":
                assert self._nc is not None  # opened by __init__
                for name, arr in arrays.items():
                    self._nc.variables[name][region] = arr
                return
            assert self._zarr is not None  # opened by __init__
            aligned = [n for n in arrays if self._zarr.aligned(n, region)]
            if len(aligned) > 1 and ZARR_ENCODE_THREADS > 1:
                # the variables' chunks are independent files; the codecs release the GIL
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(ZARR_ENCODE_THREADS,
                                                    thread_name_prefix="accel-sweep-zarr")
                for fut in [self._pool.submit(self._zarr.write, n, region, arrays[n])
                            for n in aligned]:
                    fut.result()
            else:
                for name in aligned:
                    self._zarr.write(name, region, arrays[name])
            for name, arr in arrays.items():
                if name in aligned:
                    continue
                if self._zarr_arrays is None:
                    import zarr

                    group = zarr.open_group(str(self.atomic.tmp), mode="r+", zarr_format=2)
                    self._zarr_arrays = {n: group[n] for n in self.metrics}
                self._zarr_arrays[name][region] = arr

    def _shutdown_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    @property
    def published(self) -> bool:
        """True once the result is under the target name."""
        return self.atomic.published

    def close(self) -> None:
        """Finish and publish the file under the target name."""
        if self.closed:
            return
        self.prepare()
        self._zarr_arrays = None
        self._shutdown_pool()
        with diagnose_write(self.atomic.tmp.parent):
            if self._nc is not None:
                self._nc.close()
                self._nc = None
        self.closed = True
        self.atomic.commit()

    def abort(self) -> None:
        """Remove the partial file; the target is left as it was."""
        self._zarr_arrays = None
        self._shutdown_pool()
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
            v[:] = np.array([str(x) for x in values.ravel()], dtype=object).reshape(values.shape)
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
                  overwrite: bool = False, compression: str | None = None) -> Path:
    """Write an in-memory result Dataset atomically (same layout as the streamed writer)."""
    dims = tuple(str(d) for d in ds["ttft"].dims)
    metrics = tuple(n for n in RESULT_VARIABLES if n in ds.data_vars)
    template = ds.drop_vars(list(metrics))
    writer = ResultWriter(path, template, dims, fmt, overwrite=overwrite, compression=compression,
                          metrics=metrics)
    try:
        writer.write(tuple(slice(None) for _ in dims),
                     {name: ds[name].values for name in metrics})
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return Path(path)


def open_result(path: str | Path, **kwargs) -> xr.Dataset:
    """Open a result (netCDF or Zarr), lazily; ``bound``/``fits`` stay int8 CF flag variables
    (decode them to strings with :func:`flag_labels`). A file that ``sweep`` did not write (no
    global attribute ``source = "accel-sweep ..."``) is refused with one clear error: the
    analyses need the variables and coordinates of a result."""
    if not isinstance(path, (str, os.PathLike)):
        raise SpecError(f"open: give the path of a result file (str or Path), got "
                        f"{type(path).__name__} {path!r}")
    p = Path(path)
    if not p.exists():
        raise SpecError(f"result {str(p)!r} not found")
    try:
        if p.is_dir() or str(p).endswith(".zarr"):
            ds = xr.open_zarr(p, **kwargs)
        else:
            ds = xr.open_dataset(p, engine="netcdf4", **kwargs)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SpecError(f"cannot open {str(p)!r} as a sweep result: {exc}") from exc
    source = str(ds.attrs.get("source", ""))
    if not source.startswith(RESULT_MARK):
        ds.close()
        what = "a Zarr store" if p.is_dir() else "a netCDF file"
        found = f"its 'source' attribute is {source!r}" if source else "it has no 'source' attribute"
        raise SpecError(f"{str(p)!r} is {what} but not a result written by sweep ({found}, "
                        f"not 'accel-sweep ...'); write one with `sweep run -o`, or open this "
                        f"file with xarray.open_dataset / xarray.open_zarr")
    return ds


def flag_labels(da: xr.DataArray) -> xr.DataArray:
    """A CF flag variable (``bound``, ``fits``) decoded to its string meanings."""
    values = np.asarray(da.attrs["flag_values"]).astype(int)
    meanings = np.array(str(da.attrs["flag_meanings"]).split(), dtype=object)
    lut = dict(zip(values.tolist(), meanings))
    codes = np.asarray(da.values).astype(int)
    out = np.vectorize(lambda c: lut.get(c, "unknown"), otypes=[object])(codes)
    return xr.DataArray(out, dims=da.dims, coords=da.coords, name=f"{da.name}_label")
