"""``np.histogram`` with a fixed number of bins (or fixed edges) as one graph op that every backend runs through
NumPy: the counts and the edges, a tuple. The sizes follow from ``bins`` alone; the edges' values may follow the data
(``range=None``: from its minimum to its maximum), which NumPy's own routine computes, so values, dtypes and errors
are NumPy's. Data whose range is not finite (a NaN) and edges that do not increase raise at run time
(``raises=True``): the driver reruns the call eagerly, which raises NumPy's own ValueError.

Operands: the data, then the edges when ``bins`` is None (an array of edges), then the weights when ``weighted``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from jitgraph.ir.graph import TupleType
from jitgraph.ir.ops import Op, OpKind, define
from jitgraph.ir.ops.rules import type_error
from jitgraph.ir.types import TensorType


def _operands(values: tuple[Any, ...], bins: int | None, weighted: bool) -> tuple[Any, Any, Any]:
    a, rest = values[0], list(values[1:])
    edges = rest.pop(0) if bins is None else bins
    weights = rest.pop(0) if weighted else None
    return a, edges, weights


def _infer(types: tuple[TensorType, ...], attrs: dict, regions: tuple) -> TupleType:
    bins, weighted = attrs["bins"], attrs.get("weighted", False)
    a, edges, weights = _operands(types, bins, weighted)
    if weights is not None and weights.shape != a.shape:
        err = ValueError("weights should have the same shape as a.")
        raise type_error(str(err), err)
    if bins is None:
        if edges.ndim != 1:
            err = ValueError("`bins` must be 1d, when an array")
            raise type_error(str(err), err)
        n = edges.shape[0] - 1
        proto_bins: Any = np.arange(edges.shape[0], dtype=edges.dtype)
    else:
        n, proto_bins = bins, bins
    try:  # NumPy decides the dtypes and rejects bad bins, ranges and dtypes on a one-element prototype
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            hist, out_edges = np.histogram(np.zeros(1, a.dtype), proto_bins, range=attrs.get("range"),
                                           density=attrs.get("density", False),
                                           weights=None if weights is None else np.ones(1, weights.dtype))
    except Exception as exc:
        raise type_error(f"histogram: {exc}", exc) from exc
    return TupleType((TensorType((n,), hist.dtype), TensorType((n + 1,), out_edges.dtype)))


def _histogram(*values: Any, bins: int | None, range: tuple[float, float] | None = None,
               density: bool = False, weighted: bool = False) -> tuple[Any, Any]:
    a, edges, weights = _operands(values, bins, weighted)
    hist, out_edges = np.histogram(a, edges, range=range, density=density, weights=weights)
    return hist, out_edges


define(Op("histogram", OpKind.INDEXING, _infer, _histogram, raises=True, by_numpy=True,
          doc="np.histogram(a, bins, range, density, weights) with a fixed bin count or fixed edges: (hist, edges); "
              "attrs: bins (None: the edges are the second operand), range, density, weighted (weights last)"))
