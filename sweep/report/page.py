"""The report page: bokeh figures and controls over the precomputed :class:`~sweep.report.tables.
Tables`, written as one self-contained HTML file (bokeh's JavaScript and every number inlined;
nothing is fetched when it opens).

Why bokeh and not plotly (docs/report.md, "Choosing the library"): bokeh's inlined JavaScript is
1.7 MB against plotly's 4.8 MB, which leaves room for the default grid's numbers within the
5 MB budget, and its widgets (select boxes) drive the figures through one small callback
(``select.js``), where plotly's menus cannot combine several independent controls.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from bokeh.core.properties import field
from bokeh.document import Document
from bokeh.embed import file_html
from bokeh.layouts import column, row
from bokeh.models import (
    ColorBar,
    ColumnDataSource,
    CustomJS,
    Div,
    FactorRange,
    HoverTool,
    Legend,
    LegendItem,
    LogColorMapper,
    Select,
)
from bokeh.palettes import Viridis256
from bokeh.plotting import figure
from bokeh.resources import INLINE

from sweep.analysis.palette import NONE_COLOR, device_look
from sweep.report.tables import CONTROLS, Tables
from sweep.results.provenance import parameters_text

#: greys of map cells without a winner, one per reason (as in sweep.analysis.plot_maps)
NONE_GREYS = (NONE_COLOR, "#BBBBBB", "#999999", "#EEEEEE")
WIDTH, HEIGHT = 620, 430
CALLBACK = Path(__file__).with_name("select.js")
#: the columns of the plotted sources, which select.js fills from the blocks
DISPLAY_COLUMNS = {
    "maps": ("x", "y", "colour", "hatch", "winner", "layout", "value", "runner", "margin",
             "mtext", "n", "why", "ratio", "rtext", "top", "bottom"),
    "goodput": ("hardware", "value", "colour", "batch", "layout", "text", "base"),
    "front": ("x", "y", "hardware", "colour", "marker", "batch", "layout", "tpot"),
    "front_lines": ("xs", "ys", "colour", "hardware"),
    "roofline": ("x", "y", "hardware", "colour", "marker", "batch"),
    "roof_lines": ("xs", "ys", "colour", "hardware"),
}


def _select(name: str, title: str, labels: list[str], shown: list[str] | None = None,
            value: str | None = None) -> Select:
    options = list(zip(labels, shown or labels))
    return Select(title=title, name=name, value=value if value in labels else labels[0],
                  options=options, width=185)


def _heat(title: str, t: Tables) -> figure:
    p = figure(title=title, x_range=FactorRange(*t.labels["batch"]),
               y_range=FactorRange(*t.labels["context"]), width=WIDTH, height=HEIGHT,
               toolbar_location="above", tools="save,reset")
    p.xaxis.axis_label = "batch [concurrent sequences]"
    p.yaxis.axis_label = "context [prompt tokens]"
    p.grid.visible = False
    return p


def _scatter(title: str, x_label: str, y_label: str) -> figure:
    p = figure(title=title, x_axis_type="log", y_axis_type="log", width=WIDTH,
               height=HEIGHT, toolbar_location="above",
               tools="pan,wheel_zoom,box_zoom,reset,save")
    p.xaxis.axis_label = x_label
    p.yaxis.axis_label = y_label
    return p


def build_page(t: Tables, provenance: str, title: str, extra: str = "") -> str:
    """The page's HTML for the tables ``t`` (``provenance``, ``extra``: HTML fragments; the
    extra sections are the optional panels of :mod:`sweep.report.hooks`)."""
    lab = t.labels
    looks = [device_look(h) for h in lab["hardware"]]
    meta = {"labels": lab, "shapes": t.shapes, "units": t.units,
            "colours": [lk.colour for lk in looks], "markers": [lk.bokeh_marker for lk in looks],
            "hatches": [lk.bokeh_hatch for lk in looks], "none_greys": list(NONE_GREYS)}
    controls = {
        "engine": _select("engine", "engine", lab["engine"]),
        "model": _select("model", "model", lab["model"]),
        "precision": _select("precision", "precision", lab["precision"]),
        "basis": _select("basis", "comparison basis", lab["basis"], lab["basis_label"]),
        "context_choice": _select("context_choice", "prompt (goodput, front, roofline)",
                                  lab["context_choice"],
                                  [f"{c} tokens" for c in lab["context_choice"]]),
        "ttft": _select("ttft", "TTFT target", lab["ttft"], [f"{x} s" for x in lab["ttft"]],
                        "2"),
        "tpot": _select("tpot", "TPOT target", lab["tpot"], [f"{x} s" for x in lab["tpot"]],
                        "0.05"),
    }
    blocks = {k: ColumnDataSource({c: a for c, a in v.items() if c != "offsets"}, name=f"block:{k}")
              for k, v in t.blocks.items()}
    sources = {k: ColumnDataSource({c: [] for c in cols}, name=k)
               for k, cols in DISPLAY_COLUMNS.items()}
    titles, axes, captions = {}, {}, {}

    # winner map
    pw = _heat("Winner", t)
    cells = pw.rect("x", "y", 1, 1, source=sources["maps"], fill_color="colour",
                    line_color=None, hatch_pattern="hatch", hatch_color="white",
                    hatch_alpha=0.6)
    pw.add_layout(Legend(items=[LegendItem(label=field("winner"), renderers=[cells])],
                         label_text_font_size="8pt", glyph_height=12, spacing=0, padding=2),
                  "right")
    pw.text("x", "y", text="mtext", source=sources["maps"], text_align="center",
            text_baseline="middle", text_font_size="7pt", background_fill_color="white",
            background_fill_alpha=0.7)
    pw.add_tools(HoverTool(tooltips=[
        ("batch, context", "@x, @y"), ("winner", "@winner @layout"), ("value", "@value"),
        ("runner-up", "@runner"), ("margin", "@margin"), ("feasible devices", "@n"),
        ("why none", "@why")]))
    titles["winner"] = pw.title
    axes["winner_unit"] = Div(text="", name="winner_unit", width=WIDTH,
                              styles={"font-size": "11px"})
    # variation map
    mapper = LogColorMapper(palette=Viridis256, low=1, high=10, nan_color=NONE_COLOR)
    pv = _heat("Variation", t)
    pv.rect("x", "y", 1, 1, source=sources["maps"], line_color=None,
            fill_color={"field": "ratio", "transform": mapper})
    pv.text("x", "y", text="rtext", source=sources["maps"], text_align="center",
            text_baseline="middle", text_font_size="7pt")
    pv.add_layout(ColorBar(color_mapper=mapper, title="best / worst [x]", width=12), "right")
    pv.add_tools(HoverTool(tooltips=[
        ("batch, context", "@x, @y"), ("best / worst", "@rtext"), ("best", "@top"),
        ("worst", "@bottom"), ("feasible devices", "@n"), ("why none", "@why")]))
    titles["variation"] = pv.title
    rows = [row(column(pw, axes["winner_unit"]), pv)]

    goodput_range = FactorRange("none")
    if "goodput" in t.blocks:
        pg = figure(title="Goodput", x_range=goodput_range, width=WIDTH, height=HEIGHT,
                    toolbar_location="above", tools="save,reset", y_axis_type="log")
        pg.vbar(x="hardware", top="value", bottom="base", width=0.8,
                source=sources["goodput"], fill_color="colour", line_color="#333333")
        pg.xaxis.major_label_orientation = 1.0
        pg.add_tools(HoverTool(tooltips=[("device", "@hardware"), ("goodput", "@text"),
                                         ("at batch", "@batch"), ("layout", "@layout")]))
        titles["goodput"] = pg.title
        axes["goodput"] = pg.yaxis[0]
        captions["goodput"] = Div(text="", width=WIDTH, styles={"font-size": "11px"})
        left = column(pg, captions["goodput"])
    else:
        left = Div(text="<p><b>Goodput</b>: this result has no TTFT/TPOT metrics.</p>",
                   width=WIDTH)
    if "front" in t.blocks:
        pf = _scatter("Serving front", "tokens/s per user = 1 / TPOT [token/s]", "throughput")
        pf.multi_line("xs", "ys", source=sources["front_lines"], line_color="colour",
                      line_width=1.5)
        sc = pf.scatter("x", "y", source=sources["front"], color="colour", marker="marker",
                        size=7, line_color="black", line_width=0.4)
        legend = Legend(items=[LegendItem(label=field("hardware"), renderers=[sc])],
                        location="top_left", label_text_font_size="7pt", glyph_height=10,
                        spacing=0, padding=2)
        pf.add_layout(legend, "right")
        pf.add_tools(HoverTool(renderers=[sc], tooltips=[
            ("device", "@hardware"), ("layout", "@layout"), ("batch", "@batch"),
            ("TPOT", "@tpot s"), ("per user", "@x{0.0} token/s"), ("throughput", "@y{0.00}")]))
        titles["front"] = pf.title
        axes["front"] = pf.yaxis[0]
        right = pf
    else:
        right = Div(text="<p><b>Serving front</b>: this result has no TPOT metric.</p>")
    rows.append(row(left, right))
    if "roofline" in t.blocks:
        ctx, lay = lab["roofline_at"]
        pr = _scatter(f"Decode roofline, {ctx}-token prompt, layout {lay}",
                      "arithmetic intensity of the decode step [FLOP/B]",
                      "achieved FLOP/s per device [FLOP/s]")
        pr.multi_line("xs", "ys", source=sources["roof_lines"], line_color="colour",
                      line_dash="dashed", line_alpha=0.8)
        rs = pr.scatter("x", "y", source=sources["roofline"], color="colour", marker="marker",
                        size=7, line_color="black", line_width=0.4)
        pr.add_tools(HoverTool(renderers=[rs], tooltips=[
            ("device", "@hardware"), ("batch", "@batch"), ("intensity", "@x{0.0} FLOP/B"),
            ("achieved", "@y{0.00e0} FLOP/s")]))
        note = Div(text="Points: batch sizes; dashed: each device's peak FLOP/s and "
                   "DRAM-bandwidth roofs (catalog values; SRAM-only devices: peak only).",
                   width=WIDTH, styles={"font-size": "11px"})
        rows.append(row(column(pr, note), Div(text=extra, width=WIDTH)))
    else:
        rows.append(Div(text=extra))
    args = {"controls": controls, "blocks": blocks, "meta": meta, "titles": titles,
            "captions": captions,
            "axes": axes, "ratio_map": mapper, "goodput_range": goodput_range,
            "offsets": ColumnDataSource({"offsets": t.blocks["front"]["offsets"]})
            if "front" in t.blocks else None,
            **sources}
    cb = CustomJS(args=args, code=CALLBACK.read_text(encoding="utf-8"))
    for c in controls.values():
        c.js_on_change("value", cb)
    header = Div(text=_header_html(title, t), sizing_mode="stretch_width")
    bar = row(*[controls[k] for k in (*CONTROLS, "basis", "context_choice", "ttft", "tpot")])
    prov = Div(text=provenance, sizing_mode="stretch_width")
    doc = Document()
    doc.add_root(column(header, bar, *rows, prov))
    doc.js_on_event("document_ready", cb)  # fill the figures for the initial controls
    return file_html(doc, resources=INLINE, title=title)


def _header_html(title: str, t: Tables) -> str:
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in t.notes)
    return (f"<h1 style='margin:4px 0'>{html.escape(title)}</h1>"
            "<p style='max-width:1200px'>Every number on this page was computed from the result "
            "by accel-sweep's analysis layer when the page was written; the controls only choose "
            "which of them to show. Hover over a cell, bar or point for its details. "
            "Throughputs are compared on the chosen basis, each device at its best layout.</p>"
            + (f"<p><b>What the page leaves out to stay small</b>:</p><ul>{notes}</ul>"
               if notes else ""))


def provenance_html(attrs: dict) -> str:
    """The result's provenance as an HTML fragment: version, creation time, catalog hash, grid
    spec, and the efficiencies and engine parameters (with their origin) in force."""
    rows = [(k, attrs[k]) for k in ("package_version", "created_utc", "catalog_sha256",
                                    "output_len", "prefill_chunk_tokens", "model_reference")
            if k in attrs]
    table = "".join(f"<tr><td><b>{html.escape(k)}</b></td><td><code>{html.escape(str(v))}"
                    f"</code></td></tr>" for k, v in rows)
    spec = attrs.get("grid_spec_toml", "")
    parts = [f"<h2>Provenance</h2><table>{table}</table>"]
    if spec:
        parts.append(f"<details><summary>grid spec (TOML)</summary><pre>{html.escape(spec)}"
                     f"</pre></details>")
    lines = parameters_text(attrs)
    if lines:
        eng = json.loads(attrs.get("engine_parameters_json", "{}"))
        fitted = sum(1 for p in eng.values() if any("(fitted)" in str(o) for o in
                                                    p.get("origin", {}).values()))
        parts.append(f"<details><summary>calibration: device efficiencies and engine parameters "
                     f"in force ({len(eng)} device/engine pair(s), {fitted} with values fitted "
                     f"by grids/data/engines/calibration.toml)</summary><pre>"
                     f"{html.escape(chr(10).join(lines))}</pre></details>")
    return "".join(parts)
