"""Every data file the code reads ships with the package (a source checkout hides a missing
package-data glob: the installed wheel would lack the file)."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


@pytest.mark.parametrize("package", ["grids", "sweep"])
def test_every_data_file_matches_a_package_data_glob(package):
    globs = PYPROJECT["tool"]["setuptools"]["package-data"][package]
    base = ROOT / package
    files = [p.relative_to(base).as_posix() for p in (base / "data").rglob("*")
             if p.is_file() and "__pycache__" not in p.parts]
    assert files
    missing = [f for f in files if not any(fnmatch.fnmatchcase(f, g) and
                                           f.count("/") == g.count("/") for g in globs)]
    assert not missing, f"add package-data globs for {missing} in pyproject.toml"
