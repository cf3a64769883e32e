"""Constant folding: a node computed only from constants (and static shapes) becomes a constant.

The value is computed by the op's own NumPy reference implementation, under the same ``errstate`` as the eager
interpreter, so a folded value is bit-for-bit what eager execution would have produced -- NEP 50 weak scalars
included (a weak result is stored as the Python scalar, as the interpreter would hand it on).

What is *not* folded, and why:

* results larger than :data:`FOLD_LIMIT` elements. ``zeros((4096, 4096))`` is cheap to create where it is used
  (a fill runs at memory speed, or fuses into its consumer), but as a constant it would be held for the life of
  the compiled function, printed into dumps, hashed into cache keys and read back from memory on every call;
* ``empty`` (its contents are unspecified: there is nothing to fold) and ``copy`` (an explicit materialisation,
  e.g. of a graph output that must not alias a shared constant);
* anything whose reference implementation raises (``2 ** -1`` on integers): the error belongs to run time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops import OPS, OpKind
from jitgraph.ir.types import TensorType, python_type
from jitgraph.passes.manager import register_pass
from jitgraph.passes.rewrite import Emitter, Match, Pat, Rule, rewrite

FOLD_LIMIT = 1024
NEVER_FOLD = frozenset({"empty", "copy"})


def foldable(node: Node) -> bool:
    op = OPS[node.op]
    return (op.kind not in (OpKind.SPECIAL, OpKind.REGION) and node.op not in NEVER_FOLD and not node.regions
            and op.impl is not None and isinstance(node.type, TensorType) and node.type.size <= FOLD_LIMIT
            and all(i.op == "const" for i in node.inputs))


def evaluate(node: Node) -> Any:
    """The value the eager interpreter would compute for ``node`` (whose operands are constants)."""
    operands = [i.attrs["value"] for i in node.inputs]
    with np.errstate(all="ignore"):
        value = OPS[node.op].impl(*operands, **node.attrs)
    t = node.tensor_type
    if t.weak:
        return python_type(t.dtype)(value)
    if isinstance(value, np.generic):
        return value
    return np.asarray(value)


def _fold(emit: Emitter, m: Match) -> Node | None:
    node = m.root
    try:
        value = evaluate(node)
    except Exception:  # noqa: BLE001 - any NumPy error: leave it to run time
        return None  # NumPy raises at run time; folding must not move (or hide) that error
    t = node.tensor_type
    if t.weak:
        return emit.const(value, t.with_(layout="C"))
    if (np.shape(value), np.asarray(value).dtype) != (t.shape, t.dtype):
        return None  # never store a constant whose type disagrees with the node it replaces
    return emit.const(value)


FOLD = Rule("fold_constant", Pat(None, where=foldable), _fold,
            "evaluate the op's reference implementation on constant operands")


@register_pass("fold_constants")
def fold_constants(graph: Graph, options: Mapping[str, Any]) -> Graph:
    return rewrite(graph, [FOLD], options)
