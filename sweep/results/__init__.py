"""The result Dataset: the variable registry, assembly from kernel output, provenance, netCDF/Zarr files."""
