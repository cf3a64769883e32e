"""fold_constants, eliminate_common and eliminate_dead: printed IR before and after, and eager results unchanged."""

from __future__ import annotations

import numpy as np
from passes_helpers import assert_same_results, build, f32, golden

from jitgraph.ir import TensorType
from jitgraph.passes import run_pipeline
from jitgraph.passes.eliminate_common import node_key, value_key
from jitgraph.passes.fold_constants import FOLD_LIMIT


def run(graph, *passes):
    return run_pipeline(graph, {"passes": passes})[0]


I64 = np.dtype(np.int64)
F32 = np.dtype(np.float32)


def test_fold_constants_before_and_after() -> None:
    graph = build(lambda b: [b.op("add", b.op("arange", start=0, stop=4, step=1, dtype=I64), b.const(2)),
                             b.op("multiply", b.const(2), b.const(1.5)),
                             b.op("ones", shape=(64, 64), dtype=F32),
                             b.op("empty", shape=(2,), dtype=F32)])
    assert str(graph) == golden("""
        %0 = arange(start=0, stop=4, step=1, dtype=i64) : i64[4]
        %1 = const(2) : pyint[]
        %2 = add(%0, %1) : i64[4]
        %3 = const(2) : pyint[]
        %4 = const(1.5) : pyfloat[]
        %5 = multiply(%3, %4) : pyfloat[]
        %6 = ones(shape=(64, 64), dtype=f32) : f32[64,64]
        %7 = empty(shape=(2,), dtype=f32) : f32[2]
        return %2, %5, %6, %7
    """)
    # The folded array output is copied out of the (shared, read-only) constant; 64*64 ones stay a creation op.
    assert str(run(graph, "fold_constants")) == golden("""
        %0 = const(i64[2,3,4,5]) : i64[4]
        %1 = const(3.0) : pyfloat[]
        %2 = ones(shape=(64, 64), dtype=f32) : f32[64,64]
        %3 = empty(shape=(2,), dtype=f32) : f32[2]
        %4 = copy(%0) : i64[4]
        return %4, %1, %2, %3
    """)
    out_before = run_graph(graph)
    out_after = run_graph(run(graph, "fold_constants"))
    for a, b in zip(out_before[:3], out_after[:3]):  # empty's contents are unspecified
        assert type(a) is type(b)
        np.testing.assert_array_equal(a, b)
    assert isinstance(out_after[1], float)  # a weak result stays a Python float (NEP 50)


def run_graph(graph):
    from jitgraph.backends import eager

    return eager.run(graph, [])


def test_fold_keeps_weak_scalars_weak_and_values_exact() -> None:
    graph = build(lambda b, x: b.op("multiply", x, b.op("add", b.const(0.1), b.const(0.2))), f32(3))
    after = run(graph, "fold_constants")
    assert str(after) == golden("""
        %0 = input[x0] : f32[3]
        %1 = const(0.30000000000000004) : pyfloat[]
        %2 = multiply(%0, %1) : f32[3]
        return %2
    """)
    assert_same_results(graph, after)


def test_fold_reductions_of_constants_and_size_limit() -> None:
    def fn(b, x):
        small = b.op("sum", b.op("full", shape=(3,), dtype=F32, value=-0.0), axis=(0,), keepdims=False)
        big = b.op("zeros", shape=(FOLD_LIMIT + 1,), dtype=F32)
        return [b.op("add", x, small), b.op("add", big, b.const(1.0))]

    graph = build(fn, f32(3))
    after = run(graph, "fold_constants")
    assert str(after) == golden("""
        %0 = input[x0] : f32[3]
        %1 = const(f32(0.0)) : f32[]
        %2 = zeros(shape=(1025,), dtype=f32) : f32[1025]
        %3 = add(%0, %1) : f32[3]
        %4 = const(1.0) : pyfloat[]
        %5 = add(%2, %4) : f32[1025]
        return %3, %5
    """)
    assert_same_results(graph, after)


def test_fold_leaves_run_time_errors_to_run_time() -> None:
    graph = build(lambda b, x: b.op("add", x, b.op("power", b.const(np.array([2])), b.const(np.array([-1])))),
                  TensorType((1,), np.int64))
    assert str(run(graph, "fold_constants")) == str(graph)


