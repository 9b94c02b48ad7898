"""``sweep run`` (evaluate a grid spec to a file) and ``sweep info`` (describe a result)."""

from __future__ import annotations

import argparse
import time

EXIT_OK = 0


def _cmd_run(args: argparse.Namespace) -> int:
    from sweep.cli.summary import run_summary
    from sweep.execute.local import run_with_stats

    progress = not args.no_progress
    t0 = time.perf_counter()
    ds, stats = run_with_stats(args.spec, max_memory=args.max_memory, progress=progress,
                               output=args.output, format=args.format,
                               scheduler=args.scheduler, overwrite=args.overwrite)
    with ds:  # close the file handle before exiting
        wall = time.perf_counter() - t0
        print(run_summary(ds, stats, wall, args.output))
    return EXIT_OK


def _cmd_info(args: argparse.Namespace) -> int:
    from sweep.cli.summary import info_text
    from sweep.results.files import open_result

    with open_result(args.result) as ds:
        print(info_text(ds))
    return EXIT_OK


def register(sub) -> None:
    """Add ``run`` and ``info`` to the ``sweep`` parser."""
    r = sub.add_parser("run", help="evaluate a grid spec (default: the built-in grid) to a file")
    r.add_argument("spec", nargs="?", default=None,
                   help="grid spec TOML file (omit for the built-in default grid)")
    r.add_argument("-o", "--output", default="sweep.nc", help="result file (default sweep.nc)")
    r.add_argument("--format", choices=("netcdf", "zarr"), default=None,
                   help="file format (default: from the extension; netcdf)")
    r.add_argument("--max-memory", default="1 GiB",
                   help="memory budget for kernel output, e.g. '512 MiB', '4G' (default 1 GiB)")
    r.add_argument("--overwrite", action="store_true",
                   help="replace the output even if it is not a result written by sweep (by "
                        "default only a previous result is replaced)")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument("--scheduler", default=None,
                   help="run on Dask: 'local:N' (local cluster of N workers) or tcp://HOST:PORT")
    r.set_defaults(func=_cmd_run)

    i = sub.add_parser("info", help="describe a result file: dims, metrics with units, provenance")
    i.add_argument("result")
    i.set_defaults(func=_cmd_info)
