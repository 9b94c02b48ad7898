"""docs/glossary.md is the output of `sweep glossary` (generated from the registries)."""

from __future__ import annotations

from pathlib import Path

from sweep.cli.glossary import glossary_markdown
from sweep.results.variables import COORDS, COORDS_2D, DIM_ATTRS, VARIABLES

DOC = Path(__file__).resolve().parents[1] / "docs" / "glossary.md"


def test_glossary_doc_is_current():
    assert DOC.read_text() == glossary_markdown(), \
        "regenerate it: sweep glossary > docs/glossary.md"


def test_glossary_names_everything_with_units():
    text = glossary_markdown()
    for name in (*VARIABLES, *DIM_ATTRS, *(c[1] for c in (*COORDS, *COORDS_2D))):
        assert f"`{name}`" in text
    for v in VARIABLES.values():
        assert f"| `{v.name}` | {v.units} |" in text
