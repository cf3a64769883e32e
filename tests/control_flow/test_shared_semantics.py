"""The loop driver computes with the CPU backend's emitter table (one table of op semantics for CPU code).

Each test builds a loop whose body hits a case where NumPy's scalar semantics differ from Python's or LLVM's, and
checks the driver against the reference interpreter: int64 wrap-around, shifts by the type's width or more,
integer division by zero, NaN-propagating maximum, broadcasting array ops in a loop body. It also checks the
driver's side of the table: int64 arithmetic the bounds analysis proves in range stays a plain operator, the
pipeline's fusion groups become one sweep, and the backend protocol methods answer.
"""

from __future__ import annotations

import numpy as np

from jitgraph.backends.base import CompiledGraph
from jitgraph.backends.cpu.scalar import compile_or_eager, compile_regions, generate
from jitgraph.ir.graph import Graph, GraphBuilder, Node
from jitgraph.ir.ops.control import build_loop
from jitgraph.ir.types import TensorType
from jitgraph.passes.manager import run_pipeline
from tests.control_flow.helpers import at, check_against_eager, put

F64, I64, U8 = np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.uint8)


def _scalar_loop(dtype: np.dtype, n: int, step: callable) -> Graph:  # type: ignore[valid-type]
    """``out[i] = step(rb, x[i], i)`` for i in range(n)."""
    b = GraphBuilder()
    x = b.input(TensorType((n,), dtype), "x")
    out0 = b.op("zeros", shape=(n,), dtype=dtype)

    def body(rb: GraphBuilder, i: Node, out: Node) -> list[Node]:
        return [put(rb, out, step(rb, at(rb, x, i), i), i)]

    (out,) = build_loop(b, 0, n, 1, [out0], body)
    return b.build([out])


def test_int64_overflow_wraps_like_numpy() -> None:
    g = _scalar_loop(I64, 3, lambda rb, v, i: rb.op("multiply", rb.op("add", v, v), v))
    driver = compile_regions(g)
    assert "np.uint64(" in driver.source  # x[i] is not bounded: the wrap-around spelling
    check_against_eager(g, driver, [np.array([2 ** 62, -(2 ** 62) - 7, 3], dtype=np.int64)])


def test_index_arithmetic_proven_in_range_stays_plain() -> None:
    g = _scalar_loop(I64, 5, lambda rb, v, i: rb.op("add", rb.op("multiply", i, rb.const(3)), rb.const(1)))
    source = generate(g).lines
    assert not any("np.uint64(" in line for line in source), source
    check_against_eager(g, compile_regions(g), [np.arange(5, dtype=np.int64)])


def test_shifts_by_the_width_or_more_give_numpys_answer() -> None:
    def step(rb: GraphBuilder, v: Node, i: Node) -> Node:
        count = rb.op("multiply", i, rb.const(20))  # 0, 20, 40, 60, 80: the last is past the width
        left = rb.op("left_shift", v, count)
        return rb.op("add", left, rb.op("right_shift", rb.op("negative", v), count))

    g = _scalar_loop(I64, 5, step)
    check_against_eager(g, compile_regions(g), [np.array([1, -3, 5, 7, -9], dtype=np.int64)])


def test_python_int_compared_with_python_int_stays_int64() -> None:
    """Two weak Python ints resolve to NumPy's object loop; the table compares them as the int64s they are traced as."""
    g = _scalar_loop(F64, 4, lambda rb, v, i: rb.op("where", rb.op("equal", i, rb.const(2)), v, rb.op("negative", v)))
    driver = compile_regions(g)
    assert "np.object" not in driver.source, driver.source
    check_against_eager(g, driver, [np.array([1.0, 2.0, 3.0, 4.0])])


