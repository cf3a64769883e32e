"""Cheap index checks and the vectorised np.dot of symbolic slices in the loop code generator.

An index the generator cannot prove in range is checked once per block as an unsigned compare and then used as a
``np.uint64`` (no Numba wraparound): it must still raise NumPy's IndexError when out of range and wrap like NumPy
when negative. ``np.dot`` of two 1-D symbolic slices becomes one call of a helper that may reassociate the sum.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import jitgraph
from jitgraph.backends import eager
from jitgraph.backends.cpu.scalar import compile_regions
from jitgraph.ir.graph import GraphBuilder, Node
from jitgraph.ir.ops.control import build_loop
from jitgraph.ir.types import TensorType
from jitgraph.tracer import symslice
from tests.control_flow.helpers import at, check_against_eager, copies, load_benchmarks, put

BENCH = load_benchmarks()
F64, F32, I64 = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int64)


def _csr(n: int = 6) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(3)
    indptr = np.array([0, 2, 2, 5, 6, 9, 10], dtype=np.int64)[: n + 1]
    indices = rng.integers(0, n, indptr[-1]).astype(np.int64)
    return indptr, indices, rng.standard_normal(indptr[-1]), rng.standard_normal(n)


@pytest.fixture(scope="module")
def spmv_driver() -> tuple[Any, Any]:
    args = _csr()
    g = BENCH.build_spmv(*args)
    return g, compile_regions(g, {"parallel": False})


def test_csr_column_index_is_checked_once_per_element(spmv_driver: tuple[Any, Any]) -> None:
    """data[k] and indices[k] share one check of k; x[indices[k]] has its own (two raises in the inner loop)."""
    g, driver = spmv_driver
    assert driver.source.count("raise IndexError") == 2, driver.source
    assert "np.uint64(" in driver.source
    check_against_eager(g, driver, list(_csr()))


def test_csr_out_of_range_column_raises_index_error_like_eager(spmv_driver: tuple[Any, Any]) -> None:
    g, driver = spmv_driver
    for bad in (6, 1000, -7):
        indptr, indices, data, x = _csr()
        indices[3] = bad
        with pytest.raises(IndexError):
            BENCH.spmv(indptr, indices, data, x)
        with pytest.raises(IndexError):
            eager.run(g, [indptr, indices, data, x])
        with pytest.raises(IndexError):
            driver([indptr, indices, data, x])


def test_csr_negative_column_wraps_like_numpy(spmv_driver: tuple[Any, Any]) -> None:
    _, driver = spmv_driver
    indptr, indices, data, x = _csr()
    indices[[0, 4, 9]] = [-1, -6, -3]
    (got,) = driver([indptr, indices, data, x])
    np.testing.assert_allclose(got, BENCH.spmv(indptr, indices, data, x), rtol=1e-12)


def test_csr_row_pointer_past_the_data_raises_index_error(spmv_driver: tuple[Any, Any]) -> None:
    """The inner loop's own induction variable (a range read from data) is checked too."""
    _, driver = spmv_driver
    indptr, indices, data, x = _csr()
    indptr[-1] = len(data) + 2
    with pytest.raises(IndexError):
        BENCH.spmv(indptr, indices, data, x)
    with pytest.raises(IndexError):
        driver([indptr, indices, data, x])


def test_traced_spmv_with_a_bad_column_raises_index_error() -> None:
    indptr, indices, data, x = _csr()
    compiled = jitgraph.compile(BENCH.spmv)
    np.testing.assert_allclose(compiled(indptr, indices, data, x), BENCH.spmv(indptr, indices, data, x))
    indices[5] = 6
    with pytest.raises(IndexError):
        compiled(indptr, indices, data, x)


def test_same_index_on_two_axes_of_different_sizes_is_checked_on_both() -> None:
    """``a[j, j]`` with a (3, 5) array: j = 4 fits axis 1 but not axis 0, and must raise."""
    b = GraphBuilder()
    idx = b.input(TensorType((3,), I64), "idx")
    a = b.input(TensorType((3, 5), F64), "a")

    def body(rb: GraphBuilder, i: Node, s: Node) -> list[Node]:
        j = at(rb, idx, i)
        return [rb.op("add", s, at(rb, a, j, j))]

    (s,) = build_loop(b, 0, 3, 1, [b.const(np.float64(0.0))], body)
    g = b.build([s])
    driver = compile_regions(g, {"parallel": False})
    grid = np.arange(15.0).reshape(3, 5)
    check_against_eager(g, driver, [np.array([0, 2, -1]), grid])
    with pytest.raises(IndexError):
        eager.run(g, [np.array([0, 4, 1]), grid])
    with pytest.raises(IndexError):
        driver([np.array([0, 4, 1]), grid])


