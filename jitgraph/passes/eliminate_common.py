"""Common-subexpression elimination: one node per (op, operands, attrs, regions).

It is hash-consing in the rewrite engine's walk; the work here is the key. Attr values need care, because
Python equality is too loose for them: ``0.0 == -0.0`` (yet ``full(value=-0.0)`` differs), ``1 == 1.0 == True``,
``np.dtype('f4') == 'f4'``, NaN is unequal to itself, arrays compare elementwise and slices are unhashable before
Python 3.12. So every value is turned into a tagged, exact, hashable key; a value with no exact key makes the node
ineligible rather than risking a wrong merge.

Never merged: ``empty`` (two buffers whose contents are unspecified are not the same value) and ``copy`` (an
explicit materialisation; merging two copies would hand one array to two places that each expect their own).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops.indexing import Operand
from jitgraph.passes.manager import register_pass
from jitgraph.passes.rewrite import rewrite

NEVER_MERGE = frozenset({"input", "empty", "copy"})


class _NoKey(Exception):
    pass


def value_key(value: Any) -> Any:
    """An exact, hashable key for an attr or constant value (raises _NoKey when there is none)."""
    if value is None or value is Ellipsis:
        return (repr(value),)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", value.hex() if not math.isnan(value) else "nan")
    if isinstance(value, complex):
        return ("complex", value_key(value.real), value_key(value.imag))
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return ("dtype", np.dtype(value).str)
    if isinstance(value, np.ndarray | np.generic):
        array = np.asarray(value)
        kind = "ndarray" if isinstance(value, np.ndarray) else "scalar"
        return (kind, array.dtype.str, array.shape, np.ascontiguousarray(array).tobytes())
    if isinstance(value, slice):
        return ("slice", value_key(value.start), value_key(value.stop), value_key(value.step))
    if isinstance(value, Operand):
        return ("operand", value.k)
    if isinstance(value, tuple | list):
        return (type(value).__name__,) + tuple(value_key(v) for v in value)
    raise _NoKey(type(value).__name__)


def node_key(node: Node) -> Any:
    """The CSE key of ``node``, or None when it must not be merged."""
    if node.op in NEVER_MERGE:
        return None
    try:
        attrs = tuple(sorted((k, value_key(v)) for k, v in node.attrs.items()))
    except _NoKey:
        return None
    return (node.op, tuple(i.uid for i in node.inputs), attrs, tuple(id(r) for r in node.regions), node.type)


@register_pass("eliminate_common")
def eliminate_common(graph: Graph, options: Mapping[str, Any]) -> Graph:
    return rewrite(graph, [], options, cse_key=node_key)
