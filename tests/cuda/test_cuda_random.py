"""Random elementwise/broadcast programs, optionally ending in a reduction, on the CUDA backend vs eager NumPy.

Few examples (the simulator is slow), derandomised by the CI profile; every example compiles fresh kernels, so
this exercises code generation for shapes, broadcast patterns and reduction axes no hand-written test names.
"""

from __future__ import annotations

import numpy as np
import pytest
from cuda_util import assert_matches_eager
from hypothesis import given, settings
from hypothesis import strategies as st

from jitgraph.ir import GraphBuilder, TensorType

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

UNARY = ["exp", "tanh", "sin", "absolute", "negative", "square", "log1p_abs", "sqrt_abs"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "where_greater", "divide_safe"]
REDUCE = ["sum", "max", "min", "mean"]


@st.composite
def programs(draw: st.DrawFn) -> tuple:
    ndim = draw(st.integers(1, 3))
    domain = tuple(draw(st.lists(st.integers(1, 12), min_size=ndim, max_size=ndim)))
    n_inputs = draw(st.integers(1, 3))
    shapes = []
    for _ in range(n_inputs):
        drop = draw(st.integers(0, ndim - 1))
        shapes.append(tuple(1 if draw(st.booleans()) and k > 0 else d for k, d in enumerate(domain[drop:])))
    shapes[0] = domain  # one operand spans the domain, so the result does
    ops = draw(st.lists(st.tuples(st.sampled_from(UNARY + BINARY), st.integers(0, 10), st.integers(0, 10)),
                        min_size=1, max_size=6))
    reduce = draw(st.one_of(st.none(), st.tuples(st.sampled_from(REDUCE),
                                                 st.sets(st.integers(0, ndim - 1), min_size=1), st.booleans())))
    dtype = draw(st.sampled_from(["float32", "float64"]))
    return shapes, ops, reduce, dtype


def _apply(b: GraphBuilder, op: str, x, y):
    if op == "log1p_abs":
        return b.op("log1p", b.op("absolute", x))
    if op == "sqrt_abs":
        return b.op("sqrt", b.op("absolute", x))
    if op == "exp":
        return b.op("exp", b.op("clip", x, b.const(-5.0), b.const(5.0)))
    if op == "where_greater":
        return b.op("where", b.op("greater", x, y), x, y)
    if op == "divide_safe":
        return b.op("divide", x, b.op("add", b.op("absolute", y), b.const(0.5)))
    if op in BINARY:
        return b.op(op, x, y)
    return b.op(op, x)


@settings(max_examples=12)
@given(programs(), st.integers(0, 2**16))
def test_random_program(program: tuple, seed: int) -> None:
    shapes, ops, reduce, dtype = program
    b = GraphBuilder()
    values = [b.input(TensorType(s, np.dtype(dtype)), f"x{k}") for k, s in enumerate(shapes)]
    for op, i, j in ops:
        values.append(_apply(b, op, values[i % len(values)], values[j % len(values)]))
    out = values[-1]
    if out.tensor_type.shape != shapes[0]:
        out = b.op("add", out, values[0])
    if reduce is not None:
        name, axes, keep = reduce
        out = b.op(name, out, axis=tuple(sorted(axes)), keepdims=keep)
    g = b.build([out])
    rng = np.random.default_rng(seed)
    args = [rng.uniform(-2, 2, size=s).astype(dtype) for s in shapes]
    assert_matches_eager(g, args, device=seed % 2 == 0, rtol=2e-4, atol=2e-5)


def test_regression_mean_over_two_axes_divides_by_the_product() -> None:
    """Found by test_random_program: ``acc / n0 * n1`` (missing parentheses) made a mean over (1, 2) four times
    too large."""
    b = GraphBuilder()
    x = b.input(TensorType((1, 2), np.dtype("float32")), "x")
    g = b.build([b.op("mean", b.op("exp", x), axis=(0, 1), keepdims=False)])
    assert_matches_eager(g, [np.array([[0.5, -1.0]], np.float32)])
