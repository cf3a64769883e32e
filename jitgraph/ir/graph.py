"""The SSA graph: immutable nodes in topological order, explicit inputs, outputs and mutations.

Design notes for newcomers:

* A :class:`Node` *is* its value (single result, SSA). Multi-result ops (loops carrying several values) produce a
  tuple-typed node that ``tuple_get`` projects from, so every edge stays a plain node reference.
* Nodes are frozen and compared by identity. Passes never edit a graph; they build a new one with
  :class:`GraphBuilder` (or :func:`rebuild`), which keeps "what did this pass change?" answerable by diffing prints.
* Mutation of caller buffers is data, not a side effect: ``Graph.mutations`` says "after the call, input *i* holds
  the value of node *n*". The eager interpreter copies; compiled backends write in place.
* Regions: a node may own body graphs (``loop``/``while``/``cond``). The body is an ordinary Graph whose inputs are
  the region's block arguments, so every tool that understands graphs understands bodies.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from jitgraph.ir.optable import get_op
from jitgraph.ir.printer import format_graph
from jitgraph.ir.symbols import Sym, SymExpr
from jitgraph.ir.types import TensorType, type_of, weak_type_of

if TYPE_CHECKING:
    from jitgraph.ir.memory import MemoryPlan

_ids = itertools.count()


@dataclass(frozen=True)
class SourceLoc:
    """Where in the user's code a node came from (shown by explain and in error messages)."""

    filename: str
    lineno: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}"


@dataclass(frozen=True)
class TupleType:
    """Type of a multi-result node; ``tuple_get`` projects one element."""

    elements: tuple[TensorType, ...]

    def __str__(self) -> str:
        return "(" + ", ".join(str(t) for t in self.elements) + ")"


@dataclass(frozen=True, eq=False)
class Node:
    """One SSA value: ``op(inputs, **attrs) : type``. Hash and equality are identity."""

    op: str
    inputs: tuple[Node, ...]
    type: TensorType | TupleType
    attrs: Mapping[str, Any] = field(default_factory=dict)
    regions: tuple[Graph, ...] = ()
    loc: SourceLoc | None = None
    uid: int = field(default_factory=lambda: next(_ids))

    def __repr__(self) -> str:
        return f"<Node {self.op} #{self.uid} : {self.type}>"

    @property
    def tensor_type(self) -> TensorType:
        if not isinstance(self.type, TensorType):
            raise TypeError(f"{self!r} has a tuple type")
        return self.type


@dataclass(frozen=True, eq=False)
class Graph:
    """An immutable function: ``nodes`` in topological order (inputs and consts included).

    A graph that went through the whole pass pipeline is *lowered*: its ``fused`` nodes are the kernels and
    ``memory`` holds its memory plan; backends compile lowered graphs (see :func:`is_lowered`)."""

    nodes: tuple[Node, ...]
    inputs: tuple[Node, ...]
    outputs: tuple[Node, ...]
    mutations: tuple[tuple[int, Node], ...] = ()
    input_names: tuple[str, ...] = ()
    # The memory plan of exactly these nodes, attached by the pipeline's last pass (``plan_memory``) for the backend
    # to consume; None on any graph built since, since a plan is only valid for the nodes it was made for.
    memory: MemoryPlan | None = None

    def users(self) -> dict[Node, list[Node]]:
        """Map every node to the nodes that read it (outputs and mutations are not nodes, so not listed)."""
        result: dict[Node, list[Node]] = {n: [] for n in self.nodes}
        for n in self.nodes:
            for i in n.inputs:
                result.setdefault(i, []).append(n)
        return result

    def live_roots(self) -> tuple[Node, ...]:
        """What must be computed: the outputs, the mutation values, and every node that may raise on the data
        (an index array out of range, a failed run-time check), since eager NumPy would raise there even if the
        value went unused -- dropping it would turn an error into a silent success."""
        return self.outputs + tuple(n for _, n in self.mutations) + tuple(n for n in self.nodes if may_raise(n))

    def __str__(self) -> str:
        return format_graph(self)




def is_lowered(graph: Graph) -> bool:
    """Whether ``graph`` is the pipeline's output (fused and memory-planned), what a compiling backend takes."""
    return graph.memory is not None


