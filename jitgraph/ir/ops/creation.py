"""Creation ops with constant arguments: zeros, ones, full, empty, arange, eye (the ``*_like`` forms are lowered
by the tracer onto these using the argument's shape and dtype)."""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.ir.ops import Op, OpKind, define
from jitgraph.ir.ops.rules import type_error
from jitgraph.ir.symbols import Sym, SymbolicSizeError
from jitgraph.ir.types import TensorType


def _check_shape(name: str, shape: Any) -> tuple[int, ...]:
    shape = (shape,) if isinstance(shape, int | np.integer | Sym) else tuple(shape)
    if any(type(d) is not Sym and int(d) < 0 for d in shape):  # a symbolic size is >= 2 (ir/symbols.py)
        err = ValueError("negative dimensions are not allowed")
        raise type_error(f"{name}: {err}", err)
    return tuple(d if type(d) is Sym else int(d) for d in shape)


def _infer_fill(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    return TensorType(_check_shape("fill", attrs["shape"]), np.dtype(attrs["dtype"]))


def _infer_full(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    # dtype=None means "the fill value's dtype" (np.full((2,), 3) is int64), so ask NumPy on a 0-d array.
    shape = _check_shape("full", attrs["shape"])
    try:
        dtype = np.full((), attrs["value"], attrs["dtype"]).dtype
    except Exception as exc:  # e.g. a Python int out of range for the dtype
        raise type_error(f"full: {exc}", exc) from exc
    return TensorType(shape, dtype)


def _infer_arange(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    bounds = (attrs["start"], attrs["stop"], attrs["step"])
    if type(bounds[1]) is Sym:  # ``np.arange(s0)``: the tracer makes it only as (0, s0, 1) with an int dtype
        if bounds[0] != 0 or bounds[2] != 1:
            raise SymbolicSizeError(f"the length of arange{bounds} depends on the size")
        return TensorType((bounds[1],), np.dtype(attrs["dtype"]))
    try:
        if all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in bounds) and bounds[2] != 0:
            length = len(range(*(int(v) for v in bounds)))  # without allocating the array
        else:
            length = len(_arange(**attrs))
    except Exception as exc:  # step 0, non-finite bounds: NumPy's own error
        raise type_error(f"arange: {exc}", exc) from exc
    # dtype=None means NumPy's choice from the bounds (ints give int64); an empty range asks for it cheaply.
    dtype = attrs["dtype"] if attrs["dtype"] is not None else _arange(bounds[0], bounds[0], bounds[2], None).dtype
    return TensorType((length,), np.dtype(dtype))


def _infer_eye(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    n = attrs["n"]
    m = n if attrs.get("m") is None else attrs["m"]
    return TensorType(_check_shape("eye", (n, m)), np.dtype(attrs.get("dtype", float)))


def _zeros(shape: tuple[int, ...], dtype: Any) -> Any:
    return np.zeros(shape, dtype)


def _ones(shape: tuple[int, ...], dtype: Any) -> Any:
    return np.ones(shape, dtype)


def _full(shape: tuple[int, ...], dtype: Any, value: Any) -> Any:
    return np.full(shape, value, dtype)


def _empty(shape: tuple[int, ...], dtype: Any) -> Any:
    return np.empty(shape, dtype)


def _arange(start: Any, stop: Any, step: Any, dtype: Any) -> Any:
    return np.arange(start, stop, step, dtype=dtype)


def _eye(n: int, m: int | None = None, k: int = 0, dtype: Any = float) -> Any:
    return np.eye(n, m, k, dtype=dtype)


define(Op("zeros", OpKind.CREATION, _infer_fill, _zeros, doc="attrs: shape, dtype"))
define(Op("ones", OpKind.CREATION, _infer_fill, _ones, doc="attrs: shape, dtype"))
define(Op("full", OpKind.CREATION, _infer_full, _full, doc="attrs: shape, dtype, value"))
define(Op("empty", OpKind.CREATION, _infer_fill, _empty, doc="attrs: shape, dtype (contents unspecified)"))
define(Op("arange", OpKind.CREATION, _infer_arange, _arange, doc="attrs: start, stop, step, dtype (resolved)"))
define(Op("eye", OpKind.CREATION, _infer_eye, _eye, doc="attrs: n, m, k, dtype"))
