"""The numbers of the report: every panel's values for every choice of the page's controls,
computed by the analysis layer and packed as dense, compact arrays.

The page cannot compute (it is a static file), so each panel is evaluated here for every
combination of the controls it depends on, and the page only picks a slice:

* winner map and variation: every engine x model x precision x basis, over batch x context;
* goodput: the same, at each latency target pair of :data:`TTFT_TARGETS` x :data:`TPOT_TARGETS`
  and each context of the page's context control, per device;
* serving front: the Pareto front of every device at each of those contexts and bases;
* roofline: every engine x model x precision at the context nearest 2,048 tokens and the
  layout ``tp1`` (else the first), per device and batch.

A dense block is stored in row-major order of its dims (the order given with it), so the slice
of one control state is a contiguous run the page finds by arithmetic on the control indices.
Labels (devices, layouts, reasons) travel as small integer codes into label lists. What is left
out of the page to keep it small (contexts, latency targets) is listed in :attr:`Tables.notes`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from grids.errors import SpecError
from sweep.analysis import core as an
from sweep.analysis.basis import parse_basis
from sweep.analysis.choose import best_layout
from sweep.analysis.feasible import masked
from sweep.analysis.goodput import goodput, serving_front
from sweep.analysis.variation import variation
from sweep.analysis.winners import margin

#: comparison bases offered by the page (docs/analysis.md, "Comparison bases"): the per-unit
#: ones; a budget basis (system:N, power:10kW, cost:100) multiplies the page's size by the
#: number offered and is one command away (sweep variation OUT --basis system:8)
BASES = ("power", "device", "cost")
#: latency targets [s] offered for goodput (each TTFT with each TPOT)
TTFT_TARGETS = (0.5, 2.0, 10.0)
TPOT_TARGETS = (0.02, 0.05, 0.2)
#: contexts [prompt tokens] offered for goodput, the serving front and the roofline: the grid's
#: values nearest these (on a log scale)
CONTEXT_CHOICES = (1024, 8192, 32768)
#: the context and layout of the roofline panel
ROOFLINE_CONTEXT = 2048
ROOFLINE_LAYOUT = "tp1"
#: the dims of a result the page's controls choose from (besides the basis and targets)
CONTROLS = ("engine", "model", "precision")
#: the code of "no label" in a uint8 code array
NONE = 255
METRIC = "throughput"


@dataclass
class Tables:
    """Everything the page shows, as label lists, dense blocks and notes."""

    labels: dict[str, list[str]] = field(default_factory=dict)
    blocks: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    shapes: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    units: dict[str, str] = field(default_factory=dict)


def prepare(ds: xr.Dataset) -> tuple[xr.Dataset, list[str]]:
    """``ds`` with every dim the report uses present (a scalar coord becomes a length-1 dim)
    and any other dim fixed to its first value; the notes say which."""
    need = ("hardware", *CONTROLS, "batch", "context", "parallelism")
    for v in ("throughput", "fits"):
        if v not in ds.data_vars:
            raise SpecError(f"a report needs the {v!r} variable; this result lacks it (write "
                            f"the result with sweep run, or keep {v!r} when selecting variables)")
    if "hardware" not in ds.dims and "hardware" not in ds.coords:
        raise SpecError("a report needs a hardware dim or coordinate")
    notes = []
    for d in list(ds.dims):
        if d not in need:
            notes.append(f"{d} = {ds[d].values[0]} (the first of {ds.sizes[d]}; select another "
                          f"with --sel {d}=VALUE)")
            ds = ds.isel({d: 0})
    for d in need:
        if d not in ds.dims:
            ds = ds.expand_dims(d) if d in ds.coords else ds.expand_dims({d: ["-"]})
    return ds, notes


#: the variables and coordinates the report reads (everything else is dropped before the
#: analyses run: fewer coordinates to align in every operation)
VARIABLES = ("throughput", "fits", "infeasible_reason", "ttft", "tpot", "system_power", "power",
             "tokens_per_dollar", "arithmetic_intensity", "mfu")
COORDS = ("devices", "peak_flops", "dram_bandwidth")


def _needed(ds: xr.Dataset) -> xr.Dataset:
    """Only what the report reads, loaded into memory (about 40 bytes per grid point for a
    result of sweep run: select a slice with --sel for a result larger than memory)."""
    keep = [v for v in VARIABLES if v in ds.data_vars]
    drop = [c for c in ds.coords if c not in ds.dims and c not in COORDS]
    return ds[keep].drop_vars(drop).load()


def codes(values, labels: list[str]) -> np.ndarray:
    """uint8 codes of string ``values`` in ``labels`` (:data:`NONE` for ``""`` or unknown)."""
    lut = {lab: i for i, lab in enumerate(labels)}
    flat = [lut.get(str(v), NONE) for v in np.asarray(values, dtype=object).ravel()]
    return np.asarray(flat, dtype=np.uint8).reshape(np.shape(values))


def _f32(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float32)


def context_choices(ds: xr.Dataset) -> list[int]:
    """The grid's contexts nearest :data:`CONTEXT_CHOICES`, without repeats, ascending."""
    ctx = np.asarray(ds["context"].values)
    if ctx.dtype.kind not in "iuf":
        return [ctx[0]]
    picks = {int(ctx[max(an.nearest_log(ctx, c), 0)]) for c in CONTEXT_CHOICES}
    return sorted(picks)


