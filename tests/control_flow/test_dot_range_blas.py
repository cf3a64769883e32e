"""A long ``np.dot`` of two row slices in a loop body (``dot_range``) goes to BLAS's dot for contiguous float
operands of 256 elements or more, and stays a loop below that or for strided operands: all agree with eager NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import jitgraph


def trisolve(L, b):
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        x[i] = (b[i] - np.dot(L[i, :i], x[:i])) / L[i, i]
    return x


def trisolve_columns(U, b):
    """Reads the transpose's rows: strided operands, the loop path."""
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        x[i] = (b[i] - np.dot(U[:i, i], x[:i])) / U[i, i]
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [trisolve, trisolve_columns])
def test_long_dots_agree_with_eager(fn, dtype) -> None:
    n = 300
    rng = np.random.default_rng(0)
    L = (np.tril(rng.uniform(-1, 1, (n, n))) + n * np.eye(n)).astype(dtype)
    if fn is trisolve_columns:
        L = np.ascontiguousarray(L.T)
    b = rng.standard_normal(n).astype(dtype)
    got, want = jitgraph.compile(fn)(L, b), fn(L, b)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == np.float32 else 1e-12)
