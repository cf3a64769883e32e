"""Issue 20, backend side: a loop region whose bound is an input's extent is compiled with the literal size first,
and once a graph differing only in that size comes, with the extent read at run time
(``jitgraph.backends.cpu.scalar.sizes``): that driver source serves every later size (two Numba compiles for any
number of lengths); every length still matches eager NumPy, index checks included."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import jitgraph
from jitgraph.backends.cpu.scalar import compile_regions
from jitgraph.ir.graph import GraphBuilder, Node
from jitgraph.ir.ops.control import build_loop
from jitgraph.ir.types import TensorType
from tests.control_flow.helpers import at, check_against_eager, put

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)


def rnn(xs, h, wx, wh):
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ wx + h @ wh)
    return h


def _drivers(compiled: Any) -> list[Any]:
    return [e.compiled for e in compiled.explain().entries if e.mode == "graph"]


def test_rnn_over_several_lengths_compiles_the_driver_twice() -> None:
    rng = np.random.default_rng(0)
    wx, wh = (rng.standard_normal((6, 6)).astype(np.float32) * 0.3 for _ in range(2))
    compiled = jitgraph.compile(rnn)
    for n in (4, 7, 5, 9):
        xs, h = rng.standard_normal((n, 6)).astype(np.float32), np.zeros(6, np.float32)
        got, want = compiled(xs, h.copy(), wx, wh), rnn(xs, h.copy(), wx, wh)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    drivers = _drivers(compiled)
    assert len(drivers) == 4 and all(d.fallback_reason() is None for d in drivers)
    assert "range(0, 4, 1)" in drivers[0].source, drivers[0].source  # the first length: specialised
    assert "range(0, n0_0, 1)" in drivers[1].source, drivers[1].source  # a second length: run-time trip count
    assert not drivers[1].shared and all(d.shared for d in drivers[2:])  # ... compiled once for every later length
    assert all(d.compile_times()["numba"] < 0.05 for d in drivers[2:])


def lookahead(xs):
    total = 0.0
    for t in range(xs.shape[0]):
        total += xs[t] * xs[t + 1]  # reads past the end on the last step: IndexError, as in NumPy
    return total


@pytest.mark.parametrize("n", [3, 6])
def test_an_index_past_a_runtime_extent_still_raises(n: int) -> None:
    xs = np.arange(float(n))
    with pytest.raises(IndexError):
        lookahead(xs)
    with pytest.raises(IndexError):
        jitgraph.compile(lookahead)(xs)


def _scan_graph(n: int, dynamic: bool, column: int = 0) -> Any:
    """``y[i] = y[i - 1] + x[i, column]`` for i in 1..n over an (n, 3) input; hand-built (each test reads its own
    column, so no test meets another's driver source first)."""
    b = GraphBuilder()
    x = b.input(TensorType((n, 3), F64), "x")
    y0 = b.op("zeros", shape=(n,), dtype=F64)

    def body(rb: GraphBuilder, i: Node, y: Node) -> list[Node]:
        prev = at(rb, y, rb.op("subtract", i, rb.const(1)))
        return [put(rb, y, rb.op("add", prev, at(rb, x, i, column)), i)]

    (y,) = build_loop(b, 1, n, 1, [y0], body)
    g = b.build([y])
    return g, compile_regions(g, {"dynamic_dims": "all"} if dynamic else None)


@pytest.mark.parametrize("dynamic", [False, True])
def test_graphs_differing_in_a_loop_bound_share_one_compile(dynamic: bool) -> None:
    runs = [_scan_graph(n, dynamic, -1 if dynamic else -2) for n in (5, 9, 12)]
    assert runs[2][1].shared and runs[1][1].shared == dynamic, [d.source for _, d in runs]
    assert ("n0_0" in runs[0][1].source) == dynamic  # automatic: the first graph keeps its literal sizes
    for (g, d), n in zip(runs, (5, 9, 12)):
        check_against_eager(g, d, [np.arange(3.0 * n).reshape(n, 3)])


def test_sizes_that_do_not_bound_a_loop_stay_literal_unless_all_are_dynamic() -> None:
    _scan_graph(6, False, 1)
    _, fixed = _scan_graph(7, False, 1)  # a second size: the loop bound's extent at run time, not the others
    assert "np.zeros((n0_0,)" in fixed.source and "x.shape[1]" not in fixed.source, fixed.source
    _, everything = _scan_graph(6, True)
    assert "n0_1 = x.shape[1]" in everything.source, everything.source


def _viterbi_graph(states: int, steps: int) -> Any:
    """A Viterbi-like recursion, hand-built and optimised: a fused column max (leading-axis sweep), an argmax
    along axis 0 and a row store per step, over an input of ``steps`` rows."""
    from jitgraph.passes.manager import run_pipeline

    b = GraphBuilder()
    trans = b.input(TensorType((states, states), F64), "trans")
    score0 = b.input(TensorType((states,), F64), "score")
    back0 = b.input(TensorType((steps, states), F64), "back")

    def step(rb: GraphBuilder, t: Node, score: Node, back: Node) -> list[Node]:
        cand = rb.op("add", at(rb, score, slice(None), None), trans)
        best = rb.op("argmax", cand, axis=0, keepdims=False)
        return [rb.op("max", cand, axis=(0,), keepdims=False), put(rb, back, rb.op("astype", best, dtype=F64), t)]

    score, back = build_loop(b, 0, steps, 1, [score0, back0], step)
    g, _ = run_pipeline(b.build([score, back]), {})
    return g


def test_every_extent_at_run_time_shares_sweeps_and_argmax() -> None:
    rng = np.random.default_rng(3)
    drivers = []
    for states, steps in ((5, 4), (7, 6)):
        g = _viterbi_graph(states, steps)
        driver = compile_regions(g, {"dynamic_dims": "all"})
        drivers.append(driver)
        check_against_eager(g, driver, [rng.standard_normal((states, states)), rng.standard_normal(states),
                                        np.zeros((steps, states))])
    assert drivers[1].shared, drivers[1].source
    assert "n0_0 = trans.shape[0]" in drivers[0].source and "range(n0_0)" in drivers[0].source


def test_explain_says_a_driver_was_shared() -> None:
    _scan_graph(11, False, 2)
    _scan_graph(13, False, 2)
    _, d = _scan_graph(14, False, 2)
    (source,) = d.kernel_sources()
    assert d.shared and "no Numba compile" in source.note
