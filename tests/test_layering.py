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


# ------------------------------------------------------------------ the import graph of the packages
PACKAGES = ("grids", "kernels", "sweep")
#: sweep's rooms, lowest first: a room may import only rooms of a lower rank (and itself)
ROOM_RANK = {"results": 0, "execute": 1, "analysis": 1, "validate": 2, "report": 2, "cli": 3}


def module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports (at any depth of the file: lazy imports count)."""
    modules = {module_name(p): p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        deps: set[str] = set()
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                # `from pkg import mod` imports pkg.mod; `from mod import name` imports mod
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules
                           else node.module for a in node.names]
            for t in targets:
                # the longest prefix that is a project module
                parts = t.split(".")
                for k in range(len(parts), 0, -1):
                    cand = ".".join(parts[:k])
                    if cand in modules and cand != name:
                        deps.add(cand)
                        break
        graph[name] = deps
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """A cycle of the graph as a list of nodes, or [] when it is acyclic."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str]:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return [*stack[stack.index(m):], m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return []

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return []


def _without_package_inits(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """A package's ``__init__`` re-exporting its submodules is not a dependency of them: drop the
    edges from a package to the modules inside it."""
    return {n: {m for m in deps if not m.startswith(n + ".")} for n, deps in graph.items()}


def test_import_graph_has_no_cycles():
    cycle = find_cycle(_without_package_inits(import_graph()))
    assert not cycle, "import cycle: " + " -> ".join(cycle)


def test_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_sweep_rooms_only_import_downwards():
    """results <- execute, analysis <- validate <- cli (docs/architecture.md)."""
    bad = []
    for name, deps in import_graph().items():
        parts = name.split(".")
        if parts[0] != "sweep" or len(parts) < 2 or parts[1] not in ROOM_RANK:
            continue
        room = parts[1]
        for dep in deps:
            dparts = dep.split(".")
            if dparts[0] != "sweep":
                continue
            if len(dparts) < 2 or dparts[1] not in ROOM_RANK:
                bad.append(f"{name} imports the package root {dep}")
            elif dparts[1] != room and ROOM_RANK[dparts[1]] >= ROOM_RANK[room]:
                bad.append(f"{name} ({room}) imports {dep} ({dparts[1]})")
    assert not bad, bad


def test_every_room_says_what_it_holds():
    for room in ROOM_RANK:
        init = REPO / "sweep" / room / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc) > 20, f"sweep/{room}/__init__.py needs a docstring saying what it holds"


def test_the_report_is_a_leaf():
    """Only the CLI's report command and the package root (ds.sweep.report, at call time) import
    sweep.report, so the rest of the package never needs its plotting library."""
    allowed = {"sweep", "sweep.cli.report"}
    bad = [f"{name} imports {dep}" for name, deps in import_graph().items()
           for dep in deps if dep.startswith("sweep.report") and not name.startswith("sweep.report")
           and name not in allowed]
    assert not bad, bad


#: the size above which a module holds more than one job (issue 25; docs/architecture.md, "Where
#: each job lives"): split it by job instead of raising this
MAX_MODULE_LINES = 600


def test_no_module_is_over_600_lines():
    big = {str(p.relative_to(REPO)): n for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not big, f"split these modules by job: {big}"


def test_every_subpackage_of_grids_says_what_it_holds():
    for init in (REPO / "grids").glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc) > 20, f"{init.relative_to(REPO)} needs a docstring"
