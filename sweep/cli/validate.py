"""Validation commands of the ``sweep`` CLI (registered by ``sweep.cli``):

* ``sweep validate``: the model against published measurements (``docs/validation.md``): errors
  per publisher, source, engine, device, metric and batch bucket, and the targets;
* ``sweep calibrate``: fit the engine catalog's parameters to them (``-o FILE``, never inside the
  installed package), with the leave-one-publisher-out check;
* ``sweep bands``: measure the uncertainty band of each (engine, vendor) from held-out residuals
  and write the bands file the results carry (``-o FILE``; docs/validation.md, "Uncertainty
  bands").

Bad input (unreadable or malformed CSV, unknown ids, bad options) raises
:class:`grids.errors.SpecError`, so the CLI exits 2 with one message.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from grids.errors import SpecError

REPO = Path(__file__).resolve().parents[2]
#: the row of the leave-one-publisher-out table that pools every held-out row
POOLED = "all publishers (pooled)"
#: ... and the row that pools the held-out rows at maximum load or online (issue 19's targets)
SERVED_POOLED = "maximum-load and online rows (pooled)"


def _rel(path: str | Path) -> str:
    p = Path(path).resolve()
    try:
        return str(p.relative_to(REPO))
    except ValueError:
        return str(p)


def _add_data_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", default=None, metavar="FILE",
                   help="measurements CSV with the columns of sweep/data/measurements/"
                        "measurements.csv (default: the shipped measurements)")


def _overlay(args: argparse.Namespace) -> tuple[dict[str, Any] | None, str]:
    """The engine calibration to validate with, and its description."""
    from sweep.validate.calibration import default_output, read_overlay_file

    if args.uncalibrated and args.calibration:
        raise SpecError("give either --uncalibrated or --calibration FILE, not both")
    if args.calibration:
        return read_overlay_file(args.calibration), f"calibration overlay {args.calibration}"
    if args.uncalibrated:
        return {}, "uncalibrated engine catalog (the engine files' estimates)"
    return None, f"shipped engine calibration ({_rel(default_output())})"


def _cmd_validate(args: argparse.Namespace) -> int:
    from sweep import validate as V

    if args.plot:
        from sweep.results.images import check_image_output

        if not str(args.plot).lower().endswith(".png"):
            raise SpecError(f"--plot {args.plot!r}: give a .png file name")
        check_image_output(args.plot, args.overwrite)  # before any work
    df = V.read_measurements(args.data)
    overlay, which = _overlay(args)
    res = V.compare(df, overlay=overlay)
    data = args.data or str(V.MEASUREMENTS_CSV)
    title = f"sweep validate: {_rel(data)} with the {which}"
    if args.plot:
        base = V.compare(df, overlay={}) if overlay != {} else None
        V.parity_plot(res, args.plot, title="calibrated" if overlay != {} else "uncalibrated",
                      compare_with=base, overwrite=args.overwrite)
    if args.json:
        out = V.report_json(res, include_rows=args.rows, data=_rel(data),
                            data_sha256=V.file_sha256(data), model=which, targets=V.TARGETS)
        print(json.dumps(out, indent=1))
    else:
        scope = "uncalibrated" if overlay == {} else "in sample"
        print(V.report_text(res, title, scope))
        if args.rows:
            print()
            print(V.rows_text(res))
        if args.plot:
            print(f"\nparity plot written to {args.plot}")
    return 0


# ------------------------------------------------------------------------------------ calibrate


def summary_line(res) -> dict[str, float]:
    """Overall and per-target errors of a compare() frame, as plain numbers."""
    from sweep import validate as V

    agg = V.summarize(res)
    out = {"median_abs_rel_error": float(agg["overall"].median_abs_rel_error[0]),
           "mean_abs_log_error": float(agg["overall"].mean_abs_log_error[0]),
           "rows": int(agg["overall"].used[0])}
    tg = agg["target"].set_index("group")
    used, error = tg["used"], tg["median_abs_rel_error"]  # by group
    for name in V.TARGETS:
        if name in tg.index and used.loc[name] > 0:
            out[f"{name}_median_abs_rel_error"] = float(error.loc[name])
            out[f"{name}_rows"] = int(used.loc[name])
    return out


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from sweep import validate as V
    from sweep.validate import calibration as C

    if args.min_rows < 1:
        raise SpecError(f"--min-rows must be >= 1, got {args.min_rows}")
    if not args.f_scale > 0:
        raise SpecError(f"--f-scale must be > 0, got {args.f_scale}")
    if args.prior_weight < 0:
        raise SpecError(f"--prior-weight must be >= 0, got {args.prior_weight}")
    if not args.weak_stderr > 0:
        raise SpecError(f"--weak-stderr must be > 0 (a multiple of the value; inf keeps every "
                        f"fitted value), got {args.weak_stderr}")
    if args.max_nfev < 1:
        raise SpecError(f"--max-nfev must be >= 1 (function evaluations per fitted unit), got "
                        f"{args.max_nfev}")
    output = C.check_overlay_output(args.output, args.overwrite)  # before any fitting
    df = V.read_measurements(args.data)
    quiet = args.json
    say = (lambda m: None) if quiet else (lambda m: print(f"  {m}", flush=True))
    opts = {"min_rows": args.min_rows, "loss": args.loss, "f_scale": args.f_scale,
            "prior_weight": args.prior_weight, "max_nfev": args.max_nfev,
            "floor_dtypes": args.floor_dtypes, "by_build": args.by_build,
            "weak_stderr": args.weak_stderr}
    if not quiet:
        print("sweep calibrate: fitting the engine catalog (starting from the engine files)")
    cal = C.calibrate(df, progress=say, **opts)
    before = V.compare(df, overlay={})
    after = V.compare(df, overlay=cal.overlay)
    lopo: dict[str, Any] = {}
    if not args.no_lopo:
        if not quiet:
            print("leave-one-publisher-out:")
        held = []
        for pub, rec in C.leave_one_publisher_out(df, progress=say, **opts).items():
            line = summary_line(rec["results"]) if not rec["note"] else {}
            lopo[pub] = {"rows": rec["rows"], **line, **({"note": rec["note"]} if rec["note"]
                                                          else {})}
            held.append(rec["results"])
        if held:  # every held-out row, each predicted without its own publisher's data
            import pandas as pd

            pooled = pd.concat(held, ignore_index=True)
            lopo[POOLED] = {"rows": int(pooled["status"].ne("unusable").sum()),
                            **summary_line(pooled)}
            served = pooled[V.served_load(pooled)]
            if served["status"].eq("used").any():
                lopo[SERVED_POOLED] = {"rows": int(served["status"].ne("unusable").sum()),
                                       **summary_line(served)}
    data = args.data or str(V.MEASUREMENTS_CSV)
    command = "sweep calibrate" + "".join(
        f" {k} {v}" for k, v in (("--data", _rel(args.data) if args.data else None),
                                 ("--min-rows", args.min_rows
                                  if args.min_rows != C.DEFAULT_MIN_ROWS else None),
                                 ("--loss", args.loss if args.loss != C.DEFAULT_LOSS else None),
                                 ("--f-scale", args.f_scale
                                  if args.f_scale != C.DEFAULT_F_SCALE else None),
                                 ("--prior-weight", args.prior_weight
                                  if args.prior_weight != C.PRIOR_WEIGHT else None),
                                 ("--weak-stderr", args.weak_stderr
                                  if args.weak_stderr != C.WEAK_RELATIVE_STDERR else None),
                                 ("-o", _rel(output)))
        if v is not None) + (" --no-lopo" if args.no_lopo else "") + (
        " --floor-dtypes" if args.floor_dtypes else "") + (" --by-build" if args.by_build else "")
    summary = {"before": summary_line(before), "after": summary_line(after),
               "leave_one_publisher_out": lopo or None}
    C.write_overlay(C.overlay_toml(cal, data_path=data, command=command, summary=summary),
                    output, overwrite=args.overwrite)
    if args.json:
        print(json.dumps({
            "output": str(output), "command": command,
            "fits": {f.unit.name: {"rows": f.rows, "values": f.values, "stderr": f.stderr,
                                   "at_bound": f.at_bound, "reverted": f.reverted,
                                   "uninformed": f.uninformed,
                                   "weakly_informed": {p: {"value": v, "stderr": se}
                                                       for p, (v, se) in f.weak.items()},
                                   "floored": {C.floor_label(*k): v
                                               for k, v in f.floored.items()},
                                   "single_vendor": {p: {"vendor": v, "value": x}
                                                     for p, (v, x) in f.single_vendor.items()},
                                   "before": f.before,
                                   "after": f.after} for f in cal.fits},
            "before": {k: V.records(v) for k, v in V.summarize(before).items()},
            "after": {k: V.records(v) for k, v in V.summarize(after).items()},
            "leave_one_publisher_out": lopo,
            "dtype_violations": {u: {C.floor_label(*k): v for k, v in d.items()}
                                 for u, d in cal.dtype_violations.items()},
        }, indent=1, default=str))
        return 0
    print()
    print(fit_table(cal))
    print()
    if cal.dtype_violations:
        print("A narrower dtype computed slower than a wider one on some device (a finding: the "
              "rows want it, the model has no mechanism for it; --floor-dtypes raises them):")
        for u, d in cal.dtype_violations.items():
            print(f"  {u}: " + ", ".join(f"{C.floor_label(*k)} {was:.3g} (floor {fl:.3g})"
                                         for k, (was, fl) in d.items()))
        print()
    b, a = V.summarize(before), V.summarize(after)
    for name in ("overall", "target", "engine", "publisher", "hardware"):
        print(before_after_markdown(b[name], a[name], name))
        print()
    if lopo:
        print(lopo_markdown(lopo))
        print()
    print(f"overlay written to {output}")
    return 0


def _cmd_bands(args: argparse.Namespace) -> int:
    from sweep import validate as V
    from sweep.validate import bands as B

    output = B.check_bands_output(args.output, args.overwrite)  # before any fitting
    df = V.read_measurements(args.data)
    say = (lambda m: None) if args.json else (lambda m: print(f"  {m}", flush=True))
    if not args.json:
        print("sweep bands: leave-one-publisher-out and leave-one-vendor-out residuals")
    tables = B.compute_bands(df, quantile=args.quantile, min_rows=args.min_rows, progress=say,
                             floor_dtypes=args.floor_dtypes)
    command = "sweep bands" + "".join(
        f" {k} {v}" for k, v in (("--data", _rel(args.data) if args.data else None),
                                 ("--quantile", args.quantile
                                  if args.quantile != B.DEFAULT_QUANTILE else None),
                                 ("--min-rows", args.min_rows
                                  if args.min_rows != B.DEFAULT_MIN_ROWS else None),
                                 ("-o", _rel(output))) if v is not None) + (
        " --floor-dtypes" if args.floor_dtypes else "")
    data = args.data or str(V.MEASUREMENTS_CSV)
    B.write_bands(B.bands_toml(tables, data_path=data, command=command), output,
                  overwrite=args.overwrite)
    if args.json:
        print(json.dumps({"output": str(output), "command": command, **tables}, indent=1))
        return 0
    print()
    print(bands_markdown(tables))
    print()
    print(f"bands written to {output}")
    return 0


def bands_markdown(tables: dict[str, Any]) -> str:
    """The bands as a markdown table: one row per (engine, vendor) group with its factor, rows,
    bias and publishers, then the band of a vendor without data and the same-group ratio band."""
    s = tables["settings"]
    q = f"{s['quantile']:.0%}"
    lines = [f"| engine | vendor | band ({q} of held-out rows within x/÷) | rows | publishers | "
             "median ln(pred/meas) |", "|---|---|---:|---:|---:|---:|"]
    for engine, vendors in tables["groups"].items():
        for vendor, g in vendors.items():
            thin = " (thin)" if g["rows"] < s["min_rows"] else ""
            lines.append(f"| {engine} | {vendor} | {g['factor']:.2f}{thin} | {g['rows']} | "
                         f"{g['publishers']} | {g['bias']:+.2f} |")
    lines.append(f"| all | pooled | {s['pooled']:.2f} | {s['pooled_rows']} | | |")
    per = ", ".join(f"{v} {g['factor']:.2f} ({g['rows']} rows)"
                    for v, g in s["no_data_vendors"].items())
    lines += ["", f"A vendor without data: {s['no_data']:.2f} (leave-one-vendor-out, vendors "
              f"weighted equally: {per})."]
    if "same_group_ratio" in s:
        lines.append(f"The ratio of two devices of one group: {s['same_group_ratio']:.2f} "
                     f"({s['same_group_pairs']} pairs of held-out rows).")
    return "\n".join(lines)


def fit_table(cal) -> str:
    """One row per fitted unit: rows, each parameter's value +/- its standard error, the ones
    whose fit reached a bound (findings, kept at their prior) or that one vendor's rows alone
    inform (moved to that vendor), the median abs rel error before and after."""
    from sweep.validate import calibration as C
    from sweep.validate.report import fmt_error

    lines = ["| unit | rows | fitted values (+/- std. error) | at bound or floor; one vendor's | "
             "before | after |",
             "|---|---:|---|---|---:|---:|"]
    for f in cal.fits:
        vals = ", ".join(f"{p} {_fmt_param(p, v)}"
                         + (f" ± {_fmt_param(p, f.stderr[p])}" if f.stderr[p] == f.stderr[p]
                            else "") for p, v in f.values.items())
        bound = ", ".join([*(f"{p} (reached {_fmt_param(p, v)}; kept at the prior)"
                             for p, v in f.reverted.items()),
                           *(f"{C.floor_label(*k)} (fit or prior {_fmt_param(k[2], was)}; "
                             f"raised to its floor {_fmt_param(k[2], fl)})"
                             for k, (was, fl) in f.floored.items()),
                           *(f"{p} -> {v} ({_fmt_param(p, x)}; informed by its rows alone)"
                             for p, (v, x) in f.single_vendor.items()),
                           *(f"{p} (no row responds to it; kept at the prior)"
                             for p in f.uninformed),
                           *(f"{p} ({_fmt_param(p, v)} ± {_fmt_param(p, se)}: weakly informed; "
                             f"kept at the prior)" for p, (v, se) in f.weak.items())])
        lines.append(f"| {f.unit.name} | {f.rows} | {vals or '-'} | {bound or '-'} | "
                     f"{fmt_error(f.before)} | {fmt_error(f.after)} |")
    return "\n".join(lines)


def _fmt_param(name: str, v: float) -> str:
    if name.split(".")[0] in ("iteration_overhead", "request_overhead"):
        return f"{v * 1e3:.3g} ms"
    return f"{v:.3g}"


def before_after_markdown(before, after, title: str) -> str:
    from sweep.validate.report import fmt_error

    a = after.set_index("group")
    lines = [f"| {title} | rows | median abs rel err before | after | bias ln before | after |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in before.itertuples(index=False):
        if r.used == 0:
            continue
        x = a.loc[r.group] if r.group in a.index else None
        lines.append(f"| {r.group} | {r.used} | {fmt_error(r.median_abs_rel_error)} | "
                     f"{fmt_error(x['median_abs_rel_error']) if x is not None else '-'} | "
                     f"{fmt_error(r.bias_log, False)} | "
                     f"{fmt_error(x['bias_log'], False) if x is not None else '-'} |")
    return "\n".join(lines)


def lopo_markdown(lopo: dict[str, dict[str, Any]]) -> str:
    from sweep.validate.report import TARGETS, fmt_error

    head = " | ".join(TARGETS)
    lines = [f"| held-out publisher | rows | median abs rel err | {head} |",
             "|---|---:|---:|" + "---:|" * len(TARGETS)]
    for pub, r in lopo.items():
        if r.get("note"):
            lines.append(f"| {pub} | {r['rows']} | {r['note']} |" + " - |" * len(TARGETS))
            continue
        cells = " | ".join(fmt_error(r.get(f"{t}_median_abs_rel_error", float("nan")))
                           for t in TARGETS)
        lines.append(f"| {pub} | {r['rows']} | {fmt_error(r['median_abs_rel_error'])} | "
                     f"{cells} |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ parser


def _add_output_option(p: argparse.ArgumentParser, what: str, shipped: str) -> None:
    p.add_argument("-o", "--output", required=True, metavar="FILE.toml",
                   help=f"{what} TOML to write (never inside the installed package; in a source "
                        f"checkout, {shipped} updates the shipped one)")


def _add_overwrite_json(p: argparse.ArgumentParser, own: str, json_help: str) -> None:
    p.add_argument("--overwrite", action="store_true",
                   help=f"replace -o even if it is not {own} (by default only such a file is "
                        f"replaced)")
    p.add_argument("--json", action="store_true", help=json_help)


def register(subparsers) -> None:
    """Add this module's sub-commands to the ``sweep`` parser."""
    v = subparsers.add_parser(
        "validate", help="compare the model with published measurements (predicted vs measured, "
                         "errors per publisher, engine, device and metric)")
    _add_data_options(v)
    v.add_argument("--uncalibrated", action="store_true",
                   help="evaluate with the engine files' estimates (no calibration overlay)")
    v.add_argument("--calibration", default=None, metavar="FILE",
                   help="evaluate with this engine calibration overlay instead of the shipped one")
    v.add_argument("--rows", action="store_true", help="print predicted vs measured per row")
    v.add_argument("--json", action="store_true", help="print a JSON report")
    v.add_argument("--plot", default=None, metavar="FILE.png",
                   help="write a log-log parity plot (uncalibrated and calibrated panels)")
    v.add_argument("--overwrite", action="store_true",
                   help="replace --plot even if it is not an image written by sweep (by default "
                        "only such an image is replaced)")
    v.set_defaults(func=_cmd_validate)

    c = subparsers.add_parser(
        "calibrate", help="fit the engine catalog's parameters to the measurements and write a "
                          "calibration overlay")
    _add_data_options(c)
    _add_output_option(c, "overlay", "grids/data/engines/calibration.toml")
    c.add_argument("--min-rows", type=int, default=20, metavar="N",
                   help="an engine, and an engine's vendor, gets its own fit from N usable rows "
                        "(default 20; an engine with fewer keeps its file's values); the "
                        "cross-engine [pooled] fit needs two engines with N rows each")
    c.add_argument("--loss", choices=("soft_l1", "huber", "cauchy", "linear"),
                   default="soft_l1", help="robust loss of least_squares (default soft_l1)")
    c.add_argument("--f-scale", type=float, default=0.1,
                   help="residual scale of the robust loss, in ln units (default 0.1)")
    c.add_argument("--prior-weight", type=float, default=0.05,
                   help="weight of the prior toward the starting values (default 0.05)")
    c.add_argument("--weak-stderr", type=float, default=1.0, metavar="X",
                   help="a fitted value whose standard error exceeds X times the value is weakly "
                        "informed: it keeps its prior and is reported (default 1; inf keeps "
                        "every fitted value)")
    c.add_argument("--max-nfev", type=int, default=100, metavar="N",
                   help="function evaluations per fitted unit (default 100)")
    c.add_argument("--no-lopo", action="store_true",
                   help="skip the leave-one-publisher-out check")
    c.add_argument("--floor-dtypes", action="store_true",
                   help="raise a narrower dtype's compute factor (fp8, int8, fp4) to where no "
                        "device computes it slower than the wider one (by default such fits are "
                        "only reported, as findings)")
    c.add_argument("--by-build", action="store_true",
                   help="fit the rows of each of an engine file's [builds] (by their "
                        "engine_version, e.g. vllm@0.6.0) in that build's own overlay section, "
                        "and only the other rows in the file's (by default every row fits its "
                        "file's sections, whatever its release)")
    _add_overwrite_json(c, "an overlay written by sweep calibrate", "print a JSON report")
    c.set_defaults(func=_cmd_calibrate)

    b = subparsers.add_parser(
        "bands", help="measure each engine x vendor's uncertainty band from held-out residuals "
                      "and write the bands file results carry")
    _add_data_options(b)
    _add_output_option(b, "bands", "grids/data/bands.toml")
    b.add_argument("--quantile", type=float, default=0.68,
                   help="share of held-out measurements a band holds (default 0.68)")
    b.add_argument("--min-rows", type=int, default=10, metavar="N",
                   help="held-out rows a group needs for a band of its own (default 10)")
    b.add_argument("--floor-dtypes", action="store_true",
                   help="fit each held-out calibration with narrower-dtype floors, as "
                        "sweep calibrate --floor-dtypes (use it when the shipped overlay was "
                        "fitted that way)")
    _add_overwrite_json(b, "a bands file written by sweep bands", "print the bands as JSON")
    b.set_defaults(func=_cmd_bands)
