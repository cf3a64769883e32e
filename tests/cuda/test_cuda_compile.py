"""End to end: ``@jitgraph.compile(backend="cuda")`` on plain NumPy functions with host arguments.

The benchmark workloads (W1..W6 of benchmarks/workloads.py) at tiny sizes, compared with NumPy, including the
in-place Adam update and the MLP training step (matmul epilogues, reductions, transposed operands).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import jitgraph

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.workloads import WORKLOADS, make_inputs

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_matches_numpy(name: str) -> None:
    fn = WORKLOADS[name][1]
    inputs = make_inputs(name, scale=2e-4)
    compiled = jitgraph.compile(fn, backend="cuda", fullgraph=True)
    want_args = [a.copy() for a in inputs]
    got_args = [a.copy() for a in inputs]
    want = fn(*want_args)
    got = compiled(*got_args)
    rtol, atol = (1e-4, 1e-5) if name != "W5" else (1e-3, 1e-5)
    if want is None:
        assert got is None
    else:
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    for g, w in zip(got_args, want_args):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    (entry,) = [e for e in compiled.entries if e.compiled is not None]
    assert hasattr(entry.compiled, "plans") and entry.compiled.plans  # it really ran kernels
    assert entry.compiled.host_nodes == []
