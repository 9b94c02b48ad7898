"""``python -m scripts.seeds [--quick] [--out-dir DIR] [--validation FILE]``: regenerate the seeds
study (docs/seeds_study.md, docs/figures/seeds_*.png, the seed 004 block of docs/validation.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import matplotlib  # noqa: E402

matplotlib.use("Agg")

from scripts.seeds.report import build  # noqa: E402
from scripts.seeds.summary import summary_table  # noqa: E402

DOCS = ROOT / "docs"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="python -m scripts.seeds", description=__doc__.split(":")[1])
    ap.add_argument("--out-dir", default=str(DOCS),
                    help="directory for seeds_study.md; figures go to OUT_DIR/figures "
                         "(default: docs/)")
    ap.add_argument("--quick", action="store_true",
                    help="a small catalog grid (a handful of devices and models), for the tests")
    ap.add_argument("--validation", default=None,
                    help="file whose 'seed004 (generated)' block receives section 5's table "
                         "(default: OUT_DIR/validation.md; appended with its markers when "
                         "absent, nothing else of the file changes)")
    args = ap.parse_args(argv)
    out_dir = Path(args.out_dir)
    validation = Path(args.validation) if args.validation else out_dir / "validation.md"
    result = build(out_dir, quick=args.quick, validation=validation)
    g = result["grid_seconds"]
    print(f"grids evaluated in {g['catalog']:.1f} s (catalog) and {g['seed004']:.1f} s "
          f"(seed 004), numba compilation included when not cached")
    print(f"report: {result['report']}; validation block: {validation}; figures: "
          f"{', '.join(p.name for p in result['figures'])}")
    print(summary_table(result["summary"]).replace("|", " ").replace("---", ""))
    if result["failures"]:
        print("sections not computable:", *result["failures"], sep="\n  ", file=sys.stderr)
    print(f"done in {result['seconds']:.1f} s")
    return result


if __name__ == "__main__":
    main()
