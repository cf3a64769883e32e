"""CUDA tests run in Numba's CUDA simulator unless ``JITGRAPH_CUDA_TESTS=device`` asks for the real GPU.

The simulator is chosen by ``NUMBA_ENABLE_CUDASIM=1``, which numba.cuda reads once, when it is first imported.
jitgraph imports numba.cuda only when a graph is compiled with ``backend="cuda"``, and the CPU tests never do, so
setting the variable here (at collection, before any CUDA test runs) is safe in a pytest process that also runs
tests/cpu: the variable means nothing to Numba's CPU target. ``cuda_ready`` fails loudly if numba.cuda was imported
earlier without it.
"""

from __future__ import annotations

import os
import sys

import pytest

if os.environ.get("JITGRAPH_CUDA_TESTS") != "device" and "numba.cuda" not in sys.modules:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    if "numba.core.config" in sys.modules:
        # numba read its environment when it was imported (the CPU tests collected before this file import it);
        # numba.cuda decides simulator or driver from that config, so refresh it now, before any test module
        # collected after this one imports numba.cuda.
        from numba.core import config

        config.reload_config()


@pytest.fixture(scope="session", autouse=True)
def cuda_ready() -> None:
    from jitgraph.backends.cuda import runtime

    if os.environ.get("JITGRAPH_CUDA_TESTS") != "device":
        assert runtime.simulated(), ("numba.cuda was imported before tests/cuda/conftest.py could enable the "
                                     "simulator; run the CUDA tests in their own pytest process")
    runtime.require_cuda()
