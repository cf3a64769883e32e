"""Elementwise ops: every op here maps each output element to the same-index elements of its broadcast inputs.

Op names are NumPy's ufunc names (``true_divide`` is ``divide``), so the table below is the whole definition:
the shape rule is broadcasting, the dtype rule is NumPy's own on prototypes, and the reference is the ufunc.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from jitgraph.ir.ops import Op, OpKind, define
from jitgraph.ir.ops.rules import ask_numpy, broadcast
from jitgraph.ir.types import TensorType

UNARY_UFUNCS = (
    "negative", "positive", "absolute", "sign", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt",
    "cbrt", "sin", "cos", "tan", "tanh", "sinh", "cosh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh",
    "arctanh", "square", "reciprocal", "floor", "ceil", "trunc", "rint", "isnan", "isfinite", "isinf",
    "logical_not", "invert", "signbit", "deg2rad", "rad2deg",
)
BINARY_UFUNCS = (
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "fmod", "power", "float_power",
    "maximum", "minimum", "fmax", "fmin", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "logical_and", "logical_or",
    "logical_xor", "arctan2", "hypot", "copysign", "heaviside", "logaddexp",
)


def _infer_with(fn: Callable[..., Any], name: str, strong: bool) -> Callable[..., TensorType]:
    def infer(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
        # dtypes first: NumPy resolves the loop before broadcasting, so that is the error it raises for both
        dtype = ask_numpy(lambda *xs: fn(*xs, **attrs), types, name)
        shape = broadcast([t.shape for t in types if not t.weak], name)
        # Python scalars in, Python scalar out (``lr * 0.5``: Python's operator semantics); ``strong`` ops make a
        # NumPy value even from Python scalars (``np.float32(lr)`` is float32 and stays float32).
        weak = not strong and all(t.weak for t in types) and dtype.kind in "iufc"
        return TensorType(shape, dtype, weak=weak)

    return infer


def _elementwise(name: str, fn: Callable[..., Any], doc: str, strong: bool = False) -> None:
    define(Op(name, OpKind.ELEMENTWISE, _infer_with(fn, name, strong), fn, doc=doc))


for _name in UNARY_UFUNCS + BINARY_UFUNCS:
    _elementwise(_name, getattr(np, _name), f"np.{_name}")


def _where(cond: Any, x: Any, y: Any) -> Any:
    return np.where(cond, x, y)


def _clip(x: Any, lo: Any, hi: Any) -> Any:
    return np.clip(x, lo, hi)


def _astype(x: Any, dtype: np.dtype) -> Any:
    return np.asarray(x).astype(dtype)


def _copy(x: Any) -> Any:
    return np.array(x, copy=True)


_elementwise("where", _where, "np.where(cond, x, y) with all three operands given")
_elementwise("clip", _clip, "np.clip(x, lo, hi); the tracer lowers a None bound to maximum/minimum")
_elementwise("astype", _astype, "x.astype(dtype); attrs: dtype. Casting is unsafe, as in NumPy's default",
             strong=True)
_elementwise("copy", _copy, "np.copy / x.copy(): a fresh C-ordered array", strong=True)
