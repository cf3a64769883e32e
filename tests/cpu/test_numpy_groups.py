"""The cost model's fallback inside a graph (issue 21): a fused group runs as NumPy calls in the compiled driver when
NumPy is as fast (one op) or the arrays are too small for a kernel launch to pay off; ``explain`` says which and why.
Also: var/std become the moments NumPy computes (so they fuse), and the driver spells NumPy calls as methods.

These tests assert the decision and the values against eager NumPy, never timings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers_cpu import backend_text, cost_model_on, driver_source  # noqa: F401 - the fixture by name

import jitgraph
from jitgraph.ir.ops.cost import GroupWork, OpWork, numpy_is_enough

pytestmark = pytest.mark.usefixtures("cost_model_on")  # the default cost model (helpers_cpu.py)


def _fma(a, b, c):
    return a * b + c


def test_tiny_group_runs_as_numpy_and_matches_eager():
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(16).astype(np.float32) for _ in range(3))
    compiled = jitgraph.compile(_fma)
    np.testing.assert_array_equal(compiled(a, b, c), _fma(a, b, c))
    text = backend_text(compiled)
    assert "runs as NumPy" in text and "too small for a kernel launch to pay off" in text
    assert "Kv" not in driver_source(compiled)  # no kernel launch in the driver


def test_large_group_keeps_its_kernel():
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(50_000) for _ in range(3))
    compiled = jitgraph.compile(_fma)
    np.testing.assert_allclose(compiled(a, b, c), _fma(a, b, c), rtol=1e-15)
    text = backend_text(compiled)
    assert "kernel fused_multiply_add" in text and "runs as NumPy" not in text


def test_one_op_group_runs_as_numpy():
    x = np.linspace(-1, 1, 1000)
    compiled = jitgraph.compile(lambda x: np.maximum(x, 0))
    np.testing.assert_array_equal(compiled(x), np.maximum(x, 0))
    assert "one maximum over 1000 elements" in backend_text(compiled)


def test_small_reduction_group_as_numpy_matches_eager_bits():
    """Run as NumPy, a float32 group gives NumPy's own pairwise sums: exactly the eager bits."""
    x = np.random.default_rng(2).standard_normal((4, 8)).astype(np.float32)

    def f(x):
        return (x * x).sum(axis=1)

    compiled = jitgraph.compile(f)
    got = compiled(x)
    assert "runs as NumPy" in backend_text(compiled)
    np.testing.assert_array_equal(got, f(x))
    assert got.dtype == np.float32


def test_small_kernels_env_keeps_the_kernel(monkeypatch):
    monkeypatch.setenv("JITGRAPH_SMALL_KERNELS", "1")
    a, b, c = (np.arange(16, dtype=np.float32) + k for k in range(3))
    compiled = jitgraph.compile(_fma)
    np.testing.assert_array_equal(compiled(a, b, c), _fma(a, b, c))
    assert "kernel fused_multiply_add" in backend_text(compiled)


def test_cost_model_estimates():
    def work(ops: int, elements: int, itemsize: int = 4) -> GroupWork:
        return GroupWork(tuple(OpWork("multiply", elements, False, elements) for _ in range(ops)), 0, elements,
                         ops + 1, itemsize, parallel_from=1 << 20)

    assert numpy_is_enough(work(2, 16)) is not None  # two calls beat a launch
    assert numpy_is_enough(work(2, 100_000)) is None  # fusion saves a pass over memory
    assert numpy_is_enough(work(8, 16)) is None  # eight calls cost more than one launch
    assert "one multiply" in numpy_is_enough(work(1, 100_000))
    big = GroupWork((OpWork("exp", 1 << 21, False, 1 << 21),), 0, 1 << 21, 2, 4, parallel_from=1 << 20)
    assert numpy_is_enough(big) is None  # a kernel split across threads


def _dense_relu(x, w, b):
    return np.maximum(x @ w + b, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_tiny_product_with_its_epilogue_runs_as_numpy(dtype):
    """``x @ w + b`` over 5x4 @ 4x6: the product and its two ops as NumPy calls (the launch would cost more), the
    very values eager computes; at (256, 512) the product keeps its fused epilogue kernel."""
    rng = np.random.default_rng(4)
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in ((5, 4), (4, 6), (6,)))
    compiled = jitgraph.compile(_dense_relu)
    got = compiled(x, w, b)
    np.testing.assert_array_equal(got, _dense_relu(x, w, b))
    assert got.dtype == dtype
    assert "a product and 2 ops over 30 elements: too small for a kernel launch" in backend_text(compiled)
    assert "Kv" not in driver_source(compiled)
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in ((256, 64), (64, 512), (512,)))
    big = jitgraph.compile(_dense_relu)
    np.testing.assert_allclose(big(x, w, b), _dense_relu(x, w, b), rtol=1e-5)
    assert "Kv" in driver_source(big)


def test_cost_model_weighs_a_product_on_both_sides():
    def work(elements: int, ops: int = 2) -> GroupWork:
        return GroupWork(tuple(OpWork("add", elements, False, elements) for _ in range(ops)), 0, elements, 4, 4,
                         parallel_from=1 << 20, blas=True)

    assert "a product and 2 ops" in numpy_is_enough(work(30))
    assert numpy_is_enough(work(100_000)) is None  # the epilogue fused saves passes over the product
    assert numpy_is_enough(work(100_000, ops=1)) is None  # one op after a product is no lone NumPy call


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(64, 48), (7, 300)])
def test_var_and_std_fuse_and_match_eager(dtype, shape):
    x = np.random.default_rng(3).standard_normal(shape).astype(dtype) * 3 + 1

    def f(x):
        return x.mean(axis=0), x.var(axis=0), x.std(axis=1, ddof=1, keepdims=True), np.var(x)

    compiled = jitgraph.compile(f)
    got, want = compiled(x), f(x)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype and np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    text = backend_text(compiled)
    assert "var via NumPy" not in text and "std via NumPy" not in text


def test_var_declined_where_numpy_differs():
    """float16 (NumPy's mean sums in float32) and n - ddof <= 0 keep NumPy's own var call."""
    h = np.arange(12, dtype=np.float16).reshape(3, 4)

    def f(x):
        return x.var(axis=0), x.var(axis=1, ddof=4)

    compiled = jitgraph.compile(f)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        want = f(h)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "Degrees of freedom <= 0", as eager
        got = compiled(h)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert "var via NumPy" in backend_text(compiled)


def test_driver_spells_transpose_and_reductions_as_methods():
    rng = np.random.default_rng(4)
    X, v = rng.standard_normal((50, 20)), rng.standard_normal(50)

    def f(X, v):
        return X.T @ v, X.sum(axis=0), X.max(axis=1, keepdims=True)

    compiled = jitgraph.compile(f)
    for g, w in zip(compiled(X, v), f(X, v)):
        np.testing.assert_array_equal(g, w)
    source = driver_source(compiled)
    # sum and max as their ufunc's reduce (numpy_calls.py), called directly rather than through the method
    assert ".T  #" in source and ", (0,), None, None, False)  # sum" in source and ", (1,), None, None, True)  # max" \
        in source
