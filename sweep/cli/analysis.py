"""Analysis commands of the ``sweep`` CLI (registered by ``sweep.cli``).

``variation``, ``frontier``, ``pareto``, ``regimes``, ``strategies`` and ``plot`` on a result
file. Bad input (missing file, unknown metric, dim or label) raises
:class:`grids.errors.SpecError`, which the CLI prints as one line and exits with code 2.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import pandas as pd

from grids.errors import SpecError
from sweep.cli.common import jsonable, parse_sel, print_json, records, text_table
from sweep.cli.summary import band_text

EXIT_OK = 0
TEXT_ROWS = 40


# ------------------------------------------------------------------------------ helpers
def _open(path: str):
    import sweep.analysis.accessor  # noqa: F401 - registers the ds.sweep accessor
    from sweep.results.files import open_result

    return open_result(path)


def _with_result(func):
    """Run ``func(args, ds)`` on the opened result and close the file afterwards (HDF5 is not
    thread-safe: closing files deterministically keeps handles from being finalised by the
    garbage collector at a random moment)."""

    def command(args: argparse.Namespace) -> int:
        ds = _open(args.result)
        try:
            return func(args, ds)
        finally:
            ds.close()

    command.__name__ = func.__name__
    command.__doc__ = func.__doc__
    return command


def _select(ds, sel: dict[str, str | list[str]]):
    from sweep.analysis.select import apply_sel

    return apply_sel(ds, sel)


def _best_over(ds, value: list[str] | None, over: str | tuple[str, ...]) -> tuple[str, ...]:
    """``--best-over``: default the layouts (unless they are what is compared); 'none' = no
    reduction."""
    over = (over,) if isinstance(over, str) else tuple(over)
    if value is None:
        return tuple(d for d in ("parallelism",) if d in ds.dims and d not in over)
    if [v.lower() for v in value] in (["none"], []):
        return ()
    return tuple(value)


def _basis(args: argparse.Namespace):
    """``--basis``: a comparison basis (sweep.analysis.basis); 'none' = the raw grid values."""
    from sweep.analysis.basis import DEFAULT_BASIS, parse_basis

    text = getattr(args, "basis", None) or DEFAULT_BASIS
    return None if text.lower() == "none" else parse_basis(text)


def _basis_label(basis) -> str:
    return basis.label if basis is not None else "grid values (no basis)"


def _where(d: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items()) or "(single point)"


# ------------------------------------------------------------------------------ commands
@_with_result
def _cmd_variation(args: argparse.Namespace, ds) -> int:
    ds = _select(ds, parse_sel(args.sel))
    red = _best_over(ds, args.best_over, args.over)
    basis = _basis(args)
    mv = ds.sweep.max_variation(args.metric, over=args.over, best_over=red, basis=basis)
    if args.json:
        print_json({"best_over": list(red), "basis": _basis_label(basis),
                    "max_variation": mv})
        return EXIT_OK
    how = f" (each {args.over} at its best {'/'.join(red)})" if red else ""
    if mv is None:
        print(f"{args.metric}: no point has two feasible {args.over} values{how}")
        return EXIT_OK
    u = f" {mv['units']}" if mv["units"] and mv["units"] != "1" else ""

    def lay(key: str) -> str:
        return f" {mv[key]}" if mv.get(key) else ""

    print(f"{args.metric}, {mv['basis']}{how}:\n"
          f"  varies up to {mv['ratio']:.4g}x across {args.over} (median {mv['median_ratio']:.3g}x "
          f"over {mv['points']:,} points){band_text(mv)}\n"
          f"  at     {_where(mv['where'])}\n"
          f"  best   {mv['best']}{lay('best_layout')} ({mv['best_value']:.4g}{u})\n"
          f"  worst  {mv['worst']}{lay('worst_layout')} ({mv['worst_value']:.4g}{u})")
    return EXIT_OK


@_with_result
def _cmd_frontier(args: argparse.Namespace, ds) -> int:
    ds = _select(ds, parse_sel(args.sel))
    red = _best_over(ds, args.best_over, args.over)
    basis = _basis(args)
    table = ds.sweep.frontier(args.metric, over=args.over, along=args.along, best_over=red,
                              basis=basis)
    if args.json:
        rows = records(table if not args.limit else table.head(args.limit))
        print_json({"metric": args.metric, "over": args.over, "along": list(args.along),
                     "best_over": list(red), "basis": _basis_label(basis), "crossovers": rows})
        return EXIT_OK
    how = f", each at its best {'/'.join(red)}" if red else ""
    units = ds[args.metric].attrs.get("units", "")
    if basis is not None and args.metric in ("throughput", "total_throughput"):
        units = basis.units(units)
    print(f"winner of {args.metric} ({_basis_label(basis)}) across {args.over}{how}: "
          f"{len(table)} crossover(s) along {', '.join(args.along)}")
    lines = crossover_lines(table, args.over, units)
    limit = TEXT_ROWS if args.limit is None else args.limit
    print("\n".join(lines if limit <= 0 else lines[:limit]) or "(none)")
    if 0 < limit < len(lines):
        print(f"... {len(lines) - limit} more (use --limit 0 for all, --json for a table)")
    return EXIT_OK


def crossover_lines(table: pd.DataFrame, over: str, units: str) -> list[str]:
    """One sentence per crossover of a frontier table: where it happens (the fixed dims), and
    which label wins up to which value of the changing dim and from which value on."""
    fixed = [c for c in table.columns if c not in (
        "dim", "value_before", "value_after", "winner_before", "winner_after", "best_before",
        "best_after")]
    u = f" {units}" if units and units != "1" else ""
    out = []
    r: Any  # a row of the table (pandas-stubs types its fields as any scalar)
    for r in table.itertuples(index=False):
        rec = r._asdict()
        where = ", ".join(f"{c} {rec[c]}" for c in fixed if c != rec["dim"]
                          and not pd.isna(rec[c]))
        out.append(f"{where or 'everywhere'}: {rec['winner_before']} wins up to {rec['dim']} "
                   f"{rec['value_before']} ({rec['best_before']:.4g}{u}), "
                   f"{rec['winner_after']} from {rec['dim']} {rec['value_after']} "
                   f"({rec['best_after']:.4g}{u})")
    return out


@_with_result
def _cmd_pareto(args: argparse.Namespace, ds) -> int:
    from sweep.analysis.select import parse_objectives

    ds = _select(ds, parse_sel(args.sel))
    objs = parse_objectives(ds, args.objectives)
    from sweep.analysis.basis import normalised

    basis = _basis(args)
    mask = ds.sweep.pareto(dict(objs), over=args.over, basis=basis).compute()
    dims = list(mask.dims)
    pos = np.nonzero(np.asarray(mask.values))
    data: dict[str, Any] = {d: np.asarray(ds[d].values)[pos[i]] for i, d in enumerate(dims)}
    for name, _ in objs:
        da = ds[name] if basis is None else normalised(ds, name, basis)
        vals = np.asarray(da.broadcast_like(mask).transpose(*dims).values)
        data[name] = vals[pos]
    table = pd.DataFrame(data)
    table = table.sort_values([d for d in dims if d not in args.over] + [objs[0][0]],
                              kind="stable").reset_index(drop=True)
    over = [d for d in args.over if d in ds.dims]
    groups = int(np.prod([ds.sizes[d] for d in dims if d not in over])) if dims else 1
    if args.json:
        rows = records(table if not args.limit else table.head(args.limit))
        print_json({"objectives": dict(objs), "over": over, "groups": groups,
                     "basis": _basis_label(basis), "non_dominated": len(table),
                     "points": rows})
        return EXIT_OK
    print(f"Pareto front ({_basis_label(basis)}) of "
          f"{', '.join(f'{n} ({d})' for n, d in objs)} across "
          f"{' x '.join(over) or '(nothing)'}: {len(table)} non-dominated point(s) in "
          f"{groups} group(s)")
    print(text_table(table, TEXT_ROWS if args.limit is None else args.limit))
    return EXIT_OK


@_with_result
def _cmd_regimes(args: argparse.Namespace, ds) -> int:
    ds = _select(ds, parse_sel(args.sel))
    basis = _basis(args)
    r = ds.sweep.regimes(basis=basis)
    if args.json:
        out = []
        for i, key in enumerate(r["regime"].values):
            row = r.isel(regime=i)
            out.append({
                "regime": str(key), "title": str(row["title"].values),
                "metric": str(row["metric"].values), "units": str(row["units"].values),
                "definition": str(row["definition"].values),
                "n_points": int(row["n_points"].values), "winner": str(row["winner"].values),
                "reason": str(row["reason"].values),
                "score": {str(h): jsonable(float(v)) for h, v in
                          zip(r["hardware"].values, row["score"].values)},
                "coverage": {str(h): jsonable(float(v)) for h, v in
                             zip(r["hardware"].values, row["coverage"].values)}})
        print_json(out)
        return EXIT_OK
    # a device that serves none of a regime's points has no score there: n/a, not 0.00
    table = r["score"].where(r["coverage"] > 0).to_pandas().T
    table.columns = [str(c) for c in table.columns]
    print(f"Operational regimes of seed 002 (section IV-A), score per device, best = 1.00 "
          f"(throughputs {_basis_label(basis)})")
    print(table.to_string(float_format=lambda v: f"{v:.2f}", na_rep="n/a"))
    print("\ndefinitions:")
    for i, key in enumerate(r["regime"].values):
        row = r.isel(regime=i)
        status = (f"winner {row['winner'].values}, {int(row['n_points'])} workload point(s)"
                  if not str(row["reason"].values) else f"n/a: {row['reason'].values}")
        print(f"  {key}: {row['metric'].values} [{row['units'].values}]; "
              f"{row['definition'].values} -> {status}")
    return EXIT_OK


@_with_result
def _cmd_strategies(args: argparse.Namespace, ds) -> int:
    ds = _select(ds, parse_sel(args.sel))
    s = ds.sweep.strategies()
    scalars = {k: jsonable(float(s[k])) for k in s.data_vars if s[k].ndim == 0}
    per = s.drop_vars([k for k in s.data_vars if s[k].ndim == 0]).to_dataframe()
    if args.json:
        per = per.reset_index()
        print_json({"layouts": records(per), "ep_vs_tp": scalars,
                     "notes": s.attrs.get("notes", "")})
        return EXIT_OK
    cols = ["strategy", "devices_per_replica", "n_models", "param_compute_ratio",
            "params_per_device", "throughput_per_device", "latency_cov"]
    print("Scaling strategies (seed 002 section V), per layout over its feasible points")
    print(per[cols].to_string(float_format=lambda v: f"{v:.4g}"))

    def f(k):
        v = scalars.get(k)
        return "n/a" if v is None else f"{v:.3g}x"

    print(f"\nexpert vs tensor parallelism: parameter-to-compute {f('ep_vs_tp_param_compute')} "
          f"(EP {scalars.get('ep_param_compute') or float('nan'):.3g}, "
          f"TP {scalars.get('tp_param_compute') or float('nan'):.3g}); "
          f"latency CoV {f('ep_vs_tp_latency_cov')}; latency std {f('ep_vs_tp_latency_std')}; "
          f"TPOT {f('ep_vs_tp_tpot')}; throughput/device "
          f"{f('ep_vs_tp_throughput_per_device')} "
          f"({int(scalars.get('matched_points') or 0)} matched point pairs)")
    if s.attrs.get("notes"):
        print(f"notes: {s.attrs['notes']}")
    return EXIT_OK


def _cmd_plot(args: argparse.Namespace) -> int:
    from sweep.results.images import check_image_output

    check_image_output(args.output, args.overwrite)  # before opening or drawing anything
    return _plot(args)


@_with_result
def _plot(args: argparse.Namespace, ds) -> int:
    from sweep.analysis import plots

    sel = parse_sel(args.sel)
    kind = args.kind
    kw: dict[str, Any] = {"sel": sel}
    if kind in ("winner-map", "variation"):
        kw.update(model=args.model, precision=args.precision, metric=args.metric or
                  "throughput", over=args.over, basis=_basis(args))
        kw["best_over"] = _best_over(ds, args.best_over, args.over)
    elif kind == "pareto":
        kw.update(model=args.model, precision=args.precision, hardware=args.hardware,
                  objectives=args.objectives or ["tpot", "throughput"], basis=_basis(args),
                  best_over=_best_over(ds, args.best_over, "hardware"))
    elif kind == "serving-front":
        kw.update(model=args.model, precision=args.precision, hardware=args.hardware,
                  context=args.context, per=args.per)
    elif kind == "regimes":
        kw.update(basis=_basis(args))
    elif kind == "roofline":
        kw.update(model=args.model, precision=args.precision, hardware=args.hardware,
                  context=args.context, parallelism=args.layout)
    for opt, kinds in (("hardware", ("pareto", "roofline", "serving-front")),
                       ("objectives", ("pareto",)),
                       ("context", ("roofline", "serving-front")), ("layout", ("roofline",)),
                       ("per", ("serving-front",)),
                       ("metric", ("winner-map", "variation"))):
        if getattr(args, opt) is not None and kind not in kinds:
            raise SpecError(f"--{opt} does not apply to --kind {kind} (it applies to "
                            f"{', '.join(kinds)})")
    fig = plots.plot(ds, kind, **kw)
    path = plots.save(fig, args.output, overwrite=args.overwrite)
    print(f"wrote {path}")
    return EXIT_OK


@_with_result
def _cmd_goodput(args: argparse.Namespace, ds) -> int:
    ds = _select(ds, parse_sel(args.sel))
    g = ds.sweep.goodput(ttft=args.ttft, tpot=args.tpot, per=args.per, metric=args.metric)
    keep = list(g.dims)
    cols = ["goodput", *(c for c in ("batch", "parallelism", "ttft_at", "tpot_at")
                         if c in g.data_vars)]
    table = g[cols].to_dataframe().reset_index()
    table = table[[*keep, *cols]]
    met = table["goodput"].notna()
    table = table.sort_values(["goodput"], ascending=False, kind="stable", na_position="last")
    targets = ", ".join(f"{k} <= {v:g} s" for k, v in (("TTFT", args.ttft), ("TPOT", args.tpot))
                        if v is not None)
    if args.json:
        rows = records(table if not args.limit else table.head(args.limit))
        print_json({"metric": args.metric, "basis": g.attrs["basis"],
                    "units": g["goodput"].attrs.get("units", ""), "targets": targets,
                    "points": len(table), "met": int(met.sum()), "rows": rows})
        return EXIT_OK
    print(f"goodput: best {args.metric} over batch and layout with {targets}, "
          f"{g.attrs['basis']} [{g['goodput'].attrs.get('units', '')}]: targets met at "
          f"{int(met.sum())} of {len(table)} point(s)")
    print(text_table(table.reset_index(drop=True), TEXT_ROWS if args.limit is None
                     else args.limit))
    return EXIT_OK


# ------------------------------------------------------------------------------ parser
def _common(p: argparse.ArgumentParser, json_flag: bool = True) -> None:
    p.add_argument("result", help="result file (netCDF or Zarr) written by 'sweep run'")
    p.add_argument("--sel", action="append", metavar="DIM=VALUE[,VALUE...]",
                   help="analyse only these values of a dim (repeatable; one value selects "
                        "the dim away, several keep it), e.g. --sel model=llama-3.1-8b "
                        "--sel hardware=h100-sxm,mi300x,tpu-v6e")
    if json_flag:
        p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def register(subparsers) -> None:
    """Add this module's sub-commands to the ``sweep`` parser."""
    v = subparsers.add_parser("variation", help="largest max/min ratio of a metric across a dim")
    _common(v)
    v.add_argument("--metric", default="throughput", help="metric (default throughput)")
    v.add_argument("--over", default="hardware", help="dim compared (default hardware)")
    v.add_argument("--best-over", nargs="+", metavar="DIM",
                   help="dims reduced to their best value first (default parallelism; 'none')")
    _basis_option(v)
    v.set_defaults(func=_cmd_variation)

    f = subparsers.add_parser("frontier", help="where the winner of a metric changes along "
                              "batch and context (crossovers)")
    _common(f)
    f.add_argument("--metric", default="throughput", help="metric (default throughput)")
    f.add_argument("--over", default="hardware", help="dim whose winner is found "
                   "(default hardware)")
    f.add_argument("--along", nargs="+", default=["batch", "context"], metavar="DIM",
                   help="dims along which changes are found (default batch context)")
    f.add_argument("--best-over", nargs="+", metavar="DIM",
                   help="dims reduced to their best value first (default parallelism: each "
                        "device with its best layout; 'none' for no reduction)")
    f.add_argument("--limit", type=int, default=None,
                   help=f"rows to print (default {TEXT_ROWS} for text, all for JSON; 0 = all)")
    _basis_option(f)
    f.set_defaults(func=_cmd_frontier)

    p = subparsers.add_parser("pareto", help="non-dominated points for two or more objectives")
    _common(p)
    p.add_argument("--objectives", nargs="+", required=True, metavar="METRIC[:min|max]",
                   help="two or more metrics; directions default to the registry's, e.g. "
                        "tpot throughput tokens_per_joule or tpot:min throughput:max")
    p.add_argument("--over", nargs="+", default=["hardware", "parallelism"], metavar="DIM",
                   help="dims across which candidates compete (default hardware parallelism)")
    p.add_argument("--limit", type=int, default=None,
                   help=f"rows to print (default {TEXT_ROWS} for text, all for JSON; 0 = all)")
    _basis_option(p)
    p.set_defaults(func=_cmd_pareto)

    r = subparsers.add_parser("regimes", help="seed 002's six operational regimes scored per "
                              "device (best = 1)")
    _common(r)
    _basis_option(r)
    r.set_defaults(func=_cmd_regimes)

    s = subparsers.add_parser("strategies", help="scaling strategies per layout; expert vs "
                              "tensor parallelism ratios")
    _common(s)
    s.set_defaults(func=_cmd_strategies)

    g = subparsers.add_parser("plot", help="draw a figure of a result to a PNG (or PDF/SVG)")
    _common(g, json_flag=False)
    g.add_argument("--kind", default="winner-map",
                   choices=("winner-map", "variation", "pareto", "roofline", "regimes",
                            "serving-front"),
                   help="figure kind (default winner-map)")
    g.add_argument("-o", "--output", required=True, metavar="FILE.png", help="image file")
    g.add_argument("--overwrite", action="store_true",
                   help="replace the image even if it is not one written by sweep (by default "
                        "only such an image is replaced)")
    g.add_argument("--model", default=None, help="model (default: the first)")
    g.add_argument("--precision", default=None, help="precision (default: the first)")
    g.add_argument("--metric", default=None, help="metric for winner-map/variation "
                   "(default throughput)")
    g.add_argument("--over", default="hardware", help="dim compared in winner-map/variation")
    g.add_argument("--best-over", nargs="+", metavar="DIM",
                   help="winner-map/variation/pareto: dims reduced to their best value "
                        "(default parallelism: each device at its best layout; 'none')")
    g.add_argument("--objectives", nargs="+", default=None, metavar="METRIC[:min|max]",
                   help="pareto: objectives, the first two are plotted (default tpot "
                        "throughput)")
    g.add_argument("--hardware", default=None, help="pareto/roofline: comma-separated "
                   "device ids to show (default all)")
    g.add_argument("--context", default=None, type=int,
                   help="roofline: prompt length (default nearest 2048)")
    g.add_argument("--layout", default=None, help="roofline: layout (default tp1)")
    g.add_argument("--per", default=None,
                   help="serving-front: throughput per device (default), kW, $ or a basis")
    _basis_option(g)
    g.set_defaults(func=_cmd_plot)

    gp = subparsers.add_parser(
        "goodput", help="best throughput per device (kW, $) over batch and layout that meets "
                        "TTFT and TPOT targets")
    _common(gp)
    gp.add_argument("--ttft", type=float, default=None, metavar="S",
                    help="time-to-first-token target [s]")
    gp.add_argument("--tpot", type=float, default=None, metavar="S",
                    help="time-per-output-token target [s]")
    gp.add_argument("--per", default="device",
                    help="device (default), kW, $, replica, or a basis such as system:8")
    gp.add_argument("--metric", default="throughput",
                    help="throughput (default) or total_throughput (input + output tokens)")
    gp.add_argument("--limit", type=int, default=None,
                    help=f"rows to print (default {TEXT_ROWS} for text, all for JSON; 0 = all)")
    gp.set_defaults(func=_cmd_goodput)


def _basis_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--basis", default=None, metavar="BASIS",
                   help="comparison basis (docs/analysis.md): power (default: per kW at the "
                        "system boundary), power:accelerator, power:10kW, device, system:N, "
                        "cost, cost:100 (USD/h), replica, or none (raw grid values)")
