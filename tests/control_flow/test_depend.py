"""The dependence test: provably independent loops become prange, anything doubtful stays serial."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from jitgraph.backends.cpu.scalar.depend import independent
from jitgraph.ir.graph import GraphBuilder, Node
from jitgraph.ir.ops.control import build_loop
from jitgraph.ir.types import TensorType
from tests.control_flow.helpers import at, put

F64 = np.dtype(np.float64)
Body = Callable[[GraphBuilder, Node, Node, Node], list[Node]]


def loop_node(body: Body, start: int = 0, step: int = 1, shape: tuple[int, ...] = (8,)) -> Node:
    b = GraphBuilder()
    x = b.input(TensorType(shape, F64), "x")
    y = b.input(TensorType(shape, F64), "y")
    build_loop(b, start, shape[0], step, [y], lambda rb, i, yy: body(rb, i, yy, x))
    return next(n for n in b.nodes if n.op == "loop")


def plus1(rb: GraphBuilder, i: Node) -> Node:
    return rb.op("add", i, rb.const(1))


INDEPENDENT: dict[str, Body] = {
    "map": lambda rb, i, y, x: [put(rb, y, rb.op("exp", at(rb, x, i)), i)],
    "read own slot": lambda rb, i, y, x: [put(rb, y, rb.op("add", at(rb, y, i), at(rb, x, i)), i)],
    "read neighbours of the snapshot": lambda rb, i, y, x: [
        put(rb, y, rb.op("add", at(rb, x, i), at(rb, x, rb.op("remainder", plus1(rb, i), rb.const(8)))), i)],
    "two writes to the same slot": lambda rb, i, y, x: [
        put(rb, put(rb, y, at(rb, x, i), i), rb.op("add", at(rb, x, i), rb.const(1.0)), i)],
}


@pytest.mark.parametrize("name", sorted(INDEPENDENT))
def test_independent_loops_are_parallel(name: str) -> None:
    verdict = independent(loop_node(INDEPENDENT[name]))
    assert verdict.parallel, verdict.reason


SERIAL: dict[str, tuple[Body, str]] = {
    "reads the previous slot": (lambda rb, i, y, x: [
        put(rb, y, at(rb, y, rb.op("subtract", i, rb.const(1))), i)], "read at an index"),
    "writes the next slot": (lambda rb, i, y, x: [put(rb, y, at(rb, x, i), plus1(rb, i))], "written at an index"),
    "writes a slice": (lambda rb, i, y, x: [put(rb, y, at(rb, x, i), slice(None))], "written at an index"),
    "reads the whole array": (lambda rb, i, y, x: [
        put(rb, y, rb.op("sum", y, axis=(0,), keepdims=False), i)], "used by sum"),
    "reads a carried array at a fixed row": (lambda rb, i, y, x: [
        put(rb, y, at(rb, y, rb.const(0)), i)], "read at an index"),
}


@pytest.mark.parametrize("name", sorted(SERIAL))
def test_dependent_or_doubtful_loops_stay_serial(name: str) -> None:
    body, why = SERIAL[name]
    verdict = independent(loop_node(body))
    assert not verdict.parallel
    assert why in verdict.reason


def test_carried_scalar_is_serial() -> None:
    b = GraphBuilder()
    x = b.input(TensorType((8,), F64), "x")
    build_loop(b, 0, 8, 1, [b.const(np.float64(0.0))], lambda rb, i, s: [rb.op("add", s, at(rb, x, i))])
    verdict = independent(next(n for n in b.nodes if n.op == "loop"))
    assert not verdict.parallel and "scalar" in verdict.reason


def test_negative_start_and_other_steps_are_serial() -> None:
    body = INDEPENDENT["map"]
    assert "start" in independent(loop_node(body, start=-3)).reason
    assert "step" in independent(loop_node(body, step=2)).reason


def test_runtime_start_needs_a_proof_of_non_negativity() -> None:
    b = GraphBuilder()
    x = b.input(TensorType((8,), F64), "x")
    lo = b.input(TensorType((), np.dtype(np.int64)), "lo")
    build_loop(b, lo, 8, 1, [x], lambda rb, i, y: [put(rb, y, rb.op("exp", at(rb, y, i)), i)])
    loop = next(n for n in b.nodes if n.op == "loop")
    assert not independent(loop).parallel
    assert independent(loop, {lo}).parallel  # the emitter passes facts such as enclosing induction variables


def test_rows_written_through_a_nested_loop() -> None:
    """for i: for j: y[i, j] = ... is independent in i; reading y[j, i] inside is not."""

    def rows(read_transposed: bool) -> Node:
        b = GraphBuilder()
        y = b.input(TensorType((4, 4), F64), "y")

        def outer(rb: GraphBuilder, i: Node, yy: Node) -> list[Node]:
            def inner(rb2: GraphBuilder, j: Node, y2: Node) -> list[Node]:
                src = at(rb2, y2, j, i) if read_transposed else at(rb2, y2, i, j)
                return [put(rb2, y2, rb2.op("multiply", src, rb2.const(2.0)), i, j)]

            return build_loop(rb, 0, 4, 1, [yy], inner)

        build_loop(b, 0, 4, 1, [y], outer)
        return next(n for n in b.nodes if n.op == "loop")

    assert independent(rows(False)).parallel
    verdict = independent(rows(True))
    assert not verdict.parallel and "nested loop" in verdict.reason
