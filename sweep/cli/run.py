"""``sweep run`` (evaluate a grid spec to a file) and ``sweep info`` (describe a result)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

EXIT_OK = 0


def launched_as_cli() -> bool:
    """True when this process was started to run the ``sweep`` command (the console script or
    ``python -m sweep.cli``), not when ``main()`` is called inside a longer-lived process."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path()
    return argv0.name == "sweep" or argv0.parts[-3:] == ("sweep", "cli", "__main__.py")


def process_age() -> float:
    """Seconds since this process started running Python (interpreter start-up and imports
    included).

    The kernel dates a process from its fork (/proc on Linux). A shell that runs its last command
    without forking (``bash -c "pip install . && sweep run"``, a subshell, a CI step) hands over a
    process as old as the commands before it, so that age is capped by one counted from the
    interpreter: the CPU time used before ``sweep`` began importing (the interpreter's start-up,
    which is CPU-bound) plus the wall time since. Only the estimate where /proc is missing."""
    from sweep.execute.clock import IMPORT_STARTED

    wall0, cpu0 = IMPORT_STARTED
    since_python = cpu0 + (time.perf_counter() - wall0)
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        start_ticks = int(fields[19])  # field 22 of stat(5); fields[0] is field 3
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        since_fork = max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return since_python
    return min(since_fork, since_python)


def wall_line(total: float, startup: float, stats, summary: float) -> str:
    """The run's real wall time: process start to the printed report, by part. ``summary``: the
    summary's whole time (computed from the chunks during the run, ``stats.phases["summary"]``,
    plus the report); it is not counted again in kernel+write."""
    phases = getattr(stats, "phases", None) or {}
    start = f"start-up {startup:.2f} s, " if startup > 0 else ""
    setup = f"spec and tables {phases['setup']:.2f} s, " if "setup" in phases else ""
    cluster = phases.get("cluster_start", 0.0) + phases.get("cluster_stop", 0.0)
    dask = f"Dask cluster start and stop {cluster:.2f} s, " if cluster > 0 else ""
    work = stats.seconds - phases.get("summary", 0.0)
    return (f"wall time : {total:.2f} s ({start}{setup}{dask}kernel+write {work:.2f} s, "
            f"{stats.points_per_second:,.0f} points/s; summary {summary:.2f} s)")


def with_wall_line(text: str, line: str) -> str:
    """``text`` with its ``wall time`` line replaced by ``line`` (appended if it has none)."""
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        if ln.startswith("wall time"):
            lines[i] = line
            return "\n".join(lines)
    return "\n".join([*lines, line])


def _cmd_run(args: argparse.Namespace) -> int:
    from sweep.analysis.headline import HeadlineVariation
    from sweep.cli.summary import run_summary
    from sweep.execute.local import run_with_stats
    from sweep.execute.signals import guarded

    startup = process_age() if launched_as_cli() else 0.0
    progress = not args.no_progress
    t0 = time.perf_counter()
    # guarded to the end: SIGINT and SIGTERM after the result is published are reported as such
    with guarded():
        _, stats = run_with_stats(args.spec, max_memory=args.max_memory, progress=progress,
                                  output=args.output, format=args.format,
                                  scheduler=args.scheduler, overwrite=args.overwrite,
                                  compression=args.compression, summarise=HeadlineVariation,
                                  reopen=False)
        args.published = stats.path  # for main(): a signal from here on comes after publication
        t1 = time.perf_counter()
        if args.json:
            from sweep.cli.common import print_json
            from sweep.cli.summary import run_record

            print_json(run_record(None, stats, time.perf_counter() - t0 + startup, startup,
                                  args.output))
            return EXIT_OK
        # the headline was computed from the chunks during the run; its time is part of the
        # wall time printed, which runs from process start to the report
        text = run_summary(None, stats, t1 - t0 + startup, args.output)
        t2 = time.perf_counter()
        summary = t2 - t1 + stats.phases.get("summary", 0.0)
        print(with_wall_line(text, wall_line(t2 - t0 + startup, startup, stats, summary)))
    return EXIT_OK


def _cmd_info(args: argparse.Namespace) -> int:
    from sweep.cli.common import print_json
    from sweep.cli.summary import info_record, info_text
    from sweep.results.files import open_result

    with open_result(args.result) as ds:
        if args.json:
            print_json(info_record(ds))
        else:
            print(info_text(ds))
    return EXIT_OK


def register(sub) -> None:
    """Add ``run`` and ``info`` to the ``sweep`` parser."""
    from sweep.results.files import COMPRESSIONS

    r = sub.add_parser("run", help="evaluate a grid spec (default: the built-in grid) to a file")
    r.add_argument("spec", nargs="?", default=None,
                   help="grid spec TOML file (omit for the built-in default grid)")
    r.add_argument("-o", "--output", default="sweep.nc", help="result file (default sweep.nc)")
    r.add_argument("--format", choices=("netcdf", "zarr"), default=None,
                   help="file format (default: from the extension; netcdf)")
    r.add_argument("--compression", choices=COMPRESSIONS, default=None,
                   help="lossless compression (default: zlib for netCDF, readable everywhere; "
                        "zstd for Zarr). zstd writes netCDF ~3x faster and smaller, but readers "
                        "need the HDF5 zstd filter (netCDF4 wheels have it)")
    r.add_argument("--max-memory", default="1 GiB",
                   help="memory budget for kernel output, e.g. '512 MiB', '4G' (default 1 GiB)")
    r.add_argument("--overwrite", action="store_true",
                   help="replace the output even if it is not a result written by sweep (by "
                        "default only a previous result is replaced)")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument("--json", action="store_true", help="print the summary as JSON (the "
                   "progress bar still goes to stderr on a terminal)")
    r.add_argument("--scheduler", default=None,
                   help="run on Dask: 'local:N' (local cluster of N workers) or tcp://HOST:PORT")
    r.set_defaults(func=_cmd_run)

    i = sub.add_parser("info", help="describe a result file: dims, metrics with units, provenance")
    i.add_argument("result", help="result file (netCDF or Zarr) written by 'sweep run'")
    i.add_argument("--json", action="store_true", help="print JSON: dims with their values, "
                   "metrics with units, provenance")
    i.set_defaults(func=_cmd_info)
