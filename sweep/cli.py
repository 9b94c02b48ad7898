"""The ``sweep`` command line.

Exit codes: 0 success, 2 bad input (one clear message, no traceback), 1 unexpected error,
130 interrupted by Ctrl-C (SIGINT), 143 terminated by SIGTERM; an interrupted run leaves the previous
target as it was and removes its partial file.
Set ``SWEEP_DEBUG=1`` to see tracebacks of unexpected errors.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

from grids.errors import SpecError

EXIT_OK, EXIT_ERROR, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own errors are bad input too
        self.print_usage(sys.stderr)
        sys.stderr.write(f"sweep: error: {message}\n")
        sys.exit(EXIT_BAD_INPUT)


# ------------------------------------------------------------------------------------ run / info


def _cmd_run(args: argparse.Namespace) -> int:
    from sweep.run import run_with_stats
    from sweep.summary import run_summary

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
    from sweep.io import open_result
    from sweep.summary import info_text

    with open_result(args.result) as ds:
        print(info_text(ds))
    return EXIT_OK


# ------------------------------------------------------------------------------------ catalog


def _cmd_catalog(args: argparse.Namespace) -> int:
    from sweep.catalog_view import catalog_records, catalog_table

    records = catalog_records(args.what)
    if args.json:
        print(json.dumps(records, indent=1, default=str))
    else:
        print(catalog_table(args.what, records))
    return EXIT_OK


# ------------------------------------------------------------------------------------ parser

#: extra command modules: each exposes ``register(subparsers) -> None`` adding its commands
EXTRA_COMMANDS = ("sweep.cli_analysis", "sweep.cli_validate")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="sweep", description="Parametric roofline sweeps of LLM inference on AI "
                "accelerators (see README.md).")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

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

    c = sub.add_parser("catalog", help="list the built-in hardware, models, precisions or layouts")
    c.add_argument("what", choices=("hardware", "models", "precisions", "layouts"))
    c.add_argument("--json", action="store_true", help="print a JSON list of objects")
    c.set_defaults(func=_cmd_catalog)

    import importlib

    for mod in EXTRA_COMMANDS:
        importlib.import_module(mod).register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except SpecError as exc:
        sys.stderr.write(f"sweep: error: {exc}\n")
        code = EXIT_BAD_INPUT
    except KeyboardInterrupt as exc:
        code = getattr(exc, "exit_code", EXIT_INTERRUPTED)
        what = "terminated" if code == 128 + signal.SIGTERM else "interrupted"
        sys.stderr.write(f"\nsweep: {what}; the previous output (if any) is unchanged and no "
                         f"partial result was left\n")
    except BrokenPipeError:
        code = EXIT_OK
    except Exception as exc:
        if os.environ.get("SWEEP_DEBUG"):
            raise
        sys.stderr.write(f"sweep: unexpected error: {type(exc).__name__}: {exc}\n"
                         f"(run with SWEEP_DEBUG=1 for a traceback and please report it)\n")
        code = EXIT_ERROR
    return code



if __name__ == "__main__":  # python -m sweep.cli
    sys.exit(main())
