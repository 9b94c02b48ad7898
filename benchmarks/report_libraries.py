"""Which plotting library for the HTML report: the same page in bokeh and in plotly, measured.

The page: the winner map of the default grid (batch x context cells coloured by the winning
device, the margin in each cell, hover) for every model x precision, with a control choosing one.
For each library: the size of the self-contained HTML file (JavaScript inlined), the time to
write it, and the time headless Chromium takes from navigation to the drawn figure. Then the same
two numbers for the full report (bokeh, sweep/report/).

    PYTHONPATH=. python3 benchmarks/report_libraries.py [--result sweep.nc] [--reps 3]

Needs plotly (``pip install plotly``; not a dependency of accel-sweep), selenium and Debian's
chromium and chromium-driver (tests/browser.py). docs/report.md quotes a run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sweep
from sweep.analysis.palette import device_look
from tests import browser

BOKEH_READY = ("return window.Bokeh && Bokeh.documents.length && "
               "Bokeh.documents[0].get_model_by_name('cells').data.x.length > 0 && "
               "performance.now()")
PLOTLY_READY = ("return document.querySelector('.plotly .main-svg .heatmaplayer image, "
                ".plotly .main-svg .heatmaplayer path') && performance.now()")
REPORT_READY = ("return window.Bokeh && Bokeh.documents.length && "
                "Bokeh.documents[0].get_model_by_name('maps').data.winner.length > 0 && "
                "performance.now()")


def winner_maps(ds):
    """Per (model, precision): winner codes, margins over batch x context (context rows)."""
    m = ds.sweep.margin("throughput").isel(engine=0).transpose("model", "precision", "context",
                                                               "batch")
    hw = [str(h) for h in ds["hardware"].values]
    lut = {h: i for i, h in enumerate(hw)}
    codes = np.vectorize(lambda w: lut.get(str(w), -1))(m["winner"].values)
    return m, hw, codes, np.asarray(m["margin"].values, np.float64)


def bokeh_page(ds, path: Path) -> None:
    from bokeh.embed import file_html
    from bokeh.layouts import column
    from bokeh.models import ColumnDataSource, CustomJS, FactorRange, HoverTool, Select
    from bokeh.plotting import figure
    from bokeh.resources import INLINE

    m, hw, codes, marg = winner_maps(ds)
    models, precs = list(m["model"].values), list(m["precision"].values)
    batch = [str(b) for b in m["batch"].values]
    ctx = [str(c) for c in m["context"].values]
    colours = [device_look(h).colour for h in hw]
    store = ColumnDataSource({"code": codes.ravel().astype(np.int16),
                              "margin": marg.ravel().astype(np.float32)})
    cells = ColumnDataSource({"x": [], "y": [], "c": [], "w": [], "t": []}, name="cells")
    p = figure(x_range=FactorRange(*batch), y_range=FactorRange(*ctx), width=620, height=430)
    p.rect("x", "y", 1, 1, source=cells, fill_color="c", line_color=None)
    p.text("x", "y", text="t", source=cells, text_align="center", text_baseline="middle",
           text_font_size="7pt")
    p.add_tools(HoverTool(tooltips=[("winner", "@w"), ("margin", "@t")]))
    sel = Select(title="model / precision", value="0",
                 options=[(str(i * len(precs) + j), f"{mm} / {pp}")
                          for i, mm in enumerate(models) for j, pp in enumerate(precs)])
    cb = CustomJS(args={"store": store, "cells": cells, "sel": sel, "hw": hw, "col": colours,
                        "batch": batch, "ctx": ctx}, code="""
        const n = batch.length * ctx.length, k = Number(sel.value) * n;
        const d = {x: [], y: [], c: [], w: [], t: []};
        for (let i = 0; i < n; i++) {
          const c = store.data.code[k + i], mg = store.data.margin[k + i];
          d.x.push(batch[i % batch.length]); d.y.push(ctx[Math.floor(i / batch.length)]);
          d.c.push(c < 0 ? "#DDDDDD" : col[c]); d.w.push(c < 0 ? "none" : hw[c]);
          d.t.push(Number.isFinite(mg) ? mg.toFixed(2) + "x" : "");
        }
        cells.data = d;""")
    sel.js_on_change("value", cb)
    from bokeh.document import Document

    doc = Document()
    doc.add_root(column(sel, p))
    doc.js_on_event("document_ready", cb)
    path.write_text(file_html(doc, resources=INLINE, title="bokeh"), encoding="utf-8")


def plotly_page(ds, path: Path) -> None:
    import plotly.graph_objects as go

    m, hw, codes, marg = winner_maps(ds)
    models, precs = list(m["model"].values), list(m["precision"].values)
    batch = [str(b) for b in m["batch"].values]
    ctx = [str(c) for c in m["context"].values]
    n = len(hw)
    scale = [[i / max(n - 1, 1), device_look(h).colour] for i, h in enumerate(hw)]
    traces, buttons = [], []
    combos = [(i, j) for i in range(len(models)) for j in range(len(precs))]
    for k, (i, j) in enumerate(combos):
        z = np.where(codes[i, j] < 0, np.nan, codes[i, j]).astype(float)
        text = np.where(np.isfinite(marg[i, j]), np.char.add(np.round(marg[i, j], 2).astype(str),
                                                            "x"), "")
        names = np.where(codes[i, j] < 0, "none", np.asarray(hw, dtype=object)[codes[i, j]])
        traces.append(go.Heatmap(z=z, x=batch, y=ctx, text=text, texttemplate="%{text}",
                                 customdata=names, colorscale=scale, zmin=0, zmax=n - 1,
                                 showscale=False, visible=k == 0,
                                 hovertemplate="winner %{customdata}<br>margin %{text}"))
        buttons.append({"label": f"{models[i]} / {precs[j]}", "method": "update",
                        "args": [{"visible": [q == k for q in range(len(combos))]}]})
    fig = go.Figure(traces)
    fig.update_layout(width=620, height=430, updatemenus=[{"buttons": buttons}],
                      xaxis={"type": "category"}, yaxis={"type": "category"})
    fig.write_html(path, include_plotlyjs=True, full_html=True)


def load_ms(driver, path: Path, ready: str) -> float:
    driver.get(path.resolve().as_uri())
    return float(browser.wait_for(driver, ready))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--result", default=None, help="a result file (default: run the default "
                    "grid in memory)")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    ds = sweep.open(args.result).load() if args.result else sweep.run(None, progress=False)
    out = Path(tempfile.mkdtemp(prefix="report-libraries-"))
    rows = {}
    for name, make, ready in (("bokeh", bokeh_page, BOKEH_READY),
                              ("plotly", plotly_page, PLOTLY_READY),
                              ("report (bokeh)", None, REPORT_READY)):
        path = out / f"{name.split()[0]}-{len(rows)}.html"
        t0 = time.perf_counter()
        if make is None:
            sweep.report(ds, path)
        else:
            make(ds, path)
        write = time.perf_counter() - t0
        with browser.chromium() as d:
            times = [load_ms(d, path, ready) for _ in range(args.reps)]
            errors = browser.console_errors(d)
        rows[name] = {"bytes": path.stat().st_size, "write_s": round(write, 2),
                      "render_ms_min": round(min(times)), "render_ms_all": [round(x) for x in times],
                      "console_errors": len(errors)}
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
