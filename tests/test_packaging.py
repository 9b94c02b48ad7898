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


def test_every_third_party_import_is_a_declared_dependency():
    """A module the package imports (at the top or inside a function) must be installed by
    `pip install .`; a fresh machine otherwise fails with an internal error."""
    import ast
    import re
    import sys

    # distribution names of [project] dependencies: "dask[distributed]>=2024.1" -> "dask"
    declared = {re.split(r"[\s\[<>=!~;]", d, maxsplit=1)[0].lower()
                for d in PYPROJECT["project"]["dependencies"]}
    assert {"numba", "numpy", "xarray", "netcdf4", "zarr"} <= declared
    aliases = {"netCDF4": "netcdf4", "distributed": "dask", "llvmlite": "numba"}
    ours = {"grids", "kernels", "sweep"}
    found = set()
    for pkg in ours:
        for path in (ROOT / pkg).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                for n in names:
                    top = n.split(".")[0]
                    if top not in ours and top not in sys.stdlib_module_names:
                        found.add(aliases.get(top, top))
    assert found <= declared, f"imported but not declared: {sorted(found - declared)}"


def test_a_missing_dependency_is_one_line_exit_2(monkeypatch, capsys):
    from sweep import cli

    def broken(args):
        raise ModuleNotFoundError("No module named 'scipy'", name="scipy")

    parser = cli.build_parser()
    args = parser.parse_args(["catalog", "engines"])
    monkeypatch.setattr(cli, "build_parser", lambda: type("P", (), {
        "parse_args": lambda self, argv: args})())
    args.func = broken
    assert cli.main(["catalog", "engines"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'scipy'" in err and "pip install" in err
