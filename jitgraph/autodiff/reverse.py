"""Reverse mode as a graph transform: a traced graph in, ONE joint graph (forward, then backward) out.

Why one graph: the joint graph goes through the ordinary pass pipeline and backend, so the backward's elementwise
work fuses with its neighbours (and with the forward's tail), matmuls get their epilogues, and ``explain`` shows
what runs. The forward is copied node for node; every forward value a backward node reads stays alive until then
(saved). Which of those a cheap recomputation could replace is decided by a minimum cut
(:mod:`jitgraph.autodiff.partition`), reported by ``explain``.

The walk is the textbook one: cotangents start at the seeded outputs, and each node reached, in reverse order,
hands its cotangent to its inputs through its op's rule (:data:`jitgraph.autodiff.rules.VJP`); contributions to
one value add up. Only *active* nodes take part: float values that depend on a differentiated input. Integer and
boolean values carry no gradient, so comparisons, index arithmetic and masks need no rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from jitgraph.autodiff.emit import Emitter, is_float, shape_of
from jitgraph.autodiff.errors import DifferentiationError
from jitgraph.autodiff.loops import HISTORIES, augment_loop
from jitgraph.autodiff.partition import Cut, apply_cut, min_cut
from jitgraph.autodiff.rules import VJP
from jitgraph.ir.graph import Graph, GraphBuilder, Node, TupleType, eliminate_dead
from jitgraph.ir.ops import get_op, is_view_node
from jitgraph.ir.types import TensorType

HINT_RULE = "add a rule for it to jitgraph/autodiff/rules*.py, or compute this value without the op"


@dataclass(frozen=True)
class JointGraph:
    """The joint graph and how to read it: ``graph.outputs`` are the forward's outputs, then one gradient per
    differentiated input (in ``wrt`` order). ``saved`` are the forward values the backward reads; ``applied``:
    whether the graph was rebuilt at ``cut`` (the backward reads only ``cut.saved`` and recomputes the rest)."""

    graph: Graph
    n_forward: int
    wrt: tuple[int, ...]
    saved: tuple[Node, ...] = field(default=())
    cut: Cut | None = None
    applied: bool = False

    def gradient_index(self, k: int) -> int:
        """Index into ``graph.outputs`` of the gradient of the k-th differentiated input."""
        return self.n_forward + k


def check_differentiable(graph: Graph, wrt: Sequence[int], names: Sequence[str]) -> None:
    """Refuse, with the argument's name, a gradient the function cannot have."""
    mutated = {i for i, _ in graph.mutations}
    for i in wrt:
        node = graph.inputs[i]
        name = names[i] if i < len(names) else f"input {i}"
        t = node.type
        if not isinstance(t, TensorType) or t.dtype.kind != "f":
            kind = "complex" if isinstance(t, TensorType) and t.dtype.kind == "c" else "integer or boolean"
            raise DifferentiationError(
                f"cannot differentiate with respect to {name}: it is {kind} ({t}); only real floating-point "
                "arguments have gradients", hint="pass it as a float array, or leave it out of argnums")
        if i in mutated:
            raise DifferentiationError(
                f"cannot differentiate with respect to {name}: the function writes it in place (an in-place "
                "update such as x *= 2 or x[i] = v), so its value before and after the call differ",
                hint="copy it first (x = x.copy()) or update a local array instead")


