"""The HTML report: its numbers are the analysis layer's, it is one self-contained file within
its size budget on the default grid, and it works in a real browser (headless Chromium): no
console errors, a control changes the figures, and the screenshot is not blank."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sweep.analysis.goodput import goodput, serving_front
from sweep.analysis.winners import margin
from sweep.cli import main
from sweep.report import SIZE_BUDGET, render, write_report
from sweep.report.tables import BASES, NONE, TPOT_TARGETS, TTFT_TARGETS, build
from tests import browser
from tests.test_analysis import make_result


@pytest.fixture(scope="module")
def small():
    ds = make_result(hardware=("hw-a", "hw-b", "hw-c", "hw-d"), batch=(1, 8, 64),
                     context=(128, 1024, 8192, 32768), seed=4)
    return ds.assign_coords(peak_flops=(ds["peak_bf16_flops"] * (ds["act_bits"] == 8).astype(
        float).__add__(1.0)).transpose("hardware", "precision"))


def _slice(t, block, shape_name, fixed: dict):
    """The run of a dense block at the given leading indices (as the page's callback finds it)."""
    dims = t.shapes[shape_name]
    k = 0
    for d in dims[:len(fixed)]:
        k = k * len(t.labels[d]) + fixed[d]
    run = int(np.prod([len(t.labels[d]) for d in dims[len(fixed):]]))
    return {c: a[k * run:(k + 1) * run] for c, a in t.blocks[block].items()}


def test_the_page_shows_the_analysis_layers_numbers(small):
    t = build(small)
    lab = t.labels
    b, m, p = 2, 1, 1  # per dollar, the second model and precision
    cells = _slice(t, "maps", "maps", {"basis": b, "engine": 0, "model": m, "precision": p})
    want = margin(small, "throughput", basis=BASES[b]).isel(model=m, precision=p)
    want = want.transpose("context", "batch")
    winners = [lab["hardware"][c] if c != NONE else "" for c in cells["winner"]]
    assert winners == [str(x) for x in np.asarray(want["winner"].values).ravel()]
    np.testing.assert_allclose(cells["margin"], np.asarray(want["margin"].values).ravel(),
                               rtol=1e-6, equal_nan=True)
    # goodput at the second TTFT and the first TPOT target, the second context offered
    c = 1
    g = _slice(t, "goodput", "goodput", {"basis": b, "ttft": 1, "tpot": 0, "engine": 0,
                                        "model": m, "precision": p, "context_choice": c})
    ctx = int(lab["context_choice"][c])
    gw = goodput(small, TTFT_TARGETS[1], TPOT_TARGETS[0], per=BASES[b]).isel(
        model=m, precision=p).sel(context=ctx)
    np.testing.assert_allclose(g["value"], np.asarray(gw["goodput"].values, np.float32),
                               rtol=1e-6, equal_nan=True)
    # the serving front rows of one control state are serving_front's rows there
    key = ((b * 1 + 0) * len(lab["model"]) + m) * len(lab["precision"]) + p
    key = key * len(lab["context_choice"]) + c
    off = t.blocks["front"]["offsets"]
    rows = slice(int(off[key]), int(off[key + 1]))
    fw = serving_front(small.sel(context=[ctx]), per=BASES[b])
    fw = fw[(fw["model"] == lab["model"][m]) & (fw["precision"] == lab["precision"][p])]
    got = sorted(zip((lab["hardware"][h] for h in t.blocks["front"]["hardware"][rows]),
                     t.blocks["front"]["user"][rows].round(3)))
    assert got == sorted(zip(fw["hardware"], fw["per_user"].astype(np.float32).round(3)))


def test_the_page_is_one_self_contained_file(small, tmp_path):
    page = render(small)
    for tag in re.findall(r"<(?:script|link|img)[^>]*>", page):
        assert not re.search(r"(src|href)\s*=\s*['\"]?(https?:)?//", tag), tag
    assert "cdn.bokeh.org" not in page and "Bokeh" in page
    out = tmp_path / "r.html"
    assert main(["report", str(_saved(small, tmp_path)), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert main(["report", str(_saved(small, tmp_path)), "-o", str(tmp_path / "no" / "r.html")]) == 2
    assert main(["report", str(_saved(small, tmp_path)), "--sel", "hardware=hw-a,hw-c",
                 "-o", str(out)]) == 0


def _saved(ds, tmp_path):
    from sweep.results.files import write_dataset

    p = tmp_path / "small.nc"
    if not p.exists():
        write_dataset(ds, p)
    return p


@pytest.fixture(scope="module")
def default_report(default_grid, tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "report.html"
    return write_report(default_grid, path)


@pytest.mark.slow
def test_default_grid_report_is_within_its_size_budget(default_report):
    size = default_report.stat().st_size
    assert size <= SIZE_BUDGET, f"{size / 2**20:.2f} MiB > {SIZE_BUDGET / 2**20:.0f} MiB"
    page = default_report.read_text(encoding="utf-8")
    assert "3 of the grid" in page and "11 contexts" in page  # says what it subsamples


def _not_blank(png: bytes) -> None:
    import io

    from matplotlib.image import imread

    img = imread(io.BytesIO(png), format="png")[..., :3]
    colours = np.unique((img.reshape(-1, 3) * 255).astype(np.uint8), axis=0)
    assert img.shape[0] > 500 and img.shape[1] > 500
    assert len(colours) > 200, len(colours)  # figures, not a white page
    assert img.std() > 0.1


@pytest.mark.slow
def test_the_report_works_in_a_real_browser(default_report, tmp_path):
    why = browser.missing()
    assert not why, why
    with browser.chromium() as d:
        d.get(default_report.resolve().as_uri())
        doc = "Bokeh.documents[0]"
        cells = f"{doc}.get_model_by_name('maps').data"
        browser.wait_for(d, f"return window.Bokeh && Bokeh.documents.length && "
                            f"{cells}.winner && {cells}.winner.length")
        assert browser.console_errors(d) == []
        first = d.execute_script(f"window.first = JSON.stringify(Array.from({cells}.winner));"
                                 f"return Array.from({cells}.winner)")
        assert len(first) == 121 and set(first) - {"none"}
        before = d.get_screenshot_as_png()
        _not_blank(before)
        (tmp_path / "before.png").write_bytes(before)
        # a user's choice: another model in the model box (a <select> in bokeh's shadow DOM)
        browser.choose(d, "deepseek-r1")
        browser.wait_for(d, f"return {doc}.get_model_by_name('model').value == 'deepseek-r1'")
        browser.wait_for(d, f"return JSON.stringify(Array.from({cells}.winner)) != window.first")
        after = d.get_screenshot_as_png()
        _not_blank(after)
        assert after != before  # the figures changed on the screen too
        assert browser.console_errors(d) == []