def test_eliminate_common_before_and_after() -> None:
    def fn(b, x):
        return [b.op("add", b.op("exp", x), b.op("exp", x)),
                b.op("full", shape=(2,), dtype=F32, value=0.0), b.op("full", shape=(2,), dtype=F32, value=-0.0),
                b.op("getitem", x, spec=(slice(0, 1),)), b.op("getitem", x, spec=(slice(0, 1),)),
                b.op("getitem", x, spec=(slice(1, 2),)),
                b.op("copy", x), b.op("copy", x),
                b.op("empty", shape=(2,), dtype=F32), b.op("empty", shape=(2,), dtype=F32)]

    graph = build(fn, f32(2))
    after = run(graph, "eliminate_common")
    assert str(after) == golden("""
        %0 = input[x0] : f32[2]
        %1 = exp(%0) : f32[2]
        %2 = add(%1, %1) : f32[2]
        %3 = full(shape=(2,), dtype=f32, value=0.0) : f32[2]
        %4 = full(shape=(2,), dtype=f32, value=-0.0) : f32[2]
        %5 = getitem(%0, spec=(0:1,)) : f32[1]{S}
        %6 = getitem(%0, spec=(1:2,)) : f32[1]{S}
        %7 = copy(%0) : f32[2]
        %8 = copy(%0) : f32[2]
        %9 = empty(shape=(2,), dtype=f32) : f32[2]
        %10 = empty(shape=(2,), dtype=f32) : f32[2]
        return %2, %3, %4, %5, %5, %6, %7, %8, %9, %10
    """)
    before_out, _ = eager_outputs(graph)
    after_out, _ = eager_outputs(after)
    for k in range(8):
        np.testing.assert_array_equal(before_out[k], after_out[k])
    assert np.signbit(after_out[2]).all() and not np.signbit(after_out[1]).any()


def eager_outputs(graph):
    from passes_helpers import args_for, run_eager

    return run_eager(graph, args_for(graph))


def test_cse_keys_are_exact() -> None:
    assert value_key(0.0) != value_key(-0.0)
    assert value_key(1) != value_key(1.0) != value_key(True)
    assert value_key(float("nan")) == value_key(float("nan"))
    assert value_key(np.dtype("f4")) == value_key(np.float32) != value_key("f4")
    assert value_key(slice(0, 2)) != value_key(slice(0, 2, 1))
    assert value_key(np.array([1, 2], np.int32)) != value_key(np.array([1, 2], np.int64))
    assert value_key(np.array([[1, 2]])) != value_key(np.array([1, 2]))


def test_cse_merges_equal_constants_but_not_different_bits() -> None:
    def fn(b, x):
        return [b.op("add", x, b.const(np.array([1.0, 2.0], np.float32))),
                b.op("multiply", x, b.const(np.array([1.0, 2.0], np.float32))),
                b.op("subtract", x, b.const(np.array([-0.0, 2.0], np.float32))),
                b.op("divide", x, b.const(np.array([0.0, 2.0], np.float32)))]

    graph = build(fn, f32(2))
    after = run(graph, "eliminate_common")
    assert [n.op for n in after.nodes].count("const") == 3
    assert_same_results(graph, after)
    assert node_key(after.nodes[0]) is None  # inputs are never merged


def test_eliminate_dead_keeps_outputs_and_mutations() -> None:
    def fn(b, x, y):
        b.op("log", x)
        b.op("sin", y)
        return [b.op("exp", x)], [(1, b.op("add", y, b.const(1.0)))]

    graph = build(fn, f32(2), f32(2))
    assert str(graph) == golden("""
        %0 = input[x0] : f32[2]
        %1 = input[x1] : f32[2]
        %2 = log(%0) : f32[2]
        %3 = sin(%1) : f32[2]
        %4 = exp(%0) : f32[2]
        %5 = const(1.0) : pyfloat[]
        %6 = add(%1, %5) : f32[2]
        return %4
        mutate %1 <- %6
    """)
    after = run(graph, "eliminate_dead")
    assert str(after) == golden("""
        %0 = input[x0] : f32[2]
        %1 = input[x1] : f32[2]
        %2 = exp(%0) : f32[2]
        %3 = const(1.0) : pyfloat[]
        %4 = add(%1, %3) : f32[2]
        return %2
        mutate %1 <- %4
    """)
    assert_same_results(graph, after)


def test_eliminate_dead_keeps_unused_inputs() -> None:
    graph = build(lambda b, x, y: b.op("exp", x), f32(2), f32(3))
    after = run(graph, "eliminate_dead")
    assert len(after.inputs) == 2 and str(after) == str(graph)


def test_eliminate_dead_cleans_region_bodies() -> None:
    from jitgraph.ir import Node

    def body_fn(b, v):
        b.op("log", v)  # dead inside the body
        return b.op("exp", v)

    body = build(body_fn, f32(3))
    attrs = {"kind": "elementwise", "name": "k", "cuts": ()}
    graph = build(lambda b, x: b.add(Node("fused", (x,), body.outputs[0].type, attrs, (body,))), f32(3))
    after = run(graph, "eliminate_dead")
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
