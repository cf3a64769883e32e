"""The fusion pass plans region bodies too: loop / while / cond bodies get ``fused`` kernels (recursively), and the
loop driver emits them as the CPU kernels run them (a Newton ``while`` body is one sweep), with results that agree
with the reference interpreter."""

from __future__ import annotations

import numpy as np

from jitgraph.backends.cpu.scalar import compile_regions, generate
from jitgraph.ir.graph import Graph, GraphBuilder, Node
from jitgraph.ir.ops.control import build_cond, build_loop, build_while
from jitgraph.ir.types import TensorType
from jitgraph.ir.verifier import verify
from jitgraph.passes.fuse import fuse_graph
from jitgraph.passes.manager import run_pipeline
from tests.control_flow.helpers import check_against_eager, load_benchmarks

F64 = np.dtype(np.float64)


def _fused_in(graph: Graph) -> list[Node]:
    """Every ``fused`` node of ``graph`` and of its region bodies (not inside fused bodies)."""
    found = []
    for n in graph.nodes:
        if n.op == "fused":
            found.append(n)
        else:
            for r in n.regions:
                found.extend(_fused_in(r))
    return found


def _array_ops_outside_kernels(graph: Graph) -> list[str]:
    ops = []
    for n in graph.nodes:
        if n.op == "fused":
            continue
        if n.op in ("add", "multiply", "divide", "subtract", "absolute") and n.type.shape != ():
            ops.append(n.op)
        for r in n.regions:
            ops.extend(_array_ops_outside_kernels(r))
    return ops


def newton() -> Graph:
    b = GraphBuilder()
    a = b.input(TensorType((40,), F64), "a")

    def err(rb: GraphBuilder, x: Node) -> Node:
        return rb.op("max", rb.op("absolute", rb.op("subtract", rb.op("multiply", x, x), a)), axis=(0,),
                     keepdims=False)

    def step(rb: GraphBuilder, x: Node, e: Node) -> list[Node]:
        nx = rb.op("multiply", rb.const(0.5), rb.op("add", x, rb.op("divide", a, x)))
        return [nx, err(rb, nx)]

    x0 = b.op("multiply", b.const(0.5), b.op("add", a, b.const(1.0)))
    x, _ = build_while(b, [x0, err(b, x0)], lambda rb, x, e: rb.op("greater", e, rb.const(1e-10)), step)
    return b.build([x])


def nested() -> Graph:
    """A cond inside a loop body, each with an elementwise chain over arrays."""
    b = GraphBuilder()
    a = b.input(TensorType((8,), F64), "a")

    def body(rb: GraphBuilder, i: Node, acc: Node) -> list[Node]:
        def yes(cb: GraphBuilder) -> list[Node]:
            return [cb.op("add", cb.op("multiply", acc, cb.const(0.5)), a)]

        def no(cb: GraphBuilder) -> list[Node]:
            return [cb.op("subtract", cb.op("multiply", acc, cb.const(2.0)), a)]

        (out,) = build_cond(rb, rb.op("greater", i, rb.const(2)), yes, no)
        return [out]

    (res,) = build_loop(b, 0, 5, 1, [b.op("multiply", a, b.const(1.0))], body)
    return b.build([res])


def test_while_body_is_fused_into_one_kernel() -> None:
    fused = fuse_graph(newton())
    verify(fused)
    (loop,) = [n for n in fused.nodes if n.op == "while"]
    body = loop.regions[1]  # (test, body)
    kernels = [n for n in body.nodes if n.op == "fused"]
    assert len(kernels) == 1, body
    assert _array_ops_outside_kernels(fused) == []


def test_nested_region_bodies_are_fused_recursively() -> None:
    g = nested()
    fused = fuse_graph(g)
    verify(fused)
    assert len(_fused_in(fused)) >= 3  # the init, and one per cond branch inside the loop body
    assert _array_ops_outside_kernels(fused) == []
    lowered, _ = run_pipeline(g, {})
    driver = compile_regions(lowered, {"name": "nested"})
    check_against_eager(g, driver, [np.random.default_rng(0).standard_normal(8)])


def test_fusion_is_idempotent_on_region_graphs() -> None:
    once = fuse_graph(newton())
    assert fuse_graph(once) is once


def test_newton_while_body_is_one_sweep_in_the_driver() -> None:
    g = newton()
    lowered, _ = run_pipeline(g, {})
    source = "\n".join(generate(lowered, {"name": "newton"}).lines)
    body = source.split("while ")[1]  # the rotated loop: ``while <flag>:``
    assert body.count("for f0 in range(40):") == 1, source
    driver = compile_regions(lowered, {"name": "newton"})
    check_against_eager(g, driver, [np.random.default_rng(0).uniform(1, 100, 40)])


def test_zero_d_value_computed_outside_kernels_is_not_copied_into_them() -> None:
    """Power iteration: ``lam = sqrt(sum(w*w))`` is carried and read by ``w / lam``; the body computes it once."""
    bench = load_benchmarks()
    b = GraphBuilder()
    A = b.input(TensorType((6, 6), F64), "A")
    v0 = b.input(TensorType((6,), F64), "v")

    def body(rb: GraphBuilder, v: Node, lam: Node, err: Node) -> list[Node]:
        w = rb.op("matmul", A, v)
        lam_new = rb.op("sqrt", rb.op("sum", rb.op("multiply", w, w), axis=(0,), keepdims=False))
        return [rb.op("divide", w, lam_new), lam_new, rb.op("absolute", rb.op("subtract", lam_new, lam))]

    _, lam, _ = build_while(b, [v0, b.const(np.float64(0.0)), b.const(np.float64(1.0))],
                            lambda rb, v, lam, err: rb.op("greater", err, rb.const(1e-9)), body)
    g = b.build([lam])
    lowered, _ = run_pipeline(g, {})
    source = "\n".join(generate(lowered, {"name": "power"}).lines)
    assert source.count("np.sqrt(") == 1, source
    rng = np.random.default_rng(0)
    spd = bench._spd(6, rng) if hasattr(bench, "_spd") else np.eye(6) * 3 + 0.1
    check_against_eager(g, compile_regions(lowered, {"name": "power"}), [spd, np.ones(6)])
