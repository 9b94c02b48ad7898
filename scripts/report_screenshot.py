"""The README's screenshot of the report: the default grid's report in headless Chromium.

    PYTHONPATH=. python3 -m scripts.report_screenshot [--result sweep.nc] [-o docs/figures/report.png]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import sweep
from tests import browser

READY = ("return window.Bokeh && Bokeh.documents.length && "
         "Bokeh.documents[0].get_model_by_name('maps').data.winner.length > 0")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--result", default=None, help="result file (default: the default grid, "
                    "run in memory)")
    ap.add_argument("--model", default="llama-3.3-70b", help="model shown")
    ap.add_argument("-o", "--output", default="docs/figures/report.png")
    args = ap.parse_args()
    ds = sweep.open(args.result) if args.result else sweep.run(None, progress=False)
    page = Path(tempfile.mkdtemp()) / "report.html"
    sweep.report(ds, page)
    with browser.chromium() as d:
        d.set_window_size(1300, 1130)
        d.get(page.resolve().as_uri())
        browser.wait_for(d, READY)
        browser.choose(d, args.model)
        browser.wait_for(d, f"return Bokeh.documents[0].get_model_by_name('model').value == "
                            f"'{args.model}'")
        d.execute_script("return new Promise(r => setTimeout(r, 1000))")
        d.save_screenshot(args.output)
        errors = browser.console_errors(d)
    print(f"wrote {args.output} ({len(errors)} console errors)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
