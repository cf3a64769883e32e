"""The one rewrite engine: rules are data (a pattern plus a replacement function), applied to a fixed point.

Every simplification and layout rule goes through :func:`rewrite`, so the graph walk, the fixed-point loop and
the safety checks are written once:

* **Patterns** (:class:`Pat`) match a node by op name, operand patterns and a predicate, and bind names to the
  nodes they matched. A name bound twice must bind the same node (``multiply(x, x)``). ``commutative=True`` also
  tries the two operands of a binary op swapped.
* **Replacements** get an :class:`Emitter` (to build new nodes, typed by the op table) and the :class:`Match`;
  they return the node that replaces the matched one, or ``None`` to decline.
* **The engine declines any replacement whose type differs** (shape, dtype or weakness) from the node it
  replaces. Rules therefore never change what the user observes through types, and "only where the dtype and
  broadcast shape do not change" is enforced in one place rather than trusted to every rule.
* **Outputs keep their identity.** A graph output (or mutation value, or region-body result) that used to be a
  freshly computed array must not become the caller's own input, a shared read-only constant, a view of either,
  or the same array as another output; the engine then materialises it with ``copy``. Eager NumPy returns a new
  array for ``x * 1``, and so must we. A mutation that ends up writing an input's own value back is dropped.

Sweeps walk the graph in topological order; rules are tried at each node (repeatedly, on what they produce) and
the sweep repeats until one fires nothing. CSE (hash-consing) is an option of the same walk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jitgraph.errors import JitgraphError
from jitgraph.ir.graph import Graph, GraphBuilder, Node, eliminate_dead
from jitgraph.ir.ops import OPS, get_op
from jitgraph.ir.types import TensorType

MAX_SWEEPS = 64
MAX_REWRITES_PER_NODE = 32


@dataclass(frozen=True)
class Pat:
    """A pattern over nodes: ``op`` (a name, a tuple of names, or ``None`` for any), operand patterns (``None``:
    any operands), a predicate on the node, and a name to bind the matched node to."""

    op: str | tuple[str, ...] | None = None
    inputs: tuple[Pat, ...] | None = None
    name: str | None = None
    where: Callable[[Node], bool] | None = None
    commutative: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "_ops", (self.op,) if isinstance(self.op, str) else self.op)

    def ops(self) -> tuple[str, ...] | None:
        return self._ops  # type: ignore[attr-defined]


def pat(op: str | tuple[str, ...] | None, *inputs: Pat, name: str | None = None,
        where: Callable[[Node], bool] | None = None, commutative: bool = False) -> Pat:
    """Shorthand: ``pat("add", var("x"), const("c"), commutative=True)``."""
    return Pat(op, tuple(inputs), name, where, commutative)


def var(name: str, where: Callable[[Node], bool] | None = None) -> Pat:
    """Any node, bound to ``name``."""
    return Pat(None, None, name, where)


def const(name: str, where: Callable[[Node], bool] | None = None) -> Pat:
    """A ``const`` node, bound to ``name``."""
    return Pat("const", None, name, where)


class Match(dict):
    """Names bound by a pattern; ``match.root`` is the node the whole pattern matched."""

    root: Node


@dataclass(frozen=True)
class Rule:
    """A rewrite rule. ``doc`` says why it is exact; the docs and the tests quote it."""

    name: str
    pattern: Pat
    replace: Callable[[Emitter, Match], Node | None]
    doc: str = ""


def match(pattern: Pat, node: Node) -> Match | None:
    bindings = Match()
    for result in _match(pattern, node, bindings):
        result.root = node
        return result
    return None


def _match(p: Pat, node: Node, bound: Match) -> Iterator[Match]:
    ops = p._ops  # type: ignore[attr-defined]
    if ops is not None and node.op not in ops:
        return
    earlier = bound.get(p.name) if p.name is not None else None
    if earlier is not None and earlier is not node:
        return
    if p.where is not None and not p.where(node):
        return
    here = bound
    if p.name is not None and earlier is None:
        here = Match(bound)  # bindings are copied only when they grow, so backtracking stays correct
        here[p.name] = node
    if p.inputs is None:
        yield here
        return
    if len(p.inputs) != len(node.inputs):
        return
    orders = [node.inputs]
    if p.commutative and len(node.inputs) == 2:
        orders.append(node.inputs[::-1])
    for operands in orders:
        yield from _match_all(p.inputs, operands, here)


def _match_all(pats: Sequence[Pat], nodes: Sequence[Node], bound: Match) -> Iterator[Match]:
    if not pats:
        yield bound
        return
    for first in _match(pats[0], nodes[0], bound):
        yield from _match_all(pats[1:], nodes[1:], first)


class Emitter:
    """What a replacement function builds with: typed ops and constants, plus the pipeline options."""

    def __init__(self, builder: GraphBuilder, options: Mapping[str, Any]) -> None:
        self._builder = builder
        self.options = options
        self.loc = None

    def op(self, op_name: str, /, *inputs: Node, regions: Sequence[Graph] = (), **attrs: Any) -> Node:
        """Append ``op_name(*inputs, **attrs)``, typed by the op table (positional-only name: ops such as
        ``fused`` have an attr called ``name``)."""
        regions = tuple(regions)
        type_ = get_op(op_name).infer(tuple(i.type for i in inputs), attrs, regions)
        return self._builder.add(Node(op_name, tuple(inputs), type_, attrs, regions, self.loc))

    def const(self, value: Any, type_: TensorType | None = None) -> Node:
        self._builder.loc = self.loc
        return self._builder.const(value, type_)


@dataclass
class RewriteStats:
    """How many times each rule fired (and CSE merged), summed over sweeps."""

    fired: dict[str, int] = field(default_factory=dict)
    sweeps: int = 0

    def count(self, name: str) -> None:
        self.fired[name] = self.fired.get(name, 0) + 1


def same_type(a: Any, b: Any) -> bool:
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return (a.shape, a.dtype, a.weak) == (b.shape, b.dtype, b.weak)
    return a == b


def rewrite(graph: Graph, rules: Sequence[Rule], options: Mapping[str, Any] | None = None, *,
            cse_key: Callable[[Node], Any] | None = None, stats: RewriteStats | None = None) -> Graph:
    """Apply ``rules`` (and CSE, when ``cse_key`` is given) until nothing changes; return the live graph."""
    stats = stats if stats is not None else RewriteStats()
    table = _index(rules)
    for _ in range(MAX_SWEEPS):
        stats.sweeps += 1
        before = sum(stats.fired.values())
        graph = _sweep(graph, table, options or {}, cse_key, stats)
        if sum(stats.fired.values()) == before:
            return eliminate_dead(graph)
    raise RuntimeError(f"rewrite rules did not reach a fixed point in {MAX_SWEEPS} sweeps; "
                       f"rules fired: {stats.fired}")


def _index(rules: Sequence[Rule]) -> dict[str | None, list[Rule]]:
    """Dispatch table from op name to the rules whose pattern root can match it (``None``: any op)."""
    table: dict[str | None, list[Rule]] = {}
    for rule in rules:
        for op in rule.pattern.ops() or (None,):
            table.setdefault(op, []).append(rule)
    return table


def _candidates(table: dict[str | None, list[Rule]], op: str) -> list[Rule]:
    return table.get(op, []) + table.get(None, [])


def _sweep(graph: Graph, table: dict[str | None, list[Rule]], options: Mapping[str, Any],
           cse_key: Callable[[Node], Any] | None, stats: RewriteStats) -> Graph:
    builder = GraphBuilder()
    emit = Emitter(builder, options)
    mapping: dict[Node, Node] = {}
    seen: dict[Any, Node] = {}
    for node in graph.nodes:
        if node.op == "input":
            index = node.attrs["index"]
            mapping[node] = builder.input(node.type, graph.input_names[index] if graph.input_names else "")
            continue
        try:
            mapping[node] = _visit(node, mapping, builder, emit, table, options, cse_key, seen, stats)
        except Exception as exc:
            if not hasattr(exc, "jitgraph_node"):  # innermost graph wins: the manager prints around this node
                try:
                    exc.jitgraph_node = node  # type: ignore[attr-defined]
                    exc.jitgraph_graph = graph  # type: ignore[attr-defined]
                except AttributeError:
                    pass
            raise
    outputs = [mapping[o] for o in graph.outputs]
    mutations = [(i, mapping[n]) for i, n in graph.mutations]
    # Region bodies too: a loop or cond hands its body's outputs on, possibly to the caller.
    outputs, mutations = _keep_output_identity(graph, outputs, mutations, emit, stats)
    return builder.build(outputs, mutations)


def _visit(node: Node, mapping: dict[Node, Node], builder: GraphBuilder, emit: Emitter,
           table: dict[str | None, list[Rule]], options: Mapping[str, Any],
           cse_key: Callable[[Node], Any] | None, seen: dict[Any, Node], stats: RewriteStats) -> Node:
    inputs = tuple(mapping[i] for i in node.inputs)
    regions = tuple(eliminate_dead(_sweep(r, table, options, cse_key, stats)) for r in node.regions)
    current = node
    if inputs != node.inputs or any(a is not b for a, b in zip(regions, node.regions)):
        # Type rules are pure functions of the operand types: re-infer only when one of those changed (a
        # rewritten operand may have a new layout), since asking NumPy costs tens of microseconds per node.
        same = not node.regions and all(a.type == b.type for a, b in zip(inputs, node.inputs))
        type_ = node.type if same or node.op == "const" else get_op(node.op).infer(
            tuple(i.type for i in inputs), node.attrs, regions)
        current = Node(node.op, inputs, type_, node.attrs, regions, node.loc)
    keys = []
    in_builder = False
    for _ in range(MAX_REWRITES_PER_NODE):
        key = cse_key(current) if cse_key is not None else None
        if key is not None:
            earlier = seen.get(key)
            if earlier is not None and earlier is not current:
                stats.count("cse")
                current, in_builder = earlier, True
                break
            keys.append(key)
        replacement, rule, fresh = _apply_first(current, table, emit, builder)
        if replacement is None:
            break
        stats.count(rule)
        current, in_builder = replacement, True
        if not fresh:
            break  # an earlier node: it has already been rewritten in this sweep
    else:
        raise RuntimeError(f"rewrite rules keep rewriting {node!r}; rules fired: {stats.fired}")
    if not in_builder:
        builder.add(current)
    for key in keys:
        seen.setdefault(key, current)
    return current


def _apply_first(node: Node, table: dict[str | None, list[Rule]], emit: Emitter,
                 builder: GraphBuilder) -> tuple[Node | None, str, bool]:
    """The first rule that accepts ``node``: (replacement, rule name, whether the replacement is new)."""
    for rule in _candidates(table, node.op):
        found = match(rule.pattern, node)
        if found is None:
            continue
        emit.loc = node.loc
        mark = len(builder.nodes)
        try:
            replacement = rule.replace(emit, found)
        except JitgraphError:
            replacement = None  # the replacement is ill-typed for these operands: the rule does not apply
        if replacement is None or replacement is node or not same_type(replacement.type, node.type):
            del builder.nodes[mark:]  # drop whatever the declined replacement built
            continue
        fresh = any(n is replacement for n in builder.nodes[mark:])
        return replacement, rule.name, fresh
    return None, "", False


# --- output identity -------------------------------------------------------------------------------------------

def borrows(node: Node) -> bool:
    """Does this node's value alias memory the graph does not own (a caller input or a shared constant)?"""
    while True:
        if isinstance(node.type, TensorType) and node.type.weak:
            return False
        if node.op == "input":
            return True
        if node.op == "const":
            return isinstance(node.attrs.get("value"), np.ndarray)
        op = OPS[node.op]
        if not op.is_view or not node.inputs:
            return False
        if node.op == "getitem" and any(i.tensor_type.ndim > 0 for i in node.inputs[1:]):
            return False  # advanced indexing gathers into a new array
        node = node.inputs[0]


