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


# ``np.outer`` is rewritten into the broadcast product NumPy defines it as (passes/simplify.py ``outer_as_multiply``),
# so ``A + 0.5 * np.outer(u, v)`` is one fused pass: dtypes, shapes (operands ravelled) and values stay NumPy's.
OUTER_OPERANDS = [
    (np.arange(5, dtype=np.float32), np.linspace(-1, 1, 4).astype(np.float32)),
    (np.arange(5, dtype=np.float32), np.linspace(-1, 1, 4)),  # float32 x float64 -> float64
    (np.arange(6, dtype=np.int8).reshape(2, 3), np.array([200, 7], dtype=np.uint8)),  # ravelled; int16, wraps
    (np.array([True, False, True]), np.array([True, True])),  # bool: logical and
    (np.array([1 + 2j, -1j]), np.arange(3, dtype=np.float32)),
    (np.arange(12.0)[::3], np.array([np.inf, -0.0, np.nan])),  # strided; inf * 0 and NaN as NumPy
]


@pytest.mark.parametrize(("a", "b"), OUTER_OPERANDS)
def test_outer_fused_matches_eager(a, b) -> None:
    def outer_update(c, u, v):
        return c + 0.5 * np.outer(u, v)

    c = np.ones((a.size, b.size), dtype=np.result_type(a, b))
    with np.errstate(all="ignore"):
        want = outer_update(c, a, b)
        got = jitgraph.compile(outer_update)(c, a, b)
        plain = jitgraph.compile(lambda u, v: np.outer(u, v))(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert plain.dtype == np.outer(a, b).dtype
    np.testing.assert_array_equal(plain, np.outer(a, b))


def test_outer_in_a_loop_body_matches_eager() -> None:
    def rank_one_updates(A, u, v, n):
        for k in range(n):
            A = A - np.outer(u, v) * (1.0 / (k + 1))
        return A

    rng = np.random.default_rng(1)
    A, u, v = rng.standard_normal((4, 3)), rng.standard_normal(4), rng.standard_normal(3)
    np.testing.assert_allclose(jitgraph.compile(rank_one_updates)(A, u, v, 20), rank_one_updates(A, u, v, 20),
                               rtol=1e-13)
