"""Region ops: nodes that own a body graph.

``fused`` is what the fusion pass produces: one node per kernel group. Its body is an ordinary Graph whose inputs
are the group's external operands and whose outputs are the values that escape the group, so every tool that
understands graphs (printer, verifier, eager interpreter) understands a fused graph, and a backend that has no
kernel for a group can still run the body node by node.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from jitgraph.ir.graph import Graph, TupleType
from jitgraph.ir.ops import Op, OpKind, define
from jitgraph.ir.ops.rules import type_error
from jitgraph.ir.types import TensorType


def _infer_fused(types: tuple[Any, ...], attrs: dict, regions: tuple[Graph, ...]) -> TensorType | TupleType:
    if len(regions) != 1:
        raise type_error(f"fused: expected one body region, got {len(regions)}")
    (body,) = regions
    if len(body.inputs) != len(types):
        raise type_error(f"fused: body takes {len(body.inputs)} operands, node has {len(types)}")
    for k, (outer, inner) in enumerate(zip(types, (i.type for i in body.inputs))):
        same = (isinstance(outer, TensorType) and isinstance(inner, TensorType)
                and (outer.shape, outer.dtype, outer.weak) == (inner.shape, inner.dtype, inner.weak))
        if not same:
            raise type_error(f"fused: operand {k} has type {outer}, the body expects {inner}")
    outs = tuple(o.type for o in body.outputs)
    return outs[0] if len(outs) == 1 else TupleType(outs)


def _fused(*operands: Any, regions: Sequence[Graph], run: Callable[[Graph, Sequence[Any]], list[Any]],
           **attrs: Any) -> Any:
    outputs = run(regions[0], list(operands))
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


define(Op("fused", OpKind.REGION, _infer_fused, _fused,
          doc="A kernel group made by the fusion pass; attrs: kind, name, cuts (why its boundaries were cut)"))
