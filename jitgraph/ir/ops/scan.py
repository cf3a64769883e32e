"""Scans: ``cumsum`` and ``cumprod`` along one axis (or the flattened array), with NumPy's own as the reference.
No kernel emits them: every backend runs them through NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.ir.ops import Op, OpKind, define
from jitgraph.ir.ops.rules import normalize_axes, type_error
from jitgraph.ir.types import TensorType


def _infer(name: str) -> Any:
    fn = getattr(np, name)

    def infer(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
        (t,) = types
        axis, dtype = attrs["axis"], attrs.get("dtype")
        if axis is not None:
            if t.ndim == 0:
                err = np.exceptions.AxisError(axis, 0)
                raise type_error(str(err), err)
            normalize_axes(axis, t.ndim, name)
        shape = (t.size,) if axis is None else t.shape
        out = fn(np.zeros((1,), t.dtype), dtype=dtype).dtype  # NumPy's accumulator dtype (int8 -> int64)
        return TensorType(shape, out)

    return infer


def _impl(name: str) -> Any:
    fn = getattr(np, name)

    def impl(x: Any, axis: int | None, dtype: Any = None) -> Any:
        return fn(x, axis=axis, dtype=dtype)

    return impl


define(Op("cumsum", OpKind.INDEXING, _infer("cumsum"), _impl("cumsum"), doc="np.cumsum(x, axis, dtype)"))
define(Op("cumprod", OpKind.INDEXING, _infer("cumprod"), _impl("cumprod"), doc="np.cumprod(x, axis, dtype)"))
