"""Which forward values the backward should save and which it should recompute: a minimum cut, as in
AOTAutograd's partitioner.

Why a cut: a forward value the backward reads must either stay in memory from the forward (saved: costs its
bytes) or be computed again from saved values (recomputed: costs arithmetic, which for elementwise ops is nearly
free inside a fused kernel). The cheapest set of saved values that separates the arguments from everything the
backward reads is a minimum s-t cut in a graph where each forward value is an edge weighted by its size:

* every forward value ``v`` is split into ``v_in -> v_out`` with capacity ``nbytes(v)`` (cutting it = saving it);
* ``u_out -> v_in`` (infinite) for each input ``u`` of ``v``: a value can only be recomputed from its inputs;
* the source feeds the function's arguments and constants, whose edge costs 1 byte (the caller holds them; a
  flow model cannot say "recomputable once all inputs are at hand", so an argument is a nearly free cut instead),
  and every value that is *not* worth recomputing (matmuls, reductions, gathers, regions): it is computed once,
  in the forward;
* a forward value the backward reads feeds the sink.

After the max flow, values whose ``v_in`` the source still reaches and whose ``v_out`` it does not are the saved
ones; forward values on the sink side that the backward needs are recomputed from them.

:func:`apply_cut` rebuilds the joint graph at the cut: the backward reads the saved values (and the arguments) and
recomputes the rest next to where it needs them. In one joint graph the common-subexpression pass merges a
recomputation with its forward original wherever the forward still uses that value (it is in memory anyway, so
reading it is as cheap as recomputing it); what changes is the values only the backward reads: they are computed
in the backward, from saved values, instead of being kept alive from the forward (the memory plan frees what they
were computed from, and the fusion plan puts them in the backward's kernels). ``vjp`` splits the graph at the same
cut (:mod:`jitgraph.autodiff.split`).
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from jitgraph.ir.graph import Graph, Node, eliminate_dead
from jitgraph.ir.types import TensorType

INF = float("inf")
RECOMPUTABLE_KINDS = {"elementwise", "shape", "creation"}


@dataclass(frozen=True)
class Cut:
    """``saved``: forward values kept for the backward; ``recomputed``: forward values the backward would compute
    again from them; ``saved_bytes`` vs ``naive_bytes`` (saving everything the backward reads)."""

    saved: tuple[Node, ...]
    recomputed: tuple[Node, ...]
    saved_bytes: int
    naive_bytes: int


def _nbytes(node: Node) -> int:
    t = node.type
    return max(t.nbytes, 8) if isinstance(t, TensorType) else 8 * 64


def recomputable(node: Node, kind: str) -> bool:
    """Cheap to compute again: elementwise, view/shape and creation ops (not concatenations, not gathers)."""
    if node.regions or kind not in RECOMPUTABLE_KINDS:
        return False
    return node.op not in ("concatenate", "stack")


def min_cut(forward: Sequence[Node], read: Iterable[Node], kinds: dict[str, str]) -> Cut:
    """The cut for the forward ``forward`` (topological) given the forward values ``read`` by the backward;
    ``kinds`` maps an op name to its kind's value (``"elementwise"``, ...)."""
    read = [n for n in dict.fromkeys(read) if n.op not in ("input", "const")]
    free = {n for n in forward if n.op in ("input", "const")}
    cap: dict[tuple, dict[tuple, float]] = collections.defaultdict(dict)

    def edge(a: tuple, b: tuple, c: float) -> None:
        cap[a][b] = cap[a].get(b, 0) + c
        cap[b].setdefault(a, 0)

    source, sink = ("s",), ("t",)
    for n in forward:
        if n in free:  # the caller's arrays: reading one costs the backward (nearly) nothing
            edge(source, ("in", n), INF)
            edge(("in", n), ("out", n), 1)
            continue
        edge(("in", n), ("out", n), _nbytes(n))
        if not recomputable(n, kinds.get(n.op, "")):
            edge(source, ("in", n), INF)
        for i in n.inputs:
            edge(("out", i), ("in", n), INF)
    for n in read:
        edge(("out", n), sink, INF)
    _max_flow(cap, source, sink)
    reach = _reachable(cap, source)
    saved = tuple(n for n in forward if n not in free and ("in", n) in reach and ("out", n) not in reach)
    # (free nodes on the cut are arguments and constants the backward reads directly)
    saved_set = set(saved)
    recomputed: list[Node] = []
    needed = list(read)
    seen: set[Node] = set()
    while needed:
        n = needed.pop()
        if n in seen or n in saved_set or n in free:
            continue
        seen.add(n)
        recomputed.append(n)
        needed.extend(n.inputs)
    order = {n: k for k, n in enumerate(forward)}
    return Cut(saved, tuple(sorted(recomputed, key=lambda n: order.get(n, 0))), sum(_nbytes(n) for n in saved),
               sum(_nbytes(n) for n in read))