def may_raise(node: Node) -> bool:
    """Whether ``node`` can raise depending on its operands' values (not only their types)."""
    if node.op == "check" or get_op(node.op).raises:
        return True
    if node.regions:  # a kernel or a loop that holds such a node raises with it
        return any(may_raise(n) for region in node.regions for n in region.nodes)
    if node.op == "power" and getattr(node.type, "dtype", None) is not None and node.type.dtype.kind in "iu":
        exponent = node.inputs[1]  # integers to a negative integer power raise ValueError
        return not (exponent.op == "const" and np.all(np.asarray(exponent.attrs["value"]) >= 0))
    # A gather with index *arrays* reads data-chosen positions, which can be out of range. (Stores are not listed:
    # their effect is the mutation, which is live anyway, and a dead functional store is a tracing artefact, such as
    # the speculative store of a branch, that eager code never executes.)
    return node.op == "getitem" and any(getattr(i.type, "ndim", 0) > 0 for i in node.inputs[1:])


class GraphBuilder:
    """Appends nodes in order and infers each node's type from its op's rule as it goes.

    Inference at construction time means a malformed op application fails where it was recorded (with the user's
    source line), not later in a backend.
    """

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.inputs: list[Node] = []
        self.input_names: list[str] = []
        self.loc: SourceLoc | None = None

    def input(self, type_: TensorType | TupleType, name: str = "") -> Node:
        node = Node("input", (), type_, {"index": len(self.inputs)})
        self.inputs.append(node)
        self.input_names.append(name or f"arg{len(self.inputs) - 1}")
        self.nodes.append(node)
        return node

    def const(self, value: Any, type_: TensorType | None = None) -> Node:
        """A constant; Python scalars stay Python scalars (weak), arrays are copied and frozen."""
        if isinstance(value, np.ndarray):
            value = value.copy()
            value.flags.writeable = False
        elif isinstance(value, np.generic):
            pass
        elif isinstance(value, bool | int | float | complex):
            type_ = type_ or weak_type_of(value)
        elif type(value) is Sym or type(value) is SymExpr:  # ``x.shape[0]`` of a symbolic dimension, ``n - 1``
            type_ = TensorType((), np.dtype(np.int64), weak=True)
        else:
            raise TypeError(f"cannot make an IR constant from {type(value).__name__}")
        node = Node("const", (), type_ or type_of(value).with_(layout="C"), {"value": value}, loc=self.loc)
        self.nodes.append(node)
        return node

    def op(self, name: str, *inputs: Node, regions: Sequence[Graph] = (), **attrs: Any) -> Node:
        definition = get_op(name)
        type_ = definition.infer(tuple(i.type for i in inputs), attrs, tuple(regions))
        node = Node(name, tuple(inputs), type_, attrs, tuple(regions), self.loc)
        self.nodes.append(node)
        return node

    def add(self, node: Node) -> Node:
        """Append an already-built node (passes that copy nodes unchanged use this)."""
        self.nodes.append(node)
        return node

    def build(self, outputs: Iterable[Node], mutations: Iterable[tuple[int, Node]] = ()) -> Graph:
        return Graph(tuple(self.nodes), tuple(self.inputs), tuple(outputs), tuple(mutations),
                     tuple(self.input_names))


def rebuild(graph: Graph, visit: Callable[[GraphBuilder, Node, tuple[Node, ...]], Node | None]) -> Graph:
    """Copy ``graph`` node by node, letting ``visit`` replace any node.

    ``visit(builder, old_node, new_inputs)`` returns the replacement node (already added to ``builder``) or
    ``None`` to keep the node as it is (with its inputs remapped). This is the one graph walk passes share, so a
    pass only says what changes.
    """
    builder = GraphBuilder()
    mapping: dict[Node, Node] = {}
    for node in graph.nodes:
        new_inputs = tuple(mapping[i] for i in node.inputs)
        if node.op == "input":
            index = node.attrs["index"]
            mapping[node] = builder.input(node.type, graph.input_names[index] if graph.input_names else "")
            continue
        replacement = visit(builder, node, new_inputs)
        if replacement is None:
            if new_inputs == node.inputs:
                replacement = builder.add(node)
            else:
                replacement = builder.add(Node(node.op, new_inputs, node.type, node.attrs, node.regions, node.loc))
        mapping[node] = replacement
    return builder.build([mapping[o] for o in graph.outputs], [(i, mapping[n]) for i, n in graph.mutations])


def eliminate_dead(graph: Graph) -> Graph:
    """Drop nodes nothing live reads. Inputs always stay (they are the calling convention)."""
    live: set[Node] = set()
    stack = list(graph.live_roots())
    while stack:
        n = stack.pop()
        if n in live:
            continue
        live.add(n)
        stack.extend(n.inputs)
    nodes = tuple(n for n in graph.nodes if n in live or n.op == "input")
    return Graph(nodes, graph.inputs, graph.outputs, graph.mutations, graph.input_names)
