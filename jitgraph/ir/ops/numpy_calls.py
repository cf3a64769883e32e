"""NumPy routines whose result shape follows from the operands' shapes alone, run by NumPy inside the compiled graph
(like the sorts): ``np.convolve``, ``np.correlate``, ``np.interp``, ``np.digitize``, ``np.cross`` (3-vectors along
the last axis), ``np.partition`` and ``np.argpartition``. NumPy's own routine is the implementation, so values,
dtypes and errors are NumPy's; the shape rules below are NumPy's, and the dtype is asked of NumPy on a small
prototype. Errors only the data reveals (``digitize``'s bins that are not monotonic) raise at run time
(``raises=True``), and the driver reruns the call eagerly to raise NumPy's own.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from jitgraph.ir.ops import Op, OpKind, define
from jitgraph.ir.ops.rules import broadcast, normalize_axes, type_error
from jitgraph.ir.types import TensorType


def _dtype(fn: Callable[..., Any], protos: list[Any], what: str, **kwargs: Any) -> np.dtype:
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(fn(*protos, **kwargs)).dtype
    except Exception as exc:  # NumPy rejects these operands: the call runs eagerly to show its error
        raise type_error(f"{what}: {exc}", exc) from exc


def _ones(t: TensorType) -> np.ndarray:
    return np.ones(tuple(min(d, 1) for d in t.shape), t.dtype)


def _vectors(a: TensorType, v: TensorType, what: str) -> tuple[int, int]:
    if a.ndim != 1 or v.ndim != 1:
        err = ValueError("object too deep for desired array")
        raise type_error(f"{what}: {err}", err)
    if a.size == 0 or v.size == 0:
        err = ValueError(f"{'a' if a.size == 0 else 'v'} cannot be empty")
        raise type_error(f"{what}: {err}", err)
    return a.shape[0], v.shape[0]


def _sliding(name: str) -> Callable[..., TensorType]:
    fn = getattr(np, name)

    def infer(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
        a, v = types
        n, m = _vectors(a, v, name)
        mode = attrs.get("mode", "full" if name == "convolve" else "valid")
        sizes = {"full": n + m - 1, "same": max(n, m), "valid": max(n, m) - min(n, m) + 1}
        if mode not in sizes:
            err = ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
            raise type_error(f"{name}: {err}", err)
        dtype = _dtype(fn, [np.ones(1, a.dtype), np.ones(1, v.dtype)], name)
        return TensorType((sizes[mode],), dtype)

    return infer


def _infer_interp(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    x, xp, fp = types
    if xp.ndim != 1 or fp.ndim != 1 or xp.shape != fp.shape or xp.size == 0:
        err = ValueError("fp and xp are not of the same length." if xp.shape != fp.shape else
                         "array of sample points is empty" if xp.size == 0 else "object too deep for desired array")
        raise type_error(f"interp: {err}", err)
    dtype = _dtype(np.interp, [_ones(x), np.ones(1, xp.dtype), np.ones(1, fp.dtype)], "interp", **attrs)
    return TensorType(x.shape, dtype)


def _infer_digitize(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    x, bins = types
    if bins.ndim != 1:
        err = ValueError("bins must be one-dimensional")
        raise type_error(f"digitize: {err}", err)
    dtype = _dtype(np.digitize, [_ones(x), np.arange(max(bins.size, 1), dtype=bins.dtype)], "digitize", **attrs)
    return TensorType(x.shape, dtype)


def _infer_cross(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    a, b = types
    if a.ndim == 0 or b.ndim == 0 or a.shape[-1] != 3 or b.shape[-1] != 3:
        err = ValueError("incompatible dimensions for cross product (dimension must be 3 here)")
        raise type_error(f"cross: {err}", err)
    dtype = _dtype(np.cross, [np.ones(3, a.dtype), np.ones(3, b.dtype)], "cross")
    return TensorType(broadcast([a.shape[:-1], b.shape[:-1]], "cross") + (3,), dtype)


def _partitioner(name: str) -> Callable[..., TensorType]:
    fn = getattr(np, name)

    def infer(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
        (a,) = types
        axis, kth = attrs.get("axis", -1), attrs["kth"]
        if axis is None:
            shape, length = (a.size,), a.size
        else:
            (ax,) = normalize_axes(axis, a.ndim, name)
            shape, length = a.shape, a.shape[ax]
        if any(not -length <= k < length for k in kth):
            err = ValueError(f"kth(={max(kth, key=abs)}) out of bounds ({length})")
            raise type_error(f"{name}: {err}", err)
        dtype = _dtype(fn, [np.ones(1, a.dtype)], name, kth=0)
        return TensorType(shape, dtype)

    return infer


def _sliding_impl(name: str) -> Callable[..., Any]:
    fn = getattr(np, name)

    def impl(a: Any, v: Any, mode: str = "full" if name == "convolve" else "valid") -> Any:
        return fn(a, v, mode=mode)

    return impl


def _partition_impl(name: str) -> Callable[..., Any]:
    fn = getattr(np, name)

    def impl(a: Any, kth: tuple[int, ...], axis: int | None = -1) -> Any:
        return np.ascontiguousarray(fn(a, list(kth), axis=axis))  # NumPy keeps an F operand's order; IR types: C

    return impl


for _name in ("convolve", "correlate"):
    define(Op(_name, OpKind.INDEXING, _sliding(_name), _sliding_impl(_name), by_numpy=True,
              doc=f"np.{_name}(a, v, mode) of two 1-D arrays, through NumPy"))
define(Op("interp", OpKind.INDEXING, _infer_interp, np.interp, by_numpy=True,
          doc="np.interp(x, xp, fp, left, right, period) through NumPy"))
define(Op("digitize", OpKind.INDEXING, _infer_digitize, np.digitize, raises=True, by_numpy=True,
          doc="np.digitize(x, bins, right) through NumPy; ValueError when the bins are not monotonic"))
define(Op("cross", OpKind.INDEXING, _infer_cross, np.cross, by_numpy=True, doc="np.cross of 3-vectors along the last axis"))
for _name in ("partition", "argpartition"):
    define(Op(_name, OpKind.INDEXING, _partitioner(_name), _partition_impl(_name), by_numpy=True,
              doc=f"np.{_name}(a, kth, axis) through NumPy (attrs: kth a tuple)"))
