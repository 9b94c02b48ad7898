"""``sweep fleet``: how many devices of each type (kW, $/h) serve a request rate under latency
targets (sweep.analysis.fleet), from a result file or from a small grid evaluated on the fly;
with ``--disaggregated``, prefill and decode pools sized apart (sweep.analysis.disaggregated)
beside the aggregated fleet."""

from __future__ import annotations

import argparse

from grids.errors import SpecError
from grids.spec import DEFAULT_ENGINE, DEFAULT_SPEC
from sweep.cli.common import parse_sel, print_json, records, text_table

EXIT_OK = 0
TEXT_ROWS = 40
#: the on-the-fly grid: every catalog device at the layouts worth evaluating for the model
#: (grids/auto_layouts.py) and the default loads, one workload
ON_THE_FLY = {"hardware": "all", "batch": DEFAULT_SPEC["batch"], "parallelism": "auto",
              "batching": "continuous"}


def _workload(args: argparse.Namespace, output_len) -> dict:
    """The on-the-fly grid of the workload the options name (every catalog device unless
    --hardware, at ``output_len``)."""
    if not args.model:
        raise SpecError("fleet: give a result file, or --model (and --context, --output-len, "
                        "--precision) to evaluate a small grid on the fly")
    spec = {**ON_THE_FLY, "model": [args.model], "context": [args.context],
            "output_len": output_len, "precision": [args.precision],
            "engine": args.engine or [DEFAULT_ENGINE]}
    if args.hardware:
        spec["hardware"] = args.hardware
    return spec


def _on_the_fly(args: argparse.Namespace):
    """A small continuous-batching grid of the workload the options name, in memory."""
    from sweep.execute.local import run

    spec = {**_workload(args, args.output_len), "name": "sweep fleet (on the fly)"}
    return run(spec, progress=not args.json)


def _pools(args: argparse.Namespace):
    """The on-the-fly grids of a disaggregated plan: continuous batching (the aggregated fleet at
    ``--output-len``, the prefill pool at one output token) and static batching (the decode
    pool, and its prompt pass alone), both at output_len [1, --output-len]."""
    from sweep.execute.local import run

    if args.result:
        raise SpecError("fleet --disaggregated evaluates its own prefill and decode pools: give "
                        "--model (and --context, --output-len, --precision), not a result file")
    if args.output_len < 2:
        raise SpecError(f"fleet --disaggregated: --output-len must be >= 2 (one generated token "
                        f"has no decode phase), got {args.output_len}")
    spec = _workload(args, [1, args.output_len])
    return tuple(run({**spec, "name": f"sweep fleet --disaggregated ({batching})",
                      "batching": batching}, progress=not args.json)
                 for batching in ("continuous", "static"))


def _cmd_disaggregated(args: argparse.Namespace) -> int:
    from sweep.analysis.disaggregated import disaggregated_fleet, versus_aggregated
    from sweep.analysis.select import apply_sel

    sel = parse_sel(args.sel)
    cont, stat = (apply_sel(ds, sel) for ds in _pools(args))
    dis = disaggregated_fleet(cont, stat, args.rate, ttft=args.ttft, tpot=args.tpot,
                              output_len=args.output_len, by=args.by,
                              percentile=args.percentile)
    agg = cont.sel(output_len=args.output_len).sweep.fleet(
        args.rate, ttft=args.ttft, tpot=args.tpot, by=args.by, percentile=args.percentile)
    table = versus_aggregated(dis, agg)
    targets = _targets(args)
    if args.json:
        rows = records(table if not args.limit else table.head(args.limit))
        print_json({"rate_per_s": args.rate, "targets": targets, "by": table.attrs["by"],
                    "output_len": args.output_len, "units": table.attrs["units"],
                    "unserved": table.attrs["unserved"], "unpriced": table.attrs["unpriced"],
                    "aggregated_unserved": table.attrs["aggregated_unserved"], "rows": rows})
        return EXIT_OK
    print(f"disaggregated fleet: {args.rate:g} requests/s of {args.model} ({args.context} prompt "
          f"+ {args.output_len} output tokens, {args.precision}) with {targets}; each device "
          f"type at its {_BY_TEXT[table.attrs['by']]} over engine, the prefill pool's layout and "
          f"load, the decode pool's layout and batch; gain = the aggregated fleet's figure over "
          f"the disaggregated one (--json adds rank, margin, the network's load and the "
          f"aggregated fleet's other figures)")
    key = table.attrs["by"]
    shown = [c for c in table.columns if c not in (
        "rank", "margin", "network_load",
        *(f"aggregated_{c}" for c in ("devices", "kW", "usd_per_h") if c != key))]
    print(text_table(table[shown], TEXT_ROWS if args.limit is None else args.limit))
    if table.attrs["unserved"]:
        print(f"disaggregated serving meets the targets nowhere on: "
              f"{', '.join(table.attrs['unserved'])}")
    if table.attrs["unpriced"]:
        print(f"no price (left out of a cost ranking): {', '.join(table.attrs['unpriced'])}")
    return EXIT_OK


