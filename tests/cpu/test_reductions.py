"""Reductions inside kernels: every op over leading, middle, trailing and several axes, NaN propagation as NumPy
does it, and float32 sums as accurate as NumPy's pairwise summation."""

from __future__ import annotations

import numpy as np
import pytest
from helpers_cpu import check_against_eager, cpu_compile

from jitgraph.ir import GraphBuilder, TensorType
from jitgraph.passes.fuse import fuse_graph

OPS = ("sum", "mean", "max", "min", "prod", "any", "all")


def reductions_graph(shape: tuple[int, ...], dtype: str, axes: tuple[int, ...], keepdims: bool):
    """positive(x) then every reduction over ``axes``: one kernel (the elementwise op gives it a producer)."""
    b = GraphBuilder()
    x = b.input(TensorType(shape, np.dtype(dtype)), "x")
    p = b.op("positive", x)
    outs = [b.op(op, p, axis=axes, keepdims=keepdims) for op in OPS]
    if np.dtype(dtype).kind == "f":
        outs.append(b.op("multiply", p, b.op("mean", p, axis=axes, keepdims=True)))  # re-broadcast consumer
    return b.build(outs)


CASES = [
    ((5, 6, 7), "float64", (0,), False),
    ((5, 6, 7), "float64", (2,), True),
    ((5, 6, 7), "float64", (0, 2), True),
    ((5, 6, 7), "float64", (0, 1, 2), False),
    ((9, 13), "float32", (1,), True),
    ((4, 5, 6), "int32", (1, 2), False),
]


@pytest.mark.parametrize(("shape", "dtype", "axes", "keepdims"), CASES)
def test_reductions_against_numpy(shape, dtype, axes, keepdims):
    graph = reductions_graph(shape, dtype, axes, keepdims)
    assert sum(n.op == "fused" for n in fuse_graph(graph).nodes) == 1
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 2).astype(dtype)
    if np.dtype(dtype).kind == "i":
        x = rng.integers(-3, 4, shape).astype(dtype)
    check_against_eager(graph, [x])


def test_max_min_propagate_nan_like_numpy():
    graph = reductions_graph((6, 9), "float64", (1,), True)
    x = np.arange(54, dtype=np.float64).reshape(6, 9)
    x[1, 0] = np.nan
    x[2, 8] = np.nan
    x[3, :] = np.nan
    x[4, 4] = -np.inf
    x[5, 3] = np.inf
    got = check_against_eager(graph, [x])
    assert np.isnan(got[2][1:4]).all() and np.isnan(got[3][1:4]).all()


def test_float32_sum_is_as_accurate_as_numpy():
    n = 1 << 20
    b = GraphBuilder()
    x = b.input(TensorType((n,), np.dtype("f4")), "x")
    graph = b.build([b.op("sum", b.op("positive", x), axis=(0,), keepdims=False)])
    rng = np.random.default_rng(4)
    xs = (rng.random(n) + 0.5).astype(np.float32)  # all positive: a naive float32 loop drifts badly
    exact = np.sum(xs.astype(np.float64))
    (got,) = cpu_compile(graph)([xs])
    assert got.dtype == np.float32
    assert abs(float(got) - exact) <= max(abs(float(np.sum(xs)) - exact), abs(exact) * 2**-24)


def test_reduction_over_strided_and_fortran_inputs():
    graph = reductions_graph((8, 12), "float64", (0,), True)
    rng = np.random.default_rng(5)
    base = rng.standard_normal((12, 16))
    check_against_eager(graph, lambda: [base.T[::2].copy(order="F")])
    check_against_eager(graph, lambda: [base.copy().T[::2]])


def test_zero_size_reductions():
    b = GraphBuilder()
    x = b.input(TensorType((0, 4), np.dtype("f8")), "x")
    p = b.op("positive", x)
    graph = b.build([b.op("sum", p, axis=(0,), keepdims=False), b.op("prod", p, axis=(0,), keepdims=True),
                     b.op("any", p, axis=(0,), keepdims=False), b.op("all", p, axis=(0,), keepdims=False),
                     b.op("mean", p, axis=(1,), keepdims=False)])
    check_against_eager(graph, [np.zeros((0, 4))])


