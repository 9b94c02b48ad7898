"""What every converter shares: the schema, the tidy row (built through
:class:`scripts.measurements.row_builder.RowBuilder`), catalog ids, exact unit conversions, Little's
law, the checks of a built table and its summary.

A converter turns the raw rows of one transcription (``inputs/<file>.csv``) into tidy rows of the
table described by ``sweep/data/measurements/schema.toml``. It never drops a raw row silently: a
raw row becomes one or more tidy rows, or is folded into another row (a repeat aggregated into a
median, a request rate used for Little's law) and its :class:`Converted` says so.
"""

from __future__ import annotations

import collections
import csv
import functools
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
INPUTS = HERE / "inputs"
DATA_DIR = REPO / "sweep" / "data" / "measurements"
SCHEMA_PATH = DATA_DIR / "schema.toml"
OUT_CSV = DATA_DIR / "measurements.csv"
#: the staged sources' table (docs/measurements.md, "Staged sources"): same columns, not fitted
STAGED_CSV = DATA_DIR / "staged.csv"


def load_schema(path: Path = SCHEMA_PATH) -> dict:
    with path.open("rb") as fh:
        return tomllib.load(fh)


SCHEMA = load_schema()
COLUMNS: tuple[str, ...] = tuple(SCHEMA["columns"])
REASONS: dict[str, str] = dict(SCHEMA["skip_reasons"])
METRIC_UNITS: dict[str, str] = dict(SCHEMA["metric_units"])
#: models the sources use whose architecture the catalog cannot represent (hybrid linear-attention
#: layers: Gated DeltaNet in Qwen3.5/3.6; see docs/catalog.md, models): rows on them are unusable
UNREPRESENTABLE_MODELS = ("qwen3.5-397b-a17b", "qwen3.6-27b")
LAYOUT_RE = re.compile(r"^tp[1-9]\d*(-pp[1-9]\d*)?(-ep[1-9]\d*)?(-dp[1-9]\d*)?$")


# ------------------------------------------------------------------------------------------------
# raw input


