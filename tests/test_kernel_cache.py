"""The kernel cache is relocatable: what ``pip install .`` compiles in the build tree
(setup.py) is loaded, not recompiled, from the installed copy (kernels/accelerate.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROBE = textwrap.dedent('''
    from kernels.accelerate import serial_jit


    @serial_jit
    def probe(x):
        return 2.0 * x + 1.0
''')

RUN = textwrap.dedent('''
    import json, sys
    from kernels import _probe, accelerate
    value = _probe.probe(3.0)
    stats = _probe.probe.stats
    print(json.dumps({"value": value, "hits": sum(stats.cache_hits.values()),
                      "misses": sum(stats.cache_misses.values()), "dir": accelerate._cache_dir}))
''')


def _run(tree: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT", "NUMBA_CACHE_LOCATOR_CLASSES")}
    env["PYTHONPATH"] = str(tree)
    proc = subprocess.run([sys.executable, "-c", RUN], cwd=tree, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="needs the JIT")
def test_a_cache_built_in_one_place_is_loaded_in_another(tmp_path):
    built = tmp_path / "build" / "lib"
    shutil.copytree(ROOT / "kernels", built / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (built / "kernels" / "_probe.py").write_text(PROBE)

    first = _run(built)
    assert first["value"] == 7.0 and first["misses"] == 1 and first["hits"] == 0
    assert Path(first["dir"]).parent == built / "kernels" / "__pycache__"

    installed = tmp_path / "site-packages"
    shutil.copytree(built, installed)  # what the wheel carries to the install location
    second = _run(installed)
    assert second["dir"].startswith(str(installed))
    assert second["value"] == 7.0 and second["hits"] == 1 and second["misses"] == 0


def test_the_cache_key_follows_every_kernel_source_and_the_versions(tmp_path, monkeypatch):
    from kernels import accelerate

    tree = tmp_path / "kernels"
    shutil.copytree(ROOT / "kernels", tree, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(accelerate, "KERNELS_DIR", tree)
    key = accelerate.cache_key()
    assert key == accelerate.cache_key()
    params = tree / "params.py"
    params.write_text(params.read_text() + "\n# an edit\n")
    edited = accelerate.cache_key()
    assert edited != key
    monkeypatch.setattr(accelerate.numba, "__version__", "0.0.0")
    assert accelerate.cache_key() != edited


def test_a_read_only_install_copies_its_shipped_cache_to_the_user_cache(tmp_path, monkeypatch):
    from kernels import accelerate

    tree = tmp_path / "site-packages" / "kernels"
    shutil.copytree(ROOT / "kernels", tree, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(accelerate, "KERNELS_DIR", tree)
    shipped = tree / "__pycache__" / f"numba-{accelerate.cache_key()}"
    shipped.mkdir(parents=True)
    (shipped / "grid._sweep-71.py311.nbi").write_bytes(b"index")
    real = accelerate._writable_dir
    monkeypatch.setattr(accelerate, "_writable_dir", lambda p: p != shipped and real(p))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    chosen = Path(accelerate._choose_cache_dir())
    assert chosen == tmp_path / "cache" / "accel-sweep" / shipped.name
    assert (chosen / "grid._sweep-71.py311.nbi").read_bytes() == b"index"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    assert accelerate._choose_cache_dir() is None  # the user's NUMBA_CACHE_DIR wins
