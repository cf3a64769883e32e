"""Ops that are part of the graph's plumbing rather than computations: inputs, constants, tuple projection."""

from __future__ import annotations

from jitgraph.ir.ops import Op, OpKind, define


def _no_infer(types, attrs, regions):  # built by GraphBuilder directly, never through the op table
    raise TypeError("input/const nodes are created by GraphBuilder.input/const, not GraphBuilder.op")


def _infer_tuple_get(types, attrs, regions):
    return types[0].elements[attrs["index"]]


define(Op("input", OpKind.SPECIAL, _no_infer, None, doc="A graph argument; attrs: index."))
define(Op("const", OpKind.SPECIAL, _no_infer, None, doc="A constant; attrs: value."))
define(Op("tuple_get", OpKind.SPECIAL, _infer_tuple_get, lambda t, index: t[index],
          doc="Element ``index`` of a multi-result node."))
