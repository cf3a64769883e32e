"""Graphs of matrix-vector products with linear epilogues run as one Numba function calling BLAS gemv directly
(backends/cpu/blas_program.py).

Each case compares with eager NumPy bit for bit (the same gemv, the same elementwise ops in the same dtype) and
checks whether the program ran, so a silent fallback or a wrong take-over fails here.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgraph
from jitgraph.backends.cpu import blas_program

pytestmark = pytest.mark.skipif(blas_program._cblas(np.dtype(np.float64)) is None,
                                reason="NumPy's BLAS has no scipy_openblas64_ gemv")


def atax(A, x):
    return A.T @ (A @ x)


def gesummv(A, B, x):
    return 1.5 * (A @ x) + 1.2 * (B @ x)


def mvt(A, x1, y1):
    return x1 + A @ y1, x1 - A.T @ y1


def vecmat_bias(v, A, b):
    return np.dot(v, A) + b


def linreg_grad(X, y, w):
    return X.T @ (X @ w - y) / X.shape[0]


def _program(compiled):
    (entry,) = compiled.entries
    return getattr(entry.compiled, "blas_program", None)


def _check(fn, *args, expect_program=True):
    want = fn(*args)
    compiled = jitgraph.compile(fn)
    got = compiled(*args)
    got = compiled(*args)  # the warm path (the generated runner)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert type(g) is np.ndarray and g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    program = _program(compiled)
    assert (program is not None and program._function is not None) == expect_program
    return compiled


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products_and_epilogues_match_numpy_bit_for_bit(dtype):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((7, 5)).astype(dtype)
    B = rng.standard_normal((7, 5)).astype(dtype)
    x, y7 = rng.standard_normal(5).astype(dtype), rng.standard_normal(7).astype(dtype)
    _check(atax, A, x)
    _check(gesummv, A, B, x)
    _check(mvt, A[:, :5][:5], x, x.copy())
    _check(vecmat_bias, y7, A, x)
    _check(linreg_grad, A, y7, x)


@pytest.mark.parametrize(("make", "program"), [
    (np.asfortranarray, True),  # a transposed-layout argument: gemv's trans flag
    (lambda A: np.concatenate([A, A], axis=1)[:, :5], False),  # rows further apart than their length: NumPy's path
])
def test_layouts(make, program):
    rng = np.random.default_rng(1)
    A = make(rng.standard_normal((7, 5)))
    _check(atax, A, rng.standard_normal(5), expect_program=program)
    _check(vecmat_bias, rng.standard_normal(7), A, rng.standard_normal(5), expect_program=program)


def test_strided_and_reversed_operands_keep_the_driver():
    rng = np.random.default_rng(2)
    big = rng.standard_normal((14, 15))
    x = rng.standard_normal(10)[::2]
    _check(atax, big[::2, ::3], x, expect_program=False)
    _check(atax, big[:7, :5], x[::-1], expect_program=False)


def test_other_arrays_than_compiled_for_take_the_ordinary_driver():
    rng = np.random.default_rng(5)
    A, x = rng.standard_normal((6, 4)), rng.standard_normal(4)
    compiled = _check(atax, A, x)
    stage = compiled.entries[0].compiled
    ro = A.copy()
    ro.flags.writeable = False  # another Numba type
    np.testing.assert_array_equal(stage([ro, x])[0], atax(A, x))
    np.testing.assert_array_equal(compiled(ro, x), atax(A, x))  # a row-strided matrix, a reversed vector


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (1, 1), (0, 0)])
def test_empty_and_one_element(shape):
    A = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) + 1
    _check(atax, A, np.ones(shape[1]))


def test_nep50_constants_keep_float32():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((9, 4)).astype(np.float32)
    compiled = _check(linreg_grad, X, rng.standard_normal(9).astype(np.float32),
                      rng.standard_normal(4).astype(np.float32))
    assert "Df" in _program(compiled).source


def test_inf_and_nan_give_numpy_values_without_warnings():
    A = np.array([[np.inf, 1.0], [0.0, np.nan]])
    x = np.array([0.0, 1.0])
    with np.errstate(all="ignore"):
        want = atax(A, x)
    compiled = jitgraph.compile(atax)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = compiled(A, x)
    np.testing.assert_array_equal(got, want)


def test_other_graphs_keep_the_driver():
    def mutates(A, x, y):
        y += A @ x
        return y

    rng = np.random.default_rng(4)
    A, x = rng.standard_normal((4, 3)), rng.standard_normal(3)
    y_eager, y_jit = np.zeros(4), np.zeros(4)
    compiled = jitgraph.compile(mutates)
    np.testing.assert_allclose(compiled(A, x, y_jit), mutates(A, x, y_eager))
    np.testing.assert_allclose(y_jit, y_eager)
    assert _program(compiled) is None
    _check(lambda A, x: np.maximum(A @ x, 0.0), A, x, expect_program=False)  # maximum: not in the program
    _check(lambda A, x: A.astype(np.float32) @ x, A, x, expect_program=False)  # mixed dtypes


def logistic_grad(X, y, w):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return X.T @ (p - y) / X.shape[0]


def hinge_grad(X, y, w):
    margin = y * (X @ w)
    active = (margin < 1.0).astype(X.dtype)
    return -(X.T @ (y * active)) / X.shape[0] + 1e-3 * w


def mixed_matvec(p, v):
    return p @ v.astype(np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("math", ["fast", "libm"])
def test_math_comparisons_and_casts_in_epilogues(dtype, math):
    rng = np.random.default_rng(6)
    X, y, w = (rng.standard_normal(s).astype(dtype) for s in ((40, 6), 40, 6))
    for fn in (logistic_grad, hinge_grad):
        compiled = jitgraph.compile(fn, math=math)
        got = compiled(X, y, w)
        got = compiled(X, y, w)
        want = fn(X, y, w)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)
        assert _program(compiled)._function is not None
    _check(hinge_grad, X, np.sign(y), w)  # no transcendental math: bit for bit


def test_mixed_dtype_product_widens_the_vector():
    rng = np.random.default_rng(7)
    _check(mixed_matvec, rng.standard_normal((5, 4)), rng.standard_normal(4).astype(np.float32))


def test_boolean_output():
    def positive(A, x):
        return A @ x > 0.0

    rng = np.random.default_rng(8)
    _check(positive, rng.standard_normal((5, 3)), rng.standard_normal(3))


def test_epilogues_past_the_parallel_threshold_keep_the_driver(monkeypatch):
    monkeypatch.setattr(blas_program, "parallel_threshold", lambda cost: 8)  # the loop is serial; kernels need not be
    rng = np.random.default_rng(9)
    _check(gesummv, rng.standard_normal((9, 4)), rng.standard_normal((9, 4)), rng.standard_normal(4),
           expect_program=False)
    _check(atax, rng.standard_normal((9, 4)), rng.standard_normal(4))  # no loop: still the program


def test_many_sizes_match_numpy():
    """Sizes are constants of a program: other sizes (new entries, size variants) never reuse one wrongly."""
    rng = np.random.default_rng(10)
    compiled = jitgraph.compile(gesummv)
    for n in (3, 4, 5, 6, 7, 8, 4, 3):
        A, B, x = rng.standard_normal((n + 1, n)), rng.standard_normal((n + 1, n)), rng.standard_normal(n)
        np.testing.assert_array_equal(compiled(A, B, x), gesummv(A, B, x))


def test_outputs_of_one_group_and_a_repeated_output():
    def two(A, x):
        y = A @ x
        return y + 1.0, y * 2.0, A.T @ y

    def twice(A, x):
        y = A @ x + 1.0
        return y, y

    rng = np.random.default_rng(11)
    A, x = rng.standard_normal((6, 4)), rng.standard_normal(4)
    _check(two, A, x)
    compiled = _check(twice, A, x, expect_program=False)  # one array twice: the ordinary driver, same object
    first, second = compiled(A, x)
    assert first is second


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matrix_products_as_gemm(dtype):
    rng = np.random.default_rng(12)
    A, B = rng.standard_normal((9, 5)).astype(dtype), rng.standard_normal((9, 4)).astype(dtype)
    v = rng.standard_normal(4).astype(dtype)
    _check(lambda A, B: A.T @ B, A, B)
    _check(lambda A, B: A @ B.T, A.T.copy(), B.T.copy())
    _check(lambda A, B: A.T @ B @ v, A, B)  # a matrix product feeding a matrix-vector one
    _check(lambda A, B: (A.T @ B, A.T @ (B @ v)), A, B)
    _check(lambda A: A.T @ A, A, expect_program=False)  # one array on both sides: NumPy's syrk
    _check(lambda A, B: A.T @ B, A[:0], B[:0])  # an empty inner axis: zeros
