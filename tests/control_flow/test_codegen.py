"""The loop code generator: compiled drivers agree with the reference interpreter, buffers are reused only when
that is invisible, and the generated source is readable and registered in linecache."""

from __future__ import annotations

import linecache

import numpy as np
import pytest

from jitgraph.backends import eager
from jitgraph.backends.cpu.scalar import compile_or_eager, compile_regions, generate
from jitgraph.ir.graph import Graph, GraphBuilder, Node
from jitgraph.ir.ops.control import build_cond, build_loop, build_while
from jitgraph.ir.types import TensorType
from tests.control_flow.helpers import at, check_against_eager, put

F64, F32, I64 = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int64)


def kitchen_sink() -> Graph:
    """Every region kind, nested, with carried scalars and arrays, a mutated input and a read-only snapshot.

    The loop writes ``out`` (a copy of ``a``: the same value is both the carried init and an invariant, so the
    body reads the *original* ``a`` while updating the carried one) and mutates ``m`` in place.
    """
    b = GraphBuilder()
    a = b.input(TensorType((6,), F64), "a")
    m = b.input(TensorType((6,), F32), "m")
    w = b.input(TensorType((), F64, weak=True), "w")

    def body(rb: GraphBuilder, i: Node, s: Node, out: Node, mm: Node) -> list[Node]:
        nxt = rb.op("remainder", rb.op("add", i, rb.const(1)), rb.const(6))
        v = rb.op("add", at(rb, a, i), at(rb, a, nxt))          # reads the snapshot a, not the carried out
        s2 = rb.op("add", s, rb.op("multiply", v, w))
        (val,) = build_cond(rb, rb.op("greater", v, rb.const(0.0)),
                            lambda cb: [cb.op("sqrt", v)], lambda cb: [cb.op("negative", v)])
        mm2 = put(rb, mm, rb.op("add", at(rb, mm, i), rb.const(1.5)), i)
        return [s2, put(rb, out, val, i), mm2]

    s, out, m2 = build_loop(b, 0, 6, 1, [b.const(np.float64(0.0)), a, m], body)
    (half,) = build_while(b, [s], lambda rb, x: rb.op("greater", rb.op("absolute", x), rb.const(1.0)),
                          lambda rb, x: [rb.op("multiply", x, rb.const(0.5))])
    return b.build([half, out, a], [(1, m2)])


@pytest.fixture(scope="module")
def sink() -> tuple[Graph, object]:
    g = kitchen_sink()
    return g, compile_regions(g, {"name": "sink"})


def test_kitchen_sink_matches_eager(sink: tuple[Graph, object]) -> None:
    g, driver = sink
    rng = np.random.default_rng(1)
    for _ in range(3):
        args = [rng.standard_normal(6), rng.standard_normal(6).astype(np.float32), float(rng.uniform(0.5, 3))]
        check_against_eager(g, driver, args)


def test_input_that_is_read_later_is_not_clobbered(sink: tuple[Graph, object]) -> None:
    _g, driver = sink
    a = np.arange(6.0) - 2.5
    before = a.copy()
    _, out, a_again = driver([a, np.zeros(6, np.float32), 1.0])
    np.testing.assert_array_equal(a, before)           # a is not mutated by the graph
    np.testing.assert_array_equal(a_again, before)
    assert not np.shares_memory(out, a)


def test_generated_source_is_named_and_in_linecache(sink: tuple[Graph, object]) -> None:
    _, driver = sink
    assert driver.source.startswith("def loops_sink(a, m, w):")
    assert "while v" in driver.source and "if v" in driver.source  # a rotated while: ``while <flag>:``
    assert driver.python_function.__code__.co_filename == driver.filename
    lines = linecache.getlines(driver.filename)
    assert "".join(lines) == driver.source


def test_mutated_input_is_updated_in_place_without_a_writeback(sink: tuple[Graph, object]) -> None:
    _, driver = sink
    assert "= m\n" in driver.source           # the caller's buffer is donated to the loop, not copied
    assert "m.copy()" not in driver.source and "copy_into(m" not in driver.source
    assert "a.copy()" in driver.source        # a is read after the loop: the carried copy of it is a real copy


def swap_graph() -> Graph:
    """Two carried arrays swap every iteration and one is updated: results must never alias each other."""
    b = GraphBuilder()
    x = b.input(TensorType((4,), F64), "x")

    def body(rb: GraphBuilder, i: Node, p: Node, q: Node) -> list[Node]:
        return [q, put(rb, p, rb.op("add", at(rb, p, i), at(rb, q, i)), i)]

    p, q = build_loop(b, 0, 4, 1, [x, x], body)
    return b.build([p, q])


def test_swapped_carried_arrays() -> None:
    g = swap_graph()
    driver = compile_regions(g)
    out = check_against_eager(g, driver, [np.arange(4.0) + 1])
    assert not np.shares_memory(out[0], out[1])


def cond_alias_graph() -> Graph:
    """A cond that may return its operand unchanged: a later in-place update must not leak into the input."""
    b = GraphBuilder()
    x = b.input(TensorType((3,), F64), "x")
    flag = b.input(TensorType((), np.dtype(bool)), "flag")
    (y,) = build_cond(b, flag, lambda cb: [x], lambda cb: [cb.op("multiply", x, cb.const(2.0))])
    z = put(b, y, b.const(np.float64(-1.0)), 0)
    return b.build([z, x])


