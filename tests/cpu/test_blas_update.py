"""``C -= s * (A @ B)`` written in place runs as one BLAS gemm with beta = 1 (backends/cpu/blas.py).

Each case compares with eager NumPy (the results differ only in rounding) and checks, through ``explain``, whether
the BLAS path or the product-plus-kernel path ran, so a silent fallback (or a wrong take-over) fails here.
"""

from __future__ import annotations

import numpy as np
import pytest

import jitgraph
from jitgraph.backends.cpu import blas
from jitgraph.ir import GraphBuilder, TensorType

pytestmark = pytest.mark.skipif(not blas.available("float32"), reason="NumPy's BLAS has no scipy_openblas64_ gemm")


@pytest.fixture(autouse=True)
def _small_products_take_the_blas_path(monkeypatch):
    """The tests use small matrices; the size threshold (checked when a kernel is built) has its own test."""
    monkeypatch.setattr(blas, "MIN_ELEMENTS", 1)

BLAS_PATH = "BLAS gemm with beta=1"


def sgd(w, x, d, lr):
    w -= lr * (x.T @ d)


def sgd_const(w, x, d):
    w -= 0.01 * (x.T @ d)


def sgd_scale_right(w, x, d):
    w -= (x.T @ d) * 0.5


def accumulate(g, x, d):
    g += x.T @ d


def minus_product(w, x, d):
    w -= x.T @ d


def _run(fn, args, **options):
    """(compiled result arrays, eager result arrays, backend notes) for one call on copies of ``args``."""
    mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    compiled = jitgraph.compile(fn, **options)
    compiled(*mine)
    fn(*ref)
    notes = str(jitgraph.explain(fn, **options)(*[a.copy() if isinstance(a, np.ndarray) else a for a in args]))
    return mine, ref, notes


def _inputs(dtype, m=24, k=16, n=20, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((m, n)).astype(dtype), rng.standard_normal((k, m)).astype(dtype),
            rng.standard_normal((k, n)).astype(dtype)]


