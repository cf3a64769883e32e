"""How the CPU driver spells NumPy calls (backends/cpu/numpy_calls.py): reductions as their ufunc's ``reduce``, and a
small ``sum(a * b)`` of two vectors as one BLAS dot (as np.linalg.norm computes it). Values and dtypes against eager
NumPy; the dot decision through ``explain``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers_cpu import backend_text, cost_model_on, driver_source  # noqa: F401 - the fixture by name

import jitgraph

pytestmark = pytest.mark.usefixtures("cost_model_on")  # the default cost model (helpers_cpu.py)


def _power_iteration(A, iters=5):
    v = np.ones(A.shape[0]) / math.sqrt(A.shape[0])
    for _ in range(iters):
        w = A @ v
        v = w / np.linalg.norm(w)
    return v @ A @ v, v


def test_a_norm_runs_as_one_dot_and_matches_eager():
    rng = np.random.default_rng(0)
    m = rng.standard_normal((5, 5))
    A = m @ m.T + 5 * np.eye(5)
    compiled = jitgraph.compile(_power_iteration)
    got, want = compiled(A), _power_iteration(A)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-13)
    assert "one BLAS dot" in backend_text(compiled) and ".dot(" in driver_source(compiled)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sum_of_a_product_of_vectors_matches_eager(dtype):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(7).astype(dtype), rng.standard_normal(7).astype(dtype)
    compiled = jitgraph.compile(lambda a, b: np.sum(a * b))
    got, want = compiled(a, b), np.sum(a * b)
    assert type(got) is type(want) and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-14)


def test_a_matrix_product_sum_is_not_a_dot():
    a = np.arange(6.0).reshape(2, 3)
    compiled = jitgraph.compile(lambda a, b: (a * b).sum())
    assert compiled(a, a + 1) == (a * (a + 1)).sum()
    assert "one BLAS dot" not in backend_text(compiled)


def _reductions(x, b, i):
    return (x.sum(axis=0), x.max(axis=1, keepdims=True), x.min(), np.prod(x, axis=(0, 1)), b.sum(), i.sum(axis=1),
            i.max())


def test_reductions_spelled_as_ufunc_reduce_match_eager():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4))
    b = x > 0
    i = np.arange(12, dtype=np.int8).reshape(3, 4)
    compiled = jitgraph.compile(_reductions)
    got, want = compiled(x, b, i), _reductions(x, b, i)
    for g, w in zip(got, want):
        assert type(g) is type(w) and g.dtype == w.dtype and np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=1e-15)



def _scalars(x, y):
    s = x.sum()
    m = y.max()
    return s * 2.0 + 1, s / m, s - m, s >= 3, (s * 3) == m, m / (s - s), s * 7


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_scalar_arithmetic_as_operators_matches_eager(dtype):
    """0-d NumPy values combined with Python's operators (NumPy's scalar math): values, dtypes and types as the
    ufuncs give them, division by zero included."""
    x = np.arange(1, 6).astype(dtype)
    y = (np.arange(4) * 2 + 1).astype(np.float32)
    compiled = jitgraph.compile(_scalars)
    with np.errstate(all="ignore"):
        want = _scalars(x, y)
    got = compiled(x, y)
    for g, w in zip(got, want):
        assert type(g) is type(w) and np.result_type(g) == np.result_type(w)
        np.testing.assert_array_equal(g, w)
    assert " / v" in driver_source(compiled)  # an operator, not the ufunc
