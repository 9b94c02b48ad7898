"""Run grids and point lists through the kernels: plan chunks, pack catalogs, execute in-process
or on Dask."""
