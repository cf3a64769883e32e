"""Every VJP rule and broadcasting pattern against central finite differences in float64.

The cases run on the eager backend (the joint graph interpreted: this tests the transform and the rules); a few
run on the CPU backend in test_autodiff_api.py. ``test_every_rule_is_exercised`` fails when a rule is added to the table
without a case here.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

from jitgraph.autodiff import VJP
from jitgraph.tracer.trace import trace

R = np.random.default_rng(0)


def u(*shape: int, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return R.uniform(lo, hi, size=shape)


POS = {"lo": 0.5, "hi": 1.5}
UNIT = {"lo": -0.8, "hi": 0.8}

UNARY = {
    "negative": (np.negative, {}), "positive": (np.positive, {}), "absolute": (np.abs, {}), "exp": (np.exp, {}),
    "exp2": (np.exp2, {}), "expm1": (np.expm1, {}), "log": (np.log, POS), "log2": (np.log2, POS),
    "log10": (np.log10, POS), "log1p": (np.log1p, POS), "sqrt": (np.sqrt, POS), "cbrt": (np.cbrt, POS),
    "square": (np.square, {}), "reciprocal": (np.reciprocal, POS), "sin": (np.sin, {}), "cos": (np.cos, {}),
    "tan": (np.tan, UNIT), "tanh": (np.tanh, {}), "sinh": (np.sinh, {}), "cosh": (np.cosh, {}),
    "arcsin": (np.arcsin, UNIT), "arccos": (np.arccos, UNIT), "arctan": (np.arctan, {}),
    "arcsinh": (np.arcsinh, {}), "arccosh": (np.arccosh, {"lo": 1.5, "hi": 2.5}), "arctanh": (np.arctanh, UNIT),
    "deg2rad": (np.deg2rad, {}), "rad2deg": (np.rad2deg, {}), "sign": (np.sign, {}), "floor": (np.floor, {}),
    "ceil": (np.ceil, {}), "trunc": (np.trunc, {}), "rint": (np.rint, {"lo": 0.1, "hi": 0.4}),
}

BINARY = {
    "add": (np.add, {}, {}), "subtract": (np.subtract, {}, {}), "multiply": (np.multiply, {}, {}),
    "divide": (np.divide, {}, POS), "power": (np.power, POS, {}), "float_power": (np.float_power, POS, {}),
    "maximum": (np.maximum, {}, {}), "minimum": (np.minimum, {}, {}), "fmax": (np.fmax, {}, {}),
    "fmin": (np.fmin, {}, {}), "remainder": (np.remainder, {"lo": 2.1, "hi": 2.9}, {"lo": 1.1, "hi": 1.4}),
    "fmod": (np.fmod, {"lo": 2.1, "hi": 2.9}, {"lo": 1.1, "hi": 1.4}),
    "floor_divide": (np.floor_divide, {"lo": 2.1, "hi": 2.9}, {"lo": 1.1, "hi": 1.4}),
    "heaviside": (np.heaviside, {}, {}), "arctan2": (np.arctan2, {}, POS), "hypot": (np.hypot, {}, {}),
    "logaddexp": (np.logaddexp, {}, {}), "copysign": (np.copysign, POS, {}),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name: str) -> None:
    fn, dom = UNARY[name]
    check_grad(lambda x: fn(x), u(3, 4, **dom))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name: str) -> None:
    fn, dx, dy = BINARY[name]
    check_grad(lambda x, y: fn(x, y), u(3, 4, **dx), u(3, 4, **dy))


BROADCASTS = [((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 1)), ((4,), (2, 3, 4)), ((3, 4), ()),
              ((1,), (3, 4))]


@pytest.mark.parametrize("sx,sy", BROADCASTS)
@pytest.mark.parametrize("op", [np.add, np.multiply, np.divide, np.maximum])
def test_broadcasting(op, sx: tuple, sy: tuple) -> None:
    check_grad(lambda x, y: op(x, y), u(*sx, **POS), u(*sy, **POS))


def test_python_float_argument_and_literals() -> None:
    check_grad(lambda x, s: x * s + 2.0 * x ** 2 - s / (1.0 + x * x), u(3), 0.7)


def test_where_clip_copy_astype() -> None:
    check_grad(lambda x, y: np.where(x > 0, x * y, y - x), u(3, 4), u(4))
    check_grad(lambda x, lo, hi: np.clip(x, lo, hi), u(3, 4) * 2, u(4, lo=-1.5, hi=-0.5), u(3, 1, lo=0.5, hi=1.5))
    check_grad(lambda x: np.clip(x, -0.5, 0.5) * x.copy(), u(3, 4))
    check_grad(lambda x: x.astype(np.float32).astype(np.float64) * 3.0, u(3, 4), eps=1e-2, rtol=1e-4)


@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True), ((0, 2), False), (-1, True)])
@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "var", "std"])
def test_reductions(name: str, axis, keepdims: bool) -> None:
    fn = getattr(np, name)
    check_grad(lambda x: fn(x, axis=axis, keepdims=keepdims) * 1.0, u(2, 3, 4, **POS))


def test_logsumexp_and_softmax_patterns() -> None:
    """The max subtracted for stability has a gradient that cancels; the result must still be exact."""
    check_grad(lambda x: np.log(np.exp(x - x.max(axis=1, keepdims=True)).sum(axis=1)) + x.max(axis=1), u(3, 4))
    check_grad(lambda x: np.exp(x - x.max(axis=-1, keepdims=True)) / np.exp(x - x.max(axis=-1, keepdims=True))
               .sum(axis=-1, keepdims=True), u(3, 4))


def test_var_std_ddof() -> None:
    check_grad(lambda x: np.var(x, axis=0, ddof=1), u(4, 3))
    check_grad(lambda x: np.std(x, ddof=1), u(4, 3))


def test_max_ties_share_the_gradient() -> None:
    """NumPy's max picks no winner among equal values; the gradient is split equally among them (as JAX)."""
    import jitgraph

    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]])
    g = jitgraph.grad(lambda x: x.max(axis=1).sum(), backend="eager")(x)
    np.testing.assert_array_equal(g, [[0, 0.5, 0.5], [1, 0, 0]])
    g = jitgraph.grad(lambda x: np.maximum(x, 1.0).sum(), backend="eager")(x)
    np.testing.assert_array_equal(g, [[0.5, 1, 1], [1, 0, 0.5]])


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
                                   ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((1, 3, 4), (2, 4, 2))])
