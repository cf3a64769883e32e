"""Slices with symbolic bounds, lowered to loops: Python's slice rules, NumPy's run-time shape errors and the
right-hand-side-first semantics of slice assignment, in the interpreter and compiled."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from jitgraph.backends import eager
from jitgraph.backends.cpu.scalar import compile_regions
from jitgraph.ir.graph import Graph, GraphBuilder
from jitgraph.ir.types import TensorType
from jitgraph.ir.verifier import verify
from jitgraph.tracer import symslice

F64, I64 = np.dtype(np.float64), np.dtype(np.int64)
N = 7
BOUNDS = (-9, -3, 0, 2, 5, 7, 10)


def graphs() -> tuple[Graph, Graph]:
    """dot(x[a:b], y[c:d]) and x[a:b] = x[c:d] * 2 + 1, with a..d run-time scalars."""
    made = []
    for kind in ("dot", "assign"):
        b = GraphBuilder()
        x, y = b.input(TensorType((N,), F64), "x"), b.input(TensorType((N,), F64), "y")
        a, bb, c, d = (b.input(TensorType((), I64), name) for name in "abcd")
        u = symslice.sym_view(b, x, (slice(a, bb),))
        if kind == "dot":
            made.append(verify(b.build([symslice.dot(b, u, symslice.sym_view(b, y, (slice(c, d),)))])))
        else:
            rhs = symslice.Map("add", (symslice.Map("multiply", (symslice.sym_view(b, x, (slice(c, d),)),
                                                                 b.const(2.0))), b.const(1.0)))
            new = symslice.assign(b, u, rhs)
            made.append(verify(b.build([new], [(0, new)])))
    return made[0], made[1]


def numpy_dot(x: np.ndarray, y: np.ndarray, a: int, b: int, c: int, d: int) -> object:
    try:
        return np.dot(x[a:b], y[c:d])
    except ValueError:
        return ValueError


def numpy_assign(x: np.ndarray, a: int, b: int, c: int, d: int) -> object:
    x = x.copy()
    try:
        x[a:b] = x[c:d] * 2 + 1
    except ValueError:
        return ValueError
    return x


@pytest.fixture(scope="module")
def compiled() -> tuple[Graph, Graph, object, object]:
    g_dot, g_assign = graphs()
    return g_dot, g_assign, compile_regions(g_dot), compile_regions(g_assign)


def cases() -> list[tuple[int, int, int, int]]:
    combos = list(itertools.product(BOUNDS, repeat=4))
    return combos[::7]  # a spread of equal/unequal lengths, negative, empty and clamped bounds


def test_dot_of_symbolic_slices(compiled: tuple) -> None:
    g, _, driver, _ = compiled
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(N), rng.standard_normal(N)
    for a, b, c, d in cases():
        want = numpy_dot(x, y, a, b, c, d)
        args = [x, y, *(np.int64(v) for v in (a, b, c, d))]
        for run in (lambda a_: eager.run(g, a_)[0], lambda a_: driver(a_)[0]):
            if want is ValueError:
                with pytest.raises(ValueError):
                    run(args)
            else:
                assert run(args) == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_slice_assignment_reads_the_right_hand_side_first(compiled: tuple) -> None:
    _, g, _, driver = compiled
    base = np.arange(N, dtype=np.float64)
    for a, b, c, d in cases():
        want = numpy_assign(base, a, b, c, d)
        for run in (lambda x, args: eager.run(g, [x, *args]), lambda x, args: driver([x, *args])):
            x = base.copy()
            args = [np.zeros(N)] + [np.int64(v) for v in (a, b, c, d)]
            if want is ValueError:
                with pytest.raises(ValueError):
                    run(x, args)
            else:
                run(x, args)
                np.testing.assert_array_equal(x, want)


def test_disjointness_needs_non_negative_symbols() -> None:
    b = GraphBuilder()
    a = b.input(TensorType((5, 5), F64), "A")
    k = b.input(TensorType((), I64), "k")
    k1 = b.op("add", k, b.const(1))
    column = symslice.sym_view(b, a, (slice(k1, None), k))
    block = symslice.sym_view(b, a, (slice(k1, None), slice(k1, None)))
    assert symslice.disjoint(column, block, frozenset({k}))
    assert not symslice.disjoint(column, block)          # k = -1 would wrap to the last column
    assert not symslice.disjoint(block, block, frozenset({k}))


def test_lu_lowering_reads_disjoint_views_in_place() -> None:
    """In the LU update, A[k+1:, k] and A[k, k+1:] are disjoint from A[k+1:, k+1:]: no snapshot copy per step."""
    from tests.control_flow.helpers import load_benchmarks

    bench = load_benchmarks()
    a = np.random.default_rng(2).uniform(-1, 1, (6, 6)) + 6 * np.eye(6)
    driver = compile_regions(bench.build_lu(a))
    assert ".copy()" not in driver.source
    got, want = a.copy(), a.copy()
    driver([got])
    bench.lu(want)
    np.testing.assert_allclose(got, want, rtol=1e-12)
