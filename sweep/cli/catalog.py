"""``sweep catalog``: the catalogs as readable tables or JSON records."""

from __future__ import annotations

import argparse
import json

from grids.engines import catalog_engines, resolve
from grids.hardware import load_catalog
from grids.layouts import CATALOG_LAYOUTS, parse_layout
from grids.models import catalog_models
from grids.precisions import catalog_precisions
from grids.units import format_quantity


def catalog_records(what: str) -> list[dict]:
    if what == "hardware":
        return [d.to_dict() for d in load_catalog().values()]
    if what == "models":
        out = []
        for m in catalog_models():
            rec = m.to_dict()
            rec.update(id=m.id, params_total=m.params_total, params_active=m.params_active,
                       kv_bytes_per_token=m.kv_bytes_per_token(16), layers=m.n_layers)
            out.append(rec)
        return out
    if what == "precisions":
        return [p.to_dict() for p in catalog_precisions()]
    if what == "engines":
        return engine_records()
    return [parse_layout(n).to_dict() for n in CATALOG_LAYOUTS]


def engine_records() -> list[dict]:
    """One record per catalog engine: what it is, where it runs, and its parameters as resolved
    (shipped calibration applied) on every catalog device it runs on."""
    devices = load_catalog()
    out = []
    for eng in catalog_engines().values():
        on = {}
        for dev in devices.values():
            p = resolve(eng, dev)
            if p.supported:
                rec = p.to_dict()
                for k in ("engine", "device", "supported", "why", "versions"):
                    rec.pop(k)
                on[dev.id] = rec
        builds = {b.name: {"released": b.released, "description": b.description,
                           "source": b.source, "matches": list(b.matches)}
                  for b in eng.builds.values()}
        out.append({"id": eng.id, "name": eng.name, "description": eng.description,
                    "versions": eng.versions, "build": eng.build, "builds": builds,
                    "runs_on": list(eng.runs_on),
                    "delegate": dict(eng.delegate), "notes": list(eng.notes), "devices": on})
    return out


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    fmt = "  ".join(f"{{:{w}s}}" for w in widths)
    lines = [fmt.format(*headers), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*r) for r in rows]
    return "\n".join(lines)


def catalog_table(what: str, records: list[dict]) -> str:
    if what == "hardware":
        rows = []
        for r in records:
            pf = r["peak_flops"]
            p16 = pf.get("bf16", pf.get("fp16"))
            tiers = " + ".join(f"{format_quantity(t['capacity_bytes'], 'bytes')} "
                               f"{t['name']} @ {format_quantity(t['bandwidth_bytes_per_s'], 'bandwidth')}"
                               for t in r["memory_tiers"])
            rows.append([r["id"], r["class"], str(r["release_year"]),
                         format_quantity(p16, "flops"),
                         format_quantity(pf["fp8"], "flops") if "fp8" in pf else "-", tiers,
                         format_quantity(r["link_bandwidth_bytes_per_s"], "bandwidth"),
                         format_quantity(r["tdp_w"], "power")])
        return _table(["id", "class", "year", "16-bit peak", "fp8 peak", "memory tiers",
                       "link/dir", "TDP"], rows)
    if what == "models":
        rows = [[r["id"], f"{r['params_total'] / 1e9:.2f} B", f"{r['params_active'] / 1e9:.2f} B",
                 str(r["layers"]), format_quantity(r["kv_bytes_per_token"], "bytes")]
                for r in records]
        return _table(["id", "params total", "params active", "layers", "KV/token (16-bit)"],
                      rows)
    if what == "precisions":
        rows = [[r["name"], str(r["weight_bits"]), str(r["attn_bits"]), str(r["act_bits"]),
                 str(r["kv_bits"]), "/".join(r["compute_dtypes"]), r["description"]]
                for r in records]
        return _table(["name", "weight bits", "attention bits", "act bits", "KV bits", "compute",
                       "meaning"], rows)
    if what == "engines":
        rows = []
        for r in records:
            devs = r["devices"].values()
            own = [d for d in devs if d["delegate"] == r["id"]]
            its = own or list(devs)

            def span(key: str, scale: float = 1.0, unit: str = "", its=its) -> str:
                vals = sorted({round(d[key] * scale, 3) for d in its})
                if not vals:
                    return "-"
                return (f"{vals[0]:g}" if len(vals) == 1 else f"{vals[0]:g}-{vals[-1]:g}") + unit

            handed = sorted({d["delegate"] for d in devs if d["delegate"] != r["id"]})
            rows.append([r["id"], r["name"], str(len(r["devices"])),
                         span("bandwidth"), span("iteration_overhead", 1e3, " ms"),
                         span("request_overhead", 1e3, " ms"),
                         ", ".join(handed) if handed else "-",
                         ", ".join(f"{r['id']}@{b}" for b in r["builds"]) or "-"])
        return _table(["id", "name", "devices", "bandwidth factor", "per iteration",
                       "per request", "hands devices to", "older builds"], rows)
    rows = [[r["name"], str(r["tp"]), str(r["pp"]), str(r["ep"]), str(r["dp"]),
             f"{r['offload']:g}", str(r["devices"])] for r in records]
    return _table(["layout", "tp", "pp", "ep", "dp", "offload", "devices"], rows)


def _cmd_catalog(args: argparse.Namespace) -> int:
    records = catalog_records(args.what)
    if args.json:
        print(json.dumps(records, indent=1, default=str))
    else:
        print(catalog_table(args.what, records))
    return 0


def register(sub) -> None:
    """Add ``catalog`` to the ``sweep`` parser."""
    c = sub.add_parser("catalog", help="list the built-in hardware, serving engines, models, "
                                       "precisions or layouts")
    c.add_argument("what", choices=("hardware", "engines", "models", "precisions", "layouts"))
    c.add_argument("--json", action="store_true", help="print a JSON list of objects")
    c.set_defaults(func=_cmd_catalog)