def test_matmul(sa: tuple, sb: tuple) -> None:
    check_grad(lambda a, b: a @ b, u(*sa), u(*sb))


def test_dot_outer_einsum() -> None:
    check_grad(lambda a, b: np.dot(a, b), u(3, 4), u(4, 2))
    check_grad(lambda a, b: np.dot(a, b), u(4), u(4))
    check_grad(lambda a, b: np.dot(a, b), u(3), u())
    check_grad(lambda a, b: np.dot(a, b), u(2, 3, 4), u(5, 4, 2))
    check_grad(lambda a, b: np.outer(a, b), u(3), u(2, 2))
    check_grad(lambda a, b: np.einsum("ij,jk->ik", a, b), u(3, 4), u(4, 2))
    check_grad(lambda a, b: np.einsum("bij,bjk->bki", a, b), u(2, 3, 4), u(2, 4, 2))
    check_grad(lambda a, b: np.einsum("ij,j->i", a, b), u(3, 4), u(4))
    check_grad(lambda a: np.einsum("ij->j", a), u(3, 4))
    check_grad(lambda a: np.einsum("ii->", a) * np.einsum("ii->i", a), u(3, 3))  # trace and diagonal
    check_grad(lambda a, b: np.einsum("iij,j->i", a, b), u(3, 3, 2), u(2))


def test_shapes() -> None:
    w423, w234 = u(4, 2, 3), u(2, 3, 4)
    check_grad(lambda x: x.reshape(4, 3) * np.arange(12.0).reshape(4, 3), u(3, 4))
    check_grad(lambda x: x.T * np.arange(12.0).reshape(4, 3), u(3, 4))
    check_grad(lambda x: np.transpose(x, (2, 0, 1)) * w423, u(2, 3, 4))
    check_grad(lambda x: np.broadcast_to(x, (2, 3, 4)) * w234, u(3, 1))
    check_grad(lambda x, y: np.concatenate([x, y, x], axis=1), u(3, 2), u(3, 4))
    check_grad(lambda x, y: np.concatenate([x, y], axis=None), u(3, 2), u(4))
    check_grad(lambda x, y: np.stack([x, y], axis=1), u(3, 2), u(3, 2))
    check_grad(lambda x: np.squeeze(x[None]) * 2.0 + np.expand_dims(x, 0).sum(axis=0), u(3, 2))