def _keep_output_identity(graph: Graph, outputs: list[Node], mutations: list[tuple[int, Node]], emit: Emitter,
                          stats: RewriteStats) -> tuple[list[Node], list[tuple[int, Node]]]:
    """Re-materialise outputs that a rewrite turned into borrowed memory, or into another output's array.

    Mutation values get the same treatment: a backend may compute a mutation straight into the caller's buffer,
    which must not be memory that an output or a constant also owns."""
    claimed: dict[Node, Node] = {}

    def fix(old: Node, new: Node) -> Node:
        if not isinstance(new.type, TensorType) or new.type.weak:
            return new
        shared = new in claimed and claimed[new] is not old
        if (borrows(new) and not borrows(old)) or (shared and not borrows(old)):
            emit.loc = old.loc
            stats.count("materialise_output")
            new = emit.op("copy", new)
        claimed.setdefault(new, old)
        return new

    outputs = [fix(old, new) for old, new in zip(graph.outputs, outputs)]
    # A mutation that writes an input's own value back into it is a no-op, and is dropped.
    kept = [(old, i, new) for (_, old), (i, new) in zip(graph.mutations, mutations) if new.op != "input"
            or new.attrs["index"] != i]
    return outputs, [(i, fix(old, new)) for old, i, new in kept]
