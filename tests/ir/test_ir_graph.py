"""Graph construction and the eager backend's calling convention: mutations, aliasing outputs, frozen constants,
``rebuild`` and ``eliminate_dead``."""

from __future__ import annotations

import numpy as np
import pytest
from irtest_util import assert_same

from jitgraph.backends import eager
from jitgraph.ir import GraphBuilder, Node, Operand, SourceLoc, TensorType, eliminate_dead, rebuild, type_of, verify


def test_mutation_writes_caller_array_like_inplace_numpy() -> None:
    """``x += y; x[::2] *= 2`` eagerly versus the functional graph run by eager.run."""
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((4, 6)).astype(np.float32)
    y = rng.standard_normal(6).astype(np.float32)
    expected = x0.copy()
    expected += y
    expected[::2] *= 2
    b = GraphBuilder()
    x, yin = b.input(type_of(x0), "x"), b.input(type_of(y), "y")
    s = b.op("add", x, yin)
    rows = b.op("getitem", s, spec=(slice(None, None, 2),))
    new = b.op("setitem", s, b.op("multiply", rows, b.const(2)), spec=(slice(None, None, 2),))
    graph = verify(b.build([], [(0, new)]))
    arg = x0.copy()
    assert eager.run(graph, [arg, y]) == []
    assert_same(arg, expected)


def test_mutation_into_non_contiguous_caller_array() -> None:
    """The caller's array may be a strided view of a bigger buffer: only its elements change."""
    base = np.arange(40.0).reshape(5, 8)
    view = base[::2, 1::3].T  # non-contiguous, transposed
    before = base.copy()
    b = GraphBuilder()
    x = b.input(type_of(view), "x")
    graph = verify(b.build([], [(0, b.op("negative", x))]))
    eager.run(graph, [view])
    expected = before.copy()
    expected[::2, 1::3] *= -1
    assert_same(base, expected)


def test_outputs_aliasing_a_mutated_input_keep_pre_mutation_values() -> None:
    """The lead's functional semantics: outputs are values at the point they were computed."""
    x0 = np.arange(6.0).reshape(2, 3)
    b = GraphBuilder()
    x = b.input(type_of(x0), "x")
    xt = b.op("transpose", x, axes=(1, 0))  # a view of the input
    row = b.op("getitem", x, spec=(0,))  # another view
    doubled = b.op("multiply", x, b.const(2.0))
    graph = verify(b.build([x, xt, row, doubled], [(0, doubled)]))
    arg = x0.copy()
    out_x, out_xt, out_row, out_doubled = eager.run(graph, [arg])
    assert_same(arg, x0 * 2)
    assert_same(out_x, x0)
    assert_same(out_xt, x0.T)
    assert_same(out_row, x0[0])
    assert_same(out_doubled, x0 * 2)
    assert not np.shares_memory(out_doubled, arg)  # the caller cannot modify an output by writing its input


def test_swapping_mutations_use_pre_call_values() -> None:
    """``a[...], b[...] = b.copy(), a.copy()`` in graph form: each input receives the *other's old* value.

    Regression: mutations used to be applied one after another straight from the computed values, so when a
    mutation value was (a view of) another mutated input, the second write read the already-overwritten array.
    """
    a0, b0 = np.arange(4.0), np.arange(4.0) + 10
    g = GraphBuilder()
    a, b = g.input(type_of(a0), "a"), g.input(type_of(b0), "b")
    graph = verify(g.build([], [(0, b), (1, a)]))
    a1, b1 = a0.copy(), b0.copy()
    eager.run(graph, [a1, b1])
    assert_same(a1, b0)
    assert_same(b1, a0)
    # A mutation whose value is a view of its own target (x <- x.T) is an overlapping copy.
    m0 = np.arange(9.0).reshape(3, 3)
    g = GraphBuilder()
    m = g.input(type_of(m0), "m")
    graph = verify(g.build([], [(0, g.op("transpose", m, axes=(1, 0)))]))
    m1 = m0.copy()
    eager.run(graph, [m1])
    assert_same(m1, m0.T)


def test_mutation_casts_like_inplace_numpy_and_reads_happen_first() -> None:
    """A graph that reads an input after its "mutation" sees the old value (values first, writes last)."""
    x0 = np.arange(5, dtype=np.int32)
    g = GraphBuilder()
    x = g.input(type_of(x0), "x")
    plus = g.op("add", x, g.const(1))
    later = g.op("multiply", x, g.const(10))  # reads the *old* x
    graph = verify(g.build([later], [(0, plus)]))
    arg = x0.copy()
    (out,) = eager.run(graph, [arg])
    assert_same(arg, x0 + 1)
    assert_same(out, x0 * 10)


