"""Printed-IR goldens (the exact text) and the verifier's rejection of malformed graphs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from jitgraph.errors import VerifyError
from jitgraph.ir import Graph, GraphBuilder, Node, Operand, TensorType, TupleType, format_graph, type_of, verify

F32_43 = TensorType((4, 3), np.float32)


def test_golden_elementwise_weak_scalars_and_mutation() -> None:
    b = GraphBuilder()
    x = b.input(F32_43, "x")
    lr = b.input(type_of(0.01), "lr")
    g = b.input(TensorType((4, 3), np.float32, layout="F"), "grad")
    step = b.op("multiply", lr, g)
    half = b.op("multiply", step, b.const(0.5))
    new = b.op("subtract", x, half)
    norm = b.op("sum", b.op("square", new), axis=(0, 1), keepdims=False)
    graph = verify(b.build([norm], [(0, new)]))
    assert str(graph) == format_graph(graph) == """\
%0 = input[x] : f32[4,3]
%1 = input[lr] : pyfloat[]
%2 = input[grad] : f32[4,3]{F}
%3 = multiply(%1, %2) : f32[4,3]
%4 = const(0.5) : pyfloat[]
%5 = multiply(%3, %4) : f32[4,3]
%6 = subtract(%0, %5) : f32[4,3]
%7 = square(%6) : f32[4,3]
%8 = sum(%7, axis=(0, 1), keepdims=False) : f32[]
return %8
mutate %0 <- %6"""


def test_golden_indexing_constants_and_attrs() -> None:
    b = GraphBuilder()
    x = b.input(TensorType((5, 4, 3), np.float64), "x")
    idx = b.input(TensorType((2,), np.int64), "idx")
    n = b.input(type_of(1), "n")
    c = b.const(np.array([1.5, -2.0], np.float32))
    m = b.const(np.array([[1, 2], [3, 4]], np.int32))
    big = b.const(np.zeros((3, 4)))
    s = b.const(np.float32(0.25))
    flag = b.const(True)
    gather = b.op("getitem", x, idx, spec=(Operand(0), slice(None, None, -1), None, Ellipsis))
    view = b.op("getitem", x, n, spec=(slice(1, None, 2), Operand(0)))
    last = b.op("getitem", x, spec=(-1, slice(None, 2), 0))
    upd = b.op("setitem", x, b.op("astype", c, dtype=np.dtype(np.float64)), idx,
               spec=(Ellipsis, Operand(0), slice(1, 3, None)))
    am = b.op("argmax", view, axis=None, keepdims=True)
    f = b.op("full", shape=(2,), dtype=np.dtype(np.int8), value=7)
    graph = verify(b.build([gather, view, last, am, f, m, big, s, flag], [(0, upd)]))
    assert str(graph) == """\
