"""Buffer bookkeeping for one graph of a loop driver (the top level or one region body), and the residual inline
plan (what the pipeline's fusion plan leaves node by node).

``setitem`` is functional in the IR; the driver turns it into an in-place store when the old array is *dead*: no
later node, output or live view reads it, and the buffer is *owned* (a fresh array, a carried loop value, or a
caller array the graph mutates anyway). Liveness is tracked per buffer *root*: views (basic ``getitem``,
``transpose``...) share their base's root, and region results that may alias an operand keep that operand's root
alive. This module depends on the IR only, so the emitter core and every construct emitter can share it.
"""

from __future__ import annotations

from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops import OPS, OpKind
from jitgraph.ir.types import TensorType

WRITERS = {"setitem", "scatter_add", "loop", "while", "cond"}
FUSED_REDUCTIONS = {"sum", "max", "min", "prod", "any", "all"}


def is_array(node: Node) -> bool:
    return isinstance(node.type, TensorType) and node.type.shape != ()


def fusable(node: Node) -> bool:
    """An elementwise op producing an array whose array operands all have its exact shape (no broadcasting)."""
    if OPS[node.op].kind is not OpKind.ELEMENTWISE or not is_array(node):
        return False
    shape = node.tensor_type.shape
    return all(not is_array(i) or i.tensor_type.shape == shape for i in node.inputs)


def reducible(node: Node) -> bool:
    """A full reduction written as a loop: sum/max/min/prod/any/all over every axis of a non-empty array (booleans
    and numbers), keepdims off. ``mean`` stays NumPy's call: the shared table accumulates a float32 mean in float64,
    which differs from NumPy's float32 sum in the last bits."""
    if node.op not in FUSED_REDUCTIONS or node.attrs.get("keepdims") or node.attrs.get("dtype") is not None:
        return False
    (x,) = node.inputs
    if not is_array(x) or x.tensor_type.dtype.kind not in "iufb" or x.tensor_type.size == 0:
        return False
    return tuple(node.attrs["axis"]) == tuple(range(x.tensor_type.ndim))


def plan_inline(graph: Graph) -> set[Node]:
    """Values computed inside their single consumer's loop nest instead of being stored.

    The fusion plan (:mod:`jitgraph.passes.fuse`, which also fuses loop / while / cond bodies) decides what runs
    together; this covers only what it leaves to the driver node by node: the bodies of ``fused`` groups the sweeps
    cannot run (:func:`.groups.emit_members`: a reduction over leading axes, a reshape, a BLAS head, ``mean``), and
    elementwise ops the pass keeps out of kernels (``fusion_groups.unsupported_reason``: a dtype kernels lack, an op
    with no kernel emitter), and graphs given to :func:`.driver.compile_regions` without the pipeline (hand-built
    test graphs). Everywhere else its input has no unfused elementwise chains and it finds nothing.

    Soundness: a value is inlined only when no node between it and its consumer could write a buffer (no
    ``setitem`` and no region), so reading the leaves later, inside the consumer's loop, sees the same data.
    """
    users = graph.users()
    pos = {n: k for k, n in enumerate(graph.nodes)}
    writer_positions = [k for k, n in enumerate(graph.nodes) if n.op in WRITERS]
    live = set(graph.live_roots())
    inline: set[Node] = set()
    for node in graph.nodes:
        if not fusable(node) or node in live or len(users.get(node, ())) != 1:
            continue
        consumer = users[node][0]
        if consumer.inputs.count(node) != 1:
            continue
        joins = (fusable(consumer) and consumer.tensor_type.shape == node.tensor_type.shape) or reducible(consumer)
        if joins and not any(pos[node] < w < pos[consumer] for w in writer_positions):
            inline.add(node)
    return inline


class Scope:
    """Buffer roots, views, owned buffers and last uses of one graph's values, plus its inline plan."""

    def __init__(self, graph: Graph, owned_inputs: set[Node], plan: bool = True) -> None:
        self.graph = graph
        self.pos = {n: k for k, n in enumerate(graph.nodes)}
        end = len(graph.nodes)
        self.last: dict[Node, int] = {n: -1 for n in graph.nodes}
        for n in graph.nodes:
            for i in n.inputs:
                self.last[i] = max(self.last[i], self.pos[n])
        for n in graph.live_roots():
            self.last[n] = end
        self.roots: dict[Node, frozenset[Node]] = {}
        self.view: set[Node] = set()
        self.members: dict[Node, list[Node]] = {}
        self.owned: set[Node] = set()
        # ``plan=False``: a ``fused`` body run as sweeps, which place every member themselves.
        self.inline: set[Node] = plan_inline(graph) if plan else set()
        # (index text, size, axis) -> the checked copy of an index already emitted in this block (indexing.check)
        self.checked: dict[tuple[str, int, int], str] = {}
        for n in graph.inputs:
            if is_array(n):
                self.fresh(n, n in owned_inputs)

    def fresh(self, node: Node, owned: bool, also: frozenset[Node] = frozenset()) -> None:
        self.set_roots(node, frozenset({node}) | also)
        if owned:
            self.owned.add(node)

    def set_roots(self, node: Node, roots: frozenset[Node], view: bool = False) -> None:
        self.roots[node] = roots
        if view:
            self.view.add(node)
        for r in roots:
            self.members.setdefault(r, []).append(node)

    def dead_after(self, x: Node, user: Node) -> bool:
        """Whether ``x``'s buffer may be overwritten by ``user`` (its only remaining reader)."""
        if x in self.view or len(self.roots.get(x, ())) != 1:
            return False
        (root,) = self.roots[x]
        if root not in self.owned:
            return False
        p = self.pos[user]
        if any(self.last[m] > p for m in self.members[root]):
            return False
        sharing = [i for i in user.inputs if root in self.roots.get(i, ())]
        return sharing == [x]

    def exclusive(self, node: Node) -> bool:
        """Whether a result's buffer belongs to this graph and to no other of its outputs (so it can be handed on)."""
        roots = self.roots.get(node, frozenset())
        if node in self.view or len(roots) != 1 or next(iter(roots)) not in self.owned:
            return False
        return sum(1 for o in self.graph.outputs if roots & self.roots.get(o, frozenset())) == 1
