"""NumPy's index-trick objects at trace time: ``np.c_[a, b]``, ``np.r_[a, b]``, ``np.mgrid[...]``,
``np.ogrid[...]`` and ``np.s_``/``np.index_exp``.

With trace-time parts the real object is asked (its result is a constant of the graph); with traced arrays,
``np.c_`` and ``np.r_`` are the concatenations they perform (1-D parts become columns for ``c_``). Slices, string
directives and matrices mixed with traced arrays break with that reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.values import contains_tarray, is_plain

TRICKS = (type(np.c_), type(np.r_), type(np.mgrid), type(np.ogrid), type(np.s_))


def is_index_trick(container: Any) -> bool:
    return isinstance(container, TRICKS)


def index_trick(tx: TraceContext, container: Any, index: Any) -> Any:
    """``container[index]`` for one of NumPy's index-trick objects."""
    parts = index if isinstance(index, tuple) else (index,)
    if not contains_tarray(list(parts)):
        if not all(is_plain(p) or isinstance(p, slice | np.ndarray | str) for p in parts):
            tx.graph_break(f"indexing np.{_name(container)} with {type(index).__name__} parts")
        try:
            result = container[index]
        except Exception as exc:  # noqa: BLE001
            tx.graph_break(f"np.{_name(container)}: {exc}", exc)
        if isinstance(result, np.ndarray):
            return tx.fresh(tx.builder.const(result), "array")
        if isinstance(result, tuple | list) and all(isinstance(r, np.ndarray) for r in result):
            return type(result)(tx.fresh(tx.builder.const(r), "array") for r in result)
        return result
    if container is not np.c_ and container is not np.r_:
        tx.graph_break(f"np.{_name(container)} with bounds computed from array data")
    if any(isinstance(p, slice | str) for p in parts):
        tx.graph_break(f"np.{_name(container)} mixing slices or directives with traced arrays")
    nodes = [tx.node(p) for p in parts]
    if container is np.c_:
        nodes = [n if n.tensor_type.ndim >= 2 else
                 tx.op("reshape", n, shape=(-1, 1) if n.tensor_type.ndim else (1, 1)) for n in nodes]
        axis = max(n.tensor_type.ndim for n in nodes) - 1
    else:
        nodes = [n if n.tensor_type.ndim else tx.op("reshape", n, shape=(1,)) for n in nodes]
        axis = 0
    return tx.fresh(tx.op("concatenate", *nodes, axis=axis), "array")


def _name(container: Any) -> str:
    for name in ("c_", "r_", "mgrid", "ogrid", "s_", "index_exp"):
        if getattr(np, name, None) is container:
            return name
    return type(container).__name__
