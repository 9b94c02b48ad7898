"""The HTML report: one self-contained, interactive page of a result, to look at and to share.

``sweep report RESULT -o report.html`` or ``ds.sweep.report("report.html")``: the winner map
with the margin to the runner-up, the variation between the best and worst device, goodput
under latency targets, the serving front, the roofline and the provenance, with controls for
engine, model, precision, basis, prompt length and targets (docs/report.md). A leaf room: it
reads results through :mod:`sweep.analysis` and writes a page; only the CLI's ``report``
command and the package root (for the accessor) import it.

- :mod:`sweep.report.tables`: every panel's numbers for every control state, as compact arrays;
- :mod:`sweep.report.page`: the bokeh figures, controls and the HTML file;
- :mod:`sweep.report.hooks`: panels that appear when a result carries their metrics.
"""

from __future__ import annotations

import os
from pathlib import Path

import xarray as xr

from grids.errors import SpecError

#: the report's size budget on the default grid [B] (tests/test_report.py measures it)
SIZE_BUDGET = 5 * 1024 * 1024


def render(ds: xr.Dataset, title: str | None = None) -> str:
    """The report of ``ds`` as an HTML string."""
    from sweep.report.hooks import optional_sections
    from sweep.report.page import build_page, provenance_html
    from sweep.report.tables import build

    tables = build(ds)
    title = title or f"accel-sweep report ({ds.attrs.get('created_utc', 'result')})"
    return build_page(tables, provenance_html(dict(ds.attrs)), title,
                      "".join(optional_sections(ds)))


def write_report(ds: xr.Dataset, path: str | Path = "report.html",
                 title: str | None = None) -> Path:
    """Write the report of ``ds`` to ``path`` (atomically: a partial file, then renamed)."""
    p = Path(path)
    if not p.parent.exists():
        raise SpecError(f"output directory {str(p.parent)!r} does not exist")
    if p.is_dir():
        raise SpecError(f"{str(p)!r} is a directory; give a file name such as report.html")
    text = render(ds, title)
    tmp = p.with_name(f".{p.name}.sweep-partial")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, p)
    finally:
        tmp.unlink(missing_ok=True)
    return p
