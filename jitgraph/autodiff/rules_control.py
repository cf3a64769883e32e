"""Derivative rules of control flow: ``tuple_get``, and the region ops (their rules live in :mod:`loops`)."""

from __future__ import annotations

from jitgraph.autodiff.emit import Emitter
from jitgraph.autodiff.loops import cond_rule, loop_rule
from jitgraph.autodiff.rules_elementwise import Rule
from jitgraph.ir.graph import Node, TupleType


def _tuple_get_rule(e: Emitter, node: Node, g: Node, wants: tuple[bool, ...]) -> list:
    source = node.inputs[0]
    assert isinstance(source.type, TupleType)
    parts: list[Node | None] = [None] * len(source.type.elements)
    parts[node.attrs["index"]] = g
    return [parts]


CONTROL_VJP: dict[str, Rule] = {
    "tuple_get": _tuple_get_rule,
    "loop": loop_rule,
    "cond": cond_rule,
    "while": loop_rule,
}
