"""The tracer records loops, data-dependent ifs and whiles as regions (jitgraph.tracer.regions and branches).

Every test compares ``jitgraph.compile`` with the plain function: return value and type, and the caller's arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import jitgraph
from tests.control_flow.helpers import copies, load_benchmarks


def same_as_eager(fn: Callable[..., Any], *args: Any, backend: str = "cpu") -> Any:
    mine, theirs = copies(list(args)), copies(list(args))
    got = jitgraph.compile(fn, backend=backend)(*mine)
    want = fn(*theirs)
    assert type(got) is type(want)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-10)
    for a, b in zip(mine, theirs):
        if isinstance(a, np.ndarray):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    return got


def ops(fn: Callable[..., Any], *args: Any) -> tuple[Any, set[str]]:
    e = jitgraph.explain(fn)(*copies(list(args)))
    found: set[str] = set()

    def walk(g: Any) -> None:
        for n in g.nodes:
            found.add(n.op)
            for r in n.regions:
                walk(r)

    for g in e.graphs:
        walk(g)
    return e, found


def running_sum(x):
    s = 0
    for i in range(x.shape[0]):
        s += x[i] * i
    return s


def test_counted_loop_becomes_one_region() -> None:
    x = np.linspace(0, 1, 200)
    e, found = ops(running_sum, x)
    assert e.graph_count == 1 and not e.break_reasons
    assert "loop" in found and len(e.graphs[0].nodes) < 20  # traced once, not unrolled 200 times
    assert "loop(" in str(e.graphs[0]) and "  %" in str(e.graphs[0])  # printed with an indented body
    same_as_eager(running_sum, x)


def abs_into(x, y):
    for i in range(x.shape[0]):
        if x[i] > 0:
            y[i] = x[i]
        else:
            y[i] = -2.0 * x[i]
    return y


def test_data_dependent_if_becomes_cond_and_mutates_the_caller_array() -> None:
    x = np.array([1.5, -2.0, 0.0, 3.0, -0.5])
    _, found = ops(abs_into, x, np.zeros(5))
    assert {"loop", "cond"} <= found
    same_as_eager(abs_into, x, np.zeros(5))


def halve_until(x, limit):
    total = np.sum(x)
    count = 0
    while total > limit:
        total = total * 0.5
        count += 1
    return total, count


def test_data_dependent_while() -> None:
    e, found = ops(halve_until, np.arange(10.0), 1.0)
    assert "while" in found and e.graph_count == 1
    got = jitgraph.compile(halve_until)(np.arange(10.0), 1.0)
    assert got == halve_until(np.arange(10.0), 1.0)
    assert type(got[1]) is int
    assert jitgraph.compile(halve_until)(np.arange(3.0), 100.0) == (3.0, 0)  # zero iterations


def first_big(x):
    for i in range(x.shape[0]):
        if x[i] > 5:
            break
    return x * 2


def early_return(x):
    for i in range(x.shape[0]):
        if x[i] > 5:
            return x[i]
    return x[0]


@pytest.mark.parametrize("fn", [first_big, early_return])
def test_early_exit_falls_back_with_a_reason(fn: Callable[..., Any]) -> None:
    x = np.arange(40.0)
    e = jitgraph.explain(fn)(x)
    assert e.graph_count == 0 and e.break_reasons
    reason = e.break_reasons[0]
    assert reason.lineno is not None and reason.filename.endswith("test_tracer_regions.py")
    same_as_eager(fn, x, backend="eager")


def small_whole_array_loop(x, w):
    for _ in range(3):
        x = np.tanh(x @ w)
    return x


def test_short_loop_without_indexing_is_still_unrolled() -> None:
    _, found = ops(small_whole_array_loop, np.ones((2, 3)), np.eye(3))
    assert "loop" not in found
    same_as_eager(small_whole_array_loop, np.ones((2, 3)) * 0.1, np.eye(3))


BENCH = load_benchmarks()


@pytest.mark.parametrize("name", sorted(k.name for k in BENCH.kernels()))
def test_benchmark_kernels_trace_to_one_graph(name: str) -> None:
    k = next(k for k in BENCH.kernels() if k.name == name)
    args = k.make(True)
    e = jitgraph.explain(k.fn)(*copies(list(args)))
    assert e.graph_count == 1 and not e.break_reasons, e.break_reasons
    same_as_eager(k.fn, *args)


def symbolic_slices(a, v):
    n = a.shape[0]
    for k in range(n):
        a[k, k + 1:] = a[k, k + 1:] * 0.5 + np.dot(a[k, :k], v[:k])
        a[k + 1:, k] -= v[k + 1:]
    return a


def test_symbolic_slices_lower_to_loops() -> None:
    a, v = np.arange(36.0).reshape(6, 6) / 7, np.linspace(-1, 1, 6)
    e, found = ops(symbolic_slices, a, v)
    assert e.graph_count == 1 and not e.break_reasons
    assert "loop" in found and "dot" not in found   # np.dot of symbolic slices became a loop
    same_as_eager(symbolic_slices, a, v)


def mismatched(a):
    for k in range(a.shape[0]):
        a[k, :k] = a[k, :k + 1]   # lengths differ: NumPy raises ValueError
    return a


def test_symbolic_slice_length_mismatch_raises_like_numpy() -> None:
    with pytest.raises(ValueError):
        mismatched(np.ones((4, 4)))
    with pytest.raises(ValueError):
        jitgraph.compile(mismatched)(np.ones((4, 4)))


TABLE = np.linspace(1.0, 2.0, 64)


def reads_a_global(x):
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i] * TABLE[i]   # TABLE first read inside the body: a new graph input at the top level
    return total


def test_global_array_first_read_inside_the_body() -> None:
    e, found = ops(reads_a_global, np.ones(64))
    assert e.graph_count == 1 and "loop" in found
    same_as_eager(reads_a_global, np.arange(64.0))


def loop_variable_after_the_loop(x):
    i = -1
    for i in range(x.shape[0]):
        x[i] = x[i] * i
    return x, i


def test_loop_variable_keeps_its_last_value() -> None:
    got = jitgraph.compile(loop_variable_after_the_loop)(np.ones(40))
    want = loop_variable_after_the_loop(np.ones(40))
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1] == 39 and type(got[1]) is int


def row_sums(a, out):
    for i in range(a.shape[0]):
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j] * a[i, j]
        out[i] = s
    return out


def test_explain_shows_regions_trip_counts_and_prange() -> None:
    a = np.random.default_rng(3).standard_normal((600, 5))
    e = jitgraph.explain(jitgraph.compile(row_sums, parallel=True))(a, np.zeros(600))
    rows = [str(r) for r in e.regions]
    assert rows[0].startswith("%") and "loop trips=600 prange" in rows[0]   # independent rows: parallel
    assert "loop trips=5" in rows[1] and "prange" not in rows[1]           # a reduction: serial
    assert "Regions" in str(e)
    same_as_eager(row_sums, a, np.zeros(600))
