"""From what size a fused kernel runs on two threads (threads.work_per_element): reduction kernels weigh only their
per-element ops, so a medium column logsumexp stays on one thread while the (4096, 1024) row softmax and layernorm
of the workloads still split; elementwise kernels keep the estimate PARALLEL_WORK was measured with."""

from __future__ import annotations

import math

import graphs
import numpy as np
import pytest
from helpers_cpu import check_against_eager, cpu_compile

from jitgraph.ir import GraphBuilder
from jitgraph.ir.ops.cost import math_bound


@pytest.fixture(autouse=True)
def two_threads(monkeypatch):
    monkeypatch.setenv("JITGRAPH_NUM_THREADS", "2")


def logsumexp(shape, axis, dtype="float32"):
    b = GraphBuilder()
    x = b.input(graphs.t(shape, dtype), "x")
    m = b.op("max", x, axis=(axis,), keepdims=True)
    s = b.op("sum", b.op("exp", b.op("subtract", x, m)), axis=(axis,), keepdims=True)
    return b.build([b.op("add", m, b.op("log", s))])


def the_kernel(compiled):
    (kernel,) = compiled.kernels.values()
    return kernel


def splits(kernel) -> bool:
    return math.prod(kernel.domain) >= kernel.threshold


@pytest.mark.parametrize("axis", [0, 1])
def test_medium_logsumexp_runs_on_one_thread(axis):
    """(256, 512) and (512, 512): two threads were slower than one (issue 21, logsumexp_cols)."""
    for shape in [(256, 512), (512, 512)]:
        assert not splits(the_kernel(cpu_compile(logsumexp(shape, axis))))


def test_medium_softmax_and_layernorm_run_on_one_thread():
    assert not splits(the_kernel(cpu_compile(graphs.softmax((256, 512)))))
    assert not splits(the_kernel(cpu_compile(graphs.layernorm((256, 512)))))


def test_large_row_softmax_and_layernorm_still_split():
    """W2 and W3 of benchmarks/workloads.py, (4096, 1024): two threads are 1.6-1.8x faster there."""
    assert splits(the_kernel(cpu_compile(graphs.softmax((4096, 1024)))))
    assert splits(the_kernel(cpu_compile(graphs.layernorm((4096, 1024)))))
    assert splits(the_kernel(cpu_compile(logsumexp((4096, 1024), 0))))


def test_elementwise_estimate_is_unchanged():
    """Every op weighs 1, a math-bound one 4 (vectorised or not), plus one per operand."""
    kernel = the_kernel(cpu_compile(graphs.w1(1 << 20)))
    assert kernel.work == sum(4 if math_bound(n.op) else 1 for n in kernel.info.amap) + len(kernel.uses) == 11


def test_one_thread_column_logsumexp_matches_eager():
    graph = logsumexp((256, 512), 0)
    compiled = cpu_compile(graph)
    x = np.random.default_rng(3).standard_normal((256, 512)).astype(np.float32)
    check_against_eager(graph, [x], compiled)
    (launch,) = the_kernel(compiled).launches.values()
    assert "POOL.submit" not in launch.source


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_medium_softmax_below_the_threshold_keeps_its_kernel(monkeypatch, dtype):
    """On one thread the (256, 512) softmax still launches its kernel rather than five NumPy calls: the cost model
    counts the exp the kernel keeps in a scratch row once (it counted it in both sweeps and chose NumPy, 2x slower)."""
    monkeypatch.setenv("JITGRAPH_SMALL_KERNELS", "0")
    compiled = cpu_compile(graphs.softmax((256, 512), dtype))
    assert not compiled.numpy_groups and not splits(the_kernel(compiled))