%0 = input[x] : f64[5,4,3]
%1 = input[idx] : i64[2]
%2 = input[n] : pyint[]
%3 = const(f32[1.5,-2.0]) : f32[2]
%4 = const(i32[[1,2],[3,4]]) : i32[2,2]
%5 = const(<f64[3, 4] array>) : f64[3,4]
%6 = const(f32(0.25)) : f32[]
%7 = const(True) : b1[]
%8 = getitem(%0, %1, spec=(#0, ::-1, None, ...)) : f64[2,4,1,3]
%9 = getitem(%0, %2, spec=(1::2, #0)) : f64[2,3]{S}
%10 = getitem(%0, spec=(-1, :2, 0)) : f64[2]{S}
%11 = astype(%3, dtype=f64) : f64[2]
%12 = setitem(%0, %11, %1, spec=(..., #0, 1:3)) : f64[5,4,3]
%13 = argmax(%9, axis=None, keepdims=True) : i64[1,1]
%14 = full(shape=(2,), dtype=i8, value=7) : i8[2]
return %8, %9, %10, %13, %14, %4, %5, %6, %7
mutate %0 <- %12"""


def test_golden_shape_and_linalg_ops() -> None:
    b = GraphBuilder()
    a = b.input(TensorType((2, 3), np.float32), "a")
    w = b.input(TensorType((3, 4), np.float64, layout="S"), "w")
    t = b.op("transpose", w, axes=(1, 0))
    mm = b.op("matmul", a, w)
    e = b.op("einsum", a, t, subscripts="ij,kj->ik")
    r = b.op("reshape", mm, shape=(-1,))
    bc = b.op("broadcast_to", a, shape=(5, 2, 3))
    cat = b.op("concatenate", a, a, axis=0)
    st = b.op("stack", a, a, axis=-1)
    ar = b.op("arange", start=0, stop=6, step=2, dtype=np.dtype(np.int32))
    graph = verify(b.build([e, r, bc, cat, st, ar]))
    assert str(graph) == """\
%0 = input[a] : f32[2,3]
%1 = input[w] : f64[3,4]{S}
%2 = transpose(%1, axes=(1, 0)) : f64[4,3]{S}
%3 = matmul(%0, %1) : f64[2,4]
%4 = einsum(%0, %2, subscripts='ij,kj->ik') : f64[2,4]
%5 = reshape(%3, shape=(-1,)) : f64[8]
%6 = broadcast_to(%0, shape=(5, 2, 3)) : f32[5,2,3]{S}
%7 = concatenate(%0, %0, axis=0) : f32[4,3]
%8 = stack(%0, %0, axis=-1) : f32[2,3,2]
%9 = arange(start=0, stop=6, step=2, dtype=i32) : i32[3]
return %4, %5, %6, %7, %8, %9"""


def test_printing_is_deterministic_and_position_named() -> None:
    """Names are positions, not object ids: the same program built twice prints the same text."""
    texts = []
    for _ in range(2):
        b = GraphBuilder()
        x = b.input(F32_43, "x")
        texts.append(str(b.build([b.op("tanh", b.op("exp", x))])))
    assert texts[0] == texts[1]
    with np.printoptions(precision=2, floatmode="fixed", sign="+"):  # process-wide print options do not leak in
        b = GraphBuilder()
        c = b.const(np.array([0.125, 1.0]))
        assert str(b.build([c])) == "%0 = const(f64[0.125,1.0]) : f64[2]\nreturn %0"


# ----------------------------------------------------------------------------------------------------- verifier


def _graph() -> tuple[Graph, list[Node]]:
    b = GraphBuilder()
    x = b.input(F32_43, "x")
    y = b.input(TensorType((3,), np.float32), "y")
    e = b.op("exp", x)
    a = b.op("add", e, y)
    s = b.op("sum", a, axis=(1,), keepdims=False)
    return verify(b.build([s], [(0, a)])), [x, y, e, a, s]


def _rejects(graph: Graph, *fragments: str, marked: str | None = None) -> str:
    with pytest.raises(VerifyError) as info:
        verify(graph)
    text = str(info.value)
    for fragment in fragments:
        assert fragment in text, text
    marks = [line for line in text.splitlines() if line.startswith("--> ")]
    assert len(marks) == 1, f"expected exactly one --> line:\n{text}"
    if marked is not None:
        assert marks[0] == "--> " + marked, text
    assert "hint:" in text
    return text


def test_verifier_accepts_well_formed_graphs() -> None:
    graph, _ = _graph()
    assert verify(graph) is graph


def test_use_before_def() -> None:
    graph, (x, y, e, a, s) = _graph()
    bad = replace(graph, nodes=(x, y, a, e, s))
    _rejects(bad, "defined later in the graph", marked="%2 = add(%3, %1) : f32[4,3]")


def test_node_outside_the_graph() -> None:
    graph, (x, y, e, _a, s) = _graph()
    other = GraphBuilder()
    stranger = other.op("exp", other.input(F32_43, "z"))
    intruder = Node("add", (stranger, y), F32_43)
    bad = replace(graph, nodes=(x, y, e, intruder, s), outputs=(intruder,), mutations=())
    _rejects(bad, "outside this graph", marked="%3 = add(%4, %1) : f32[4,3]")


def test_wrong_type_stored_on_a_node() -> None:
    graph, (x, y, e, a, s) = _graph()
    wrong = Node("add", a.inputs, TensorType((4, 3), np.float64))
    s2 = Node("sum", (wrong,), s.type, s.attrs)
    bad = replace(graph, nodes=(x, y, e, wrong, s2), outputs=(s2,), mutations=())
    _rejects(bad, "add is typed f64[4,3], but its rule gives f32[4,3]", marked="%3 = add(%2, %1) : f64[4,3]")
    weak = Node("exp", (x,), TensorType((4, 3), np.float32, layout="F"))  # layout is advisory: accepted
    verify(replace(graph, nodes=(x, y, weak), outputs=(weak,), mutations=()))


def test_operands_the_rule_rejects() -> None:
    graph, (x, y, _e, _a, _s) = _graph()
    bad_op = Node("bitwise_and", (x, y), F32_43)
    _rejects(replace(graph, nodes=(x, y, bad_op), outputs=(bad_op,), mutations=()), "bitwise_and rejects",
             marked="%2 = bitwise_and(%0, %1) : f32[4,3]")
    no_attr = Node("reshape", (x,), TensorType((12,), np.float32))  # the shape attr is missing
    _rejects(replace(graph, nodes=(x, y, no_attr), outputs=(no_attr,), mutations=()), "type rule failed")


def test_wrong_const_type() -> None:
    graph, (x, y, _e, _a, _s) = _graph()
    c = Node("const", (), TensorType((3,), np.float32), {"value": np.zeros(3)})
    _rejects(replace(graph, nodes=(x, y, c), outputs=(c,), mutations=()),
             "const is typed f32[3], but its value has type f64[3]", marked="%2 = const(f64[0.0,0.0,0.0]) : f32[3]")
    strong = Node("const", (), TensorType((), np.float64), {"value": 0.5})
    _rejects(replace(graph, nodes=(x, y, strong), outputs=(strong,), mutations=()), "pyfloat[]")


def test_mutation_type_mismatch() -> None:
    graph, (x, y, e, a, s) = _graph()
    _rejects(replace(graph, mutations=((1, a),)), "mutation writes f32[4,3] into input 1 of type f32[3]",
             marked="mutate %1 <- %3")
    cast = Node("astype", (a,), TensorType((4, 3), np.float64), {"dtype": np.dtype(np.float64)})
    _rejects(replace(graph, nodes=(x, y, e, a, cast, s), mutations=((0, cast),)), "into input 0",
             marked="mutate %0 <- %4")


def test_mutation_problems() -> None:
    graph, (x, _y, e, a, _s) = _graph()
    _rejects(replace(graph, mutations=((0, a), (0, e))), "mutated twice", marked="mutate %0 <- %2")
    _rejects(replace(graph, mutations=((5, a),)), "the graph has 2 inputs", marked="mutate input[5] <- %3")
    stray = Node("exp", (x,), F32_43)
    _rejects(replace(graph, mutations=((0, stray),)), "not defined in the graph", marked="mutate %0 <- %5")
    b = GraphBuilder()
    lr = b.input(type_of(0.5), "lr")
    doubled = b.op("add", lr, lr)
    _rejects(b.build([], [(0, doubled)]), "Python scalar", marked="mutate %0 <- %1")


def test_duplicate_node() -> None:
    graph, (x, y, e, a, s) = _graph()
    _rejects(replace(graph, nodes=(x, y, e, e, a, s)), "appears twice", marked="%2 = exp(%0) : f32[4,3]")


def test_bad_input_index() -> None:
    graph, (x, y, e, _a, _s) = _graph()
    swapped = replace(graph, inputs=(y, x))
    _rejects(swapped, "is not graph.inputs[0]", marked="%0 = input[x] : f32[4,3]")
    wrong_index = Node("input", (), y.type, {"index": 7})
    _rejects(replace(graph, nodes=(x, wrong_index), inputs=(x, wrong_index), outputs=(x,), mutations=()),
             "graph.inputs[7]", marked="%1 = input[7] : f32[3]")
    missing = replace(graph, nodes=(x, e), inputs=(x, y), outputs=(e,), mutations=())
    _rejects(missing, "graph.inputs[1]", marked="%0 = input[x] : f32[4,3]")


def test_output_not_in_graph_and_unknown_op() -> None:
    graph, (x, y, _e, _a, _s) = _graph()
    stray = Node("exp", (x,), F32_43)
    _rejects(replace(graph, outputs=(stray,)), "output", marked="return %5")
    unknown = Node("frobnicate", (x,), F32_43)
    _rejects(replace(graph, nodes=(x, y, unknown), outputs=(unknown,), mutations=()), "unknown op 'frobnicate'",
             marked="%2 = frobnicate(%0) : f32[4,3]")


def test_layout_is_advisory_inside_tuple_types() -> None:
    """A pass that improves the layout of a tuple-typed node's elements must not trip the verifier.

    Regression: TupleTypes were compared with ``==``, which includes each element's layout.
    """
    body_builder = GraphBuilder()
    bx = body_builder.input(F32_43, "x")
    body = body_builder.build([body_builder.op("exp", bx), body_builder.op("negative", bx)])
    b = GraphBuilder()
    x = b.input(F32_43, "x")
    pair = b.op("fused", x, regions=[body])
    assert isinstance(pair.type, TupleType)
    first = b.op("tuple_get", pair, index=0)
    graph = verify(b.build([first]))
    relaxed = Node("fused", (x,), TupleType((F32_43.with_(layout="F"), F32_43)), regions=(body,))
    first2 = Node("tuple_get", (relaxed,), F32_43.with_(layout="F"), {"index": 0})
    verify(replace(graph, nodes=(x, relaxed, first2), outputs=(first2,)))
    wrong = Node("fused", (x,), TupleType((F32_43, F32_43.with_(dtype=np.float64))), regions=(body,))
    _rejects(replace(graph, nodes=(x, wrong), outputs=(wrong,)), "fused is typed (f32[4,3], f64[4,3])")


def test_region_bodies_are_verified_and_closed() -> None:
    """A body that reads a value of the enclosing graph (instead of taking it as a body input) is rejected."""
    outer = GraphBuilder()
    x = outer.input(F32_43, "x")
    scale = outer.op("exp", x)
    inner = GraphBuilder()
    bx = inner.input(F32_43, "bx")
    leaked = Node("multiply", (bx, scale), F32_43)  # reads the outer %1
    inner.add(leaked)
    body = inner.build([leaked])
    fused = Node("fused", (x,), F32_43, regions=(body,))
    graph = Graph((x, scale, fused), (x,), (fused,), (), ("x",))
    _rejects(graph, "outside this graph (regions are closed)", marked="%1 = multiply(%0, %2) : f32[4,3]")
    good_inner = GraphBuilder()
    gx = good_inner.input(F32_43, "bx")
    good_body = good_inner.build([good_inner.op("negative", gx)])
    b = GraphBuilder()
    y = b.input(F32_43, "x")
    node = b.op("fused", y, regions=[good_body])
    assert str(verify(b.build([node]))) == """\
%0 = input[x] : f32[4,3]
%1 = fused(%0) : f32[4,3] {
  %2 = input[bx] : f32[4,3]
  %3 = negative(%2) : f32[4,3]
  return %3
}
return %1"""