def build(ds: xr.Dataset) -> Tables:
    """All the report's numbers for the result ``ds`` (any grid of ``sweep run``'s structure)."""
    if len(set(BASES)) != len(BASES):
        raise AssertionError("duplicate basis")
    ds, notes = prepare(ds)
    ds = _needed(ds)
    big = [d for d in ("hardware", "parallelism", "batch") if ds.sizes[d] >= NONE]
    if big:
        raise SpecError(f"a report shows at most {NONE - 1} values of hardware, parallelism "
                        f"and batch; this result has {ds.sizes[big[0]]} {big[0]} values: select "
                        f"fewer (--sel {big[0]}=a,b,c)")
    t = Tables(notes=notes)
    lab = t.labels
    for d in ("hardware", *CONTROLS, "batch", "context", "parallelism"):
        lab[d] = [str(x) for x in ds[d].values]
    lab["basis"] = list(BASES)
    lab["basis_label"] = [parse_basis(b).label for b in BASES]
    lab["ttft"] = [f"{x:g}" for x in TTFT_TARGETS]
    lab["tpot"] = [f"{x:g}" for x in TPOT_TARGETS]
    ctx_pick = context_choices(ds)
    lab["context_choice"] = [str(c) for c in ctx_pick]
    lab["why"] = []
    ds = ds.sortby(["batch", "context"]) if all(
        np.asarray(ds[d].values).dtype.kind in "iuf" for d in ("batch", "context")) else ds
    lab["batch"] = [str(x) for x in ds["batch"].values]
    lab["context"] = [str(x) for x in ds["context"].values]
    if len(ctx_pick) < ds.sizes["context"]:
        t.notes.append(f"goodput, the serving front and the roofline at {len(ctx_pick)} of the "
                       f"grid's {ds.sizes['context']} contexts ({', '.join(map(str, ctx_pick))} "
                       f"tokens); the maps show every context")
    _maps(ds, t)
    if {"ttft", "tpot"} <= set(ds.data_vars):
        _goodput(ds, t, ctx_pick)
        t.notes.append(f"goodput at TTFT targets {', '.join(lab['ttft'])} s and TPOT targets "
                       f"{', '.join(lab['tpot'])} s")
    if "tpot" in ds.data_vars:
        _front(ds, t, ctx_pick)
    if {"arithmetic_intensity", "mfu"} <= set(ds.data_vars) and "peak_flops" in ds.coords:
        _roofline(ds, t)
    return t


