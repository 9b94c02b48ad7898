"""Reading sourced numbers from catalog TOML: ``{ value = ..., source = "..." }`` tables.

A catalog number is never bare: it carries the ``source`` it came from, optionally a ``note`` (for
example the other value where sources disagree) and, where nobody publishes the figure,
``estimate = true`` with the ``rule`` used to obtain it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grids.units import parse_quantity


@dataclass(frozen=True)
class Sourced:
    """One catalog number in SI units with its provenance."""

    value: float
    source: str
    note: str = ""
    estimate: bool = False
    rule: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "source": self.source}
        if self.note:
            out["note"] = self.note
        if self.estimate:
            out["estimate"] = True
            out["rule"] = self.rule
        return out


def read_sourced(entry: Any, dimension: str, where: str, problems: list[str],
                 *, positive: bool = True, required_source: bool = True) -> Sourced | None:
    """Parse a ``{value, source, ...}`` table; append problems instead of raising."""
    if not isinstance(entry, dict):
        problems.append(f"{where}: expected a table {{ value = ..., source = \"...\" }}, "
                        f"got {entry!r} (every catalog number needs a source)")
        return None
    if "value" not in entry:
        problems.append(f"{where}: missing 'value'")
        return None
    source = entry.get("source", "")
    if required_source and not (isinstance(source, str) and source.strip()):
        problems.append(f"{where}: missing 'source' (say where the number comes from, or give "
                        f"estimate = true with a 'rule')")
    estimate = bool(entry.get("estimate", False))
    rule = str(entry.get("rule", ""))
    if estimate and not rule.strip():
        problems.append(f"{where}: estimate = true needs a 'rule' saying how the value was obtained")
    unknown = set(entry) - {"value", "source", "note", "estimate", "rule"}
    if unknown:
        problems.append(f"{where}: unknown keys {sorted(unknown)} (allowed: value, source, note, "
                        f"estimate, rule)")
    try:
        value = parse_quantity(entry["value"], dimension, where)
    except ValueError as exc:
        problems.append(str(exc))
        return None
    if positive and not value > 0:
        problems.append(f"{where}: must be > 0, got {entry['value']!r}")
    elif not positive and value < 0:
        problems.append(f"{where}: must be >= 0, got {entry['value']!r}")
    return Sourced(value, str(source), str(entry.get("note", "")), estimate, rule)
