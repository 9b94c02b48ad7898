"""Every command and code block of README.md and docs/*.md runs, and prints what the docs show
(scripts/docs.py; ``python -m scripts.docs --update`` rewrites the outputs after a change)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from scripts import docs

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_every_block_of_the_docs_runs_and_prints_what_they_show(tmp_path):
    """One pass over README.md and docs/*.md in a fresh directory (the README's `sweep run` writes
    the default grid there, ~5 s on a quiet machine, for every later block)."""
    lines: list[str] = []
    bad = docs.run_files(docs.doc_files(), workdir=tmp_path, log=lines.append)
    report = "\n\n".join(f"{b.where}:\n" + "\n".join(b.problems) for b in bad)
    assert not bad, (f"{len(bad)} docs block(s) differ from the code; fix the docs or run "
                     f"`python -m scripts.docs --update`:\n\n{report[:20000]}")
    ran = sum(int(m.group(1)) for ln in lines if (m := re.search(r": (\d+) block", ln)))
    assert ran >= 30  # the runner found the blocks (README 9, analysis 8, spec 5, ...)


def test_the_runner_checks_and_rewrites_outputs(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("Intro.\n\n    $ echo hello\n    hallo\n\n```python\n>>> 1 + 1\n3\n"
                  ">>> print('a b')\na   b\n```\n\n<!-- docs: skip: not runnable -->\n```python\n"
                  "raise SystemExit\n```\n\n<!-- docs: file s.toml -->\n```toml\nx = [\n```\n\n"
                  "```\n$ cat s.toml; exit 3\nx = [\n$ echo $?\n3\n```\n", encoding="utf-8")
    orig = docs.ROOT
    docs.ROOT = tmp_path
    try:
        bad = docs.run_files([md], workdir=tmp_path, log=lambda *_: None)
        assert [b.start for b in bad] == [2, 6]  # echo hallo, 1 + 1; print is whitespace-equal
        docs.run_files([md], update=True, workdir=tmp_path, log=lambda *_: None)
        text = md.read_text(encoding="utf-8")
        assert "    $ echo hello\n    hello\n" in text and ">>> 1 + 1\n2\n" in text
        assert "a   b" in text  # an equal output is left as the docs wrote it
        assert docs.run_files([md], workdir=tmp_path, log=lambda *_: None) == []
    finally:
        docs.ROOT = orig


def test_timings_are_masked():
    a = "wall time : 4.13 s (start-up 0.53 s)\ncreated 2026-11-23T10:00:00Z"
    b = "wall time : 15.0 s (start-up 1.8 s)\ncreated 2026-11-26T12:00:34Z"
    assert docs.mask(a) == docs.mask(b)
    assert docs.keep_volatile(a.splitlines(), b.splitlines()) == a.splitlines()


def test_the_class_defaults_table_is_classes_toml():
    """docs/catalog.md section 2.3 shows grids/data/classes.toml as it is."""
    data = tomllib.loads((ROOT / "grids" / "data" / "classes.toml").read_text(encoding="utf-8"))
    lines = (ROOT / "docs" / "catalog.md").read_text(encoding="utf-8").splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("| class |"))
    cols = [c.strip() for c in lines[head].strip("|").split("|")]
    names = {"flops_eff": "flops_efficiency", "bw_eff": "bandwidth_efficiency"}
    rows = {}
    for ln in lines[head + 2:]:
        if not ln.startswith("|"):
            break
        cells = [c.strip() for c in ln.strip("|").split("|")]
        rows[cells[0].strip("`")] = dict(zip(cols, cells))
    assert set(rows) == set(data)
    for cls, row in rows.items():
        for col in cols[2:]:
            value = data[cls][names.get(col, col)]["value"]
            shown = row[col]
            assert shown == (f"{value:.2f}" if isinstance(value, float) else str(value)), \
                (cls, col, shown, value)
