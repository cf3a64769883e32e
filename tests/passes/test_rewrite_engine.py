"""The rewrite engine: pattern matching, fixed points, the type safety net and output identity."""

from __future__ import annotations

import numpy as np
import pytest
from passes_helpers import assert_same_results, build, f32, golden

from jitgraph.errors import PassError
from jitgraph.ir import Node
from jitgraph.passes import run_pipeline
from jitgraph.passes.manager import PASSES, register_pass
from jitgraph.passes.rewrite import RewriteStats, Rule, const, match, pat, rewrite, var
from jitgraph.passes.simplify import SIMPLIFY_RULES


def test_patterns_bind_names_and_try_commuted_operands() -> None:
    graph = build(lambda b, x: [b.op("multiply", b.const(3.0), x), b.op("multiply", x, x)], f32(2))
    mul_const, square = graph.outputs
    found = match(pat("multiply", var("x"), const("c"), commutative=True), mul_const)
    assert found is not None and found["x"] is graph.inputs[0] and found.root is mul_const
    assert match(pat("multiply", var("x"), const("c")), mul_const) is None
    same = pat("multiply", var("x"), var("x"))
    assert match(same, square) is not None and match(same, mul_const) is None
    assert match(pat(("add", "multiply"), var("a"), var("b"), where=lambda n: n.type.shape == (2,)), square)


def test_rules_chain_to_a_fixed_point() -> None:
    def fn(b, x):
        y = x
        for _ in range(5):
            y = b.op("negative", y)
        return b.op("exp", b.op("multiply", b.op("power", y, b.const(1)), b.const(1)))

    graph = build(fn, f32(3))
    stats = RewriteStats()
    after = rewrite(graph, SIMPLIFY_RULES, stats=stats)
    assert str(after) == golden("""
        %0 = input[x0] : f32[3]
        %1 = negative(%0) : f32[3]
        %2 = exp(%1) : f32[3]
        return %2
    """)
    assert stats.fired == {"negate_twice": 2, "power_one": 1, "multiply_one": 1}
    assert_same_results(graph, after)


def test_engine_declines_replacements_that_change_the_type() -> None:
    """A (wrong) rule x * c -> x also 'fires' on int8 * 1.5, which is float64: the engine refuses it."""
    sloppy = Rule("sloppy", pat("multiply", var("x"), const("c")), lambda emit, m: m["x"])
    graph = build(lambda b, x: b.op("multiply", x, b.const(1.5)), f32(1).with_(dtype=np.int8))
    assert str(rewrite(graph, [sloppy])) == str(graph)


def test_rules_that_never_settle_are_reported() -> None:
    flip = Rule("flip", pat("add", var("a"), var("b")), lambda emit, m: emit.op("add", m["b"], m["a"]))
    graph = build(lambda b, x, y: b.op("add", x, y), f32(2), f32(2))
    with pytest.raises(RuntimeError, match="fixed point|keep rewriting"):
        rewrite(graph, [flip])


def test_outputs_never_become_inputs_constants_or_each_other() -> None:
    def fn(b, x):
        return [b.op("multiply", x, b.const(1)),  # would become x itself
                b.op("add", b.op("zeros", shape=(2,), dtype=np.dtype(np.float32)), b.const(1.0)),  # a constant
                b.op("exp", x), b.op("exp", x)], [(0, b.op("negative", b.op("negative", x)))]

    graph = build(fn, f32(2))
    after = run_pipeline(graph, {"passes": ("simplify", "eliminate_common")})[0]
    assert str(after) == golden("""
        %0 = input[x0] : f32[2]
        %1 = const(f32[1.0,1.0]) : f32[2]
        %2 = exp(%0) : f32[2]
        %3 = copy(%0) : f32[2]
        %4 = copy(%1) : f32[2]
        %5 = copy(%2) : f32[2]
        return %3, %4, %2, %5
    """)  # the mutation wrote x's own value back into x: a no-op, dropped
    assert_same_results(graph, after)


def test_rules_rewrite_inside_region_bodies() -> None:
    body = build(lambda b, v: b.op("exp", b.op("multiply", v, b.const(1))), f32(3))
    attrs = {"kind": "elementwise", "name": "k", "cuts": ()}
    graph = build(lambda b, x: b.add(Node("fused", (x,), body.outputs[0].type, attrs, (body,))), f32(3))
    after = run_pipeline(graph, {"passes": ("simplify",)})[0]
    assert str(after) == golden("""
        %0 = input[x0] : f32[3]
        %1 = fused(%0, kind='elementwise', name='k', cuts=()) : f32[3] {
          %2 = input[x0] : f32[3]
          %3 = exp(%2) : f32[3]
          return %3
        }
        return %1
    """)
    assert_same_results(graph, after)


def test_an_exception_in_a_rule_names_the_pass_and_the_node() -> None:
    def explode(emit, m):
        raise ZeroDivisionError("rule bug")

    bad = Rule("bad", pat("sin", var("x")), explode)
    register_pass("explode_on_sin")(lambda g: rewrite(g, [bad]))
    try:
        graph = build(lambda b, x: b.op("cos", b.op("sin", b.op("exp", x))), f32(2))
        with pytest.raises(PassError) as info:
            run_pipeline(graph, {"passes": ("explode_on_sin",)})
    finally:
        PASSES.pop("explode_on_sin")
    text = str(info.value)
    assert "pass 'explode_on_sin' failed: ZeroDivisionError: rule bug" in text
    assert "--> %2 = sin(%1) : f32[2]" in text and "%1 = exp(%0)" in text and "%3 = cos(%2)" in text


def test_loop_body_results_stay_fresh_arrays() -> None:
    """A carried value folded to a constant must not hand the shared, read-only constant out of the loop."""
    from jitgraph.ir.ops.control import INDEX_TYPE

    body = build(lambda b, i, c: b.op("add", b.op("zeros", shape=(3,), dtype=np.dtype(np.float32)), b.const(1.0)),
                 INDEX_TYPE, f32(3))

    def fn(b, x):
        start, stop, step = b.const(0), b.const(2), b.const(1)
        loop = b.op("loop", start, stop, step, x, regions=[body], carried=1)
        return b.op("tuple_get", loop, index=0)

    graph = build(fn, f32(3))
    after = run_pipeline(graph, {"passes": ("simplify",)})[0]
    assert str(after) == golden("""
        %0 = input[x0] : f32[3]
        %1 = const(0) : pyint[]
        %2 = const(2) : pyint[]
        %3 = const(1) : pyint[]
        %4 = loop(%1, %2, %3, %0, carried=1) : (f32[3]) {
          %5 = input[x0] : pyint[]
          %6 = input[x1] : f32[3]
          %7 = const(f32[1.0,1.0,1.0]) : f32[3]
          %8 = copy(%7) : f32[3]
          return %8
        }
        %9 = tuple_get(%4, index=0) : f32[3]
        return %9
    """)
    assert_same_results(graph, after)
    from jitgraph.backends import eager

    (out,) = eager.run(after, [np.zeros(3, np.float32)])
    out[0] = 5.0  # writable, and not the constant: a second call still returns ones
    np.testing.assert_array_equal(eager.run(after, [np.zeros(3, np.float32)])[0], np.ones(3, np.float32))
