"""Validation commands of the ``sweep`` CLI (registered by ``sweep.cli``):

* ``sweep validate``: the model against published measurements (``docs/validation.md``);
* ``sweep calibrate``: fit the catalog's efficiency parameters to them and write the overlay
  ``grids/data/calibration.toml``.

Bad input (unreadable or malformed CSV, unknown ids, bad options) raises
:class:`grids.errors.SpecError`, so the CLI exits 2 with one message.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from grids.errors import SpecError
from grids.hardware import read_overlay

REPO = Path(__file__).resolve().parents[1]


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
    w = p.add_argument_group("what-if options (change the data mapping or the batching "
                             "assumption; not the model's physics, see docs/validation.md)")
    w.add_argument("--kv-bits", type=int, choices=(8, 16), default=None,
                   help="evaluate every usable row with this KV-cache precision (e.g. 8: fp8 -> "
                        "fp8-kv8)")
    w.add_argument("--paged-kv", action="store_true",
                   help="max-load rows: check memory with the KV cache at the mean length "
                        "S + O/2 of an in-flight batch instead of S + O")
    w.add_argument("--max-batch", type=int, default=None, metavar="N",
                   help="max-load rows: cap the engine's batch at N")


def _whatif(args: argparse.Namespace) -> dict[str, Any]:
    if args.max_batch is not None and args.max_batch < 1:
        raise SpecError(f"--max-batch must be >= 1, got {args.max_batch}")
    out: dict[str, Any] = {}
    if args.paged_kv:
        out["paged_kv"] = True
    if args.max_batch is not None:
        out["max_batch"] = int(args.max_batch)
    return out


def _whatif_flags(args: argparse.Namespace) -> str:
    parts = []
    if args.kv_bits is not None:
        parts.append(f"--kv-bits {args.kv_bits}")
    if args.paged_kv:
        parts.append("--paged-kv")
    if args.max_batch is not None:
        parts.append(f"--max-batch {args.max_batch}")
    return " ".join(parts)


def _load(args: argparse.Namespace):
    from sweep import validate as V

    df = V.read_measurements(args.data)
    return V.with_kv_bits(df, args.kv_bits)


# ------------------------------------------------------------------------------------ validate


def _cmd_validate(args: argparse.Namespace) -> int:
    from sweep import validate as V
    from sweep.validate import calibration as C

    if args.uncalibrated and args.calibration:
        raise SpecError("give either --uncalibrated or --calibration FILE, not both")
    if args.plot and not str(args.plot).lower().endswith(".png"):
        raise SpecError(f"--plot {args.plot!r}: give a .png file name")
    df = _load(args)
    whatif = _whatif(args)
    if args.calibration:
        overlay = read_overlay(args.calibration)
        ids = [str(v) for v in df.loc[V.usable_mask(df), "hardware"].unique()]
        res = V.compare(df, devices=C.overlay_devices(ids, overlay), **whatif)
        which = f"calibration overlay {args.calibration}"
    else:
        res = V.compare(df, calibrated=not args.uncalibrated, **whatif)
        which = ("uncalibrated catalog" if args.uncalibrated
                 else "calibrated catalog (grids/data/calibration.toml)")
    data = args.data or str(V.MEASUREMENTS_CSV)
    flags = _whatif_flags(args)
    title = f"sweep validate: {_rel(data)} with the {which}" + (f"; what-if {flags}"
                                                                 if flags else "")
    if args.plot:
        base = None
        if not args.uncalibrated:
            base = V.compare(df, calibrated=False, **whatif)
        V.parity_plot(res, args.plot, title="calibrated" if not args.uncalibrated else
                      "uncalibrated", compare_with=base)
    if args.json:
        out = V.report_json(res, include_rows=args.rows, data=_rel(data),
                            data_sha256=V.file_sha256(data), model=which,
                            what_if=flags or None, targets=V.TARGETS)
        print(json.dumps(out, indent=1))
    else:
        print(V.report_text(res, title))
        if args.rows:
            print()
            print(V.rows_text(res))
        if args.plot:
            print(f"\nparity plot written to {args.plot}")
    return 0


# ------------------------------------------------------------------------------------ calibrate


def _summary_line(res) -> dict[str, float]:
    from sweep import validate as V

    agg = V.summarize(res)
    ph = agg["phase"].set_index("group")
    out = {"median_abs_rel_error": float(agg["overall"].median_abs_rel_error[0]),
           "mean_abs_log_error": float(agg["overall"].mean_abs_log_error[0]),
           "rows": int(agg["overall"].used[0])}
    for phase in ("decode", "prefill"):
        if phase in ph.index and ph.loc[phase, "used"] > 0:
            out[f"{phase}_median_abs_rel_error"] = float(ph.loc[phase, "median_abs_rel_error"])
            out[f"{phase}_rows"] = int(ph.loc[phase, "used"])
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
    output = Path(args.output)
    if C.inside_installation(output):
        raise SpecError(f"-o {output}: refusing to write into the installed package "
                        f"({output.resolve().parent}); write the overlay to a path of your own and "
                        f"pass it to `sweep validate --calibration FILE`")
    flags = _whatif_flags(args)
    if flags and output.resolve() == C.default_output().resolve():
        raise SpecError(f"what-if options ({flags}) change the data mapping or the batching "
                        f"assumption; write such an overlay elsewhere with -o FILE, not to the "
                        f"shipped grids/data/calibration.toml")
    if output.suffix != ".toml":
        raise SpecError(f"-o {output}: the overlay is a .toml file")
    df = _load(args)
    whatif = _whatif(args)
    quiet = args.json
    say = (lambda m: None) if quiet else (lambda m: print(f"  {m}", flush=True))
    opts = {"min_rows": args.min_rows, "loss": args.loss, "f_scale": args.f_scale,
            "prior_weight": args.prior_weight, "whatif": whatif}
    if not quiet:
        print("sweep calibrate: fitting on the uncalibrated catalog")
    cal = C.calibrate(df, progress=say, **opts)
    before = V.compare(df, calibrated=False, **whatif)
    after = C.evaluate_with(df, cal.overlay, whatif=whatif)
    loso: dict[str, Any] = {}
    if not args.no_loso:
        if not quiet:
            print("leave-one-source-out:")
        loso = C.leave_one_source_out(df, progress=say, **opts)
    loso_lines: dict[str, dict[str, Any]] = {}
    for g, rec in loso.items():
        if rec.get("note"):
            loso_lines[g] = {"rows": int(rec["rows"]), "note": rec["note"]}
            continue
        line = {"rows": int(rec["rows"]),
                "fitted_devices": rec["trained_devices"]}
        line.update({f"{k}": v for k, v in _summary_line(rec["results"]).items()})
        cl = _summary_line(rec["results_class"])
        line["class_fit_for_unseen_median_abs_rel_error"] = cl["median_abs_rel_error"]
        loso_lines[g] = line
    data = args.data or str(V.MEASUREMENTS_CSV)
    command = "sweep calibrate" + "".join(
        f" {k} {v}" for k, v in (("--data", _rel(args.data) if args.data else None),
                                 ("--min-rows", args.min_rows if args.min_rows != 8 else None),
                                 ("--loss", args.loss if args.loss != C.DEFAULT_LOSS else None),
                                 ("--f-scale", args.f_scale
                                  if args.f_scale != C.DEFAULT_F_SCALE else None),
                                 ("--prior-weight", args.prior_weight
                                  if args.prior_weight != C.PRIOR_WEIGHT else None),
                                 ("-o", _rel(output) if args.output else None))
        if v is not None) + (" --no-loso" if args.no_loso else "") + (f" {flags}" if flags
                                                                         else "")
    text = C.overlay_toml(cal, data_path=data, command=command,
                          before=_summary_line(before), after=_summary_line(after),
                          loso=loso_lines)
    C.write_overlay(text, output)
    check = None
    if output.resolve() == C.default_output().resolve():
        # the catalog loader must now give the same predictions as the fit
        via_loader = V.compare(df, calibrated=True, **whatif)
        check = V.summarize(via_loader)["overall"].median_abs_rel_error[0]
    if args.json:
        print(json.dumps({
            "output": str(output), "command": command,
            "fits": {k: {"basis": cal.basis[k], "values": v,
                         "rows": cal.device_fits[k].rows if k in cal.device_fits else None,
                         "stderr": cal.device_fits[k].stderr if k in cal.device_fits else None,
                         "at_bound": cal.device_fits[k].at_bound
                         if k in cal.device_fits else None}
                     for k, v in cal.overlay.items()},
            "class_fits": {c: f.values for c, f in cal.class_fits.items()},
            "before": {k: V.records(v) for k, v in V.summarize(before).items()},
            "after": {k: V.records(v) for k, v in V.summarize(after).items()},
            "leave_one_source_out": loso_lines,
            "after_via_catalog_loader_median_abs_rel_error": check,
        }, indent=1, default=str))
        return 0
    print()
    print(fit_table(cal))
    print()
    b, a = V.summarize(before), V.summarize(after)
    for name in ("overall", "phase", "metric", "source", "hardware"):
        print(before_after_markdown(b[name], a[name], name))
        print()
    if loso_lines:
        print(loso_markdown(loso_lines))
        print()
    print(f"overlay written to {output}")
    if check is not None:
        print(f"check: the catalog loader now gives median abs rel error {check:.1%} "
              f"(fit: {_summary_line(after)['median_abs_rel_error']:.1%})")
    return 0


def fit_table(cal) -> str:
    from sweep.validate.calibration import PARAM_NAMES

    lines = ["| device | basis | rows | bandwidth_efficiency | flops_efficiency | "
             "layer_overhead [us] | at bound | before | after |",
             "|---|---|---:|---:|---:|---:|---|---:|---:|"]

    def pm(v: float, e: float, scale: float = 1.0, digits: int = 3) -> str:
        s = f"{v * scale:.{digits}f}"
        if e == e:  # not NaN
            s += f" ± {e * scale:.{digits}f}"
        return s

    for dev in sorted(cal.overlay):
        v = cal.overlay[dev]
        f = cal.device_fits.get(dev)
        e = f.stderr if f else {p: float("nan") for p in PARAM_NAMES}
        lines.append(
            f"| {dev} | {cal.basis[dev]} | {f.rows if f else '-'} | "
            f"{pm(v['bandwidth_efficiency'], e['bandwidth_efficiency'])} | "
            f"{pm(v['flops_efficiency'], e['flops_efficiency'])} | "
            f"{pm(v['layer_overhead'], e['layer_overhead'], 1e6, 0)} | "
            f"{', '.join(f.at_bound) if f and f.at_bound else '-'} | "
            f"{f'{f.before:.1%}' if f else '-'} | {f'{f.after:.1%}' if f else '-'} |")
    for cls, f in sorted(cal.class_fits.items()):
        lines.append(
            f"| (class {cls}, not applied) | pooled | {f.rows} | "
            f"{pm(f.values['bandwidth_efficiency'], f.stderr['bandwidth_efficiency'])} | "
            f"{pm(f.values['flops_efficiency'], f.stderr['flops_efficiency'])} | "
            f"{pm(f.values['layer_overhead'], f.stderr['layer_overhead'], 1e6, 0)} | "
            f"{', '.join(f.at_bound) or '-'} | {f.before:.1%} | {f.after:.1%} |")
    return "\n".join(lines)


def before_after_markdown(before, after, title: str) -> str:
    from sweep.validate.report import fmt_error as _fmt

    a = after.set_index("group")
    lines = [f"| {title} | rows | median abs rel err before | after | MALE before | after | "
             f"Spearman before | after |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in before.itertuples(index=False):
        if r.used == 0:
            continue
        x = a.loc[r.group] if r.group in a.index else None
        af = {k: (_fmt(x[k], k == "median_abs_rel_error") if x is not None else "-")
              for k in ("median_abs_rel_error", "mean_abs_log_error", "spearman")}
        lines.append(f"| {r.group} | {r.used} | {_fmt(r.median_abs_rel_error)} | "
                     f"{af['median_abs_rel_error']} | {_fmt(r.mean_abs_log_error, False)} | "
                     f"{af['mean_abs_log_error']} | {_fmt(r.spearman, False)} | "
                     f"{af['spearman']} |")
    return "\n".join(lines)


def loso_markdown(loso: dict[str, dict[str, Any]]) -> str:
    from sweep.validate.report import fmt_error as _fmt

    lines = ["| held-out source | rows | fitted on (devices) | median abs rel err | decode | "
             "prefill | MALE | unseen devices at class fit |",
             "|---|---:|---|---:|---:|---:|---:|---:|"]
    for g, r in loso.items():
        if r.get("note"):
            lines.append(f"| {g} | {r['rows']} | {r['note']} | - | - | - | - | - |")
            continue
        lines.append(
            f"| {g} | {r['rows']} | {', '.join(r['fitted_devices'])} | "
            f"{_fmt(r['median_abs_rel_error'])} | "
            f"{_fmt(r.get('decode_median_abs_rel_error', float('nan')))} | "
            f"{_fmt(r.get('prefill_median_abs_rel_error', float('nan')))} | "
            f"{_fmt(r['mean_abs_log_error'], False)} | "
            f"{_fmt(r['class_fit_for_unseen_median_abs_rel_error'])} |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ parser


def register(subparsers) -> None:
    """Add this module's sub-commands to the ``sweep`` parser."""
    v = subparsers.add_parser(
        "validate", help="compare the model with published measurements (predicted vs measured, "
                         "errors per source, device and metric)")
    _add_data_options(v)
    v.add_argument("--uncalibrated", action="store_true",
                   help="evaluate with the uncalibrated catalog (class defaults and catalog "
                        "values, no calibration overlay)")
    v.add_argument("--calibration", default=None, metavar="FILE",
                   help="evaluate with this calibration overlay TOML instead of the shipped one")
    v.add_argument("--rows", action="store_true", help="print predicted vs measured per row")
    v.add_argument("--json", action="store_true", help="print a JSON report")
    v.add_argument("--plot", default=None, metavar="FILE.png",
                   help="write a log-log parity plot (uncalibrated and calibrated panels)")
    v.set_defaults(func=_cmd_validate)

    c = subparsers.add_parser(
        "calibrate", help="fit the catalog's efficiency parameters to the measurements and write "
                          "the calibration overlay")
    _add_data_options(c)
    c.add_argument("-o", "--output", required=True, metavar="FILE.toml",
                   help="overlay TOML to write (never inside the installed package; in a source "
                        "checkout, grids/data/calibration.toml updates the shipped calibration)")
    c.add_argument("--min-rows", type=int, default=8, metavar="N",
                   help="devices with fewer usable rows take the pooled class fit (default 8)")
    c.add_argument("--loss", choices=("soft_l1", "huber", "cauchy", "linear"),
                   default="soft_l1", help="robust loss of least_squares (default soft_l1)")
    c.add_argument("--f-scale", type=float, default=0.1,
                   help="residual scale of the robust loss, in ln units (default 0.1)")
    c.add_argument("--prior-weight", type=float, default=0.05,
                   help="weight of the prior toward the uncalibrated values (default 0.05)")
    c.add_argument("--no-loso", action="store_true",
                   help="skip the leave-one-source-out check")
    c.add_argument("--json", action="store_true", help="print a JSON report")
    c.set_defaults(func=_cmd_calibrate)
