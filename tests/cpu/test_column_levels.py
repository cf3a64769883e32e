"""Reductions over axis 0 whose results feed later work (batch norm forward and backward, column softmax): the
multi-level column template (column_sweep.levels_body) must give what eager NumPy gives."""

from __future__ import annotations

import numpy as np
import pytest

import jitgraph


def batchnorm_fwd(x, g, b):
    mu = x.mean(axis=0)
    xc = x - mu
    var = (xc * xc).mean(axis=0)
    return xc / np.sqrt(var + 1e-5) * g + b


def batchnorm_bwd(dy, x, g):
    n = x.shape[0]
    mu = x.mean(axis=0)
    xc = x - mu
    inv = 1.0 / np.sqrt((xc * xc).mean(axis=0) + 1e-5)
    xhat = xc * inv
    dxhat = dy * g
    dx = inv / n * (n * dxhat - dxhat.sum(axis=0) - xhat * (dxhat * xhat).sum(axis=0))
    return dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)


def softmax_cols(x):
    e = np.exp(x - x.max(axis=0))
    return e / e.sum(axis=0)


def minmax_cols(x):
    lo = x.min(axis=0, keepdims=True)
    return (x - lo) / (x.max(axis=0, keepdims=True) - lo + 1e-12), lo


@pytest.mark.parametrize("fn", [batchnorm_fwd, batchnorm_bwd, softmax_cols, minmax_cols])
@pytest.mark.parametrize(("shape", "dtype"), [((7, 13), "float32"), ((33, 300), "float64"),
                                              ((64, 40000), "float32")])
def test_column_levels_against_numpy(fn, shape, dtype):
    """(64, 40000) is above the parallel threshold: each thread gets a chunk of columns."""
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(shape).astype(dtype) for _ in range(2)] + \
        [rng.standard_normal(shape[1]).astype(dtype) + 2]
    nargs = fn.__code__.co_argcount
    args = args[:nargs] if fn is not batchnorm_fwd else [args[0], args[2], args[2] - 2]
    got = jitgraph.compile(fn)(*args)
    want = fn(*args)
    tol = 1e-4 if dtype == "float32" else 1e-10
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def test_batchnorm_backward_uses_the_column_template():
    x = np.ones((8, 16), np.float32)
    compiled = jitgraph.compile(batchnorm_bwd)
    compiled(x, x.copy(), x[0].copy())
    sources = [ks.source for st in compiled.stages() for ks in st.artifact.kernel_sources()]
    assert any("sweep over the rows" in s for s in sources)


def _mean_var(x):
    return x.mean(axis=0), x.var(axis=0), x.mean(axis=0, keepdims=True)


def _lone_sum(x):
    return x.sum(axis=0)


def _lone_max(x):
    return x.max(axis=0)


@pytest.mark.parametrize("shape", [(64, 33), (300, 7), (5, 2), (40, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [_mean_var, _lone_sum, _lone_max])
def test_column_sums_are_numpys_bit_for_bit(fn, shape, dtype) -> None:
    """NumPy adds the rows of a matrix with several columns one after another in the array's own dtype; the column
    template does the same (float32 accumulators there), so sums, means and variances over axis 0 are equal bit for
    bit -- a lone reduction over the rows included, which is a kernel now (both cores for large ones)."""
    x = (np.random.default_rng(3).standard_normal(shape) * 100).astype(dtype)
    f = jitgraph.compile(fn)
    got, want = f(x), fn(x)
    for g, w in zip(got if isinstance(want, tuple) else [got], want if isinstance(want, tuple) else [want]):
        assert g.dtype == w.dtype and g.shape == w.shape
        if shape[1] > 1:
            np.testing.assert_array_equal(g, w)
        else:  # one column: NumPy sums it pairwise, the kernel in float64
            np.testing.assert_allclose(g, w, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_a_large_lone_column_sum_is_a_kernel_equal_to_numpy() -> None:
    x = np.random.default_rng(4).standard_normal((1536, 1024)).astype(np.float32)  # past the parallel threshold
    assert "kernel fused_sum" in str(jitgraph.explain(_lone_sum)(x))
    np.testing.assert_array_equal(jitgraph.compile(_lone_sum)(x), _lone_sum(x))


def _doubled_sum(x):
    return (x * 2).sum(axis=0)


def test_a_column_major_matrix_keeps_accurate_column_sums() -> None:
    """NumPy sums a column-major matrix pairwise down each contiguous column; a float32 running sum over 200000 rows
    would be off by ~1e-5 (regression: the float32 accumulators are only for row-major operands)."""
    x = np.asfortranarray((np.random.default_rng(5).standard_normal((200_000, 3)) + 1000).astype(np.float32))
    np.testing.assert_allclose(jitgraph.compile(_doubled_sum)(x), _doubled_sum(x), rtol=1e-7)
    c = np.ascontiguousarray(x)
    np.testing.assert_array_equal(jitgraph.compile(_doubled_sum)(c), _doubled_sum(c))
