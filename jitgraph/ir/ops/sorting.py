"""Sorting: ``sort`` and ``argsort`` along one axis (or the flattened array), with NumPy's own sort as the
reference implementation. No kernel emits them: every backend runs them through NumPy, like BLAS products."""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.ir.ops import Op, OpKind, define
from jitgraph.ir.ops.rules import normalize_axes, type_error
from jitgraph.ir.types import TensorType

KINDS = ("quicksort", "mergesort", "heapsort", "stable")


def _infer(name: str) -> Any:
    def infer(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
        (t,) = types
        axis, kind = attrs["axis"], attrs.get("kind", "quicksort")
        if kind not in KINDS:
            err = ValueError(f"{name}: sort kind must be one of {KINDS} (got {kind!r})")
            raise type_error(str(err), err)
        if t.dtype.kind == "c":
            raise type_error(f"{name} of complex values is not supported", TypeError(t.dtype))
        if axis is None:
            shape = (t.size,)
        else:
            if t.ndim == 0:
                err = np.exceptions.AxisError(axis, 0)
                raise type_error(str(err), err)
            normalize_axes(axis, t.ndim, name)
            shape = t.shape
        return TensorType(shape, np.dtype(np.intp) if name == "argsort" else t.dtype)

    return infer


def _sort(x: Any, axis: int | None, kind: str = "quicksort") -> Any:
    return np.sort(x, axis=axis, kind=kind)


def _argsort(x: Any, axis: int | None, kind: str = "quicksort") -> Any:
    return np.argsort(x, axis=axis, kind=kind)


define(Op("sort", OpKind.INDEXING, _infer("sort"), _sort, by_numpy=True, doc="np.sort(x, axis, kind): a sorted copy"))
define(Op("argsort", OpKind.INDEXING, _infer("argsort"), _argsort, by_numpy=True,
          doc="np.argsort(x, axis, kind): the indices that sort x (intp)"))


def _infer_searchsorted(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    a, v = types
    if a.ndim != 1:
        err = ValueError("object too deep for desired array")
        raise type_error(str(err), err)
    if attrs.get("side", "left") not in ("left", "right"):
        err = ValueError(f"side must be 'left' or 'right' (got {attrs.get('side')!r})")
        raise type_error(str(err), err)
    return TensorType(v.shape, np.dtype(np.intp))


def _searchsorted(a: Any, v: Any, side: str = "left") -> Any:
    return np.searchsorted(a, v, side=side)


define(Op("searchsorted", OpKind.INDEXING, _infer_searchsorted, _searchsorted, by_numpy=True,
          doc="np.searchsorted(a, v, side): insertion points of v in the sorted 1-D a (intp)"))
