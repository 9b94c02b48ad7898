"""``import sweep`` (and ``pip install .``) stop with one message and the fix when ``kernels`` or
``grids`` is not this project's, e.g. Hugging Face's kernel-hub package ``kernels``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sweep import siblings

REPO = Path(__file__).resolve().parents[1]


def _import_sweep(path_first: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(path_first), str(REPO)])
    return subprocess.run([sys.executable, "-c", "import sweep"], cwd=path_first, env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_foreign_kernels_package_stops_import_sweep_with_the_fix(tmp_path):
    hub = tmp_path / "kernels"
    hub.mkdir()
    (hub / "__init__.py").write_text('"""A kernel hub."""\ndef get_kernel(repo_id): ...\n')
    (hub / "utils.py").write_text("")
    res = _import_sweep(tmp_path)
    assert res.returncode != 0
    last = res.stderr.strip().splitlines()[-1]
    assert "PackageClash" in last and "'kernels'" in last and "not accel-sweep's" in last
    assert "python3 -m venv" in last and "pipx" in last
    assert "grids" not in last.split("Fix:")[0]  # only the package that clashes is named


def test_files_overwritten_in_place_are_caught(tmp_path):
    """The same directory as sweep (one site-packages), our modules left behind by pip, but
    the __init__.py replaced by another distribution's."""
    site = tmp_path / "site"
    for name in ("kernels", "grids"):
        (site / name).mkdir(parents=True)
        files, defined = siblings.SIGNATURE[name]
        for f in files:
            (site / name / f).parent.mkdir(parents=True, exist_ok=True)  # e.g. grids/data/
            (site / name / f).write_text("")
        (site / name / "__init__.py").write_text(f"def {defined}(): ...\n")
    (site / "sweep").mkdir()
    code = ("import importlib.util as u, pathlib, sys; "
            f"spec = u.spec_from_file_location('siblings', {str(REPO / 'sweep' / 'siblings.py')!r}); "
            "s = u.module_from_spec(spec); spec.loader.exec_module(s); "
            f"print(repr(s.problem('kernels', pathlib.Path({str(site)!r}))))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)

    def problem() -> str:
        res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        return res.stdout.strip()

    assert problem() == "''"  # ours, in place
    (site / "kernels" / "__init__.py").write_text("from .hub import get_kernel\n")
    assert "has no evaluate_grid" in problem()


def test_our_own_install_passes_and_owners_are_read_per_name():
    siblings.check()
    owners = siblings.foreign_owners({"kernels": ["kernels", "accel-sweep"],
                                      "grids": ["accel_sweep"], "numpy": ["numpy"]})
    assert owners == {"kernels": ["kernels"]}
    assert "'kernels' by kernels" in siblings.clash_message(owners)
    assert siblings.foreign_owners({"sweep": ["accel-sweep"]}) == {}
