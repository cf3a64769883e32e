"""Layout: keep transposes as views where their consumer can read them directly, so nothing is materialised.

Two rules, both changing only *where* values live, never the values:

* ``matmul(copy(v), y)`` -> ``matmul(v, y)`` (likewise ``dot`` and ``einsum``, any operand, and a same-dtype
  ``astype``, which is also a copy). NumPy hands a transposed view to BLAS with a ``trans`` flag, so a copy made
  only to feed a product -- ``np.ascontiguousarray(A.T) @ B`` -- is pure memory traffic. The copy node itself
  disappears once nothing else reads it. Products are exact in real arithmetic either way; BLAS may pick a
  different kernel for a transposed operand, so float results agree to rounding, not always to the bit.
* ``ew(transpose(a, p), transpose(b, p), scalar...)`` -> ``transpose(ew(a, b, scalar...), p)`` for elementwise
  ops (except ``copy`` and same-dtype ``astype``, explicit requests for a fresh array). Elementwise ops commute
  with a permutation of axes, so the values are exact; and because NumPy's ufuncs allocate their result in the
  memory order of their operands (``order='K'``), the hoisted form has the memory layout eager NumPy itself
  produces. The kernel then sweeps ``a`` and ``b`` contiguously, and the transpose meets the next transpose,
  where ``compose_transposes`` cancels them: ``(x.T * 2).T`` becomes ``x * 2``. (A float reduction over the
  result walks memory in that order, so it may round differently from one over a C-ordered intermediate, as the
  IR's interpreter allocates them: float tolerance, as for any backend's reduction order.)

Decisions are structural, never attrs: elementwise and linalg implementations receive their attrs as NumPy
keyword arguments, so an extra attr would break them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops import OPS
from jitgraph.ir.types import TensorType
from jitgraph.passes.manager import register_pass
from jitgraph.passes.rewrite import Emitter, Match, Pat, Rule, rewrite
from jitgraph.passes.simplify import IDENTITY_RULES

PRODUCTS = ("matmul", "dot", "einsum")


def _is_copy(node: Node) -> bool:
    if node.op == "copy":
        return True
    return node.op == "astype" and node.tensor_type.dtype == node.inputs[0].tensor_type.dtype


def _feeds_copy(node: Node) -> bool:
    return any(_is_copy(i) for i in node.inputs)


def _skip_copies(emit: Emitter, m: Match) -> Node:
    node = m.root
    operands = [i.inputs[0] if _is_copy(i) else i for i in node.inputs]
    return emit.op(node.op, *operands, **node.attrs)


def _is_scalar(node: Node) -> bool:
    return isinstance(node.type, TensorType) and (node.type.weak or node.type.ndim == 0)


def _hoistable(node: Node) -> bool:
    if not OPS[node.op].is_elementwise or not isinstance(node.type, TensorType) or _is_copy(node):
        return False
    perms = {tuple(i.attrs["axes"]) for i in node.inputs if i.op == "transpose"}
    if len(perms) != 1:
        return False
    ndim = node.type.ndim
    return all(_is_scalar(i) or (i.op == "transpose" and i.tensor_type.ndim == ndim) for i in node.inputs)


def _hoist_transpose(emit: Emitter, m: Match) -> Node:
    node = m.root
    axes = next(i.attrs["axes"] for i in node.inputs if i.op == "transpose")
    operands = [i.inputs[0] if i.op == "transpose" else i for i in node.inputs]
    return emit.op("transpose", emit.op(node.op, *operands, **node.attrs), axes=axes)


LAYOUT_RULES: tuple[Rule, ...] = (
    Rule("product_reads_view", Pat(PRODUCTS, where=_feeds_copy), _skip_copies,
         "matmul(copy(v), y) -> matmul(v, y): BLAS reads transposed views through its trans flags"),
    Rule("hoist_transpose", Pat(None, where=_hoistable), _hoist_transpose,
         "ew(transpose(a, p), ...) -> transpose(ew(a, ...), p): exact, and NumPy's order='K' layout"),
) + tuple(r for r in IDENTITY_RULES if r.name in ("compose_transposes", "identity_transpose"))


@register_pass("layout")
def layout(graph: Graph, options: Mapping[str, Any]) -> Graph:
    return rewrite(graph, LAYOUT_RULES, options)
