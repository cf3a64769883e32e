"""The fusion plan on printed IR: which nodes become one kernel, and why boundaries were cut.

The goldens below are the reviewed plans; each case also checks that the fused graph verifies and that the eager
interpreter computes the same values from the fused graph (through the ``fused`` op's reference implementation)
as from the original.
"""

from __future__ import annotations

import graphs
import numpy as np
import pytest

from jitgraph.backends import eager
from jitgraph.ir import GraphBuilder, TensorType, verify
from jitgraph.ir.fusion_groups import FUSIBLE_ELEMENTWISE, group_info, unfused_reasons
from jitgraph.passes.fuse import fuse_graph
from jitgraph.passes.manager import PASSES

GOLDEN_SOFTMAX = '''\
%0 = input[x] : f32[8,16]
%1 = fused(%0, kind='reduction', name='fused_max_subtract_exp_sum_0', cuts=()) : f32[8,16] {
  %2 = input[v0] : f32[8,16]
  %3 = max(%2, axis=(1,), keepdims=True) : f32[8,1]
  %4 = subtract(%2, %3) : f32[8,16]
  %5 = exp(%4) : f32[8,16]
  %6 = sum(%5, axis=(1,), keepdims=True) : f32[8,1]
  %7 = divide(%5, %6) : f32[8,16]
  return %7
}
return %1
'''

GOLDEN_LAYERNORM = '''\
%0 = input[x] : f32[8,16]
%1 = input[w] : f32[16]
%2 = input[b] : f32[16]
%3 = fused(%0, %1, %2, kind='reduction', name='fused_mean_subtract_multiply_add_0', cuts=()) : f32[8,16] {
  %4 = input[v0] : f32[8,16]
  %5 = input[v1] : f32[16]
  %6 = input[v2] : f32[16]
  %7 = const(1e-05) : pyfloat[]
  %8 = const(1.0) : pyfloat[]
  %9 = mean(%4, axis=(1,), keepdims=True) : f32[8,1]
  %10 = subtract(%4, %9) : f32[8,16]
  %11 = multiply(%10, %10) : f32[8,16]
  %12 = mean(%11, axis=(1,), keepdims=True) : f32[8,1]
  %13 = add(%12, %7) : f32[8,1]
  %14 = sqrt(%13) : f32[8,1]
  %15 = divide(%8, %14) : f32[8,1]
  %16 = multiply(%10, %15) : f32[8,16]
  %17 = multiply(%16, %5) : f32[8,16]
  %18 = add(%17, %6) : f32[8,16]
  return %18
}
return %3
'''

GOLDEN_ADAM = '''\
%0 = input[p] : f32[64]
%1 = input[g] : f32[64]
%2 = input[m] : f32[64]
%3 = input[v] : f32[64]
%4 = fused(%2, %1, %3, %0, kind='elementwise', name='fused_multiply_add_divide_sqrt_0', cuts=()) : (f32[64], f32[64], f32[64]) {
  %5 = input[v2] : f32[64]
  %6 = input[v1] : f32[64]
  %7 = input[v3] : f32[64]
  %8 = input[v0] : f32[64]
  %9 = const(0.9) : pyfloat[]
  %10 = const(0.09999999999999998) : pyfloat[]
  %11 = const(0.999) : pyfloat[]
  %12 = const(0.0010000000000000009) : pyfloat[]
  %13 = const(0.2709999999999999) : pyfloat[]
  %14 = const(0.002997000999999999) : pyfloat[]
  %15 = const(0.001) : pyfloat[]
  %16 = const(1e-08) : pyfloat[]
  %17 = multiply(%9, %5) : f32[64]
  %18 = multiply(%10, %6) : f32[64]
  %19 = add(%17, %18) : f32[64]
  %20 = multiply(%11, %7) : f32[64]
  %21 = multiply(%6, %6) : f32[64]
  %22 = multiply(%12, %21) : f32[64]
  %23 = add(%20, %22) : f32[64]
  %24 = divide(%19, %13) : f32[64]
  %25 = divide(%23, %14) : f32[64]
  %26 = multiply(%15, %24) : f32[64]
  %27 = sqrt(%25) : f32[64]
  %28 = add(%27, %16) : f32[64]
  %29 = divide(%26, %28) : f32[64]
  %30 = subtract(%8, %29) : f32[64]
  return %19, %23, %30
}
%31 = tuple_get(%4, index=0) : f32[64]
%32 = tuple_get(%4, index=1) : f32[64]
%33 = tuple_get(%4, index=2) : f32[64]
return 
mutate %0 <- %33
mutate %2 <- %31
mutate %3 <- %32
'''

GOLDEN_MLP_FORWARD = '''\
%0 = input[x] : f32[8,6]
%1 = input[w1] : f32[6,5]
%2 = input[b1] : f32[5]
%3 = input[w2] : f32[5,3]
%4 = fused(%0, %1, %2, kind='matmul_epilogue', name='fused_matmul_add_maximum_0', cuts=()) : f32[8,5] {
  %5 = input[v0] : f32[8,6]
  %6 = input[v1] : f32[6,5]
  %7 = input[v2] : f32[5]
  %8 = const(0) : pyint[]
  %9 = matmul(%5, %6) : f32[8,5]
  %10 = add(%9, %7) : f32[8,5]
  %11 = maximum(%10, %8) : f32[8,5]
  return %11
}
%12 = fused(%4, %3, kind='matmul_epilogue', name='fused_matmul_max_subtract_exp_1', cuts=('%7 = maximum: operand of the BLAS call (matmul reads it from memory)',)) : f32[8,3] {
  %13 = input[v7] : f32[8,5]
  %14 = input[v3] : f32[5,3]
  %15 = matmul(%13, %14) : f32[8,3]
  %16 = max(%15, axis=(1,), keepdims=True) : f32[8,1]
  %17 = subtract(%15, %16) : f32[8,3]
  %18 = exp(%17) : f32[8,3]
  %19 = sum(%18, axis=(1,), keepdims=True) : f32[8,1]
  %20 = divide(%18, %19) : f32[8,3]
  return %20
}
return %12
'''