def differentiate(graph: Graph, wrt: Sequence[int], seeds: Sequence[int | None], *,
                  cotangent_types: Sequence[TensorType] | None = None, insert_at: int | None = None,
                  names: Sequence[str] = (), max_trips: int | None = None, apply: bool = True) -> JointGraph:
    """The joint graph of ``graph`` that also returns d(seeded outputs)/d(inputs ``wrt``).

    ``seeds`` are indices into ``graph.outputs``. Without ``cotangent_types`` each is seeded with 1 (a scalar
    loss: ``grad``); with them, the joint graph takes one cotangent input per seed (of that type; a ``None`` seed
    is an input that seeds nothing), inserted before input ``insert_at`` (after the argument leaves, before the
    inputs the tracer added for globals: ``vjp``). ``max_trips`` bounds the loops whose trip count the trace does
    not know (``while``, run-time bounds; see :mod:`jitgraph.autodiff.loops`). With ``apply`` the backward reads
    only the values the minimum cut saves and recomputes the rest (:func:`jitgraph.autodiff.partition.apply_cut`).
    """
    cotangent_inputs = cotangent_types is not None
    names = list(names or graph.input_names)
    check_differentiable(graph, wrt, names)
    builder = GraphBuilder()
    insert_at = len(graph.inputs) if insert_at is None else insert_at
    mapping, cotangents_in = copy_forward(builder, graph, names, insert_at, cotangent_types or (), "cotangent",
                                          history_for(graph, wrt), max_trips)
    forward = [mapping[n] for n in graph.nodes]
    n_forward_nodes = len(builder.nodes)
    wrt_nodes = [mapping[graph.inputs[i]] for i in wrt]
    outputs = [mapping[o] for o in graph.outputs]

    seed_values: list[tuple[Node, Node]] = []
    for k, index in enumerate(seeds):
        if index is None:
            continue
        out = outputs[index]
        seed = cotangents_in[k] if cotangent_inputs else builder.const(np.ones((), out.tensor_type.dtype))
        seed_values.append((out, seed))
    grads = backward(builder, forward, wrt_nodes, seed_values)

    final = list(outputs)
    for node, grad in zip(wrt_nodes, grads):
        final.append(fresh_output(builder, grad, final))
    mutations = [(new_index(i, insert_at, len(cotangents_in)), mapping[n]) for i, n in graph.mutations]
    joint = eliminate_dead(builder.build(final, mutations))
    backward_nodes = set(builder.nodes[n_forward_nodes:])
    forward_set = set(forward)
    saved = tuple(dict.fromkeys(i for n in joint.nodes if n in backward_nodes for i in n.inputs
                                if i in forward_set and i.op not in ("input", "const")))
    kinds = {n.op: get_op(n.op).kind.value for n in joint.nodes}
    cut = min_cut([n for n in joint.nodes if n in forward_set], saved, kinds)
    applied = apply_cut(joint, backward_nodes, cut, kinds) if apply else None
    if applied is None:
        return JointGraph(joint, len(outputs), tuple(wrt), saved, cut)
    graph_at_cut, renamed = applied
    for old, new in renamed.items():  # rebuilt backward loops keep their records (jvp differentiates them again)
        if old in HISTORIES:
            HISTORIES[new] = HISTORIES[old]
    return JointGraph(graph_at_cut, len(outputs), tuple(wrt), saved, cut, True)


def backward(builder: GraphBuilder, nodes: Sequence[Node], wrt: Sequence[Node],
             seeds: Sequence[tuple[Node, Node]]) -> list[Node]:
    """Append the backward of ``nodes`` (a topologically ordered forward) to ``builder``: the cotangent of each
    node of ``wrt`` given cotangents ``seeds`` of some nodes. Inputs nothing reaches get zeros. Region bodies are
    differentiated by calling this again on the body."""
    e = Emitter(builder)
    e.backward = backward  # the loop/cond rules differentiate their bodies with this (no import circle)
    active = _active(nodes, wrt)
    cts: dict[Node, Node | list[Node | None]] = {}
    for out, seed in seeds:
        if out in active:
            _accumulate(e, cts, out, seed)
    for node in reversed(nodes):
        g = cts.get(node)
        if g is None or node.op in ("input", "const"):
            continue
        rule = VJP.get(node.op)
        if rule is None:
            loc = node.loc
            raise DifferentiationError(f"no derivative rule for op {node.op!r} (needed to differentiate "
                                       f"{node.op} : {node.type})", filename=getattr(loc, "filename", None),
                                       lineno=getattr(loc, "lineno", None), hint=HINT_RULE)
        wants = tuple(i in active for i in node.inputs)
        previous = builder.loc
        builder.loc = node.loc  # backward nodes point at the user's line of the forward value they come from
        try:
            parts = rule(e, node, g, wants)
        except NotImplementedError as exc:
            loc = node.loc
            raise DifferentiationError(f"no derivative rule for {node.op} in this form: {exc}",
                                       filename=getattr(loc, "filename", None), lineno=getattr(loc, "lineno", None),
                                       hint=HINT_RULE) from None
        for inp, part, want in zip(node.inputs, parts, wants):
            if want and part is not None:
                _accumulate(e, cts, inp, part)
        builder.loc = previous
    result = []
    for node in wrt:
        g = cts.get(node)
        result.append(e.zeros_like(node) if g is None else g)
    return result


