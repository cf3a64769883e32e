"""Runtime behaviour of compiled graphs: in-place updates land in the caller's buffer, aliasing callers are safe,
zero-size and 0-d values work, strided and Fortran-ordered inputs run without copies, BLAS epilogues."""

from __future__ import annotations

import graphs
import numpy as np
from helpers_cpu import check_against_eager, cpu_compile

from jitgraph.ir import GraphBuilder, TensorType


def test_inplace_updates_write_into_the_callers_buffer():
    graph = graphs.adam(64, "float32")
    compiled = cpu_compile(graph)
    rng = np.random.default_rng(0)
    p, g, m, v = (rng.standard_normal(64).astype(np.float32) for _ in range(4))
    v = np.abs(v)
    p0, m0, v0 = p.copy(), m.copy(), v.copy()
    ptr = p.__array_interface__["data"][0]
    assert compiled.inplace, "the Adam kernel should write p, m, v in place"
    compiled([p, g, m, v])
    assert p.__array_interface__["data"][0] == ptr
    check_against_eager(graph, [p0, g, m0, v0])
    assert not np.array_equal(p, p0)


def test_inplace_into_strided_caller_views():
    graph = graphs.adam(32, "float64")
    rng = np.random.default_rng(1)
    base = rng.random((4, 64))

    def args():
        b = base.copy()
        return [b[0, ::2], b[1, ::2], b[2, 1::2], b[3, ::2]]

    check_against_eager(graph, args)


def test_aliasing_arguments_fall_back_to_copying():
    """p and m are the same buffer: writing p in place would corrupt the read of m."""
    graph = graphs.adam(16, "float64")
    compiled = cpu_compile(graph)
    x = np.linspace(0.1, 1.0, 16)
    g, v = np.full(16, 0.5), np.full(16, 0.25)
    mine = x.copy()
    from jitgraph.backends import eager

    ref = x.copy()
    compiled([mine, g, mine, v.copy()])
    eager.run(graph, [ref, g, ref, v.copy()])
    np.testing.assert_allclose(mine, ref, rtol=1e-12)


def test_zero_size_and_zero_d():
    b = GraphBuilder()
    x = b.input(TensorType((0, 3), np.dtype("f4")), "x")
    s = b.input(TensorType((), np.dtype("f8")), "s")
    w = b.input(TensorType((), np.dtype("f8"), weak=True), "w")
    graph = b.build([b.op("tanh", b.op("add", x, b.const(1.0))), b.op("multiply", b.op("exp", s), w),
                     b.op("sum", b.op("exp", x), axis=(0, 1), keepdims=False)])
    got = check_against_eager(graph, [np.zeros((0, 3), np.float32), np.array(0.5), 2.0])
    assert got[1].shape == () and got[2].shape == ()


def test_fortran_and_transposed_inputs_are_not_copied():
    b = GraphBuilder()
    t = TensorType((64, 48), np.dtype("f4"), layout="F")
    x, y = b.input(t, "x"), b.input(t, "y")
    graph = b.build([b.op("add", b.op("multiply", x, y), b.const(1.0))])
    compiled = cpu_compile(graph)
    rng = np.random.default_rng(2)
    xs, ys = (np.asfortranarray(rng.random((64, 48), np.float32)) for _ in range(2))
    (out,) = compiled([xs, ys])
    np.testing.assert_allclose(out, xs * ys + 1, rtol=1e-6)
    assert out.flags.f_contiguous, "the output follows the inputs' memory order (NumPy's K order)"
    kernel = next(iter(compiled.kernels.values()))
    (launch,) = kernel.launches.values()
    assert "reshape((3072,))" in launch.source, "F-ordered operands become one contiguous 1-D sweep"


def test_matmul_epilogue_with_transposed_operand_writes_into_the_product():
    graph = graphs.mlp_forward(8, 6, 5)
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(i.type.shape).astype(np.float32) for i in graph.inputs]
    compiled = cpu_compile(graph)
    check_against_eager(graph, args, compiled)
    kernel = next(iter(compiled.kernels.values()))
    (launch,) = kernel.launches.values()
    # The epilogue stores through the product's own kernel argument: no output buffer, the product is the result.
    assert "p = BLAS(" in launch.source and "return [p]" in launch.source
    # The only buffer is the product's own, reused across calls (buffers.py).
    assert "np.empty" not in launch.source and launch.source.count(".take()") == 1
    assert "out=PRODUCT.take()" in launch.source
    b = GraphBuilder()
    a = b.input(TensorType((6, 8), np.dtype("f8")), "a")
    w = b.input(TensorType((6, 5), np.dtype("f8")), "w")
    at = b.op("transpose", a, axes=(1, 0))
    g2 = b.build([b.op("tanh", b.op("matmul", at, w))])
    check_against_eager(g2, [rng.standard_normal((6, 8)), rng.standard_normal((6, 5))])


def test_outputs_that_view_a_mutated_input_keep_the_old_values():
    b = GraphBuilder()
    x = b.input(TensorType((8,), np.dtype("f8")), "x")
    view = b.op("reshape", x, shape=(2, 4))
    new = b.op("multiply", x, b.const(2.0))
    graph = b.build([view], [(0, new)])
    check_against_eager(graph, [np.arange(8.0)])