def _close(mine, ref, dtype):
    tol = {"rtol": 1e-5, "atol": 1e-5} if np.dtype(dtype) == np.float32 else {"rtol": 1e-12, "atol": 1e-12}
    for a, b in zip(mine, ref):
        if isinstance(b, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_allclose(a, b, **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("fn", "extra"), [(sgd, (0.01,)), (sgd, (3,)), (sgd_const, ()), (sgd_scale_right, ()),
                                           (accumulate, ()), (minus_product, ())])
def test_update_runs_as_one_gemm_and_matches_numpy(fn, extra, dtype):
    args = _inputs(dtype) + list(extra)
    mine, ref, notes = _run(fn, args)
    _close(mine, ref, dtype)
    assert BLAS_PATH in notes


def test_zero_d_array_scale_is_read_at_run_time():
    args = _inputs("float32") + [np.float32(0.25)]
    mine, ref, notes = _run(sgd, args)
    _close(mine, ref, "float32")
    assert BLAS_PATH in notes
    compiled = jitgraph.compile(sgd)
    w, x, d = _inputs("float32", seed=1)
    want = w.copy()
    compiled(w, x, d, np.float32(0.5))
    compiled(w, x, d, np.float32(-2.0))  # same entry, new value
    sgd(want, x, d, np.float32(0.5))
    sgd(want, x, d, np.float32(-2.0))
    np.testing.assert_allclose(w, want, rtol=1e-5, atol=1e-5)


def test_zero_scale_keeps_nan_of_the_product():
    """BLAS may skip a product scaled by 0; NumPy's ``w - 0 * nan`` is nan, so alpha == 0 takes the kernel."""
    w, x, d = _inputs("float64")
    x[0, 0] = np.nan
    mine, ref, notes = _run(sgd, [w, x, d, 0.0])
    assert np.isnan(ref[0]).any()
    np.testing.assert_array_equal(np.isnan(mine[0]), np.isnan(ref[0]))
    _close(mine, ref, "float64")
    assert BLAS_PATH not in notes


def test_nan_and_inf_propagate_through_the_gemm():
    w, x, d = _inputs("float32")
    w[1, 1] = np.nan
    d[0, 3] = np.inf
    mine, ref, notes = _run(sgd, [w, x, d, 0.01])
    assert BLAS_PATH in notes
    np.testing.assert_array_equal(np.isnan(mine[0]), np.isnan(ref[0]))
    np.testing.assert_array_equal(np.isinf(mine[0]), np.isinf(ref[0]))


def test_overlapping_operand_takes_the_kernel_path():
    """``w -= lr * (w.T @ d)``: the product reads w, so the gemm must not write it while reading."""

    def self_update(w, d):
        w -= 0.1 * (w.T @ d)

    rng = np.random.default_rng(2)
    w, d = rng.standard_normal((12, 12)), rng.standard_normal((12, 12))
    mine, ref, notes = _run(self_update, [w, d])
    _close(mine, ref, "float64")
    assert BLAS_PATH not in notes


def test_libm_math_keeps_numpys_rounding_exactly():
    args = _inputs("float32") + [0.01]
    mine, ref, notes = _run(sgd, args, math="libm")
    assert BLAS_PATH not in notes
    np.testing.assert_array_equal(mine[0], ref[0])


def test_update_into_non_contiguous_target_falls_back():
    def strided(w, x, d):
        v = w[:, ::2]
        v -= 0.5 * (x.T @ d)

    rng = np.random.default_rng(4)
    w, x, d = rng.standard_normal((10, 12)), rng.standard_normal((7, 10)), rng.standard_normal((7, 6))
    mine, ref, _ = _run(strided, [w, x, d])
    _close(mine, ref, "float64")


def test_gemm_update_refuses_what_blas_cannot_read():
    a, b = np.ones((4, 3)), np.ones((3, 5))
    c = np.zeros((4, 5))
    assert not blas.gemm_update(a, b, np.zeros((4, 5), order="F"), 1.0)  # F-ordered target
    assert not blas.gemm_update(a, np.broadcast_to(np.ones(5), (3, 5)), c, 1.0)  # zero stride
    assert not blas.gemm_update(a.astype(np.float32), b, c, 1.0)  # mixed dtypes
    assert not blas.gemm_update(np.ones((4, 0)), np.ones((0, 5)), c, 1.0)  # empty contraction
    assert not blas.gemm_update(a, b, c, float("nan"))
    assert not np.any(c)
    assert blas.gemm_update(a[:, ::-1][:, ::-1], b.T.copy().T, c, 2.0)
    np.testing.assert_array_equal(c, 6.0)


def _body(build):
    g = GraphBuilder()
    f32 = np.dtype("float32")
    a = g.input(TensorType((4, 3), f32), "a")
    b = g.input(TensorType((3, 5), f32), "b")
    c = g.input(TensorType((4, 5), f32), "c")
    head = g.op("matmul", a, b)
    graph = g.build([build(g, head, c)])
    return graph, next(n for n in graph.nodes if n.op == "matmul")


@pytest.mark.parametrize(("build", "sign", "scale"), [
    (lambda g, p, c: g.op("subtract", c, p), -1, 1.0),
    (lambda g, p, c: g.op("add", p, c), 1, 1.0),
    (lambda g, p, c: g.op("subtract", c, g.op("multiply", g.const(0.5), p)), -1, 0.5),
])
def test_update_form_recognises(build, sign, scale):
    graph, head = _body(build)
    form = blas.update_form(graph, head)
    assert form is not None and (form.a, form.b, form.c, form.sign, form.scale) == (0, 1, 2, sign, scale)


@pytest.mark.parametrize("build", [
    lambda g, p, c: g.op("subtract", p, c),  # product minus C is not an update of C
    lambda g, p, c: g.op("subtract", c, g.op("multiply", p, p)),
    lambda g, p, c: g.op("subtract", c, g.op("tanh", p)),
    lambda g, p, c: g.op("multiply", c, p),
    lambda g, p, c: g.op("subtract", c, g.op("multiply", g.const(np.ones((4, 5), np.float32)), p)),
])
def test_update_form_rejects(build):
    graph, head = _body(build)
    assert blas.update_form(graph, head) is None


def test_small_updates_keep_the_kernel_path(monkeypatch):
    """Below MIN_ELEMENTS the ctypes call costs more than the pass over C it saves."""
    monkeypatch.setattr(blas, "MIN_ELEMENTS", 24 * 20 + 1)
    mine, ref, notes = _run(sgd, _inputs("float32") + [0.01])
    _close(mine, ref, "float32")
    assert BLAS_PATH not in notes
