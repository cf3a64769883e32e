"""Differential tests of the six benchmark workloads: compiled (CPU backend) == eager NumPy.

The workloads are the plain NumPy functions of ``benchmarks/workloads.py`` at tiny sizes, compiled with
``jitgraph.compile(fullgraph=True)``; each run also checks that the CPU backend really ran fused kernels (no
fallback to eager). Inputs come contiguous, transposed (Fortran-ordered, or reversed for 1-D) and sliced
(every other element), and in-place workloads must update the caller's (possibly strided) arrays.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import jitgraph

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks import workloads as W

SCALE = 2e-3


def transposed(x: np.ndarray) -> np.ndarray:
    """Same values, non-C layout: Fortran order for matrices, negative stride for vectors."""
    if x.ndim == 2:
        return np.ascontiguousarray(x.T).T
    return x[::-1].copy()[::-1] if x.ndim == 1 else x


def sliced(x: np.ndarray) -> np.ndarray:
    return np.repeat(x, 2, axis=-1)[..., ::2] if x.ndim else x


LAYOUTS = {"contiguous": lambda x: x.copy(), "transposed": transposed, "sliced": sliced}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("name", list(W.WORKLOADS))
def test_workload_float32(name, layout):
    run_workload(name, "float32", layout)


@pytest.mark.parametrize("name", list(W.WORKLOADS))
def test_workload_float64(name):
    run_workload(name, "float64", "contiguous")


def run_workload(name: str, dtype: str, layout: str) -> None:
    fn = W.WORKLOADS[name][1]
    base = W.make_inputs(name, SCALE, dtype)
    make = LAYOUTS[layout]
    mine, ref = [make(x) for x in base], [make(x) for x in base]
    compiled = jitgraph.compile(fn, fullgraph=True, backend="cpu")
    got = compiled(*mine)
    want = fn(*ref)
    assert not compiled.break_reasons()
    (graph,) = compiled.graphs()
    assert any(n.op == "fused" for n in graph.nodes), "the CPU backend fused nothing"
    rtol = 2e-3 if name == "W5" and dtype == "float32" else (2e-5 if dtype == "float32" else 1e-10)
    if want is not None:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * 1e-2)
        assert np.asarray(got).dtype == np.asarray(want).dtype
    for a, b in zip(mine, ref):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * 1e-2)
    # A second call takes the cached path and must agree as well.
    again = [make(x) for x in base]
    ref2 = [make(x) for x in base]
    got2, want2 = compiled(*again), fn(*ref2)
    if want2 is not None:
        np.testing.assert_allclose(got2, want2, rtol=rtol, atol=rtol * 1e-2)
    for a, b in zip(again, ref2):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * 1e-2)
