"""Test-wide settings: a reproducible hypothesis profile for CI, and the verifier after every pass."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, max_examples=40, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

os.environ.setdefault("JITGRAPH_VERIFY", "1")
os.environ.setdefault("JITGRAPH_SMALL_KERNELS", "1")  # kernel tests use tiny arrays (tests/cpu/test_numpy_groups: 0)
# Many tests count kernel runs or check mode == "graph": no measured tier-down (tests/jit/test_tiering.py turns it on).
os.environ.setdefault("JITGRAPH_TIER_DOWN", "0")