@pytest.mark.parametrize("axis", [0, 1, None])
def test_mean_with_integer_dtype_wraps_its_sum_like_numpy(axis):
    """NumPy sums in the requested integer type (wrapping), then truncates the float quotient; the CPU kernels used
    to accumulate such means in float64 and returned -56 where NumPy returns 8 (regression)."""
    import jitgraph

    def f(x):
        return (x * 2).mean(axis=axis, dtype=np.int8), (x * x).mean(axis=axis, dtype=np.int16)

    x = np.full((4, 100), 100, np.int8)
    x[1] = -7
    x[:, 3] = 77
    with np.errstate(all="ignore"):
        want = f(x)
        got = jitgraph.compile(f, backend="cpu", cache=False)(x)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)


def test_whole_array_reductions_of_an_input_compile():
    """A sum over every axis of a 2-D argument reads the argument directly (no producer in the kernel); deciding
    its accumulators once asked for the row index before the loops existed (KeyError, demoted to eager)."""
    import jitgraph

    def total_then_overwrite(x):
        y = x.sum()
        x[:] = 5
        return y

    def centre(x):
        x -= x.mean()
        return x

    for f in (total_then_overwrite, centre):
        mine, ref = np.arange(12.0).reshape(3, 4), np.arange(12.0).reshape(3, 4)
        compiled = jitgraph.compile(f, backend="cpu", cache=False)
        np.testing.assert_allclose(compiled(mine), f(ref))
        np.testing.assert_array_equal(mine, ref)
        assert compiled.break_reasons() == []


def test_reductions_over_no_axes_compile():
    """``x.sum(axis=())`` reduces nothing: the kernel generator had no emitter for it (KeyError, demoted to eager);
    the simplifier now turns it into a cast to the result dtype."""
    import jitgraph

    fns = [lambda x: (x * 1).prod(axis=(), dtype=np.int64), lambda x: (x * 2).sum(axis=()),
           lambda x: np.any(x, axis=(), keepdims=True), lambda x: x.mean(axis=())]
    for x in (np.array([[True, False], [True, True]]), np.array([[np.nan, -0.0], [np.inf, 2.5]])):
        for f in fns:
            compiled = jitgraph.compile(f, backend="cpu", cache=False)
            with np.errstate(invalid="ignore"):  # NumPy's own prod of nan * 1 warns
                got, want = compiled(x), f(x)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
            assert compiled.break_reasons() == []


@pytest.mark.parametrize("rows", [1, 2, 7])
def test_row_sweeps_prefetch_the_next_row(rows):
    """Layernorm's variance sweep prefetches the next row of its input (jg_prefetch, kernel_source._next_rows) and,
    with intent to write, of its output; the
    first sweep, which brings the row in, does not. A chunk's last row prefetches itself (no index past the end)."""
    import jitgraph

    def layernorm(x):
        xc = x - x.mean(axis=1, keepdims=True)
        return xc / np.sqrt((xc * xc).mean(axis=1, keepdims=True) + 1e-5)

    x = np.random.default_rng(rows).standard_normal((rows, 300)).astype(np.float32)
    compiled = jitgraph.compile(layernorm, backend="cpu", cache=False)
    np.testing.assert_allclose(compiled(x), layernorm(x), rtol=1e-5, atol=1e-6)
    if rows == 1:
        return  # one row coalesces into a 1-D kernel: no row loop, nothing to prefetch
    kernel = next(iter(compiled.entries[-1].compiled.kernels.values()))
    first, second = kernel.source.split("# level-2 sweep")
    assert "jg_prefetch" not in first.split("def fused")[-1] and "jg_prefetch(a0, nx, k)" in second
    assert "jg_prefetch_write(o0, nx, k)" in second  # the row the final sweep will store
