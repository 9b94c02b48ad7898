"""Build hook: ``pip install .`` compiles the numba kernels once, in the build tree, so that the
installed package ships their cache and the first ``sweep run`` loads them instead of compiling.

Everything else about the package is in pyproject.toml. The step runs ``python -m kernels`` on the
built copy of the package (kernels/accelerate.py explains why that cache is found after the
install). It is skipped for editable installs (their kernels compile on first use, into the
source tree) and when ``ACCEL_SWEEP_NO_KERNEL_CACHE=1``; if it fails, the install goes on and
the kernels compile on first use, as they would without it.
"""

import os
import re
import shutil
import subprocess
import sys
import time

from setuptools import setup
from setuptools.command.build_py import build_py


def _tell(message):
    """Print ``message``; pip hides a build's output (the user sees only "still running..."
    for the minute the kernels compile), so also write it to the terminal, if there is one."""
    print(message, flush=True)
    if sys.stdout.isatty():
        return
    try:
        with open("/dev/tty", "w", encoding="utf-8") as tty:
            tty.write(f"\n{message}\n")
    except OSError:  # no controlling terminal (CI, a batch job): the log has it
        pass


def check_environment() -> None:
    """Stop before installing into an environment where another distribution owns a top-level
    ``kernels``, ``grids`` or ``sweep`` (e.g. Hugging Face's ``kernels``): the two would overwrite
    each other's files. Asked of the target interpreter without the build's isolation (no
    PYTHONPATH, outside the source tree); if it cannot answer, the install goes on and
    ``import sweep`` makes the same check."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    try:
        proc = subprocess.run([sys.executable, os.path.join(here, "sweep", "siblings.py")],
                              env=env, cwd=os.path.expanduser("~"), capture_output=True,
                              text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return
    if proc.returncode == 3:
        raise SystemExit(f"accel-sweep: {proc.stdout.strip()}")


class BuildPyWithKernelCache(build_py):
    def run(self):
        check_environment()
        super().run()
        if getattr(self, "editable_mode", False) or os.environ.get("ACCEL_SWEEP_NO_KERNEL_CACHE") == "1":
            return
        # pip's isolated build environment reaches its packages through PYTHONPATH: keep it
        path = [os.path.abspath(self.build_lib), os.environ.get("PYTHONPATH", "")]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in path if p))
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        for name in ("NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT", "NUMBA_CACHE_LOCATOR_CLASSES"):
            env.pop(name, None)
        _tell("accel-sweep: compiling the kernels into the package (~1 min on two cores; "
              "ACCEL_SWEEP_NO_KERNEL_CACHE=1 skips this)")
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "kernels"], env=env, cwd=self.build_lib,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            _tell(f"accel-sweep: could not build the kernel cache (the kernels will compile on "
                  f"first use instead):\n{proc.stderr[-2000:]}")
            return
        _tell(f"accel-sweep: {proc.stdout.strip()} [{time.perf_counter() - t0:.0f} s]")
        # a reused build tree keeps caches of earlier sources: ship only this one
        used = re.search(r"cache: (\S+)", proc.stdout)
        pycache = os.path.join(self.build_lib, "kernels", "__pycache__")
        if used and os.path.isdir(pycache):
            for name in os.listdir(pycache):
                path = os.path.join(pycache, name)
                if name.startswith("numba-") and os.path.abspath(path) != os.path.abspath(used[1]):
                    shutil.rmtree(path, ignore_errors=True)


setup(cmdclass={"build_py": BuildPyWithKernelCache})
