"""The layout pass: products read transposed views directly; transposes hoist out of elementwise ops and cancel."""

from __future__ import annotations

import numpy as np
from passes_helpers import assert_same_results, build, f32, f64, golden

from jitgraph.backends import eager
from jitgraph.passes import run_pipeline


def layout(graph):
    return run_pipeline(graph, {"passes": ("layout",)})[0]


def t(b, x):
    return b.op("transpose", x, axes=(1, 0))


def test_matmul_reads_transposed_view_instead_of_copy() -> None:
    graph = build(lambda b, a, c: b.op("matmul", b.op("copy", t(b, a)), c), f64(3, 4), f64(3, 5))
    assert str(graph) == golden("""
        %0 = input[x0] : f64[3,4]
        %1 = input[x1] : f64[3,5]
        %2 = transpose(%0, axes=(1, 0)) : f64[4,3]{F}
        %3 = copy(%2) : f64[4,3]
        %4 = matmul(%3, %1) : f64[4,5]
        return %4
    """)
    after = layout(graph)
    assert str(after) == golden("""
        %0 = input[x0] : f64[3,4]
        %1 = input[x1] : f64[3,5]
        %2 = transpose(%0, axes=(1, 0)) : f64[4,3]{F}
        %3 = matmul(%2, %1) : f64[4,5]
        return %3
    """)
    a, c = np.random.default_rng(0).standard_normal((3, 4)), np.random.default_rng(1).standard_normal((3, 5))
    assert_same_results(graph, after, [a, c], rtol=1e-12)


def test_dot_skips_same_dtype_astype_but_copy_with_other_users_stays() -> None:
    graph = build(lambda b, a, c: [b.op("dot", c, b.op("astype", t(b, a), dtype=np.dtype(np.float32))),
                                   b.op("copy", t(b, a))], f32(4, 3), f32(5, 3))
    after = layout(graph)
    assert str(after) == golden("""
        %0 = input[x0] : f32[4,3]
        %1 = input[x1] : f32[5,3]
        %2 = transpose(%0, axes=(1, 0)) : f32[3,4]{F}
        %3 = dot(%1, %2) : f32[5,4]
        %4 = transpose(%0, axes=(1, 0)) : f32[3,4]{F}
        %5 = copy(%4) : f32[3,4]
        return %3, %5
    """)
    assert_same_results(graph, after, rtol=1e-5)


def test_integer_matmul_through_view_is_exact() -> None:
    graph = build(lambda b, a, c: b.op("matmul", b.op("copy", t(b, a)), c),
                  *(f64(1).with_(shape=s, dtype=np.int32) for s in ((3, 4), (3, 5))))
    after = layout(graph)
    assert "copy" not in str(after)
    assert_same_results(graph, after)


def test_transpose_round_trip_through_elementwise_becomes_contiguous() -> None:
    """(x.T * 2).T runs as x * 2: one contiguous sweep, no transposes left."""
    graph = build(lambda b, x: t(b, b.op("multiply", t(b, x), b.const(2.0))), f32(3, 4))
    assert str(graph) == golden("""
        %0 = input[x0] : f32[3,4]
        %1 = transpose(%0, axes=(1, 0)) : f32[4,3]{F}
        %2 = const(2.0) : pyfloat[]
        %3 = multiply(%1, %2) : f32[4,3]
        %4 = transpose(%3, axes=(1, 0)) : f32[3,4]{F}
        return %4
    """)
    after = layout(graph)
    assert str(after) == golden("""
        %0 = input[x0] : f32[3,4]
        %1 = const(2.0) : pyfloat[]
        %2 = multiply(%0, %1) : f32[3,4]
        return %2
    """)
    assert_same_results(graph, after)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    (out,) = eager.run(after, [x])
    assert out.flags.c_contiguous  # what NumPy itself returns for (x.T * 2).T on a C-ordered x


def test_hoisted_transpose_feeding_a_reduction() -> None:
    """x.T + y.T becomes transpose(x + y): the same values (bit for bit) in NumPy's order='K' memory layout. A
    float sum over it walks memory in that order, so it can round differently from a sum over a C-ordered
    intermediate -- within float tolerance, like any backend's reduction order."""
    def fn(b, x, y):
        both = b.op("add", t(b, x), t(b, y))
        return [both, b.op("sum", both, axis=(1,), keepdims=False)]

    graph = build(fn, f32(30, 40), f32(30, 40))
    after = layout(graph)
    assert str(after) == golden("""
        %0 = input[x0] : f32[30,40]
        %1 = input[x1] : f32[30,40]
        %2 = add(%0, %1) : f32[30,40]
        %3 = transpose(%2, axes=(1, 0)) : f32[40,30]{F}
        %4 = sum(%3, axis=(1,), keepdims=False) : f32[40]
        return %3, %4
    """)
    args = [np.random.default_rng(k).standard_normal((30, 40)).astype(np.float32) * 1e4 for k in range(2)]
    ref_values, ref_sum = eager.run(graph, [a.copy() for a in args])
    new_values, new_sum = eager.run(after, [a.copy() for a in args])
    np.testing.assert_array_equal(new_values, ref_values)
    np.testing.assert_allclose(new_sum, ref_sum, rtol=1e-6)
    np.testing.assert_array_equal(new_sum, (args[0].T + args[1].T).sum(axis=1))  # NumPy's own bits


def test_mixed_layout_operands_are_left_alone() -> None:
    """Hoisting x.T + y (y not transposed) would make y the strided operand: no gain, so no rule fires."""
    graph = build(lambda b, x, y: b.op("add", t(b, x), y), f32(3, 4), f32(4, 3))
    assert str(layout(graph)) == str(graph)


def test_copy_of_transpose_output_is_not_hoisted() -> None:
    graph = build(lambda b, x: b.op("copy", t(b, x)), f32(3, 4))
    after = layout(graph)
    assert str(after) == str(graph)
    (out,) = eager.run(after, [np.ones((3, 4), np.float32)])
    assert out.shape == (4, 3)
