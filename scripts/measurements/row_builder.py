"""The one row builder of the converters: what every row of a source shares is said once, what every
row of one measured point shares once more, and each tidy row adds its metric and value.

    ROWS = RowBuilder(KEY, FILE, publisher="NVIDIA", engine="trtllm", printed={"hardware_raw": "{gpu}"})
    point = ROWS.point(r, hardware=hw, tp=tp, model=model, precision=prec, load="static", notes=notes)
    point.row(i, "ttft", ms(r["ttft_ms"]), suffix="ttft-p50", statistic="p50", skip=[...], notes=[...])

A column given (and not None) always wins; otherwise:

* ``id`` is ``<key>-<number>[-<suffix>]`` (``id_width`` digits), ``source_file`` the transcription;
* the columns of ``printed`` are templates of the raw row (``point(r)`` or ``row(raw=r)``): its
  text as printed, e.g. ``"{accelerator} ({system})"``; ``hardware_raw``, ``model_raw`` and
  ``engine_version`` default to the raw columns of the same name (:data:`SHARED_SET_PRINTED`);
* ``devices`` is tp x pp x ep x dp of the degrees given (when ``tp`` is), ``parallelism`` the layout
  name of the degrees (``devices`` standing for tp when tp is not given);
* ``batch`` is ``max`` on a ``max_load`` row, ``unit`` the metric's unit (schema ``metric_units``),
  ``scope`` ``per_system``, ``statistic`` ``max_load`` on a ``max_load`` row and else ``as_published``;
* ``skip`` starts with the catalog's reasons for ``hardware`` and ``model`` (unless
  ``catalog_check=False``), then the point's keys and the row's; ``notes`` likewise (one string or
  several; empty ones and repeats are dropped).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping

from scripts.measurements.common import METRIC_UNITS, catalog_reasons, layout_name, rid, row, source_file

DEGREES = ("tp", "pp", "ep", "dp")
#: the printed columns of the shared measurement set's format (``hardware,n_devices,engine,...``)
SHARED_SET_PRINTED = {
    "hardware_raw": "{hardware}",
    "model_raw": "{model}",
    "engine_version": "{engine_version}",
}


class RowBuilder:
    """Tidy rows of one source (or of one point of it: :meth:`point`)."""

    def __init__(
        self,
        key: str,
        file: str,
        *,
        id_width: int = 3,
        printed: Mapping[str, str] | None = None,
        catalog_check: bool = True,
        **cols: object,
    ) -> None:
        self.key, self.file, self.id_width, self.catalog_check = key, file, id_width, catalog_check
        #: column -> its text as a template of the raw row's columns, e.g. "{accelerator} ({system})"
        self.printed = {**SHARED_SET_PRINTED, **(printed or {})}
        self.cols: dict[str, object] = cols
        self.raw: Mapping[str, str] | None = None
        self.skip: tuple[str, ...] = ()
        self.notes: tuple[str, ...] = ()

    def point(
        self,
        raw: Mapping[str, str] | None = None,
        *,
        skip: str | Iterable[str] = (),
        notes: str | Iterable[str] = (),
        **cols: object,
    ) -> RowBuilder:
        """A builder whose rows all have these columns (the ``printed`` ones from ``raw``), skip keys
        and notes (one string or several), after those of this builder."""
        out = copy.copy(self)
        out.cols = {**self.cols, **cols}
        out.raw = self.raw if raw is None else raw
        out.skip, out.notes = (*self.skip, *_listed(skip)), (*self.notes, *_listed(notes))
        return out

    def row_id(self, number: int, suffix: str = "") -> str:
        return rid(self.key, number, self.id_width, suffix)

    def row(
        self,
        number: int,
        metric: str,
        value: object,
        *,
        suffix: str = "",
        raw: Mapping[str, str] | None = None,
        skip: str | Iterable[str] = (),
        notes: str | Iterable[str] = (),
        **cols: object,
    ) -> dict[str, str]:
        """One tidy row: data row ``number`` of the transcription (plus ``suffix`` in the id)."""
        b = self.point(raw, skip=skip, notes=notes, **cols)
        c = {k: v for k, v in b.cols.items() if v is not None}
        if b.raw is not None:
            c |= {col: text.format_map(b.raw) for col, text in b.printed.items() if col not in c}
        given = [c.get(d) for d in DEGREES]
        if c.get("tp"):
            c.setdefault("devices", math.prod(int(d) for d in given if d))
        if c.get("tp") or c.get("devices"):
            c.setdefault("parallelism", layout_name(c.get("tp") or c["devices"], *given[1:]))
        max_load = c.get("load") == "max_load"
        if max_load:
            c.setdefault("batch", "max")
        c.setdefault("unit", METRIC_UNITS[metric])
        c.setdefault("scope", "per_system")
        c.setdefault("statistic", "max_load" if max_load else "as_published")
        reasons = catalog_reasons(c["hardware"], c.get("model", "")) if b.catalog_check else []
        return row(
            id=self.row_id(number, suffix),
            source_file=source_file(self.file),
            metric=metric,
            value=value,
            skip=[*reasons, *b.skip],
            notes=b.notes,
            **c,
        )


def _listed(items: str | Iterable[str]) -> tuple[str, ...]:
    return (items,) if isinstance(items, str) else tuple(items)
