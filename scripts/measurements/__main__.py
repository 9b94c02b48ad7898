"""``python -m scripts.measurements [--inputs DIR] [--out CSV] [--staged] [--check] [--validate CSV]
[--summary]``

Without options: convert every source of ``--inputs`` (default ``scripts/measurements/inputs/``),
check the rows against the schema and the catalogs, and write ``sweep/data/measurements/
measurements.csv``. Nothing is written when an input is missing, has an unexpected number of rows
or a row fails a check. ``--check``: build in memory and verify that the shipped CSV equals the
fresh build (exit 1 and the first differences otherwise). ``--validate CSV``: check a file in the
table's format (your own measurements) against the schema. ``--summary``: print the row counts
(the tables of docs/measurements.md). ``--staged``: the same for the staged sources (their own
table, ``sweep/data/measurements/staged.csv``, not fitted; docs/measurements.md "Staged sources").
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path

from scripts.measurements import SOURCES, STAGED
from scripts.measurements.common import (
    COLUMNS,
    INPUTS,
    OUT_CSV,
    STAGED_CSV,
    Converted,
    check_rows,
    read_raw,
    summary,
)


def build(inputs: Path, sources=SOURCES) -> tuple[list[tuple[str, str, Converted]], list[str]]:
    """Convert every source (default: the shipped table's); returns the parts and the problems
    (empty when the build is good)."""
    missing = [s.FILE for s in sources if not (inputs / s.FILE).is_file()]
    if missing:
        return [], [f"missing inputs in {inputs}: {', '.join(missing)}"]
    parts, problems = [], []
    for src in sources:
        path = inputs / src.FILE
        n = len(read_raw(path))
        if n != src.RAW_ROWS:
            problems.append(f"{src.FILE} has {n} rows, expected {src.RAW_ROWS}")
            continue
        conv = src.convert(path)
        bad = [r["id"] for r in conv.rows if not r["id"].startswith(src.KEY + "-")]
        if bad:
            problems.append(f"{src.FILE}: ids without the prefix {src.KEY}-: {bad[:3]}")
        parts.append((src.KEY, src.NAME, conv))
    rows = [r for _, _, conv in parts for r in conv.rows]
    problems += check_rows(rows)
    return parts, problems


def to_csv(rows: list[dict[str, str]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def _report(problems: list[str]) -> None:
    print(f"{len(problems)} problem(s):", file=sys.stderr)
    for p in problems[:200]:
        print(f"  {p}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.measurements", description=__doc__.split("\n\n")[1])
    ap.add_argument(
        "--inputs", type=Path, default=INPUTS, help="directory of the raw inputs (default: %(default)s)"
    )
    ap.add_argument("--out", type=Path, default=None,
                    help=f"CSV to write (default: {OUT_CSV}; with --staged {STAGED_CSV})")
    ap.add_argument("--staged", action="store_true",
                    help="build the staged sources' table instead of the shipped one")
    ap.add_argument(
        "--check", action="store_true", help="verify that --out equals a fresh build; write nothing"
    )
    ap.add_argument(
        "--validate", type=Path, metavar="CSV", help="check a CSV in the table's format; write nothing"
    )
    ap.add_argument(
        "--summary", action="store_true", help="print the row-count tables of docs/measurements.md"
    )
    args = ap.parse_args(argv)

    if args.validate:
        with args.validate.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        problems = check_rows(rows)
        if problems:
            _report(problems)
            return 1
        print(f"{args.validate}: {len(rows)} rows, no problems")
        return 0

    args.out = args.out or (STAGED_CSV if args.staged else OUT_CSV)
    parts, problems = build(args.inputs, STAGED if args.staged else SOURCES)
    if problems:
        _report(problems)
        print(f"nothing written; {args.out} is unchanged", file=sys.stderr)
        return 1
    rows = [r for _, _, conv in parts for r in conv.rows]
    text = to_csv(rows)
    if args.check:
        shipped = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
        if shipped == text:
            print(f"{args.out}: equals a fresh build ({len(rows)} rows)")
            return 0
        old, new = shipped.splitlines(), text.splitlines()
        diff = [
            f"line {k + 1}: shipped {a[:100]!r} != built {b[:100]!r}"
            for k, (a, b) in enumerate(zip(old, new))
            if a != b
        ]
        if len(old) != len(new):
            diff.append(f"shipped has {len(old)} lines, a fresh build {len(new)}")
        _report(diff)
        print("rebuild with `python -m scripts.measurements`", file=sys.stderr)
        return 1
    tmp = args.out.with_suffix(".csv.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(args.out)
    print(f"wrote {len(rows)} rows to {args.out}")
    if args.summary:
        print(summary(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
