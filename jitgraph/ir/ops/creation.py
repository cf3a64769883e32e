"""Creation ops with constant arguments: zeros, ones, full, empty, arange, eye (the ``*_like`` forms are lowered
by the tracer onto these using the argument's shape and dtype)."""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.ir.ops import Op, OpKind, define
from jitgraph.ir.types import TensorType


def _infer_fill(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    return TensorType(tuple(attrs["shape"]), np.dtype(attrs["dtype"]))


def _infer_arange(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    return TensorType((len(_arange(**attrs)),), np.dtype(attrs["dtype"]))


def _infer_eye(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    return TensorType((attrs["n"], attrs["m"]), np.dtype(attrs["dtype"]))


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


def _eye(n: int, m: int, k: int, dtype: Any) -> Any:
    return np.eye(n, m, k, dtype=dtype)


define(Op("zeros", OpKind.CREATION, _infer_fill, _zeros, doc="attrs: shape, dtype"))
define(Op("ones", OpKind.CREATION, _infer_fill, _ones, doc="attrs: shape, dtype"))
define(Op("full", OpKind.CREATION, _infer_fill, _full, doc="attrs: shape, dtype, value"))
define(Op("empty", OpKind.CREATION, _infer_fill, _empty, doc="attrs: shape, dtype (contents unspecified)"))
define(Op("arange", OpKind.CREATION, _infer_arange, _arange, doc="attrs: start, stop, step, dtype (resolved)"))
define(Op("eye", OpKind.CREATION, _infer_eye, _eye, doc="attrs: n, m, k, dtype"))
