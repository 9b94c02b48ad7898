"""mypy finds no error in grids, kernels and sweep, with the settings of pyproject.toml
([tool.mypy]: check_untyped_defs, the stub packages of the test extra). By hand: ``python -m
mypy`` from the repository root (docs/architecture.md, "Tooling")."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from mypy import api

REPO = Path(__file__).resolve().parents[1]
#: mypy's cache, kept between runs of this checkout (a cold run takes about a minute, a warm one
#: seconds); outside the tree, so that nothing is written into the repository
CACHE = Path(tempfile.gettempdir()) / (
    "accel-sweep-mypy-" + hashlib.sha256(str(REPO).encode()).hexdigest()[:12])


def test_mypy_finds_no_error(monkeypatch):
    monkeypatch.chdir(REPO)
    monkeypatch.delenv("MYPYPATH", raising=False)
    stdout, stderr, status = api.run(["--config-file", str(REPO / "pyproject.toml"),
                                      "--cache-dir", str(CACHE), "grids", "kernels", "sweep"])
    assert status == 0, f"mypy found errors:\n{stdout}{stderr}"
