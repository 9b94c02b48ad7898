"""Package layering: ``kernels`` imports neither ``grids`` nor ``sweep``; ``grids`` imports neither
``kernels`` nor ``sweep``; ``import sweep`` compiles no kernel."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FORBIDDEN = {"kernels": {"grids", "sweep"}, "grids": {"kernels", "sweep"}}


def imported_packages(path: Path, package: str) -> set[str]:
    """Top-level package of every import in a file (nested and conditional imports included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: stays inside the package
                out.add(package)
            elif node.module:
                out.add(node.module.split(".")[0])
        elif (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
              and getattr(node.func, "attr", getattr(node.func, "id", "")) in
              ("import_module", "__import__") and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            out.add(node.args[0].value.split(".")[0])
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports(package):
    files = sorted((REPO / package).rglob("*.py"))
    assert files
    bad = {}
    for f in files:
        hits = imported_packages(f, package) & FORBIDDEN[package]
        if hits:
            bad[str(f.relative_to(REPO))] = sorted(hits)
    assert not bad, f"{package} must not import {sorted(FORBIDDEN[package])}: {bad}"


def test_the_checker_sees_imports(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import os\nfrom grids.spec import x\ndef f():\n    import sweep.run\n"
                 "importlib.import_module('kernels.grid')\nfrom . import y\n")
    assert imported_packages(f, "pkg") == {"os", "grids", "sweep", "kernels", "pkg"}


PROBE = """
import json, sys
import sweep
import numba.core.registry
from numba.core.dispatcher import Dispatcher
compiled = {}
for name, mod in list(sys.modules.items()):
    if name == "kernels" or name.startswith("kernels."):
        for attr, obj in vars(mod).items():
            if isinstance(obj, Dispatcher) and obj.signatures:
                compiled[f"{name}.{attr}"] = [str(s) for s in obj.signatures]
print(json.dumps({"compiled": compiled,
                  "kernels_modules": sorted(m for m in sys.modules if m.startswith("kernels"))}))
"""


def test_import_sweep_compiles_no_kernel():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    res = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout.strip().splitlines()[-1])
    assert report["compiled"] == {}, f"import sweep compiled kernels: {report['compiled']}"
    # stronger: the kernel modules (and numba) are not even imported until first use
    assert "kernels.grid" not in report["kernels_modules"], report["kernels_modules"]
    assert "kernels.roofline" not in report["kernels_modules"], report["kernels_modules"]


def test_import_grids_pulls_in_neither_kernels_nor_numba():
    res = subprocess.run(
        [sys.executable, "-c", "import sys, grids; grids.load_spec(None); "
         "print(sorted(m for m in sys.modules if m.split('.')[0] in "
         "('kernels', 'sweep', 'numba')))"],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
        timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"
