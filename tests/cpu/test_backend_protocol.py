"""The backend contract: every artifact answers the CompiledGraph protocol, backends take lowered graphs only,
and one planner decides which kernel outputs are written straight into the caller's buffers."""

from __future__ import annotations

import numpy as np
import pytest
from helpers_cpu import cpu_compile, lower

from jitgraph.backends.base import CompiledGraph, KernelSource, get_backend
from jitgraph.backends.inplace import plan_inplace
from jitgraph.errors import BackendError, UnsupportedError
from jitgraph.ir import GraphBuilder, TensorType

F32 = np.dtype(np.float32)


def _adam_like(read_after: bool = False, return_view: bool = False):
    b = GraphBuilder()
    p, g = b.input(TensorType((64,), F32), "p"), b.input(TensorType((64,), F32), "g")
    new_p = b.op("subtract", p, b.op("multiply", g, b.const(0.5)))
    outputs = []
    if read_after:
        outputs.append(b.op("cbrt", p))  # no kernel emitter: NumPy reads the old p after the kernel ran
    if return_view:
        outputs.append(b.op("reshape", p, shape=(8, 8)))
    return b.build(outputs, [(0, new_p)])


def _any_kernel(node, k, target) -> bool:
    return node.op == "fused"


def test_eager_and_cpu_artifacts_answer_the_protocol() -> None:
    graph = _adam_like()
    for name in ("eager", "cpu"):
        compiled = get_backend(name)(lower(graph), {})
        assert isinstance(compiled, CompiledGraph), name
        assert isinstance(compiled.explain(), str) and compiled.fallback_reason() is None
        assert set(compiled.compile_times()) == {"codegen", "numba"}
        assert all(isinstance(s, KernelSource) for s in compiled.kernel_sources())


def test_cpu_kernel_sources_show_kernels_once_built_and_the_driver() -> None:
    compiled = cpu_compile(_adam_like())
    before = compiled.kernel_sources()
    assert before[-1].title.startswith("driver") and "def driver(args)" in before[-1].source
    assert before[0].source == "" and "first call" in before[0].note
    compiled([np.ones(64, F32), np.ones(64, F32)])
    after = compiled.kernel_sources()
    assert "@njit" in after[0].source and after[0].note == ""
    assert compiled.compile_times()["numba"] > 0


def test_backends_refuse_a_graph_that_skipped_the_pipeline() -> None:
    with pytest.raises(BackendError, match="lowered"):
        get_backend("cpu")(_adam_like(), {})
    with pytest.raises(UnsupportedError, match="unknown backend"):
        get_backend("no_such_backend")


def test_inplace_planner_writes_a_mutation_into_the_caller_buffer() -> None:
    graph = lower(_adam_like())
    (write,) = plan_inplace(graph, _any_kernel)
    assert write.node.op == "fused" and write.argument == 0 and write.through is None
    p = np.ones(64, F32)
    cpu_compile(_adam_like())([p, np.ones(64, F32)])
    np.testing.assert_allclose(p, 0.5)


@pytest.mark.parametrize("case", ["read_after", "return_view"])
def test_inplace_planner_declines_when_the_old_value_is_still_needed(case: str) -> None:
    graph = lower(_adam_like(**{case: True}))
    assert plan_inplace(graph, _any_kernel) == []