def read_raw(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def source_file(name: str) -> str:
    """The ``source_file`` cell of rows read from ``inputs/<name>``."""
    return f"scripts/measurements/inputs/{name}"


@dataclass
class Converted:
    """The tidy rows of one transcription and how its raw rows became them."""

    rows: list[dict[str, str]]
    raw_rows: int
    #: raw rows that are not a tidy row of their own, by what became of them
    folded: dict[str, int] = field(default_factory=dict)
    #: one sentence: how raw rows map to tidy rows (pasted into docs/measurements.md)
    accounting: str = ""

    @classmethod
    def one_each(cls, rows: list[dict[str, str]], raw_rows: int) -> Converted:
        """A transcription each of whose raw rows became one tidy row."""
        return cls(rows, raw_rows, accounting=f"{raw_rows} raw rows -> {len(rows)} tidy rows (one each).")


# ------------------------------------------------------------------------------------------------
# rows


def row(*, skip: Iterable[str] = (), notes: Iterable[str] = (), **cols: object) -> dict[str, str]:
    """One tidy row: ``cols`` by column name, ``skip`` = reason keys of ``[skip_reasons]`` (none:
    the row is usable), ``notes`` = the mapping notes (joined with '; ')."""
    unknown = sorted(set(cols) - set(COLUMNS) | ({"usable", "skip_reason", "mapping_note"} & set(cols)))
    if unknown:
        raise KeyError(f"not settable columns {unknown}")
    out = dict.fromkeys(COLUMNS, "")
    for key, val in cols.items():
        out[key] = "" if val is None else str(val)
    keys = list(dict.fromkeys(k for k in skip if k))
    out["usable"] = "no" if keys else "yes"
    out["skip_reason"] = "; ".join(REASONS[k] for k in keys)
    out["mapping_note"] = "; ".join(dict.fromkeys(n for n in notes if n))
    return out


def rid(key: str, number: int, width: int = 3, suffix: str = "") -> str:
    return f"{key}-{number:0{width}d}" + (f"-{suffix}" if suffix else "")


def layout_name(
    tp: int | None = None, pp: int | None = None, ep: int | None = None, dp: int | None = None
) -> str:
    """Layout name as in grids/layouts.py: tp always, the other degrees only when above 1."""
    parts = [f"tp{tp or 1}"]
    for name, val in (("pp", pp), ("ep", ep), ("dp", dp)):
        if val not in (None, "", 1):
            parts.append(f"{name}{val}")
    return "-".join(parts)


# ------------------------------------------------------------------------------------------------
# exact numbers


def fmt(d: Decimal) -> str:
    """A Decimal as plain text, trailing zeros trimmed (1.50 -> 1.5, 2E+1 -> 20)."""
    text = format(d.normalize(), "f")
    return text


def num(text: str) -> str:
    """A published number, checked numeric and kept as printed (thousands separators removed)."""
    return fmt(Decimal(str(text).replace(",", "").strip()))


def ms(text: str) -> str:
    """Milliseconds as printed -> seconds, exact."""
    return fmt(Decimal(str(text).replace(",", "").strip()) / 1000)


def round_half_up(d: Decimal) -> int:
    return int(d.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def mean_tokens(text: str) -> int:
    """A mean token count over requests (e.g. '356.0', '85.7') rounded half up to a whole token."""
    return round_half_up(Decimal(text))


def littles_law(rate: Decimal, e2e: Decimal, replicas: int = 1) -> int:
    """Mean concurrency per replica: rate / replicas x mean e2e latency, rounded half up, at least 1
    (a concurrency below one half still serves every request alone: batch 1)."""
    return max(1, round_half_up(Decimal(rate) / replicas * Decimal(e2e)))


def littles_note(rate: Decimal, e2e: Decimal, replicas: int, batch: int, how: str) -> str:
    """The mapping note of a Little's-law batch (tests parse this form and recompute it)."""
    return (
        f"Little's law: batch = max(1, round({fmt(Decimal(rate))} req/s / {replicas} replicas x "
        f"{fmt(Decimal(e2e))} s mean e2e)) = {batch}; e2e {how}"
    )


LITTLES_RE = re.compile(
    r"Little's law: batch = max\(1, round\(([0-9.]+) req/s / ([0-9]+) replicas x "
    r"([0-9.]+) s mean e2e\)\) = ([0-9]+)"
)


# ------------------------------------------------------------------------------------------------
# catalog ids


@functools.cache
def catalog_hardware() -> frozenset[str]:
    from grids import catalog_ids

    return frozenset(catalog_ids())


@functools.cache
def catalog_models() -> frozenset[str]:
    from grids import MODEL_IDS

    return frozenset(MODEL_IDS)


def known_hardware(dev_id: str) -> bool:
    return dev_id in catalog_hardware()


def known_model(model_id: str) -> bool:
    return model_id in catalog_models()


@functools.cache
def attention_heads(model_id: str) -> int | None:
    """Attention heads of a catalog model; None when unknown."""
    if model_id in catalog_models():
        from grids import load_model

        return int(load_model(model_id).tp_divisor)
    return None


def head_padding_note(model_id: str, tp: int | None, what: str = "") -> str:
    """A note when ``tp`` does not divide the model's attention heads (the stack pads heads; the
    layout is kept as published)."""
    heads = attention_heads(model_id)
    if not tp or not heads or heads % int(tp) == 0:
        return ""
    return (
        f"tp {tp}{what} does not divide the {heads} attention heads of {model_id}: the serving "
        f"stack pads (or replicates) heads; layout kept as published"
    )


def catalog_reasons(hardware: str, model: str) -> list[str]:
    """Skip keys for ids that the catalog does not have (or cannot represent)."""
    out = []
    if not known_hardware(hardware):
        out.append("device")
    if model in UNREPRESENTABLE_MODELS:
        out.append("architecture")
    elif model and not known_model(model):
        out.append("model")
    return out


KV_NOT_STATED = "KV dtype not stated (the scheme's default KV precision)"


# ------------------------------------------------------------------------------------------------
# checks of a built table


def _items(spec: dict, val: str, relative: bool) -> list[str]:
    if "separator" in spec:
        return val.split(spec["separator"])
    if relative and spec.get("list_in_relative", False):
        return val.split(";")
    return [val]


def check_rows(rows: list[dict[str, str]], schema: dict = SCHEMA) -> list[str]:
    """Every problem of ``rows`` against the schema and the catalogs (empty list when valid)."""
    from grids import SpecError, parse_layout, parse_precision

    cols = schema["columns"]
    reasons = set(schema["skip_reasons"].values())
    units = schema["metric_units"]
    problems: list[str] = []
    seen: set[str] = set()
    for r in rows:
        rid_ = r.get("id", "?")
        if tuple(r) != tuple(cols):
            problems.append(f"{rid_}: columns {list(r)} are not the schema's")
            continue
        if rid_ in seen:
            problems.append(f"{rid_}: duplicate id")
        seen.add(rid_)
        relative = schema["skip_reasons"]["relative"] in r["skip_reason"]
        for name, spec in cols.items():
            val = r[name]
            if val == "":
                if spec.get("required", False):
                    problems.append(f"{rid_}: {name} is required")
                continue
            for item in _items(spec, val, relative):
                typ = spec["type"]
                if typ == "integer" and (not item.isdigit() or int(item) < 1):
                    problems.append(f"{rid_}: {name}={item!r} is not a whole number >= 1")
                elif typ == "integer_or_max" and item != "max" and (not item.isdigit() or int(item) < 1):
                    problems.append(f"{rid_}: {name}={item!r} is not a whole number >= 1 or 'max'")
                elif typ == "layout" and not LAYOUT_RE.match(item):
                    problems.append(f"{rid_}: {name}={item!r} is not a layout name")
                elif typ == "number":
                    try:
                        if Decimal(item) <= 0:
                            problems.append(f"{rid_}: {name}={item!r} is not positive")
                    except ArithmeticError:
                        problems.append(f"{rid_}: {name}={item!r} is not a number")
                elif typ == "precision":
                    try:
                        parse_precision(item)
                    except SpecError:
                        problems.append(f"{rid_}: precision {item!r} is not a scheme")
                elif typ == "enum":
                    allowed = reasons if spec.get("allowed_from") == "skip_reasons" else set(spec["allowed"])
                    if item not in allowed:
                        problems.append(f"{rid_}: {name}={item!r} is not one of {sorted(allowed)}")
        if not relative and r["unit"] != units.get(r["metric"]):
            problems.append(f"{rid_}: unit {r['unit']!r} does not match metric {r['metric']!r}")
        if relative and r["unit"] not in ("1", units.get(r["metric"])):
            problems.append(f"{rid_}: relative claim with unit {r['unit']!r}")
        if (r["usable"] == "yes") == bool(r["skip_reason"]):
            problems.append(f"{rid_}: usable={r['usable']} but skip_reason={r['skip_reason']!r}")
        if (
            r["devices"]
            and r["parallelism"]
            and not relative
            and (parse_layout(r["parallelism"]).devices != int(r["devices"]))
        ):
            problems.append(f"{rid_}: devices {r['devices']} != devices of layout {r['parallelism']}")
        if r["load"] == "max_load" and r["batch"] not in ("max", ""):
            problems.append(f"{rid_}: max_load row with batch {r['batch']!r} (must be 'max')")
        if r["load"] in ("static", "online") and r["batch"] == "max":
            problems.append(f"{rid_}: {r['load']} row with batch 'max'")
        if r["usable"] == "yes":
            need = ["hardware", "model", "precision", "parallelism", "batch", "context", "devices", "load"]
            if r["metric"] not in ("ttft", "prefill_throughput"):
                need.append("output_len")
            if r["load"] == "online":
                need.append("request_rate")
            missing = [c for c in need if not r[c]]
            if missing:
                problems.append(f"{rid_}: usable row without {', '.join(missing)}")
            if r["hardware"] and not known_hardware(r["hardware"]):
                problems.append(f"{rid_}: usable row on unknown hardware {r['hardware']!r}")
            if r["model"] and not known_model(r["model"]):
                problems.append(f"{rid_}: usable row on unknown model {r['model']!r}")
            if r["statistic"] == "p99":
                problems.append(f"{rid_}: usable p99 row")
    return problems


# ------------------------------------------------------------------------------------------------
# summary (pasted into docs/measurements.md)


def summary(parts: list[tuple[str, str, Converted]]) -> str:
    """Markdown tables: per source raw rows -> tidy rows, usable rows by metric, skips by reason.
    ``parts`` = (key, name, converted) in table order."""
    lines = [
        "| source | publisher(s) | raw rows | tidy rows | usable | not usable | usable rows by metric |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    tot = collections.Counter()
    for _key, name, conv in parts:
        c = collections.Counter(r["usable"] for r in conv.rows)
        pubs = ", ".join(dict.fromkeys(r["publisher"] for r in conv.rows))
        metrics = collections.Counter(r["metric"] for r in conv.rows if r["usable"] == "yes")
        mc = ", ".join(f"{m} {n}" for m, n in sorted(metrics.items())) or "-"
        lines.append(
            f"| {name} | {pubs} | {conv.raw_rows} | {len(conv.rows)} | {c['yes']} | {c['no']} | {mc} |"
        )
        tot.update({"raw": conv.raw_rows, "tidy": len(conv.rows), "yes": c["yes"], "no": c["no"]})
    lines.append(f"| **total** | | {tot['raw']} | {tot['tidy']} | {tot['yes']} | {tot['no']} | |")
    lines += ["", "How raw rows became tidy rows:", ""]
    for _key, name, conv in parts:
        lines.append(f"- **{name}**: {conv.accounting}")
    lines += [
        "",
        "Rows not usable, by reason (a row with several reasons counts under each):",
        "",
        "| reason | rows | sources |",
        "|---|---:|---|",
    ]
    by_reason: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for key, _name, conv in parts:
        for r in conv.rows:
            for part in filter(None, r["skip_reason"].split("; ")):
                by_reason[part][key] += 1
    for text in REASONS.values():
        if text in by_reason:
            cnt = by_reason[text]
            srcs = ", ".join(f"{k} {n}" for k, n in cnt.items())
            lines.append(f"| {text} | {sum(cnt.values())} | {srcs} |")
    return "\n".join(lines)
