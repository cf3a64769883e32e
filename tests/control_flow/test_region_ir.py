"""The region ops in the IR: types, printing (indented bodies), verification and eager semantics."""

from __future__ import annotations

import numpy as np
import pytest

from jitgraph.backends import eager
from jitgraph.errors import VerifyError
from jitgraph.ir.graph import Graph, GraphBuilder, Node
from jitgraph.ir.ops.control import INDEX_TYPE, build_cond, build_loop, build_while, describe_regions, trip_count
from jitgraph.ir.printer import format_graph
from jitgraph.ir.types import TensorType
from jitgraph.ir.verifier import verify
from tests.control_flow.helpers import at, put

F64 = np.dtype(np.float64)


def prefix_sums() -> Graph:
    """out[i] = sum(a[:i+1]) with a carried scalar and a carried array; a cond doubles big partial sums."""
    b = GraphBuilder()
    a = b.input(TensorType((5,), F64), "a")

    def body(rb: GraphBuilder, i: Node, s: Node, out: Node) -> list[Node]:
        s2 = rb.op("add", s, at(rb, a, i))
        (s3,) = build_cond(rb, rb.op("greater", s2, rb.const(4.0)),
                           lambda cb: [cb.op("multiply", s2, cb.const(2.0))], lambda cb: [s2])
        return [s3, put(rb, out, s3, i)]

    s, out = build_loop(b, 0, 5, 1, [b.const(np.float64(0.0)), b.op("zeros", shape=(5,), dtype=F64)], body)
    return b.build([s, out])


GOLDEN = """\
%0 = input[a] : f64[5]
%1 = const(f64(0.0)) : f64[]
%2 = zeros(shape=(5,), dtype=f64) : f64[5]
%3 = const(0) : pyint[]
%4 = const(5) : pyint[]
%5 = const(1) : pyint[]
%6 = loop(%3, %4, %5, %1, %2, %0, carried=2) : (f64[], f64[5]) {
  %7 = input[i] : pyint[]
  %8 = input[c0] : f64[]
  %9 = input[c1] : f64[5]
  %10 = input[inv0] : f64[5]
  %11 = getitem(%10, %7, spec=(#0,)) : f64[]
  %12 = add(%8, %11) : f64[]
  %13 = const(4.0) : pyfloat[]
  %14 = greater(%12, %13) : b1[]
  %15 = cond(%14, %12) : (f64[]) {
    %16 = input[inv0] : f64[]
    %17 = const(2.0) : pyfloat[]
    %18 = multiply(%16, %17) : f64[]
    return %18
  } {
    %19 = input[inv0] : f64[]
    return %19
  }
  %20 = tuple_get(%15, index=0) : f64[]
  %21 = setitem(%9, %20, %7, spec=(#0,)) : f64[5]
  return %20, %21
}
%22 = tuple_get(%6, index=0) : f64[]
%23 = tuple_get(%6, index=1) : f64[5]
return %22, %23"""


def test_printed_ir_shows_indented_bodies() -> None:
    g = verify(prefix_sums())
    assert format_graph(g) == GOLDEN


def test_loop_eager_semantics() -> None:
    a = np.array([1.0, 2.0, 0.5, 3.0, -1.0])
    s, out = eager.run(prefix_sums(), [a])
    expect, acc = np.zeros(5), 0.0
    for i in range(5):
        acc += a[i]
        acc = acc * 2.0 if acc > 4.0 else acc
        expect[i] = acc
    assert s == acc and isinstance(s, np.float64)
    np.testing.assert_array_equal(out, expect)


def test_while_and_zero_trip_loop() -> None:
    b = GraphBuilder()
    x = b.input(TensorType((), F64), "x")
    n = b.input(TensorType((), np.dtype(np.int64), weak=True), "n")
    (halved,) = build_while(b, [x], lambda rb, v: rb.op("greater", v, rb.const(1.0)),
                            lambda rb, v: [rb.op("multiply", v, rb.const(0.5))])
    (summed,) = build_loop(b, 0, n, 1, [x], lambda rb, i, v: [rb.op("add", v, rb.const(1.0))])
    g = verify(b.build([halved, summed]))
    assert eager.run(g, [np.float64(10.0), 3]) == [np.float64(0.625), np.float64(13.0)]
    assert eager.run(g, [np.float64(0.5), 0]) == [np.float64(0.5), np.float64(0.5)]  # no iteration at all
    assert eager.run(g, [np.float64(0.5), -2]) == [np.float64(0.5), np.float64(0.5)]


def test_carried_type_must_not_change() -> None:
    b = GraphBuilder()
    x = b.input(TensorType((), np.dtype(np.float32)), "x")
    with pytest.raises(Exception, match="must keep its shape, dtype and weakness"):
        build_loop(b, 0, 3, 1, [x], lambda rb, i, v: [rb.op("add", v, rb.const(np.float64(1.0)))])


def test_cond_branches_must_agree() -> None:
    b = GraphBuilder()
    x = b.input(TensorType((3,), F64), "x")
    p = b.input(TensorType((), np.dtype(bool)), "p")
    with pytest.raises(Exception, match="cond else"):
        build_cond(b, p, lambda cb: [x], lambda cb: [cb.op("astype", x, dtype=np.dtype(np.float32))])


def test_verifier_rejects_an_open_region() -> None:
    """A body that reads a value of the enclosing graph directly (not through an input) is malformed."""
    b = GraphBuilder()
    x = b.input(TensorType((), F64), "x")
    body_b = GraphBuilder()
    i = body_b.input(INDEX_TYPE, "i")
    c = body_b.input(TensorType((), F64), "c")
    bad = Node("add", (c, x), TensorType((), F64))
    body_b.add(bad)
    body = body_b.build([bad])
    bounds = [b.const(0), b.const(2), b.const(1)]
    loop = b.op("loop", *bounds, x, regions=(body,), carried=1)
    g = b.build([b.op("tuple_get", loop, index=0)])
    with pytest.raises(VerifyError, match="outside this graph"):
        verify(g)
    assert i is body.inputs[0]


def test_trip_counts_and_description() -> None:
    g = prefix_sums()
    loop = next(n for n in g.nodes if n.op == "loop")
    assert trip_count(loop) == 5
    rows = [str(r) for r in describe_regions(g, parallel=[loop])]
    assert rows == ["%6 loop trips=5 prange", "  %15 cond"]


def test_nested_capture_passes_outer_values_through_every_level() -> None:
    """A value used two regions down becomes an invariant of both loops (regions stay closed)."""
    b = GraphBuilder()
    a = b.input(TensorType((3, 4), F64), "a")
    scale = b.input(TensorType((), F64), "scale")

    def rows(rb: GraphBuilder, i: Node, acc: Node) -> list[Node]:
        def cols(rb2: GraphBuilder, j: Node, acc2: Node) -> list[Node]:
            return [rb2.op("add", acc2, rb2.op("multiply", at(rb2, a, i, j), scale))]

        return build_loop(rb, 0, 4, 1, [acc], cols)

    (total,) = build_loop(b, 0, 3, 1, [b.const(np.float64(0.0))], rows)
    g = verify(b.build([total]))
    x = np.arange(12.0).reshape(3, 4)
    assert eager.run(g, [x, np.float64(0.5)])[0] == pytest.approx(x.sum() * 0.5)
