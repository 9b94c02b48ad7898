"""Shared test configuration: hypothesis profiles ``dev`` (fast, default) and ``ci`` (more examples).

Select with ``HYPOTHESIS_PROFILE=ci`` (``.ci/run`` does). Kernel tests run with or without
``NUMBA_DISABLE_JIT=1``; the ``nojit`` marker selects the ones worth running in pure Python.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "dev", max_examples=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "ci", max_examples=150, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