def test_cumsum_and_solve() -> None:
    """Found missing by a probe corpus (DifferentiationError for a cumulative sum and a linear solve)."""
    w = u(3, 4)
    check_grad(lambda x: np.cumsum(x, axis=1) * w, u(3, 4))
    check_grad(lambda x: np.cumsum(x, axis=0) * w, u(3, 4))
    check_grad(lambda x: np.cumsum(x) * w.ravel(), u(3, 4))
    a = u(3, 3) + 3.0 * np.eye(3)
    check_grad(lambda a, b: np.linalg.solve(a, b) * np.arange(1.0, 4.0), a, u(3))
    check_grad(lambda a, b: np.linalg.solve(a, b) * w[:, :2], a, u(3, 2))


def test_indexing() -> None:
    check_grad(lambda x: x[1:3, ::2] * 2.0, u(4, 5))
    check_grad(lambda x: x[::-1, 1], u(4, 5))
    check_grad(lambda x: x[2], u(4, 5))
    idx = np.array([0, 2, 2, 3, 0])
    check_grad(lambda x, i: x[i] * 1.5, u(4, 3), idx)  # repeated indices accumulate (scatter-add)
    check_grad(lambda x, i, j: x[i, j], u(4, 3), idx, np.array([0, 1, 2, 2, 1]))


def test_setitem_and_add_at() -> None:
    def write(x, v):
        y = x.copy()
        y[1:3] = v * 2.0
        return y * y

    check_grad(write, u(4, 3), u(3))

    def gather_write(x, v):
        y = x * 1.0
        y[np.array([0, 3])] = v
        return y * x

    check_grad(gather_write, u(4, 3), u(2, 3))

    def add_at(x, v):
        y = x * 1.0
        np.add.at(y, np.array([0, 1, 1]), v)
        return y * y

    check_grad(add_at, u(4, 3), u(3, 3))


def test_in_place_code_differentiates_as_its_functional_form() -> None:
    def f(x):
        y = x * 1.0
        y *= 2.0
        y += x ** 2
        y[0] -= 1.0
        return np.tanh(y)

    check_grad(f, u(3, 2))


def test_every_rule_is_exercised() -> None:
    """Each rule in the VJP table is traced by some case above (or by the control-flow tests)."""
    import inspect

    source = inspect.getsource(inspect.getmodule(test_shapes))
    covered = set(UNARY) | set(BINARY) | {"where", "clip", "copy", "astype", "sum", "mean", "max", "min", "prod",
                                          "var", "std", "matmul", "dot", "outer", "einsum", "reshape", "transpose",
                                          "broadcast_to", "concatenate", "stack", "getitem", "setitem",
                                          "scatter_add", "cumsum", "solve"}
    elsewhere = {"tuple_get", "check", "to_python", "loop", "cond", "while"}  # tests/autodiff/test_control_flow.py
    missing = set(VJP) - covered - elsewhere
    assert not missing, f"rules without a finite-difference case: {sorted(missing)}"
    assert "np.add.at" in source
    # and the cases trace to the ops they claim
    ops = {n.op for n in trace(lambda x: np.clip(x, -0.5, 0.5) * x.copy(), (u(3),), {}).graph.nodes}
    assert {"clip", "copy"} <= ops


def test_check_passes_the_gradient_to_its_value() -> None:
    """``check(value, pred)`` (a run-time test the tracer inserts) is its value to the backward."""
    from jitgraph.autodiff import differentiate
    from jitgraph.backends.eager import evaluate
    from jitgraph.ir.graph import GraphBuilder
    from jitgraph.ir.types import TensorType

    b = GraphBuilder()
    x = b.input(TensorType((3,), np.dtype(np.float64)), "x")
    checked = b.op("check", b.op("multiply", x, x), b.const(True), message="never")
    graph = b.build([b.op("sum", checked, axis=(0,), keepdims=False)])
    joint = differentiate(graph, [0], [0])
    (_, grad), _ = evaluate(joint.graph, [np.arange(3.0)])
    np.testing.assert_allclose(grad, 2 * np.arange(3.0))
