"""Figures: every kind renders a real PNG (signature, size, pixel dims) on varied results."""

from __future__ import annotations

import struct

import matplotlib
import numpy as np
import pytest

from grids.errors import SpecError
from sweep.analysis import plot_style, plots
from tests.test_analysis import make_result

matplotlib.use("Agg")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path) -> tuple[int, int]:
    """(width, height) from the IHDR chunk, checking the PNG signature."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def check_png(path, min_bytes=8000) -> None:
    assert path.exists() and path.stat().st_size > min_bytes, path.stat().st_size
    w, h = png_size(path)
    assert 400 <= w <= 4000 and 300 <= h <= 3000, (w, h)


@pytest.fixture(scope="module")
def ds():
    hw = [f"dev-{i:02d}" for i in range(10)]  # more devices than palette colours
    return make_result(hardware=hw, batch=(1, 2, 8, 32, 128), context=(128, 1024, 8192, 32768),
                       parallelism=("tp1", "tp2", "tp1-ep2"), seed=1)


@pytest.mark.parametrize("kind,kw", [
    ("winner-map", {}),
    ("winner-map", {"model": "moe-47b", "precision": "fp8", "metric": "tpot"}),
    ("variation", {"metric": "tokens_per_joule"}),
    ("pareto", {}),
    ("pareto", {"objectives": ["tpot", "throughput_per_device", "tokens_per_joule"],
                "hardware": "dev-00,dev-03", "best_over": ()}),
    ("roofline", {}),
    ("regimes", {}),
])
def test_every_kind_renders_png(ds, tmp_path, kind, kw):
    fig = plots.plot(ds, kind, **kw)
    ax = fig.axes[0]
    assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
    if kind in ("winner-map", "pareto", "roofline"):
        legend = fig.legends[0]  # a figure legend, beside the axes, inside the canvas
        names = {t.get_text() for t in legend.get_texts()}
        assert names & set(ds["hardware"].values)  # the legend names devices
    if kind in ("winner-map", "variation", "pareto", "roofline"):
        assert ax.get_xscale() == "log"
    out = plots.save(fig, tmp_path / f"{kind}.png")
    check_png(out)


def test_winner_map_units_and_dask(ds, tmp_path):
    fig = ds.chunk({"hardware": 3}).sweep.plot("winner-map")
    ax = fig.axes[0]
    assert "[" in ax.get_xlabel() and "[" in ax.get_ylabel()
    check_png(plots.save(fig, tmp_path / "w.png"))


def test_plots_on_degenerate_grids(tmp_path):
    one = make_result(hardware=("solo",), batch=(4,), context=(512,), output_len=[32, 64],
                      precision=("bf16",), parallelism=("tp1",))
    for kind in plots.KINDS:
        check_png(plots.save(plots.plot(one, kind), tmp_path / f"{kind}.png"), min_bytes=3000)
    sliced = make_result().sel(batch=8)  # batch selected away: a scalar coord
    check_png(plots.save(plots.plot(sliced, "winner-map"), tmp_path / "s.png"), 3000)


def test_pdf_and_svg(ds, tmp_path):
    fig = plots.plot(ds, "regimes")
    for ext in ("pdf", "svg"):
        p = plots.save(fig, tmp_path / f"r.{ext}")
        assert p.stat().st_size > 1000


def test_bad_plot_input(ds, tmp_path):
    with pytest.raises(SpecError, match="model"):
        plots.plot(ds, "winner-map", model="gpt-9")
    with pytest.raises(SpecError, match="unknown plot kind"):
        plots.plot(ds, "pie")
    with pytest.raises(SpecError, match="unknown metric"):
        plots.plot(ds, "variation", metric="speed")
    with pytest.raises(SpecError, match="hardware"):
        plots.plot(ds, "roofline", hardware="nope")
    fig = plots.plot(ds, "regimes")
    with pytest.raises(SpecError, match="format"):
        plots.save(fig, tmp_path / "x.bmp")
    with pytest.raises(SpecError, match="directory"):
        plots.save(fig, tmp_path / "missing" / "x.png")


def test_palette_is_okabe_ito():
    from sweep.analysis.palette import OKABE_ITO

    assert OKABE_ITO[:2] == ("#E69F00", "#56B4E9")
    colours = {plots.style(i)[0] for i in range(8)}
    assert len(colours) == 8
    assert plots.style(8)[:2] != plots.style(0)[:2]  # ninth category: same colour, new hatch
    assert np.isfinite(plot_style._edges(np.array([1.0, 2.0, 4.0]))).all()


def test_winner_map_marks_ties_within_the_uncertainty_band():
    import sweep

    grid = sweep.run({"hardware": ["h100-sxm", "h200-sxm", "mi300x"], "model": ["llama-3.1-8b"],
                      "batch": [1, 64], "context": [1024, 8192], "precision": ["bf16"],
                      "parallelism": ["tp1"]})
    mg = grid.sweep.margin("throughput")
    fig = plots.plot(grid, "winner-map")
    texts = [t.get_text() for t in fig.axes[0].texts]
    marked = sum(t.startswith("~") for t in texts)
    assert marked == int(mg["tie"].sum()) > 0  # H200 over H100 at batch 1 is within 1.23x
    assert len(texts) == int(mg["margin"].notnull().sum())
    assert "a tie" in fig.axes[0].get_title() or "a tie" in str(fig.texts)
