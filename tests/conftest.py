"""Shared test configuration: hypothesis profiles ``dev`` (fast, default) and ``ci`` (more examples);
``triage`` (no shrinking: which tests fail, fast).

Select with ``HYPOTHESIS_PROFILE=ci`` (``.ci/run`` does). Kernel tests run with or without
``NUMBA_DISABLE_JIT=1``; the ``nojit`` marker selects the ones worth running in pure Python.
The session fixture :func:`compiled_kernels` compiles (or loads from the cache) both kernel entry
points once, before the first test, so compile time shows up in the session's setup
(``--durations`` names it) instead of in whichever test happens to call a kernel first.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, settings

settings.register_profile(
    "dev", max_examples=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "ci", max_examples=150, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(  # finding what fails quickly: no shrinking of failing examples
    "triage", max_examples=20, deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(scope="session", autouse=True)
def compiled_kernels():
    """Compile or load both entry points once per session (nothing to do with the JIT off)."""
    if os.environ.get("NUMBA_DISABLE_JIT", "0") in ("", "0"):
        import kernels

        kernels.compile_kernels()


@pytest.fixture(scope="session")
def default_grid():
    """The built-in default grid (``sweep run`` with no spec), evaluated once per session in
    memory (~5 s): the report's size budget and the docs' examples are stated for it."""
    import sweep

    return sweep.run(None, progress=False)