def _maps(ds: xr.Dataset, t: Tables) -> None:
    """Winner, runner-up, margin, why nothing is feasible, and the variation, over batch x
    context, for every engine, model, precision and basis."""
    lab = t.labels
    order = ("engine", "model", "precision", "context", "batch")
    cols: dict[str, list[np.ndarray]] = {k: [] for k in (
        "winner", "runner", "layout", "margin", "best", "why", "ratio", "top", "bottom", "n")}
    for b in BASES:
        mg = margin(ds, METRIC, basis=b).transpose(*order)
        v = variation(ds, METRIC, basis=b).transpose(*order)
        lay = best_layout(ds, METRIC, b)["layout"]
        win = np.asarray(mg["winner"].values, dtype=object)
        lay_np = np.asarray(lay.transpose("hardware", *order).values, dtype=object)
        hw_index = codes(win, lab["hardware"])
        safe = np.where(hw_index == NONE, 0, hw_index).astype(np.intp)
        win_layout = np.take_along_axis(lay_np, safe[None], 0)[0]
        win_layout = np.where(hw_index == NONE, "", win_layout)
        why = np.asarray(mg["why_none"].values, dtype=object)
        for w in np.unique(why[why != ""]):
            if str(w) not in lab["why"]:
                lab["why"].append(str(w))
        cols["winner"].append(hw_index)
        cols["runner"].append(codes(mg["runner_up"].values, lab["hardware"]))
        cols["layout"].append(codes(win_layout, lab["parallelism"]))
        cols["margin"].append(_f32(mg["margin"].values))
        cols["best"].append(_f32(mg["best"].values))
        cols["why"].append(codes(why, lab["why"]))
        cols["ratio"].append(_f32(v["ratio"].values))
        cols["top"].append(codes(v["best"].values, lab["hardware"]))
        cols["bottom"].append(codes(v["worst"].values, lab["hardware"]))
        cols["n"].append(np.asarray(v["n_feasible"].values).astype(np.uint8))
        t.units[f"best:{b}"] = str(mg["best"].attrs.get("units", ""))
    t.blocks["maps"] = {k: np.stack(v).ravel() for k, v in cols.items()}
    t.shapes["maps"] = ["basis", *order]


def _goodput(ds: xr.Dataset, t: Tables, ctx_pick: list[int]) -> None:
    """Best throughput under each latency target pair, per device, with its batch and layout."""
    lab = t.labels
    sub = ds.sel(context=ctx_pick)
    order = ("engine", "model", "precision", "context", "hardware")
    cols: dict[str, list[np.ndarray]] = {"value": [], "batch": [], "layout": []}
    for b in BASES:
        for ttft in TTFT_TARGETS:
            for tpot in TPOT_TARGETS:
                g = goodput(sub, ttft=ttft, tpot=tpot, per=b).transpose(*order)
                cols["value"].append(_f32(g["goodput"].values))
                cols["batch"].append(_batch_codes(g["batch"].values, lab))
                cols["layout"].append(codes(g["parallelism"].values, lab["parallelism"]))
        t.units[f"goodput:{b}"] = str(g["goodput"].attrs.get("units", ""))
    t.blocks["goodput"] = {k: np.stack(v).ravel() for k, v in cols.items()}
    t.shapes["goodput"] = ["basis", "ttft", "tpot", "engine", "model", "precision",
                           "context_choice", "hardware"]


def _batch_codes(values, lab: dict[str, list[str]]) -> np.ndarray:
    """uint8 codes of batch values (floats, NaN where none) in the batch labels."""
    v = np.asarray(values, dtype=np.float64)
    text = np.where(np.isfinite(v), np.nan_to_num(v).astype(np.int64).astype(str), "")
    return codes(text, lab["batch"])


