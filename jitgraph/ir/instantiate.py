"""A traced graph with symbolic sizes, instantiated for one call's sizes.

An entry traced with dynamic dimensions (``f32[s0,784]``, ir/symbols.py) is one trace for every size; the passes
and backends, which plan memory, choose kernels and cost work by sizes, get the graph with each symbol replaced by
the call's value. That is a copy, node for node: no shape rule runs again, so the instantiated graph is exactly the
graph a trace at those sizes would record (what the driver checks once per entry, jit/symbolic_sizes.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from jitgraph.ir.graph import Graph, GraphBuilder, Node, TupleType, rebuild
from jitgraph.ir.symbols import Sym, SymExpr, is_symbolic
from jitgraph.ir.types import TensorType


def symbols_of(graph: Graph) -> set[str]:
    """The names of the symbols in ``graph`` (types, attributes and constants, bodies included)."""
    found: set[str] = set()

    def visit(value: Any) -> None:
        if type(value) is Sym:
            found.add(value.name)
        elif type(value) is SymExpr:
            found.add(value.sym.name)
        elif isinstance(value, TensorType):
            for d in value.shape:
                visit(d)
        elif isinstance(value, TupleType):
            for t in value.elements:
                visit(t)
        elif isinstance(value, tuple | list):
            for v in value:
                visit(v)
        elif isinstance(value, dict | Mapping):
            for v in value.values():
                visit(v)

    def walk(g: Graph) -> None:
        for n in g.nodes:
            visit(n.type)
            visit(n.attrs)
            for region in n.regions:
                walk(region)

    walk(graph)
    return found


def expression_dims(graph: Graph) -> set[SymExpr]:
    """The dimensions of ``graph``'s values that are expressions of a symbol (``s0-2`` of ``x[1:-1]``), bodies
    included: each must be at least 2 at an instance's sizes, as the trace assumed."""
    found: set[SymExpr] = set()

    def walk(g: Graph) -> None:
        for n in g.nodes:
            types = n.type.elements if isinstance(n.type, TupleType) else (n.type,)
            found.update(d for t in types for d in t.shape if type(d) is SymExpr)
            for region in n.regions:
                walk(region)

    walk(graph)
    return found


def instantiate(graph: Graph, sizes: Mapping[str, int]) -> Graph:
    """``graph`` with every symbol replaced by its size in ``sizes`` (a symbol missing there is a KeyError)."""

    def value(v: Any) -> Any:
        t = type(v)
        if t is Sym:
            return sizes[v.name]
        if t is SymExpr:
            return v.value(sizes[v.sym.name])
        if t is TensorType:
            return v.with_(shape=tuple(value(d) for d in v.shape)) if is_symbolic(v.shape) else v
        if t is TupleType:
            return TupleType(tuple(value(e) for e in v.elements))
        if t is tuple or t is list:
            return t(value(e) for e in v)
        if t is dict:
            return {k: value(e) for k, e in v.items()}
        return v

    def copy(g: Graph) -> Graph:
        mapping: dict[Node, Node] = {}
        nodes = []
        for n in g.nodes:
            new = Node(n.op, tuple(mapping[i] for i in n.inputs), value(n.type), value(dict(n.attrs)),
                       tuple(copy(r) for r in n.regions), n.loc)
            mapping[n] = new
            nodes.append(new)
        return Graph(tuple(nodes), tuple(mapping[i] for i in g.inputs), tuple(mapping[o] for o in g.outputs),
                     tuple((i, mapping[n]) for i, n in g.mutations), g.input_names)

    return copy(graph)


def same_graph(a: Graph, b: Graph) -> bool:
    """Whether two graphs are the same computation: printed alike once equal constants are merged and listed first
    (a trace records ``const(4)`` at each use of a Python int it read from ``x.shape[0]``, and one ``const(s0)``
    for the symbol; or records a constant where it first needs it)."""
    return _canonical_text(a) == _canonical_text(b)


def _canonical_text(graph: Graph) -> str:
    """The graph printed with equal constants merged and listed first, sorted (constants have no inputs, so the
    order stays topological). Region bodies take their constants from the enclosing graph as operands."""
    seen: dict[tuple, Node] = {}

    def merge(builder: GraphBuilder, node: Node, inputs: tuple[Node, ...]) -> Node | None:
        if node.op != "const":
            return None
        key = _const_key(node)
        if key not in seen:
            seen[key] = builder.add(node)
        return seen[key]

    merged = rebuild(graph, merge)
    consts = sorted((n for n in merged.nodes if n.op == "const"), key=lambda n: repr(_const_key(n)))
    rest = [n for n in merged.nodes if n.op != "const"]
    text = str(Graph(tuple(consts + rest), merged.inputs, merged.outputs, merged.mutations, merged.input_names))
    return _BUFFER_NAME.sub("input[buf]", text)  # a body's storage inputs are numbered per process (buf13)


_BUFFER_NAME = re.compile(r"input\[buf\d+\]")


def _const_key(node: Node) -> tuple:
    value = node.attrs["value"]
    if isinstance(value, np.ndarray):  # every element: a printed array may be abbreviated
        return ("array", str(node.type), value.dtype.str, value.shape, value.tobytes())
    return (repr(value), type(value).__name__, str(node.type))