def _max_flow(cap: dict[tuple, dict[tuple, float]], source: tuple, sink: tuple) -> None:
    """Edmonds-Karp, in place on the residual capacities (graphs here have hundreds of nodes)."""
    while True:
        parent = {source: source}
        queue = collections.deque([source])
        while queue and sink not in parent:
            a = queue.popleft()
            for b, c in cap[a].items():
                if c > 0 and b not in parent:
                    parent[b] = a
                    queue.append(b)
        if sink not in parent:
            return
        path, b = [], sink
        while b != source:
            path.append((parent[b], b))
            b = parent[b]
        flow = min(cap[a][b] for a, b in path)
        if flow == INF:  # an all-infinite path: nothing can be cut (cannot happen: reads are never free)
            return
        for a, b in path:
            cap[a][b] -= flow
            cap[b][a] += flow


def _reachable(cap: dict[tuple, dict[tuple, float]], source: tuple) -> set[tuple]:
    seen = {source}
    stack = [source]
    while stack:
        a = stack.pop()
        for b, c in cap[a].items():
            if c > 0 and b not in seen:
                seen.add(b)
                stack.append(b)
    return seen


def apply_cut(graph: Graph, backward: set[Node], cut: Cut, kinds: dict[str, str]
              ) -> tuple[Graph, dict[Node, Node]] | None:
    """``graph`` with every node of ``backward`` that reads a value of ``cut.recomputed`` reading a recomputation of
    it instead (built from saved values, arguments and constants, just before its first reader), and the backward
    nodes rebuilt for that (old -> new); None when the cut has nothing to recompute, or would recompute a value
    that is not cheap (the cut never does: a guard)."""
    recomputed = set(cut.recomputed)
    if not recomputed or not all(recomputable(n, kinds.get(n.op, "")) for n in recomputed):
        return None
    clones: dict[Node, Node] = {}
    nodes: list[Node] = []
    renamed: dict[Node, Node] = {}

    def clone(n: Node) -> Node:
        if n not in recomputed:
            return n
        if n not in clones:
            inputs = tuple(clone(i) for i in n.inputs)
            clones[n] = Node(n.op, inputs, n.type, n.attrs, n.regions, n.loc)
            nodes.append(clones[n])
        return clones[n]

    for n in graph.nodes:
        if n in backward:
            inputs = tuple(clone(i) if i in recomputed else renamed.get(i, i) for i in n.inputs)
            if inputs != n.inputs:
                renamed[n] = Node(n.op, inputs, n.type, n.attrs, n.regions, n.loc)
                n = renamed[n]
        nodes.append(n)
    outputs = [renamed.get(o, o) for o in graph.outputs]
    mutations = [(i, renamed.get(v, v)) for i, v in graph.mutations]
    return eliminate_dead(Graph(tuple(nodes), graph.inputs, tuple(outputs), tuple(mutations),
                                graph.input_names)), renamed
