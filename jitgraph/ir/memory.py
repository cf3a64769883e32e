"""The memory plan of a lowered graph: when each intermediate buffer dies, and the peak memory it needs.

The plan is liveness over the top-level graph (after fusion, so values inside a kernel never reach memory at all).
A buffer is an intermediate that is computed (not an input, constant or output) and is not a view: views (NumPy
views from shape ops and basic indexing) keep their base alive instead. A buffer is released right after its last
reader, and its memory goes back to the allocator that serves the next intermediate of the call: the backend's
driver deletes the variable at that point, so sharing needs no explicit slot table (NumPy's allocator and malloc
hand back the same blocks). The report gives the peak bytes of intermediates with no planning (every buffer
lives to the end of the call) and with it, which ``explain`` prints.

The pipeline's ``plan_memory`` pass computes it once and attaches it to the graph (``Graph.memory``); the backend
and ``explain`` read it there. It is an IR-level noun, beside the graph, because both the pass that makes it and
the backends that consume it need its shape, and a backend imports no pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jitgraph.ir.graph import Graph, Node, TupleType
from jitgraph.ir.optable import OPS
from jitgraph.ir.types import TensorType


@dataclass
class MemoryPlan:
    """``release_after[k]``: values whose last reader is the k-th node of ``graph.nodes``."""

    release_after: dict[int, list[Node]] = field(default_factory=dict)
    buffers: list[Node] = field(default_factory=list)
    peak_before: int = 0
    peak_after: int = 0

    def format(self) -> str:
        return (f"intermediate buffers: {len(self.buffers)}; peak intermediate bytes {self.peak_before:,} "
                f"unplanned -> {self.peak_after:,} planned")


def _nbytes(node: Node) -> int:
    t = node.type
    if isinstance(t, TupleType):
        return sum(e.nbytes for e in t.elements)
    return t.nbytes if isinstance(t, TensorType) else 0


def shares_buffer(node: Node) -> bool:
    """Whether ``node``'s value lives in its first input's buffer (a NumPy view, a tuple projection): it owns
    no memory of its own, and keeps its base alive instead."""
    if node.op == "tuple_get":
        return True
    op = OPS[node.op]
    if node.op == "getitem":
        return not node.inputs[1:] or all(i.type.ndim == 0 for i in node.inputs[1:])
    return op.is_view


def memory_plan(graph: Graph) -> MemoryPlan:
    """Liveness of every intermediate buffer of the top-level ``graph`` (see the module docstring)."""
    roots = set(graph.live_roots())
    position = {n: k for k, n in enumerate(graph.nodes)}
    # Root buffer of every value: views and tuple projections point at the node that owns the memory.
    owner: dict[Node, Node] = {}
    for n in graph.nodes:
        owner[n] = owner[n.inputs[0]] if n.inputs and n.op not in ("input", "const") and shares_buffer(n) else n
    last_use: dict[Node, int] = {}
    for n in graph.nodes:
        for i in n.inputs:
            o = owner[i]
            last_use[o] = max(last_use.get(o, -1), position[n])
    escaping = {owner[r] for r in roots}
    plan = MemoryPlan()
    for n in graph.nodes:
        if n.op in ("input", "const") or owner[n] is not n or n in escaping:
            continue
        plan.buffers.append(n)
        plan.release_after.setdefault(last_use.get(n, position[n]), []).append(n)
    plan.peak_before = sum(_nbytes(b) for b in plan.buffers)
    live = peak = 0
    born = {b: position[b] for b in plan.buffers}
    for k in range(len(graph.nodes)):
        live += sum(_nbytes(b) for b, p in born.items() if p == k)
        peak = max(peak, live)
        live -= sum(_nbytes(b) for b in plan.release_after.get(k, ()))
    plan.peak_after = peak
    return plan


def views_of(graph: Graph, node: Node) -> set[Node]:
    """``node`` and every value of ``graph`` that shares its buffer (views of it, transitively)."""
    out = {node}
    for n in graph.nodes:
        if n.inputs and n.inputs[0] in out and n.op not in ("input", "const", "fused") and shares_buffer(n):
            out.add(n)
    return out