def _targets(args: argparse.Namespace) -> str:
    return ", ".join(f"{k} <= {v:g} s" for k, v in
                     ((f"TTFT{'' if not args.percentile else ' ' + args.percentile}", args.ttft),
                      ("TPOT", args.tpot)) if v is not None) or "no targets"


_BY_TEXT = {"devices": "fewest devices", "kW": "least power (kW, system boundary)",
            "usd_per_h": "lowest cost (USD/h)"}


def _cmd_fleet(args: argparse.Namespace) -> int:
    from sweep.analysis.select import apply_sel
    from sweep.cli.analysis import _open

    if args.disaggregated:
        return _cmd_disaggregated(args)
    if args.result:
        ds = _open(args.result)
    else:
        ds = _on_the_fly(args)
    try:
        ds = apply_sel(ds, parse_sel(args.sel))
        table = ds.sweep.fleet(args.rate, ttft=args.ttft, tpot=args.tpot, by=args.by,
                               percentile=args.percentile)
    finally:
        ds.close()
    targets = _targets(args)
    by = _BY_TEXT[table.attrs["by"]]
    if args.json:
        rows = records(table if not args.limit else table.head(args.limit))
        print_json({"rate_per_s": args.rate, "targets": targets, "by": table.attrs["by"],
                    "units": table.attrs["units"], "unserved": table.attrs["unserved"],
                    "unpriced": table.attrs["unpriced"],
                    "rows": rows})
        return EXIT_OK
    print(f"fleet: {args.rate:g} requests/s with {targets}, each device type at its {by} over "
          f"{', '.join(table.attrs['over'])}; margin = the next type's figure over this one's")
    print(text_table(table, TEXT_ROWS if args.limit is None else args.limit))
    if table.attrs["unserved"]:
        print(f"meets the targets nowhere: {', '.join(table.attrs['unserved'])}")
    if table.attrs["unpriced"]:
        print(f"no price (left out of a cost ranking): {', '.join(table.attrs['unpriced'])}")
    return EXIT_OK


def register(subparsers) -> None:
    """Add ``sweep fleet`` to the ``sweep`` parser."""
    p = subparsers.add_parser(
        "fleet", help="devices (kW, $/h) of each type that serve a request rate under TTFT and "
                      "TPOT targets, ranked")
    p.add_argument("result", nargs="?", default=None,
                   help="result file written by 'sweep run' (omit it to evaluate a small grid "
                        "of --model on the fly)")
    p.add_argument("--rate", type=float, required=True, metavar="R",
                   help="requests per second to serve")
    p.add_argument("--ttft", type=float, default=None, metavar="S",
                   help="time-to-first-token target [s]")
    p.add_argument("--tpot", type=float, default=None, metavar="S",
                   help="time-per-output-token target [s]")
    p.add_argument("--by", default="devices", help="devices (default), kW or $")
    p.add_argument("--percentile", default=None, choices=["p50", "p90", "p99"],
                   help="read the TTFT target against this percentile (results over "
                        "request_rate)")
    p.add_argument("--sel", action="append", metavar="DIM=VALUE[,VALUE...]",
                   help="only these values of a dim (repeatable), e.g. --sel model=llama-3.1-8b")
    p.add_argument("--model", help="on the fly: model id, Hugging Face id or config.json")
    p.add_argument("--context", type=int, default=2048, help="on the fly: prompt tokens "
                   "(default 2048)")
    p.add_argument("--output-len", type=int, default=256, help="on the fly: generated tokens "
                   "(default 256)")
    p.add_argument("--precision", default="bf16", help="on the fly: precision (default bf16)")
    p.add_argument("--engine", action="append", help="on the fly: engine (repeatable; default "
                   f"{DEFAULT_ENGINE})")
    p.add_argument("--hardware", action="append", help="on the fly: device (repeatable; "
                   "default every catalog device)")
    p.add_argument("--disaggregated", action="store_true",
                   help="size prefill and decode pools apart (KV sent over the scale-out "
                        "network) and compare with aggregated serving; evaluates --model on "
                        "the fly (docs/model.md section 13.6)")
    p.add_argument("--limit", type=int, default=None,
                   help=f"rows to print (default {TEXT_ROWS} for text, all for JSON; 0 = all)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_cmd_fleet)
