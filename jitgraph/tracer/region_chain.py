"""The value of a ``while`` condition that is an ``and``/``or`` chain, with Python's short circuit.

A test region computes every operand it holds. That is Python's value when the operands after the first only
compute; one that reads an array (``while j >= 0 and a[j] > key``) must not run when the operands before it
already decided the chain (``a[j]`` with ``j == -1`` reads the last element, and past the end it raises). Such an
operand is recorded as usual, then its nodes are moved into the branch of a ``cond`` on the operands before it:
``A and B`` becomes ``cond(A, B, False)`` and ``A or B`` becomes ``cond(A, True, B)``, nested for longer chains.
Operands that only compute stay inline (no branch: the cheaper code, and Numba folds the logic).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from jitgraph.ir.graph import GraphBuilder, Node
from jitgraph.ir.ops.control import build_cond
from jitgraph.ir.optable import OpKind, get_op
from jitgraph.tracer.values import Buffer, TArray


def truth(tx: Any, flag: Any) -> Node:
    """A loop test's value as a bool node (``while s:`` on a float tests ``s != 0``)."""
    if not isinstance(flag, TArray):
        tx.graph_break("a while condition that is decided at trace time inside the loop")
    t = tx.type_of(flag)
    if t.shape != ():
        err = ValueError("The truth value of an array with more than one element is ambiguous")
        tx.graph_break(str(err), err)
    return tx.read(flag) if t.dtype.kind == "b" else tx.op("not_equal", tx.read(flag), tx.builder.const(0))


def chain_truth(tx: Any, value: Any) -> Node:
    """An operand's truth value; a trace-time operand (``while True and ...``) folds to a constant."""
    if isinstance(value, TArray):
        return truth(tx, value)
    if isinstance(value, bool | int | float | np.number | np.bool_):
        return tx.builder.const(np.bool_(bool(value)))
    tx.graph_break(f"a while condition operand that is a {type(value).__name__}")


@dataclass
class Operand:
    """One recorded operand of the chain: its truth value and the nodes that computed it (``lazy``: they may read
    arrays or raise, so they run only when the chain needs them)."""

    value: Node
    nodes: list[Node]
    lazy: bool


def record(tx: Any, evaluate: Any) -> Operand:
    """Run ``evaluate()`` (which traces one operand and returns its value) and keep what it recorded."""
    mark = len(tx.builder.nodes)
    value = chain_truth(tx, evaluate())
    nodes = [n for n in tx.builder.nodes[mark:] if n.op not in ("input", "const")]
    lazy = any(n.regions or get_op(n.op).kind is not OpKind.ELEMENTWISE for n in nodes)
    return Operand(value, nodes, lazy)


def combine(tx: Any, first: Node, rest: list[Operand], links: tuple[str, ...], bound: Iterable[Any] = ()) -> TArray:
    """``first link rest[0] link rest[1] ...`` (each link ``"and"``/``"or"``, grouped from the right as Python
    evaluates a chain of one kind), lazy operands moved into ``cond`` branches. ``bound`` are the frame's locals:
    a lazy operand whose value a local keeps (a walrus) or another operand reads cannot move (graph break)."""
    moved = {n for op in rest if op.lazy for n in op.nodes}
    if moved:
        kept = [n for n in tx.builder.nodes if n not in moved]
        held = {v.buffer.node for v in bound if isinstance(v, TArray)}
        if held & moved or any(i in moved for n in kept for i in n.inputs):
            tx.graph_break("an and/or operand of a while condition that reads arrays is used outside the "
                           "condition (a walrus, or a value shared with another operand)")
        tx.builder.nodes[:] = kept
    result = _chain(tx.builder, first, rest, links, {})
    return TArray(Buffer(result), (), "scalar")


def _chain(b: GraphBuilder, first: Node, rest: list[Operand], links: tuple[str, ...],
           mapping: dict[Node, Node]) -> Node:
    """The chain's value in builder ``b``: ``first`` (already in ``b``) combined with ``rest``."""
    if not rest:
        return first
    op, link = rest[0], links[0]
    if not op.lazy:
        tail = _chain(b, op.value, rest[1:], links[1:], mapping)
        return b.op("logical_and" if link == "and" else "logical_or", first, tail)

    def run(rb: GraphBuilder) -> list[Node]:
        inner = dict(mapping)
        for n in op.nodes:  # replayed in the branch; values recorded outside it are captured by the builder
            inner[n] = rb.op(n.op, *(inner.get(i, i) for i in n.inputs), regions=n.regions, **n.attrs)
        return [_chain(rb, inner.get(op.value, op.value), rest[1:], links[1:], inner)]

    def decided(rb: GraphBuilder) -> list[Node]:
        return [rb.const(np.bool_(link == "or"))]

    then, other = (run, decided) if link == "and" else (decided, run)
    (result,) = build_cond(b, first, then, other)
    return result