def test_evaluate_does_not_touch_caller_buffers() -> None:
    x0 = np.ones(3)
    g = GraphBuilder()
    x = g.input(type_of(x0), "x")
    graph = g.build([x], [(0, g.op("add", x, g.const(1.0)))])
    arg = x0.copy()
    outputs, values = eager.evaluate(graph, [arg])
    assert_same(arg, x0)
    assert_same(values[0], x0 + 1)
    assert outputs[0] is arg
    with pytest.raises(TypeError, match="takes 1 arguments, got 0"):
        eager.evaluate(graph, [])


def test_const_array_is_copied_and_frozen() -> None:
    value = np.arange(4.0)
    g = GraphBuilder()
    c = g.const(value)
    value[0] = 99.0  # the caller's later writes do not change the constant
    stored = c.attrs["value"]
    assert stored[0] == 0.0 and not np.shares_memory(stored, value)
    with pytest.raises(ValueError):
        stored[1] = 5.0
    graph = g.build([c, g.op("transpose", c, axes=(0,))])
    out, view = eager.run(graph, [])
    out[0] = 1.0  # outputs are the caller's own writable arrays, as NumPy results would be...
    view[1] = 7.0
    again, _ = eager.run(graph, [])
    assert_same(again, np.arange(4.0))  # ...and writing them cannot corrupt the graph's constant
    # A non-contiguous array constant is stored C-ordered, as its type says.
    t = g.const(np.arange(6.0).reshape(2, 3).T)
    assert t.type == TensorType((3, 2), np.float64) and t.attrs["value"].flags.writeable is False
    with pytest.raises(TypeError):
        g.const([1, 2, 3])


def test_builder_stamps_source_locations() -> None:
    g = GraphBuilder()
    x = g.input(type_of(np.ones(2)), "x")
    g.loc = SourceLoc("model.py", 12)
    y = g.op("exp", x)
    c = g.const(1.0)
    assert y.loc == c.loc == SourceLoc("model.py", 12) and str(y.loc) == "model.py:12"


def _sample_graph() -> tuple[object, list[Node]]:
    g = GraphBuilder()
    x = g.input(type_of(np.ones((2, 3), np.float32)), "x")
    y = g.input(type_of(0.5), "lr")
    dead = g.op("exp", x)
    g.op("sum", dead, axis=(0,), keepdims=False)  # dead too
    s = g.op("multiply", x, y)
    t = g.op("add", s, g.const(1.0))
    idx = g.const(np.array([1, 0]))
    gathered = g.op("getitem", t, idx, spec=(Operand(0),))
    return verify(g.build([gathered], [(0, t)])), [x, y, s, t, gathered]


def test_eliminate_dead_keeps_inputs_outputs_and_mutations() -> None:
    graph, _ = _sample_graph()
    pruned = verify(eliminate_dead(graph))
    assert [n.op for n in pruned.nodes] == ["input", "input", "multiply", "const", "add", "const", "getitem"]
    assert pruned.inputs == graph.inputs and pruned.outputs == graph.outputs and pruned.mutations == graph.mutations
    args = [np.arange(6, dtype=np.float32).reshape(2, 3), 0.5]
    a1, a2 = [args[0].copy(), 0.5], [args[0].copy(), 0.5]
    assert_same(eager.run(graph, a1)[0], eager.run(pruned, a2)[0])
    assert_same(a1[0], a2[0])
    # Unused inputs stay: they are the calling convention.
    g = GraphBuilder()
    g.input(type_of(np.ones(2)), "unused")
    c = g.const(2.0)
    assert len(eliminate_dead(g.build([c])).inputs) == 1


def test_rebuild_identity_and_replacement() -> None:
    graph, _ = _sample_graph()
    same = verify(rebuild(graph, lambda b, node, inputs: None))
    assert str(same) == str(graph)
    assert same.input_names == graph.input_names

    def exp_to_expm1(b: GraphBuilder, node: Node, inputs: tuple[Node, ...]) -> Node | None:
        if node.op == "add":
            return b.op("subtract", *inputs)
        return None

    changed = verify(rebuild(graph, exp_to_expm1))
    assert "subtract(%4, %5)" in str(changed) and "add(" not in str(changed)
    args = [np.arange(6, dtype=np.float32).reshape(2, 3), 0.5]
    expected_t = args[0] * 0.5 - 1.0
    arg = args[0].copy()
    (out,) = eager.run(changed, [arg, 0.5])
    assert_same(arg, expected_t)  # the mutation follows the replacement
    assert_same(out, expected_t[[1, 0]])
    # Kept nodes whose inputs changed are re-created, with their location and attrs.
    assert all(n.op != "add" for n in changed.nodes)
    assert next(n for n in changed.nodes if n.op == "getitem").attrs["spec"] == (Operand(0),)