def _accumulate(e: Emitter, cts: dict[Node, Node | list[Node | None]], node: Node, part: Node | list) -> None:
    """Add ``part`` to ``node``'s cotangent, fitted to its shape and dtype (tuple values keep one per element)."""
    if isinstance(node.type, TupleType):
        old = cts.get(node) or [None] * len(node.type.elements)
        assert isinstance(old, list) and isinstance(part, list)
        cts[node] = [a if b is None else b if a is None else e.add(a, b) for a, b in zip(old, part)]
        return
    assert isinstance(part, Node)
    part = e.cast(e.fit(part, shape_of(node)), node)
    old = cts.get(node)
    cts[node] = part if old is None else e.add(old, part)


def _active(nodes: Sequence[Node], wrt: Sequence[Node]) -> set[Node]:
    """Float values (and multi-result region nodes) that depend on a differentiated input."""
    active = set(wrt)
    for node in nodes:
        if (node not in active and any(i in active for i in node.inputs)
                and (isinstance(node.type, TupleType) or is_float(node))):
            active.add(node)
    return active


def history_for(graph: Graph, wrt: Sequence[int]) -> set[Node]:
    """The loop and while nodes of ``graph`` the backward will go through: they record their iterations."""
    return {n for n in _active(graph.nodes, [graph.inputs[i] for i in wrt]) if n.op in ("loop", "while")}


def copy_forward(builder: GraphBuilder, graph: Graph, names: Sequence[str], insert_at: int,
                 extra_types: Sequence[TensorType], extra_name: str, record: set[Node] = frozenset(),
                 max_trips: int | None = None) -> tuple[dict[Node, Node], list[Node]]:
    """Copy ``graph``'s nodes into ``builder`` (old node -> new node), with new inputs of ``extra_types`` inserted
    before input ``insert_at`` (called ``extra_name[k]``); the loops in ``record`` also record their history
    (at most ``max_trips`` iterations where the trace does not know the trip count)."""
    mapping: dict[Node, Node] = {}
    extra: list[Node] = []
    for index, node in enumerate(graph.inputs):
        if index == insert_at:
            extra = [builder.input(t, f"{extra_name}[{k}]") for k, t in enumerate(extra_types)]
        mapping[node] = builder.input(node.type, names[index] if index < len(names) else "")
    if insert_at >= len(graph.inputs):
        extra = [builder.input(t, f"{extra_name}[{k}]") for k, t in enumerate(extra_types)]
    for node in graph.nodes:
        if node.op == "input":
            continue
        inputs = tuple(mapping[i] for i in node.inputs)
        if node in record:
            previous, builder.loc = builder.loc, node.loc
            mapping[node] = augment_loop(builder, node, inputs, max_trips)
            builder.loc = previous
        else:
            mapping[node] = builder.add(Node(node.op, inputs, node.type, node.attrs, node.regions, node.loc))
    return mapping, extra


def new_index(i: int, insert_at: int, inserted: int) -> int:
    return i + inserted if i >= insert_at else i


def fresh_output(builder: GraphBuilder, grad: Node, taken: list[Node]) -> Node:
    """A gradient output that is its own new array: not an input, a constant, a view or another output."""
    if grad.op in ("input", "const") or grad in taken or (isinstance(grad.type, TensorType) and is_view_node(grad)):
        return builder.op("copy", grad)
    return grad
