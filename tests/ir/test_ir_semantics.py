"""NumPy 2 semantics the IR must reproduce exactly: NEP 50 weak scalars, integer division and modulo signs,
integer overflow wrap-around and bool arithmetic. Every expectation is NumPy called directly."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from irtest_util import assert_same, assert_type_matches, check_op

from jitgraph.backends import eager
from jitgraph.ir import GraphBuilder, Operand, TensorType, type_of, verify


def run_with_const(name: str, array: np.ndarray, scalar: Any, scalar_first: bool = False) -> tuple[Any, Any]:
    """``name(array, scalar)`` with the Python scalar as a graph constant (a literal in the user's code)."""
    b = GraphBuilder()
    x = b.input(type_of(array), "x")
    c = b.const(scalar)
    node = b.op(name, c, x) if scalar_first else b.op(name, x, c)
    (got,) = eager.run(verify(b.build([node])), [array])
    return node, got


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int8", "uint8", "int64", "float64"])
@pytest.mark.parametrize("scalar", [0.5, 1, 2])
@pytest.mark.parametrize("name, op", [("multiply", operator.mul), ("add", operator.add),
                                      ("subtract", operator.sub), ("divide", operator.truediv)])
def test_weak_literal_keeps_array_dtype(dtype: str, scalar: Any, name: str, op: Callable[..., Any]) -> None:
    """``f32_array * 0.5`` stays float32, ``i32 + 1`` stays int32, ``i32 * 0.5`` is float64 (NEP 50)."""
    x = (np.arange(6).reshape(2, 3) % 4).astype(dtype)
    for first in (False, True):
        with np.errstate(all="ignore"):
            expected = op(scalar, x) if first else op(x, scalar)
        node, got = run_with_const(name, x, scalar, scalar_first=first)
        assert_type_matches(node, expected, f"{name} {dtype} {scalar!r}")
        assert_same(got, expected, f"{name} {dtype} {scalar!r}")


def test_named_nep50_examples() -> None:
    f32 = np.ones(3, np.float32)
    i32 = np.ones(3, np.int32)
    assert run_with_const("multiply", f32, 0.5)[0].tensor_type.dtype == np.float32
    assert run_with_const("add", i32, 1)[0].tensor_type.dtype == np.int32
    assert run_with_const("multiply", i32, 0.5)[0].tensor_type.dtype == np.float64
    # A learning rate passed at run time as a Python float is weak too: lr * f32 stays f32.
    b = GraphBuilder()
    lr = b.input(type_of(0.01), "lr")
    assert lr.type == TensorType((), np.float64, weak=True)
    w = b.input(type_of(f32), "w")
    node = b.op("multiply", lr, w)
    (got,) = eager.run(b.build([node]), [0.01, f32])
    assert node.tensor_type.dtype == np.float32 and got.dtype == (0.01 * f32).dtype == np.float32
    # NumPy scalars and 0-d arrays are strong: np.float64(0.5) * f32 is float64.
    assert check_op("multiply", (np.float64(0.5), f32), {}, np.multiply) == "ok"
    assert check_op("multiply", (np.array(0.5), f32), {}, np.multiply) == "ok"
    # bool is never weak: True + i32 follows the int32 array, True + True is bool (logical or).
    assert type_of(True) == TensorType((), np.bool_)
    assert check_op("add", (True, i32), {}, np.add) == "ok"


def test_weak_int_out_of_range_is_numpy_error_at_run_time() -> None:
    """``int8_array + 300`` raises OverflowError in NumPy 2; types alone cannot see the value, eager raises."""
    x = np.ones(3, np.int8)
    with pytest.raises(OverflowError):
        run_with_const("add", x, 300)
    with pytest.raises(OverflowError):
        _ = x + 300


def test_all_weak_operands_follow_python() -> None:
    """Two Python scalars combine like Python's operators and stay weak (so ``lr * 0.5 * f32`` stays f32)."""
    for a, b, name, op in [(3, 2, "add", operator.add), (7, -2, "floor_divide", operator.floordiv),
                           (-7, 2, "remainder", operator.mod), (3, 2, "divide", operator.truediv),
                           (1.5, 2, "multiply", operator.mul), (2, 3, "power", operator.pow)]:
        g = GraphBuilder()
        node = g.op(name, g.input(type_of(a)), g.input(type_of(b)))
        (got,) = eager.run(g.build([node]), [a, b])
        expected = op(a, b)
        assert node.tensor_type.weak and type(got) is type(expected) and got == expected
        assert node.tensor_type.dtype == np.asarray(expected).dtype


def test_astype_of_python_scalar_is_strong() -> None:
    """``np.float32(lr)`` / ``np.asarray(lr).astype(f32)`` is a float32 value, not a Python float.

    Regression: astype of a weak input used to stay weak (``pyfloat[]``), losing the requested dtype, so
    ``np.float32(lr) * f64_array`` would have been typed like ``lr * f64_array``.
    """
    b = GraphBuilder()
    lr = b.input(type_of(0.5), "lr")
    cast = b.op("astype", lr, dtype=np.dtype(np.float32))
    copied = b.op("copy", lr)
    x = b.input(type_of(np.ones(2, np.float16)), "x")
    product = b.op("multiply", cast, x)
    assert cast.type == TensorType((), np.float32) and copied.type == TensorType((), np.float64)
    got = eager.run(verify(b.build([cast, copied, product])), [0.5, np.ones(2, np.float16)])
    expected = np.asarray(0.5).astype(np.float32) * np.ones(2, np.float16)
    assert_same(got[0], np.float32(0.5))
    assert_same(got[2], expected)
    assert product.tensor_type.dtype == expected.dtype == np.float32


INT_DTYPES = ["int8", "int32", "int64", "uint8", "uint32"]


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod", "divide"])
def test_integer_division_signs(dtype: str, name: str) -> None:
    """Floor division and modulo follow the divisor's sign (Python's rule); fmod follows the dividend's."""
    signed = np.dtype(dtype).kind == "i"
    values = np.array([-7, -6, -1, 0, 1, 6, 7] if signed else [0, 1, 6, 7, 200], dtype=dtype)
    divisors = np.array([-3, -2, 2, 3] if signed else [1, 2, 3, 7], dtype=dtype)
    x, y = values[:, None], divisors[None, :]
    fn = getattr(np, name)
    assert check_op(name, (x, y), {}, fn) == "ok"
    assert check_op(name, (x, -2 if signed else 3), {}, fn) == "ok"
    assert check_op(name, (-7 if signed else 7, y), {}, fn) == "ok"


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_overflow_wraps(dtype: str) -> None:
    info = np.iinfo(dtype)
    x = np.array([info.max, info.min, info.max - 1], dtype=dtype)
    for name in ("add", "multiply", "subtract", "negative", "absolute", "square", "power"):
        args = (x,) if name in ("negative", "absolute", "square") else (x, x if name != "power" else 3)
        if name == "power":
            args = (x, np.array(3, dtype))
        assert check_op(name, args, {}, getattr(np, name)) == "ok"
    assert check_op("floor_divide", (x, np.array(-1, dtype) if info.min < 0 else x), {}, np.floor_divide) == "ok"
    assert check_op("add", (x, 1), {}, np.add) == "ok"  # weak 1 adopts dtype, then wraps


def test_bool_arithmetic() -> None:
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    for name in ("add", "multiply", "maximum", "minimum", "logical_xor", "bitwise_xor", "invert", "absolute",
                 "floor_divide", "divide", "power", "remainder", "sign", "square"):
        args = (a,) if getattr(np, name).nin == 1 else (a, b)
        check_op(name, args, {}, getattr(np, name))  # computed or rejected exactly like NumPy
    assert check_op("subtract", (a, b), {}, np.subtract) == "rejected"
    assert check_op("negative", (a,), {}, np.negative) == "rejected"
    assert check_op("add", (a, b), {}, np.add) == "ok"
    assert check_op("add", (a, 1), {}, np.add) == "ok"  # bool + weak int is int64
    assert check_op("sum", (a,), {"axis": (0,), "keepdims": False}, lambda v: np.sum(v, axis=0)) == "ok"


ZERO_SIZE_CASES: list[tuple[str, tuple[Any, ...], dict[str, Any], Callable[..., Any]]] = [
    ("add", (np.zeros((0, 3)), np.ones(3, np.float32)), {}, np.add),
    ("matmul", (np.zeros((2, 0)), np.zeros((0, 3))), {}, np.matmul),
    ("matmul", (np.zeros((0, 2)), np.zeros((2, 3))), {}, np.matmul),
    ("dot", (np.zeros(0), np.zeros(0)), {}, np.dot),
    ("sum", (np.zeros((0, 3)),), {"axis": (0,), "keepdims": False}, lambda v: np.sum(v, axis=0)),
    ("mean", (np.zeros((0, 3)),), {"axis": (0,), "keepdims": True}, lambda v: np.mean(v, axis=0, keepdims=True)),
    ("prod", (np.zeros((3, 0), np.int32),), {"axis": (0, 1), "keepdims": False}, np.prod),
    ("max", (np.zeros((3, 0)),), {"axis": (0,), "keepdims": False}, lambda v: np.max(v, axis=0)),
    ("max", (np.zeros((3, 0)),), {"axis": (1,), "keepdims": False}, lambda v: np.max(v, axis=1)),
    ("argmin", (np.zeros((3, 0)),), {"axis": 0, "keepdims": False}, lambda v: np.argmin(v, axis=0)),
    ("reshape", (np.zeros((0, 3)),), {"shape": (-1, 3)}, lambda v: v.reshape(-1, 3)),
    ("reshape", (np.zeros((0, 3)),), {"shape": (0, -1)}, lambda v: v.reshape(0, -1)),
    ("transpose", (np.zeros((0, 3)),), {"axes": (1, 0)}, np.transpose),
    ("broadcast_to", (np.zeros((1, 3)),), {"shape": (0, 3)}, lambda v: np.broadcast_to(v, (0, 3))),
    ("concatenate", (np.zeros((0, 3)), np.ones((2, 3), np.int32)), {"axis": 0}, lambda *v: np.concatenate(v)),
    ("einsum", (np.zeros((0, 3)), np.zeros((3, 2))), {"subscripts": "ij,jk->ik"},
     lambda a, b: np.einsum("ij,jk->ik", a, b)),
    ("getitem", (np.zeros((4, 3)),), {"spec": (slice(2, 2),)}, lambda v: v[2:2]),
    ("var", (np.zeros((0,)),), {"axis": (0,), "keepdims": False}, lambda v: np.var(v, axis=0)),
]


@pytest.mark.parametrize("case", range(len(ZERO_SIZE_CASES)), ids=[c[0] for c in ZERO_SIZE_CASES])
def test_zero_size_arrays(case: int) -> None:
    """Empty arrays are valid NumPy operands: same shapes and dtypes (or the same rejection) as NumPy."""
    name, args, attrs, reference = ZERO_SIZE_CASES[case]
    check_op(name, args, attrs, reference)


def test_value_dependent_numpy_errors_surface_at_run_time() -> None:
    """Errors only values can reveal (integers to negative powers, out-of-range runtime index scalars) pass type
    inference, and the eager run raises NumPy's own exception."""
    base = np.arange(1, 5, dtype=np.int32)
    assert check_op("power", (base, np.array([1, -1, 2, 0], np.int32)), {}, np.power) == "runtime-error"
    assert check_op("power", (base, -2), {}, np.power) == "runtime-error"
    x = np.arange(6.0).reshape(2, 3)
    assert check_op("getitem", (x, 5), {"spec": (Operand(0),)}, lambda v, i: v[i]) == "runtime-error"
    assert check_op("getitem", (x, np.array([0, 7])), {"spec": (slice(None), Operand(0))},
                    lambda v, i: v[:, i]) == "runtime-error"
