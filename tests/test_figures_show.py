"""What the figures show, not only that they render: the roofline's memory roofs at the catalog
bandwidths, titles and legends inside the canvas, one colour per device in every figure, why
winner-map cells are grey and by how much each cell is won, n/a in the regimes map, readable
colour bars, and the Pareto plot's default of each device at its best layout."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest
import xarray as xr
from matplotlib.collections import PathCollection

from grids.hardware import catalog_ids
from sweep.analysis import plots
from sweep.analysis.palette import OKABE_ITO, device_look, looks
from sweep.analysis.winners import margin
from tests.test_analysis import make_result

matplotlib.use("Agg")

CATALOG = list(catalog_ids())


@pytest.fixture(scope="module")
def many():
    """Every catalog device (a legend of 30+ entries) on a small grid."""
    ds = make_result(hardware=CATALOG, batch=(1, 8, 64), context=(128, 2048),
                     parallelism=("tp1", "tp2"), seed=3)
    # the dense peak of each precision's compute type, as sweep run writes it
    peak = ds["peak_bf16_flops"] * xr.where(ds["act_bits"] == 8, 2.0, 1.0)
    return ds.assign_coords(peak_flops=peak.transpose("hardware", "precision"))


def _inside(fig, artist) -> bool:
    fig.draw_without_rendering()
    box = artist.get_window_extent()
    return box.x0 >= -0.5 and box.y0 >= -0.5 and box.x1 <= fig.bbox.width + 0.5 \
        and box.y1 <= fig.bbox.height + 0.5


@pytest.mark.parametrize("kind", plots.KINDS)
def test_titles_and_legends_lie_inside_the_canvas(many, kind):
    fig = plots.plot(many, kind)
    ax = fig.axes[0]
    assert ax.get_title() and _inside(fig, ax.title), kind
    for legend in fig.legends:
        assert _inside(fig, legend), (kind, legend.get_window_extent(), fig.bbox)
        assert not ax.title.get_window_extent().overlaps(legend.get_window_extent())


def test_roofline_draws_memory_roofs_at_the_catalog_bandwidths(many):
    fig = plots.plot(many, "roofline", model="dense-8b", precision="bf16")
    ax = fig.axes[0]
    roofs = {ln.get_gid().split(":", 1)[1]: ln for ln in ax.get_lines()
             if (ln.get_gid() or "").startswith("roof:")}
    assert len(roofs) >= 10
    peak = many["peak_flops"].sel(precision="bf16")
    for dev, line in roofs.items():
        x, y = (np.asarray(v, np.float64) for v in line.get_data())
        bw = float(many["dram_bandwidth"].sel(hardware=dev))
        pk = float(peak.sel(hardware=dev)) if "hardware" in peak.dims else float(peak)
        sloped = y < pk * (1 - 1e-9)
        assert sloped.any() and (~sloped).any(), dev  # the knee is on the chart
        np.testing.assert_allclose(y[sloped] / x[sloped], bw, rtol=1e-9)  # slope: bandwidth
        np.testing.assert_allclose(y[~sloped], pk, rtol=1e-9)  # the flat compute roof
        assert line.get_color() == device_look(dev).colour


def test_a_device_has_one_colour_in_every_figure(many):
    some = many.isel(hardware=[5, 17, 2, 30])  # another subset, in another order
    wm = plots.plot(some, "winner-map", model="dense-8b")
    colour = {t.get_text(): h.get_facecolor() for t, h in
              zip(wm.legends[0].get_texts(), wm.legends[0].legend_handles)}
    rf = plots.plot(many, "roofline", model="dense-8b")
    line = {ln.get_label(): ln.get_color() for ln in rf.axes[0].get_lines()
            if not ln.get_label().startswith("_")}
    shared = [d for d in colour if d in line]
    assert shared
    for dev in shared:
        assert matplotlib.colors.to_hex(colour[dev]) == matplotlib.colors.to_hex(line[dev])
        assert matplotlib.colors.to_hex(line[dev]) == device_look(dev).colour.lower()
    # the catalog's devices have distinct looks, from the Okabe-Ito colours
    lk = looks(CATALOG)
    assert len({(x.colour, x.marker, x.hatch) for x in lk}) == len(CATALOG)
    assert {x.colour for x in lk} <= set(OKABE_ITO)
    assert device_look("my-own-gpu") == device_look("my-own-gpu")  # stable off the catalog


def _context_limited():
    """The largest context beyond every layout's reach (context window) and one batch
    that fits nowhere (memory), the rest feasible."""
    ds = make_result(hardware=("hw-a", "hw-b", "hw-c"), batch=(1, 8, 64),
                     context=(128, 2048, 131072), p_infeasible=0.0, seed=5)
    fits = ds["fits"].values.copy()
    reason = ds["infeasible_reason"].values.copy()
    ci = list(ds["context"].values).index(131072)
    bi = list(ds["batch"].values).index(64)
    fits[:, :, :, ci] = 0
    reason[:, :, :, ci] = 8  # context_window
    fits[:, :, bi, 0] = 0
    reason[:, :, bi, 0] = 9  # memory
    reason[..., 2] = np.where(fits[..., 2] == 0, 3, reason[..., 2])  # one layout: heads
    out = ds.copy()
    out["fits"] = (ds["fits"].dims, fits, ds["fits"].attrs)
    out["infeasible_reason"] = (ds["infeasible_reason"].dims, reason,
                                ds["infeasible_reason"].attrs)
    for name in ("throughput", "tpot", "ttft", "system_power"):
        out[name] = out[name].where(out["fits"] == 1)
    return out


def test_winner_map_says_why_cells_are_grey_and_by_how_much_cells_are_won():
    ds = _context_limited()
    m = margin(ds, "throughput", basis="device")
    why = m["why_none"].sel(model="dense-8b", precision="bf16")
    assert (why.sel(context=131072) == "beyond the model's context window").all()
    assert str(why.sel(context=128, batch=64).values) == "does not fit in memory at any layout"
    assert (why.sel(context=2048) == "").all()
    fig = plots.plot(ds, "winner-map", model="dense-8b", precision="bf16", basis="device")
    labels = " ".join(t.get_text().replace("\n", " ") for t in fig.legends[0].get_texts())
    assert "context window" in labels and "memory" in labels
    texts = [t.get_text() for t in fig.axes[0].texts]
    won = np.asarray(m["margin"].sel(model="dense-8b", precision="bf16").values)
    assert len(texts) == int(np.isfinite(won).sum())
    assert sorted(texts) == sorted(f"{v:.2f}x" for v in won[np.isfinite(won)])


def test_margin_is_the_winner_over_the_runner_up():
    ds = make_result(seed=11)
    m = margin(ds, "throughput", basis="device")
    per = ds["throughput"].where(ds["fits"] == 1) / ds["devices"]
    best = per.max("parallelism")
    for idx in np.ndindex(*m["margin"].shape):
        pt = dict(zip(m["margin"].dims, idx))
        vals = np.sort(np.asarray(best.isel(pt).values, np.float64))
        vals = vals[np.isfinite(vals)][::-1]
        got = float(m["margin"].isel(pt))
        if len(vals) >= 2:
            assert got == pytest.approx(vals[0] / vals[1], rel=1e-6)
            assert str(m["winner"].isel(pt).values) != str(m["runner_up"].isel(pt).values)
        else:
            assert np.isnan(got)
    lower = margin(ds, "tpot", basis=None)
    assert (lower["margin"].fillna(1) >= 1).all()


def test_regimes_show_na_for_devices_that_serve_nothing():
    ds = make_result(batch=(8, 16), context=(1024,), seed=9, p_infeasible=0.0)
    slow = ds.copy()
    slow["tpot"] = ds["tpot"].where(ds["hardware"] != "hw-a", 1.0)  # misses the 50 ms SLO
    fig = plots.plot(slow, "regimes")
    r = slow.sweep.regimes()
    row = list(r["regime"].values).index("moderate_batch")
    col = list(r["hardware"].values).index("hw-a")
    ncols = len(r["hardware"])
    assert fig.axes[0].texts[row * ncols + col].get_text() == "n/a"


def test_a_narrow_variation_range_reads_plainly():
    ds = make_result(seed=2)
    ds["throughput"] = ds["throughput"] * 0 + ds["hardware"].copy(
        data=[1.0, 2.0, 3.6]).astype(np.float32)
    ds["throughput"] = ds["throughput"].where(ds["fits"] == 1)
    fig = plots.plot(ds, "variation", basis=None, best_over=())
    fig.draw_without_rendering()
    bar = fig.axes[1]
    labels = [t.get_text() for t in bar.yaxis.get_ticklabels(minor=True)
              + bar.yaxis.get_ticklabels()]
    shown = [x for x in labels if x]
    assert shown and all(x.endswith("x") and "10^" not in x and "times" not in x
                         for x in shown), shown


def test_pareto_shows_each_device_at_its_best_layout_by_default(many):
    sub = many.sel(model="dense-8b", precision="bf16")
    fig = plots.plot(many, "pareto", model="dense-8b", precision="bf16")
    pts = sum(len(c.get_offsets()) for c in fig.axes[0].collections
              if isinstance(c, PathCollection))
    per_device = sub["fits"].max("parallelism")  # one point per device and workload
    assert pts == int(per_device.sum())
    every = plots.plot(many, "pareto", model="dense-8b", precision="bf16", best_over=())
    pts_all = sum(len(c.get_offsets()) for c in every.axes[0].collections
                  if isinstance(c, PathCollection))
    assert pts_all == int(sub["fits"].sum()) > pts
