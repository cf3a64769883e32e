"""Rows of ``benchmarks/floor.py`` that ran slower than eager NumPy (issue 21), checked against eager here.

The loop driver folds a float max/min through ``jg_max_step`` (``llvm.maximum``, which LLVM vectorises) instead of
``jg_max_acc``'s two selects (scalar): the results must stay NumPy's -- same dtype (NEP 50: a float32 array's max
stays float32), same iteration count of a ``while`` loop on it, NaN propagated, values equal under ``==``.
"""

from __future__ import annotations

import numpy as np
import pytest

import jitgraph


def counted_newton(a):
    x = 0.5 * (a + 1.0)
    err = np.max(np.abs(x * x - a))
    steps = 0
    while err > 1e-4:
        x = 0.5 * (x + a / x)
        err = np.max(np.abs(x * x - a))
        steps += 1
    return x, err, steps


def _driver_source(compiled) -> str:
    """The loop drivers' sources of a compiled function's cache entries (each one graph)."""
    entries = compiled.explain().entries
    assert all(e.mode == "graph" for e in entries), [e.break_reason for e in entries]
    return "\n".join(e.compiled.source for e in entries)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_newton_while_matches_eager_and_vectorises_its_max(dtype) -> None:
    a = (np.abs(np.random.default_rng(0).standard_normal(300)) + 0.1).astype(dtype)
    compiled = jitgraph.compile(counted_newton)
    got, want = compiled(a), counted_newton(a)
    assert "jg_max_step(" in _driver_source(compiled) and "jg_max_acc(" not in _driver_source(compiled)
    assert got[0].dtype == want[0].dtype == dtype
    assert type(got[1]) is type(want[1]) and got[1] == want[1]  # the float32 max stays a float32 scalar
    assert got[2] == want[2]  # same iteration count
    np.testing.assert_array_equal(got[0], want[0])


def test_loop_max_min_propagate_nan_and_keep_values() -> None:
    def body(x, n):
        hi = np.float32(-1.0)
        lo = np.float32(1.0)
        for t in range(n):
            hi = np.maximum(hi, np.max(x * t))
            lo = np.minimum(lo, np.min(x - t))
        return hi, lo

    special = np.array([0.0, -0.0, 3.0, -np.inf, np.inf, 1e-30, -2.5], np.float32)
    fn = jitgraph.compile(body)
    for x in (special, np.append(special, np.float32(np.nan)), -np.abs(special)):
        got, want = fn(x, 50), body(x, 50)
        for g, w in zip(got, want):
            assert type(g) is type(w)
            assert (np.isnan(g) and np.isnan(w)) or g == w
    assert "jg_min_step(" in _driver_source(fn)