def test_integer_semantics_wraparound_and_floor_division():
    b = GraphBuilder()
    t = TensorType((6,), np.dtype("i4"))
    x, y = b.input(t, "x"), b.input(t, "y")
    graph = b.build([b.op("multiply", x, y), b.op("floor_divide", x, y), b.op("remainder", x, y),
                     b.op("add", x, b.const(2**31 - 1))])
    xs = np.array([7, -7, 7, -7, -2**31, 2**31 - 1], np.int32)
    ys = np.array([2, 2, -2, -2, -1, 0], np.int32)
    check_against_eager(graph, [xs, ys])


def test_driver_and_kernel_sources_are_readable_and_in_linecache():
    import linecache

    compiled = cpu_compile(graphs.softmax())
    compiled([np.ones((8, 16), np.float32)])
    assert compiled.driver_source.startswith("def driver(args):")
    kernel = next(iter(compiled.kernels.values()))
    assert "def fused_max_subtract_exp_sum_0(" in kernel.source
    assert "# level-1 sweep: max" in kernel.source and "for i0 in range(np.uint64(lo), np.uint64(hi)):" in kernel.source
    # The max folds values into eight lanes; the sum adds whole blocks summed by a helper, so it has one.
    # The row max folds into one accumulator, in a plain loop that LLVM vectorises (reduction_lanes.py).
    assert "        accv1_0 = np.float32(-np.inf)\n" in kernel.source and "accv1_1" not in kernel.source
    assert "        accv4_0 = np.float64(0)\n" in kernel.source and "accv4_1" not in kernel.source
    fn = next(iter(kernel.launches.values())).kernel.py_func
    lines = linecache.getlines(fn.__code__.co_filename)
    assert any("def fused_max_subtract_exp_sum_0" in line for line in lines)


def test_memory_plan_chain_of_ten_intermediates():
    """Ten unfusible ops in a chain: each buffer dies after its reader, so the call peaks near two buffers."""
    import tracemalloc

    n = 1 << 18
    b = GraphBuilder()
    x = b.input(TensorType((n,), np.dtype("f8")), "x")
    v = x
    for _ in range(10):
        v = b.op("cbrt", v)  # no kernel emitter: each is its own NumPy call and buffer
    graph = b.build([b.op("sum", v, axis=(0,), keepdims=False)])
    compiled = cpu_compile(graph)
    plan = compiled.graph.memory
    assert plan.peak_before == 10 * n * 8 and plan.peak_after == 2 * n * 8
    xs = np.full(n, 2.0)
    compiled([xs])
    tracemalloc.start()
    compiled([xs])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 3 * n * 8


def test_no_inplace_write_when_the_kernel_reads_a_view_of_the_target():
    b = GraphBuilder()
    x = b.input(TensorType((6, 6), np.dtype("f8")), "x")
    new = b.op("add", x, b.op("transpose", x, axes=(1, 0)))
    graph = b.build([], [(0, new)])
    compiled = cpu_compile(graph)
    assert not compiled.inplace
    check_against_eager(graph, [np.arange(36.0).reshape(6, 6)])


def test_large_launches_split_the_outer_loop_across_threads(monkeypatch):
    from jitgraph.backends.cpu import threads

    monkeypatch.setattr(threads, "PARALLEL_WORK", 1)
    monkeypatch.setenv("JITGRAPH_NUM_THREADS", "3")
    graph = graphs.softmax((64, 128))
    compiled = cpu_compile(graph)
    rng = np.random.default_rng(7)
    check_against_eager(graph, [rng.standard_normal((64, 128)).astype(np.float32)], compiled)
    check_against_eager(graph, [rng.standard_normal((64, 128)).astype(np.float32)], compiled)
    (launch,) = next(iter(compiled.kernels.values())).launches.values()
    assert launch.source.count("POOL.submit(KERNEL") == 2 and "KERNEL(0, 21," in launch.source


def test_loop_bound_given_as_a_zero_d_array():
    """``range(n)`` with ``n = np.array(3)``: the loop driver's signature takes a scalar, so the 0-d array is
    unwrapped on the way in (Numba rejected it and the entry was demoted to eager)."""
    import jitgraph

    def running(x, n):
        s = x[0]
        for i in range(n):
            s = s + x[i] * 2.0
        return s

    x = np.arange(5.0)
    compiled = jitgraph.compile(running, backend="cpu", cache=False)
    assert compiled(x, np.array(4)) == running(x, np.array(4))
    assert compiled.break_reasons() == []
    assert compiled.entries[0].compiled.fallback_reason() is None  # the loop driver ran, not the interpreter


def test_a_zero_d_argument_written_in_a_loop_runs_eagerly_with_the_reason():
    """``acc[...] += x[i]`` in a loop body (a 0-d store has no loop-body form): the function runs eagerly, so the
    0-d argument keeps its buffer and ends as NumPy leaves it. (This test passed before by interpreting the graph,
    which is slower than the function itself; see tests/jit/test_interpreted_runs_eagerly.py.)"""
    import jitgraph

    def running(x, acc, n):
        s = x[0]
        for i in range(n):
            s = s + x[i]
            acc[...] += x[i]
        return s

    x = np.arange(5.0)
    mine, ref = np.array(0.0), np.array(0.0)
    compiled = jitgraph.compile(running, backend="cpu", cache=False)
    assert compiled(x, mine, np.array(4)) == running(x, ref, np.array(4))
    assert mine == ref == 6.0
    (reason,) = compiled.break_reasons()
    assert "0-d" in reason.reason