def test_cond_result_aliasing_operand_is_copied_before_a_write() -> None:
    g = cond_alias_graph()
    driver = compile_regions(g)
    for flag in (True, False):
        x = np.array([1.0, 2.0, 3.0])
        check_against_eager(g, driver, [x, np.bool_(flag)])
        _z, x_out = driver([x, np.bool_(flag)])
        assert x[0] == 1.0 and x_out[0] == 1.0


def test_int_dtypes_wrap_like_numpy() -> None:
    """uint8 arithmetic in a loop wraps exactly as NumPy does; Numba's int64 scalar promotion never leaks."""
    b = GraphBuilder()
    d = b.input(TensorType((8,), np.dtype(np.uint8)), "d")

    def body(rb: GraphBuilder, i: Node, acc: Node) -> list[Node]:
        return [rb.op("add", rb.op("multiply", acc, rb.const(3)), at(rb, d, i))]

    (acc,) = build_loop(b, 0, 8, 1, [b.const(np.uint8(7))], body)
    g = b.build([acc])
    got = check_against_eager(g, compile_regions(g), [np.arange(200, 208, dtype=np.uint8)])
    assert got[0].dtype == np.uint8


def test_unsupported_op_falls_back_with_a_reason() -> None:
    b = GraphBuilder()
    x = b.input(TensorType((2, 3, 3), F64), "x")  # a batched product: loop bodies have 1-D and 2-D ones only
    (y,) = build_loop(b, 0, 2, 1, [x], lambda rb, i, v: [rb.op("matmul", v, v)])
    g = b.build([y])
    compiled = compile_or_eager(g)
    assert "matmul" in compiled.fallback_reason()
    x = np.stack([np.eye(3) * 2] * 2)
    np.testing.assert_array_equal(compiled([x])[0], np.stack([np.eye(3) * 16] * 2))


def test_small_products_in_a_loop_body_compile() -> None:
    """2-D @ 2-D and 1-D @ 2-D inside a loop body (an RNN cell, a 3x3 rotation) run in the driver."""
    b = GraphBuilder()
    m = b.input(TensorType((3, 3), F64), "m")
    h = b.input(TensorType((3,), F64), "h")

    def body(rb: GraphBuilder, i: Node, mv: Node, hv: Node) -> list[Node]:
        return [rb.op("matmul", mv, mv), rb.op("matmul", hv, rb.op("transpose", mv, axes=(1, 0)))]

    outs = build_loop(b, 0, 3, 1, [m, h], body)
    g = b.build(list(outs))
    compiled = compile_or_eager(g)
    assert compiled.fallback_reason() is None
    rng = np.random.default_rng(0)
    m0, h0 = rng.standard_normal((3, 3)) / 2, rng.standard_normal(3)
    got = compiled([m0, h0])
    ref_m, ref_h = m0, h0
    for _ in range(3):
        ref_m, ref_h = ref_m @ ref_m, ref_h @ ref_m.T
    np.testing.assert_allclose(got[0], ref_m, rtol=1e-12)
    np.testing.assert_allclose(got[1], ref_h, rtol=1e-12)


def test_whole_array_body_stays_in_one_driver() -> None:
    """A time loop over whole-array ops is one compiled function: no Python between iterations."""
    b = GraphBuilder()
    u = b.input(TensorType((8,), F64), "u")

    def step(rb: GraphBuilder, t: Node, v: Node) -> list[Node]:
        mid = rb.op("multiply", rb.const(0.5), rb.op("add", at(rb, v, slice(None, -2)), at(rb, v, slice(2, None))))
        return [put(rb, v, mid, slice(1, -1))]

    (out,) = build_loop(b, 0, 10, 1, [u], step)
    g = b.build([out], [(0, out)])
    em = generate(g)
    assert sum(line.lstrip().startswith("def ") for line in em.lines) == 1
    check_against_eager(g, compile_regions(g), [np.linspace(0, 1, 8) ** 2])


def test_bad_index_raises_index_error_instead_of_reading_garbage() -> None:
    """Indices read from data are checked (eager NumPy raises IndexError); induction variables are proven."""
    b = GraphBuilder()
    idx = b.input(TensorType((4,), I64), "idx")
    x = b.input(TensorType((5,), F64), "x")

    def body(rb: GraphBuilder, i: Node, s: Node) -> list[Node]:
        return [rb.op("add", s, at(rb, x, at(rb, idx, i)))]

    (s,) = build_loop(b, 0, 4, 1, [b.const(np.float64(0.0))], body)
    g = b.build([s])
    driver = compile_regions(g)
    assert driver.source.count("raise IndexError") == 1   # x[idx[i]] is checked, idx[i] is proven
    check_against_eager(g, driver, [np.array([0, 4, -5, 2]), np.arange(5.0)])
    with pytest.raises(IndexError):
        driver([np.array([0, 5, 1, 2]), np.arange(5.0)])
    with pytest.raises(IndexError):
        eager.run(g, [np.array([0, 5, 1, 2]), np.arange(5.0)])