def test_integer_division_by_zero_and_nan_maximum() -> None:
    gi = _scalar_loop(I64, 4, lambda rb, v, i: rb.op("add", rb.op("floor_divide", v, i), rb.op("remainder", v, i)))
    check_against_eager(gi, compile_regions(gi), [np.array([7, -7, 9, -9], dtype=np.int64)])
    gf = _scalar_loop(F64, 3, lambda rb, v, i: rb.op("maximum", v, rb.const(0.0)))
    got = check_against_eager(gf, compile_regions(gf), [np.array([np.nan, -1.0, 2.0])])
    assert np.isnan(got[0][0])


def test_broadcasting_array_op_in_a_loop_body_is_a_loop_nest() -> None:
    b = GraphBuilder()
    a = b.input(TensorType((3, 4), F64), "a")
    r = b.input(TensorType((4,), F64), "r")

    def body(rb: GraphBuilder, i: Node, acc: Node) -> list[Node]:
        return [rb.op("add", acc, rb.op("multiply", a, r))]  # (3, 4) * (4,)

    (out,) = build_loop(b, 0, 3, 1, [a], body)
    g = b.build([out])
    driver = compile_regions(g)
    assert "np.empty((3, 4)" in driver.source and "r[f1]" in driver.source, driver.source
    check_against_eager(g, driver, [np.arange(12.0).reshape(3, 4), np.array([1.0, -2.0, 0.5, 3.0])])


def test_full_reductions_in_a_loop_body_use_the_shared_accumulators() -> None:
    """prod/any/all (and max of booleans) over a whole array: accumulation loops with the table's identities."""
    b = GraphBuilder()
    a = b.input(TensorType((2, 3), F64), "a")
    full = {"axis": (0, 1), "keepdims": False}

    def body(rb: GraphBuilder, i: Node, acc: Node) -> list[Node]:
        positive = rb.op("greater", a, i)
        terms = [rb.op("prod", a, **full), rb.op("any", positive, **full), rb.op("all", a, **full),
                 rb.op("max", positive, **full)]
        return [rb.op("add", acc, rb.op("add", rb.op("add", terms[0], terms[1]), rb.op("add", terms[2], terms[3])))]

    (out,) = build_loop(b, 0, 4, 1, [b.const(np.float64(0.0))], body)
    g = b.build([out])
    driver = compile_regions(g)
    assert "np.prod" not in driver.source and "np.any" not in driver.source, driver.source
    check_against_eager(g, driver, [np.array([[1.5, -2.0, 3.0], [0.5, 2.5, np.nan]])])
    check_against_eager(g, driver, [np.array([[1.5, -2.0, 3.0], [0.0, 2.5, 1.0]])])


def test_a_fusion_group_and_its_reduction_are_one_sweep() -> None:
    """``x = 0.5 * (a + 1)`` and ``abs(x * x - a).max()``, one kernel in the pipeline's plan: one loop here."""
    b = GraphBuilder()
    a = b.input(TensorType((50,), F64), "a")
    x = b.op("multiply", b.const(0.5), b.op("add", a, b.const(1.0)))
    err = b.op("max", b.op("absolute", b.op("subtract", b.op("multiply", x, x), a)), axis=(0,), keepdims=False)

    def body(rb: GraphBuilder, i: Node, y: Node) -> list[Node]:
        return [put(rb, y, rb.op("add", at(rb, y, i), err), i)]

    (out,) = build_loop(b, 0, 50, 1, [x], body)
    g, _ = run_pipeline(b.build([out, err]), {})
    assert any(n.op == "fused" for n in g.nodes)
    driver = compile_regions(g)
    assert driver.source.count("for f0 in range(50):") == 1, driver.source
    check_against_eager(g, driver, [np.linspace(1.0, 9.0, 50)])