@pytest.mark.parametrize("dtype", [F64, F32])
def test_dot_of_symbolic_slices_is_one_vectorised_call(dtype: np.dtype) -> None:
    rng = np.random.default_rng(4)
    n = 37
    L = (np.tril(rng.uniform(-1, 1, (n, n))) + n * np.eye(n)).astype(dtype)
    rhs = rng.standard_normal(n).astype(dtype)
    g = BENCH.build_trisolve(L, rhs)
    driver = compile_regions(g, {"parallel": False})
    assert "dot_range(L[" in driver.source, driver.source
    (got,) = driver([L.copy(), rhs.copy()])
    (want,) = eager.run(g, [L.copy(), rhs.copy()])
    assert got.dtype == want.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == F32 else 1e-12)
    np.testing.assert_allclose(got, BENCH.trisolve(L, rhs), rtol=1e-5 if dtype == F32 else 1e-12)


def _column_dot_graph(a: np.ndarray, v: np.ndarray, column: str) -> Any:
    """out[i] = np.dot(a[:i, c], v[:i]) for a column c: ``"i"`` (the induction variable), ``"2"`` (a constant), or
    ``"data"`` (c = v[i], not provably in range; then the other operand is a[:i, 0])."""
    b = GraphBuilder()
    a_in = b.input(TensorType(a.shape, F64), "a")
    v_in = b.input(TensorType(v.shape, v.dtype), "v")
    n = a.shape[1]

    def row(rb: GraphBuilder, i: Node, out: Node) -> list[Node]:
        facts = frozenset({i})
        col = {"i": lambda: i, "2": lambda: 2, "data": lambda: at(rb, v_in, i)}[column]()
        other = (a_in, (slice(None, i), 0)) if column == "data" else (v_in, (slice(None, i),))
        d = symslice.dot(rb, symslice.sym_view(rb, a_in, (slice(None, i), col), facts),
                         symslice.sym_view(rb, other[0], other[1], facts))
        return [put(rb, out, d, i)]

    (out,) = build_loop(b, 0, n, 1, [b.op("zeros", shape=(n,), dtype=F64)], row)
    return b.build([out])


@pytest.mark.parametrize("column", ["i", "2"])
def test_dot_of_a_column_slice_uses_a_strided_view(column: str) -> None:
    rng = np.random.default_rng(5)
    a, v = rng.standard_normal((7, 7)), rng.standard_normal(7)
    g = _column_dot_graph(a, v, column)
    driver = compile_regions(g, {"parallel": False})
    assert "dot_range(a[:, " in driver.source, driver.source
    check_against_eager(g, driver, [a, v])


def test_dot_with_an_unproven_index_keeps_the_checked_loop() -> None:
    """A column index read from data is not proven in range: no dot_range (it checks nothing), IndexError kept."""
    rng = np.random.default_rng(6)
    a, cols = rng.standard_normal((7, 7)), np.array([0, 3, -2, 6, 1, 5, 4])
    g = _column_dot_graph(a, cols, "data")
    driver = compile_regions(g, {"parallel": False})
    assert "dot_range" not in driver.source and "raise IndexError" in driver.source
    check_against_eager(g, driver, [a, cols])
    bad = cols.copy()
    bad[2] = 7
    with pytest.raises(IndexError):
        eager.run(g, [a, bad])
    with pytest.raises(IndexError):
        driver([a, bad])


def test_empty_dot_is_zero() -> None:
    """Row 0 of a triangular solve dots two empty slices (dot_range's range is empty)."""
    L, rhs = np.diag([2.0, 4.0]), np.array([1.0, 2.0])
    g = BENCH.build_trisolve(L, rhs)
    (got,) = compile_regions(g, {"parallel": False})([L, rhs])
    np.testing.assert_allclose(got, [0.5, 0.5])
    got = jitgraph.compile(BENCH.trisolve)(*copies([L, rhs]))
    np.testing.assert_allclose(got, [0.5, 0.5])