def _front(ds: xr.Dataset, t: Tables, ctx_pick: list[int]) -> None:
    """The serving front of every device, one run of rows per (basis, engine, model, precision,
    context), with the offsets of the runs."""
    lab = t.labels
    sub = ds.sel(context=ctx_pick)
    key_dims = ("engine", "model", "precision", "context")
    parts: dict[str, list[np.ndarray]] = {k: [] for k in (
        "hardware", "user", "unit", "batch", "layout")}
    counts = []
    for b in BASES:
        f = serving_front(sub, per=b)
        t.units[f"front:{b}"] = str(f.attrs.get("units_per_unit", ""))
        key = np.zeros(len(f), dtype=np.int64)
        for d in key_dims:
            labels = lab["context_choice"] if d == "context" else lab[d]
            key = key * len(labels) + codes(f[d].astype(str).to_numpy(), labels).astype(np.int64)
        order = np.argsort(key, kind="stable")
        n_keys = int(np.prod([len(lab["context_choice"] if d == "context" else lab[d])
                              for d in key_dims]))
        counts.append(np.bincount(key, minlength=n_keys))
        f = f.iloc[order]
        parts["hardware"].append(codes(f["hardware"].astype(str).to_numpy(), lab["hardware"]))
        parts["user"].append(_f32(f["per_user"].to_numpy()))
        parts["unit"].append(_f32(f["per_unit"].to_numpy()))
        parts["batch"].append(codes(f["batch"].astype(str).to_numpy(), lab["batch"]))
        parts["layout"].append(codes(f["parallelism"].astype(str).to_numpy(),
                                     lab["parallelism"]))
    block = {k: np.concatenate(v) for k, v in parts.items()}
    block["offsets"] = np.concatenate([[0], np.cumsum(np.concatenate(counts))]).astype(np.int32)
    t.blocks["front"] = block
    t.shapes["front"] = ["basis", *key_dims[:-1], "context_choice"]


def _roofline(ds: xr.Dataset, t: Tables) -> None:
    """Achieved FLOP/s against arithmetic intensity per device and batch, and each device's
    roof (peak FLOP/s, and the DRAM-bandwidth slope where the device has DRAM) as a polyline."""
    lab = t.labels
    ctx = ds["context"].values
    c = ctx[max(an.nearest_log(ctx, ROOFLINE_CONTEXT), 0)] if ctx.dtype.kind in "iuf" else ctx[0]
    lays = lab["parallelism"]
    lay = ROOFLINE_LAYOUT if ROOFLINE_LAYOUT in lays else lays[0]
    sub = ds.sel(context=[c], parallelism=[lay]).isel(context=0, parallelism=0)
    order = ("engine", "model", "precision", "hardware", "batch")
    peak = sub["peak_flops"].broadcast_like(sub["mfu"])
    ai = masked(sub, "arithmetic_intensity").transpose(*order)
    flops = (masked(sub, "mfu") * peak).transpose(*order)
    t.blocks["roofline"] = {"ai": _f32(ai.values).ravel(), "flops": _f32(flops.values).ravel()}
    t.shapes["roofline"] = list(order)
    t.labels["roofline_at"] = [str(c), lay]
    # roofs: per precision and device, three points (x0, bw x0), (knee, peak), (x1, peak)
    a = np.asarray(ai.values, np.float64)
    fin = a[np.isfinite(a) & (a > 0)]
    x0 = float(fin.min()) / 4 if fin.size else 0.1
    pk = np.asarray(ds["peak_flops"].transpose("precision", "hardware").values, np.float64)
    bw = (np.asarray(ds["dram_bandwidth"].values, np.float64) if "dram_bandwidth" in ds.coords
          else np.full(ds.sizes["hardware"], np.nan))
    with np.errstate(invalid="ignore", divide="ignore"):
        knee = np.where(np.isfinite(bw) & (bw > 0), pk / bw, np.nan)
    x1 = float(np.nanmax([fin.max() * 4 if fin.size else 1e3, *(2 * knee[np.isfinite(knee)])]))
    x1 = min(x1, 1e4)
    xs = np.stack([np.full_like(pk, x0), np.where(np.isfinite(knee), knee, x0),
                   np.full_like(pk, x1)], -1)
    ys = np.stack([np.where(np.isfinite(knee), np.minimum(pk, x0 * bw), pk), pk, pk], -1)
    t.blocks["roofs"] = {"x": _f32(xs).ravel(), "y": _f32(ys).ravel()}
    t.shapes["roofs"] = ["precision", "hardware", "point"]