def test_a_softmax_group_runs_one_sweep_per_reduction_level() -> None:
    """``e = exp(x - x.max()); p = e / e.sum()`` is one kernel group: a max sweep, a sum sweep, a write sweep."""
    b = GraphBuilder()
    x = b.input(TensorType((4, 5), F64), "x")
    full = {"axis": (0, 1), "keepdims": False}
    e = b.op("exp", b.op("subtract", x, b.op("max", x, **full)))
    p = b.op("divide", e, b.op("sum", e, **full))

    def body(rb: GraphBuilder, i: Node, y: Node) -> list[Node]:
        return [put(rb, y, rb.op("multiply", at(rb, y, i, 0), rb.const(2.0)), i, 0)]

    (out,) = build_loop(b, 0, 4, 1, [p], body)
    g, _ = run_pipeline(b.build([out]), {})
    assert [n.attrs["kind"] for n in g.nodes if n.op == "fused"] == ["reduction"]
    driver = compile_regions(g)
    assert driver.source.count("for f0 in range(4):") == 3 and "np.sum" not in driver.source, driver.source
    check_against_eager(g, driver, [np.arange(20.0).reshape(4, 5) / 7])


def test_a_group_reducing_rows_sweeps_each_row() -> None:
    """``x / x.sum(1, keepdims=True)`` and ``abs(x).max(1)``: per row, one sweep for both reductions, one write
    sweep (a keepdims reduction over some axes had no loop-body emitter: the graph ran eagerly)."""
    b = GraphBuilder()
    x = b.input(TensorType((3, 4), F64), "x")
    rows = b.op("divide", x, b.op("sum", x, axis=(1,), keepdims=True))
    norms = b.op("max", b.op("absolute", x), axis=(1,), keepdims=False)

    def body(rb: GraphBuilder, i: Node, y: Node) -> list[Node]:
        return [put(rb, y, rb.op("add", at(rb, y, i, 0), at(rb, norms, i)), i, 0)]

    (out,) = build_loop(b, 0, 3, 1, [rows], body)
    g, _ = run_pipeline(b.build([out]), {})
    assert any(n.op == "fused" for n in g.nodes)
    driver = compile_regions(g)
    assert driver.source.count("for f0 in range(3):") == 1 and driver.source.count("for f1 in range(4):") == 2
    check_against_eager(g, driver, [np.arange(1.0, 13.0).reshape(3, 4)])


def test_a_keepdims_column_reduction_compiles() -> None:
    """``x + x.max(0, keepdims=True)``: no NumPy call in a loop body does it, so the group sweeps the columns."""
    b = GraphBuilder()
    x = b.input(TensorType((3, 4), F64), "x")
    y0 = b.op("add", x, b.op("max", x, axis=(0,), keepdims=True))

    def body(rb: GraphBuilder, i: Node, y: Node) -> list[Node]:
        return [put(rb, y, rb.op("multiply", at(rb, y, i, 0), rb.const(2.0)), i, 0)]

    (out,) = build_loop(b, 0, 3, 1, [y0], body)
    g, _ = run_pipeline(b.build([out]), {})
    driver = compile_or_eager(g)
    assert driver.fallback_reason() is None, driver.fallback_reason()
    check_against_eager(g, driver, [np.random.default_rng(1).standard_normal((3, 4))])


def test_drivers_answer_the_backend_protocol() -> None:
    g = _scalar_loop(F64, 4, lambda rb, v, i: rb.op("sqrt", v))
    driver = compile_regions(g, {"name": "proto"})
    assert isinstance(driver, CompiledGraph)
    (source,) = driver.kernel_sources()
    assert source.source == driver.source and source.source.startswith("def loops_proto(")
    assert driver.fallback_reason() is None
    assert [r.kind for r in driver.regions()] == ["loop"] and "trips=4" in driver.explain()
    times = driver.compile_times()
    assert set(times) == {"codegen", "numba"} and times["numba"] > 0

    b = GraphBuilder()
    m = b.input(TensorType((2, 3, 3), F64), "m")  # a batched product: no loop-body emitter
    (y,) = build_loop(b, 0, 2, 1, [m], lambda rb, i, v: [rb.op("matmul", v, v)])
    fallback = compile_or_eager(b.build([y]))
    assert isinstance(fallback, CompiledGraph) and fallback.kernel_sources() == []
    assert "matmul" in (fallback.fallback_reason() or "") and fallback.regions()
