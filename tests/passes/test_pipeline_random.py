"""Random graphs through the whole DEFAULT_PIPELINE give the same eager results as before (hypothesis).

The graphs are built to hit the rules: constants 0, -0.0, 1, 2 and 0.5, double negations, transposes of
transposes, reshape chains, copies feeding matmul, and broadcasting operands; inputs carry -0.0, NaN and +-inf.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st
from passes_helpers import args_for, assert_same_results, build, run_eager

from jitgraph.errors import JitgraphError
from jitgraph.ir import GraphBuilder, Node, TensorType
from jitgraph.passes import DEFAULT_PIPELINE, run_pipeline

SHAPES = [(3, 4), (4,), (1, 4), (4, 3), ()]
DTYPES = [np.float32, np.float64, np.int32]
UNARY = ["negative", "exp", "sqrt", "absolute", "sin", "square", "floor", "tanh"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "power"]
CONSTS = [0, 1, 2, 0.0, -0.0, 1.0, 2.0, 0.5, np.float32(1.0), np.array([1.0, 1.0, 1.0, 1.0], np.float32),
          np.zeros(4, np.int32), np.array(-0.0)]


def _step(b: GraphBuilder, draw, pool: list[Node]) -> Node:
    kind = draw(st.sampled_from(["unary", "binary", "binary", "const_binary", "const_binary", "double_neg",
                                      "transpose", "reshape", "matmul", "reduce", "copy"]))
    x = draw(st.sampled_from(pool))
    if kind == "unary":
        return b.op(draw(st.sampled_from(UNARY)), x)
    if kind == "double_neg":
        return b.op("negative", b.op("negative", x))
    if kind in ("binary", "const_binary"):
        other = draw(st.sampled_from(pool)) if kind == "binary" else b.const(draw(st.sampled_from(CONSTS)))
        operands = (x, other) if draw(st.booleans()) else (other, x)
        return b.op(draw(st.sampled_from(BINARY)), *operands)
    t = x.tensor_type
    if kind == "transpose":
        once = b.op("transpose", x, axes=tuple(reversed(range(t.ndim))))
        return b.op("transpose", once, axes=tuple(reversed(range(t.ndim)))) if draw(st.booleans()) else once
    if kind == "reshape":
        flat = b.op("reshape", x, shape=(t.size,))
        return b.op("reshape", flat, shape=t.shape)
    if kind == "matmul":
        lhs = b.op("transpose", x, axes=tuple(reversed(range(t.ndim))))
        return b.op("matmul", b.op("copy", lhs), draw(st.sampled_from(pool)))
    if kind == "reduce":
        return b.op("sum", x, axis=(0,) if t.ndim else (), keepdims=draw(st.booleans()))
    return b.op("copy", x)


@st.composite
def random_graphs(draw):
    types = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.integers(0, 5)) == 0:  # a Python float argument (a learning rate): weak under NEP 50
            types.append(TensorType((), np.float64, weak=True))
            continue
        shape = draw(st.sampled_from(SHAPES))
        layout = draw(st.sampled_from(["C", "F"])) if len(shape) == 2 and 1 not in shape else "C"
        types.append(TensorType(shape, draw(st.sampled_from(DTYPES)), layout=layout))

    def fn(b, *inputs):
        pool = list(inputs)
        for _ in range(draw(st.integers(1, 8))):
            try:
                pool.append(_step(b, draw, pool))
            except JitgraphError:
                pass  # NumPy rejects this combination (shapes, dtypes): try another step
        outputs = [pool[-1]] + draw(st.lists(st.sampled_from(pool), max_size=2))
        mutations = []
        candidates = [n for n in pool[len(inputs):] if n.tensor_type.shape == inputs[0].tensor_type.shape
                      and n.tensor_type.dtype == inputs[0].tensor_type.dtype]
        if candidates and not inputs[0].tensor_type.weak and draw(st.booleans()):
            mutations.append((0, draw(st.sampled_from(candidates))))
        return outputs, mutations

    return build(fn, *types)


@given(random_graphs())
def test_default_pipeline_preserves_eager_results(graph) -> None:
    note(str(graph))
    after, report = run_pipeline(graph)
    note(str(after))
    assert [r.name for r in report.records] == list(DEFAULT_PIPELINE)
    # BLAS may pick another kernel, and a float sum walks memory in the order the layout pass leaves it.
    rtol = 1e-5 if any(n.op in ("matmul", "sum") for n in graph.nodes) else 0.0
    for seed in (0, 1):
        args = args_for(graph, seed)
        try:
            run_eager(graph, args)
        except (ValueError, ZeroDivisionError) as exc:  # e.g. integers to negative integer powers
            # NumPy's error must survive the pipeline, also when the node that raises is dead.
            with pytest.raises(type(exc)):
                run_eager(after, args)
            continue
        assert_same_results(graph, after, args, rtol=rtol)


def test_regression_dead_code_that_would_raise_still_raises() -> None:
    """Found by the random test: NumPy raises for a negative integer power even when the result is unused. Such
    nodes (and out-of-range index operands) are roots of liveness (``ir.graph.may_raise``), so DCE keeps them and
    the compiled function raises as eager NumPy does instead of succeeding in silence."""
    graph = build(lambda b, x, n: ([b.op("negative", b.op("negative", x))], []) if b.op("power", n, n) else None,
                  TensorType((3, 4), np.float32), TensorType((3, 4), np.int32))
    after, _ = run_pipeline(graph)
    args = [np.ones((3, 4), np.float32), np.full((3, 4), -1, np.int32)]
    with pytest.raises(ValueError, match="negative integer powers"):
        run_eager(graph, args)
    with pytest.raises(ValueError, match="negative integer powers"):
        run_eager(after, args)
    (out,), _ = run_eager(after, [args[0], np.full((3, 4), 2, np.int32)])
    np.testing.assert_array_equal(out, args[0])


def test_live_numpy_errors_survive_the_pipeline() -> None:
    graph = build(lambda b, x, n: b.op("add", x, b.op("power", n, n)),
                  TensorType((3, 4), np.float32), TensorType((3, 4), np.int32))
    after, _ = run_pipeline(graph)
    with pytest.raises(ValueError, match="negative integer powers"):
        run_eager(after, [np.ones((3, 4), np.float32), np.full((3, 4), -1, np.int32)])