GOLDEN_CUTS = '''\
%0 = input[x] : f32[16,16]
%1 = fused(%0, kind='reduction', name='fused_exp_sum_divide_0', cuts=()) : f32[16,16] {
  %2 = input[v0] : f32[16,16]
  %3 = exp(%2) : f32[16,16]
  %4 = sum(%2, axis=(1,), keepdims=True) : f32[16,1]
  %5 = divide(%3, %4) : f32[16,16]
  return %5
}
%6 = cbrt(%1) : f32[16,16]
%7 = fused(%0, %6, kind='reduction', name='fused_exp_sum_add_1', cuts=("%6 = cbrt: no kernel emitter for 'cbrt'; runs through NumPy",)) : f32[16,16] {
  %8 = input[v0] : f32[16,16]
  %9 = input[v6] : f32[16,16]
  %10 = exp(%8) : f32[16,16]
  %11 = sum(%10, axis=(0,), keepdims=True) : f32[1,16]
  %12 = add(%9, %11) : f32[16,16]
  return %12
}
return %7
'''

GOLDEN_W1 = '''\
%0 = input[a] : f32[64]
%1 = input[b] : f32[64]
%2 = input[c] : f32[64]
%3 = fused(%0, %1, %2, kind='elementwise', name='fused_multiply_add_tanh_0', cuts=()) : f32[64] {
  %4 = input[v0] : f32[64]
  %5 = input[v1] : f32[64]
  %6 = input[v2] : f32[64]
  %7 = const(0.5) : pyfloat[]
  %8 = multiply(%4, %5) : f32[64]
  %9 = add(%8, %6) : f32[64]
  %10 = tanh(%9) : f32[64]
  %11 = multiply(%10, %7) : f32[64]
  %12 = add(%11, %4) : f32[64]
  return %12
}
return %3
'''

CASES = [
    (graphs.softmax, GOLDEN_SOFTMAX),
    (graphs.layernorm, GOLDEN_LAYERNORM),
    (graphs.adam, GOLDEN_ADAM),
    (graphs.mlp_forward, GOLDEN_MLP_FORWARD),
    (graphs.cuts, GOLDEN_CUTS),
    (graphs.w1, GOLDEN_W1),
]


@pytest.mark.parametrize(("make", "golden"), CASES, ids=[c[0].__name__ for c in CASES])
def test_plan_golden(make, golden):
    graph = make()
    fused = fuse_graph(graph)
    verify(fused)
    assert str(fused) + "\n" == golden


@pytest.mark.parametrize("make", [c[0] for c in CASES], ids=[c[0].__name__ for c in CASES])
def test_fused_graph_runs_eagerly_like_the_original(make):
    graph = make()
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(i.type.shape).astype(i.type.dtype) for i in graph.inputs]
    a, b = [x.copy() for x in args], [x.copy() for x in args]
    want = eager.run(graph, a)
    got = eager.run(fuse_graph(graph), b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_fuse_is_registered_and_idempotent():
    graph = graphs.softmax()
    once = PASSES["fuse"](graph)
    assert PASSES["fuse"](once) is once


def test_softmax_levels_and_maps():
    fused = fuse_graph(graphs.softmax())
    info = group_info(next(n for n in fused.nodes if n.op == "fused"))
    assert info.domain == (8, 16) and info.raxes == (1,)
    levels = sorted({(n.op, lvl) for n, lvl in info.level.items()})
    assert levels == [("divide", 2), ("exp", 1), ("max", 1), ("subtract", 1), ("sum", 2)]


def test_broadcast_producer_is_not_recomputed():
    """A (16,) value feeding a (64,16) consumer stays its own kernel: fusing would compute it 64 times."""
    b = GraphBuilder()
    x = b.input(TensorType((64, 16), np.float32), "x")
    w = b.input(TensorType((16,), np.float32), "w")
    w2 = b.op("exp", w)
    y = b.op("add", x, w2)
    fused = fuse_graph(b.build([y]))
    kernels = [n for n in fused.nodes if n.op == "fused"]
    assert len(kernels) == 2
    assert any("exp" in c and "recompute" in c for c in kernels[1].attrs["cuts"])


def test_too_many_reduction_levels_are_cut():
    b = GraphBuilder()
    x = b.input(TensorType((4, 8), np.float32), "x")
    v = x
    for _ in range(4):
        v = b.op("subtract", v, b.op("mean", v, axis=(1,), keepdims=True))
    fused = fuse_graph(b.build([v]))
    kernels = [n for n in fused.nodes if n.op == "fused"]
    assert len(kernels) == 2
    assert any("reduction levels" in c for c in kernels[1].attrs["cuts"])


def test_unfused_nodes_say_why():
    fused = fuse_graph(graphs.cuts())
    reasons = {n.op: why for n, why in unfused_reasons(fused).items()}
    assert "no kernel emitter for 'cbrt'" in reasons["cbrt"]


def test_fusible_ops_all_have_cpu_emitters():
    from jitgraph.backends.cpu.emitters import EMITTERS

    assert FUSIBLE_ELEMENTWISE <= set(EMITTERS)
