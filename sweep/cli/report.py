"""``sweep report``: the interactive HTML report of a result (sweep/report/, docs/report.md)."""

from __future__ import annotations

import argparse
import time

EXIT_OK = 0


def _cmd_report(args: argparse.Namespace) -> int:
    from sweep.analysis.select import apply_sel
    from sweep.cli.common import parse_sel
    from sweep.report import write_report
    from sweep.results.files import open_result

    t0 = time.perf_counter()
    ds = open_result(args.result)
    try:
        path = write_report(apply_sel(ds, parse_sel(args.sel)), args.output, title=args.title)
    finally:
        ds.close()
    size = path.stat().st_size
    print(f"wrote {path} ({size / 2**20:.1f} MiB, {time.perf_counter() - t0:.1f} s); open it in "
          f"any browser, offline")
    return EXIT_OK


def register(sub) -> None:
    """Add ``report`` to the ``sweep`` parser."""
    r = sub.add_parser("report", help="write an interactive HTML report of a result (one "
                       "self-contained file that opens offline)")
    r.add_argument("result", help="result file (netCDF or Zarr) written by 'sweep run'")
    r.add_argument("-o", "--output", default="report.html", help="HTML file (default "
                   "report.html)")
    r.add_argument("--sel", action="append", metavar="DIM=VALUE[,VALUE...]",
                   help="report only these values of a dim (repeatable; several values "
                        "comma-separated), e.g. --sel model=llama-3.1-8b --sel "
                        "hardware=h100-sxm,mi300x")
    r.add_argument("--title", default=None, help="page title")
    r.set_defaults(func=_cmd_report)
