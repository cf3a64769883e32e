"""Random loop programs (hypothesis): the compiled driver agrees with the reference interpreter.

Each program is a counted loop carrying a scalar and an array (a caller array mutated in place, or a copy), whose
body is a random list of statements: scalar updates, element reads and writes at ``i`` or a neighbour, a
data-dependent ``cond`` and a nested reduction loop; some programs end with a ``while``.
"""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from jitgraph.backends.cpu.scalar import compile_regions
from jitgraph.ir.graph import Graph, GraphBuilder, Node
from jitgraph.ir.ops.control import build_cond, build_loop, build_while
from jitgraph.ir.types import TensorType
from tests.control_flow.helpers import at, check_against_eager, put

N = 6
F64 = np.dtype(np.float64)
STATEMENTS = ("acc_op", "write_i", "write_next", "read_y", "cond", "inner")
BINOPS = ("add", "subtract", "multiply", "maximum", "minimum")


def build(program: list[tuple[str, str]], mutate: bool, with_while: bool) -> Graph:
    b = GraphBuilder()
    x = b.input(TensorType((N,), F64), "x")
    y = b.input(TensorType((N,), F64), "y")

    def body(rb: GraphBuilder, i: Node, acc: Node, yy: Node) -> list[Node]:
        nxt = rb.op("remainder", rb.op("add", i, rb.const(1)), rb.const(N))
        for kind, op in program:
            if kind == "acc_op":
                acc = rb.op(op, acc, at(rb, x, i))
            elif kind == "write_i":
                yy = put(rb, yy, rb.op(op, at(rb, yy, i), acc), i)
            elif kind == "write_next":
                yy = put(rb, yy, rb.op(op, at(rb, x, nxt), rb.const(0.5)), nxt)
            elif kind == "read_y":
                acc = rb.op(op, acc, at(rb, yy, nxt))
            elif kind == "cond":
                a0, y0 = acc, yy
                acc, yy = build_cond(rb, rb.op("greater", a0, rb.const(0.0)),
                                     lambda cb, a0=a0, y0=y0, op=op: [cb.op(op, a0, cb.const(2.0)),
                                                                      put(cb, y0, a0, i)],
                                     lambda cb, a0=a0, y0=y0: [cb.op("negative", a0), y0])
            else:
                a0, y0 = acc, yy
                (acc,) = build_loop(rb, 0, i, 1, [a0],
                                    lambda rb2, j, s, y0=y0, op=op: [
                                        rb2.op(op, s, rb2.op("multiply", at(rb2, y0, j), rb2.const(0.25)))])
            acc = rb.op("tanh", acc)  # keep values bounded whatever the random ops do
        return [acc, yy]

    init = y if mutate else b.op("copy", y)
    acc, yy = build_loop(b, 0, N, 1, [b.const(np.float64(0.1)), init], body)
    if with_while:
        (acc,) = build_while(b, [acc], lambda rb, a: rb.op("greater", rb.op("absolute", a), rb.const(0.01)),
                             lambda rb, a: [rb.op("multiply", a, rb.const(0.5))])
    return b.build([acc, yy, x], [(1, yy)] if mutate else [])


programs = st.lists(st.tuples(st.sampled_from(STATEMENTS), st.sampled_from(BINOPS)), min_size=1, max_size=5)


@settings(max_examples=6, deadline=None)  # each example is a Numba compile
@given(programs, st.booleans(), st.booleans(), st.integers(0, 2**31 - 1))
@example(program=[("cond", "add")], mutate=True, with_while=False, seed=0)  # found by hypothesis: 1-ulp tanh
def test_random_loop_programs_match_eager(program: list[tuple[str, str]], mutate: bool, with_while: bool,
                                          seed: int) -> None:
    g = build(program, mutate, with_while)
    driver = compile_regions(g, {"name": "random"})
    rng = np.random.default_rng(seed)
    check_against_eager(g, driver, [rng.standard_normal(N), rng.standard_normal(N)])
