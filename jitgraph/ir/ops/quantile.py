"""Order statistics (``np.median``, ``np.quantile``, ``np.percentile`` and their ``nan`` forms) as one graph op that
every backend runs through NumPy, like the sorts: NumPy's own routine computes them inside the compiled graph (its
partition, interpolation ``method`` and NaN rule), so values and dtypes are NumPy's. The result's shape is the
shape of ``q`` followed by the reduced shape of the data; a ``q`` out of range computed in the graph raises at run
time (``raises=True``), and the driver reruns the call eagerly to raise NumPy's ValueError.

Operands: the data, then ``q`` (not for the medians). Attributes: ``fn`` (the NumPy function's name), ``axis``
(normalised tuple, or None for all axes), ``keepdims``, ``method``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from jitgraph.ir.ops import Op, OpKind, define
from jitgraph.ir.ops.rules import normalize_axes, type_error
from jitgraph.ir.types import TensorType

FUNCTIONS = {name: getattr(np, name) for name in ("median", "quantile", "percentile", "nanmedian", "nanquantile",
                                                  "nanpercentile")}


def _call(fn: str, a: Any, q: Any, axis: tuple[int, ...] | None, keepdims: bool, method: str) -> Any:
    kwargs: dict[str, Any] = {"axis": axis, "keepdims": keepdims}
    if "median" not in fn:
        kwargs["method"] = method
        return FUNCTIONS[fn](a, q, **kwargs)
    return FUNCTIONS[fn](a, **kwargs)


def _infer(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TensorType:
    fn, axis, keepdims = attrs["fn"], attrs.get("axis"), attrs.get("keepdims", False)
    a, q = types[0], (types[1] if len(types) > 1 else None)
    axes = normalize_axes(axis, a.ndim, fn)
    if keepdims:
        reduced = tuple(1 if k in axes else d for k, d in enumerate(a.shape))
    else:
        reduced = tuple(d for k, d in enumerate(a.shape) if k not in axes)
    shape = (q.shape if q is not None else ()) + reduced
    proto = np.ones(tuple(1 if k in axes else min(d, 1) for k, d in enumerate(a.shape)), a.dtype)
    q_proto = None if q is None else np.full(q.shape if q.size <= 64 else (1,) * q.ndim,
                                             50 if "percentile" in fn else 0.5, q.dtype)
    try:  # NumPy decides the dtype and rejects bad methods and dtypes on a small prototype
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = _call(fn, proto, q_proto, axis, keepdims, attrs.get("method", "linear"))
    except Exception as exc:
        raise type_error(f"{fn}: {exc}", exc) from exc
    return TensorType(shape, np.asarray(result).dtype)


def _quantile(*values: Any, fn: str, axis: tuple[int, ...] | None = None, keepdims: bool = False,
              method: str = "linear") -> Any:
    return _call(fn, values[0], values[1] if len(values) > 1 else None, axis, keepdims, method)


define(Op("quantile", OpKind.INDEXING, _infer, _quantile, raises=True, by_numpy=True,
          doc="np.median/quantile/percentile and their nan forms (attrs: fn, axis, keepdims, method) through NumPy"))
