"""Fusion: group the graph into kernels, each one ``fused`` node owning a body graph.

This pass is the *fusion plan* that every kernel backend shares (CPU loop nests now, CUDA later): it decides which
nodes run together; backends only decide how. A group is an iteration *domain* ``D`` (a shape) plus the set ``R`` of
domain axes its reductions reduce (empty for purely elementwise groups). Every member value lines up with the
domain through an *axis map* (for each of its dims, the domain axis it walks, or ``None`` for a broadcast dim), and
has a *level*: how many reductions lie between it and the group's inputs. A backend runs a group as a loop over the
outer axes ``D - R`` and, per outer index, one sweep over ``R`` per reduction level, then one sweep writing the
full-shape outputs. So softmax is one kernel with max, sum and write sweeps over a row that stays in cache.

Rules, in the order they are tried for each node (topological order):

* elementwise ops (``FUSIBLE_ELEMENTWISE``, supported dtypes) and reductions (``FUSIBLE_REDUCTIONS``) join the group
  of a producer when the shapes line up with its domain without broadcasting a member up (that would recompute it
  once per broadcast element); two producer groups merge when their domains agree and no path leaves one group and
  re-enters the other (that would make a cycle);
* a node whose operands are all outside any group joins a *sibling* group that already reads one of its operands
  (horizontal fusion), so ``x.max(1)`` and ``x.sum(1)`` make one sweep over ``x``;
* ``matmul``/``dot`` start a ``matmul_epilogue`` group: the product comes from BLAS, and the elementwise ops and
  reductions over it run as one kernel that writes into the product's buffer. BLAS runs before the kernel's
  loops, so no op upstream of the product (its operands included) may join that kernel;
* 0-d elementwise producers (``1 - beta1``, ``lr * scale``) are copied into every kernel that reads them, so scalar
  arithmetic never costs a launch;
* at most ``MAX_LEVELS`` reduction levels per group (layernorm needs two: mean, then variance), so no op is
  recomputed more than ``MAX_LEVELS + 1`` times.

The bodies of ``loop`` / ``while`` / ``cond`` nodes are planned the same way, each on its own (recursively), so
every backend sees kernels inside loops too. One difference there: a 0-d value the body computes outside its
kernels anyway is read by the kernels instead of copied into them (a body runs once per iteration, so a copy would
compute it twice per iteration); the top level keeps the copies.

Each ``fused`` node's attrs say ``kind``, ``name`` and ``cuts``: one line per operand that is computed elsewhere,
naming that producer (by its ``%k`` in the unfused graph) and why it was not fused.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from jitgraph.ir.fusion_groups import EPILOGUE_HEADS, analyze, is_scalar_closure, unsupported_reason
from jitgraph.ir.graph import Graph, GraphBuilder, Node, TupleType, eliminate_dead
from jitgraph.ir.ops import OPS, OpKind
from jitgraph.ir.printer import node_names
from jitgraph.ir.types import TensorType
from jitgraph.passes.manager import register_pass

__all__ = ["fuse", "fuse_graph"]


@dataclass
class _Group:
    gid: int
    domain: tuple[int, ...]
    raxes: tuple[int, ...]
    members: list[Node] = field(default_factory=list)
    head: Node | None = None  # the BLAS node of a matmul_epilogue group

    @property
    def kind(self) -> str:
        if self.head is not None:
            return "matmul_epilogue"
        return "reduction" if self.raxes else "elementwise"


class _Planner:
    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.names = node_names(graph)
        self.group_of: dict[Node, _Group] = {}
        self.groups: list[_Group] = []
        self.anc: dict[Node, set[int]] = {}  # group ids a node transitively reads (through any path)
        self.alias: dict[int, int] = {}  # merged group ids
        self.cuts: dict[Node, list[str]] = {}
        self.ids = itertools.count()
        self.order: dict[Node, int] = {}
        self.deps: dict[int, set[int]] = {}  # per kernel id, the kernel ids its members read (see group_deps)

    def find(self, gid: int) -> int:
        while gid in self.alias:
            gid = self.alias[gid]
        return gid

    def ancestors(self, node: Node) -> set[int]:
        return {self.find(g) for g in self.anc.get(node, ())}

    def cut(self, node: Node, producer: Node, why: str) -> None:
        self.cuts.setdefault(node, []).append(f"{self.names.get(producer, '?')} = {producer.op}: {why}")

    def creates_cycle(self, group_ids: set[int], members: Iterable[Node]) -> bool:
        """Whether a kernel of ``members`` (the groups ``group_ids`` plus a node) would read, through some other
        kernel, a value it computes itself. Kernels run as units, so a path counts through *any* member of another
        kernel, not only through the node read: ``x = s * -v`` in a reduction kernel that also computes ``t =
        d.sum(0)`` and ``t * -v`` in the kernel of ``-v`` read each other (a node-level path does not show that)."""
        start: set[int] = set()
        for m in members:
            for i in m.inputs:
                g = self.group_of.get(i)
                if g is not None and g.gid in group_ids:
                    continue
                start |= self.ancestors(i)
                if g is not None:
                    start.add(self.find(g.gid))
        if start & group_ids:
            return True
        seen, stack = set(start), list(start)
        while stack:
            for dep in self.group_deps(stack.pop()):
                if dep in group_ids:
                    return True
                if dep not in seen:
                    seen.add(dep)
                    stack.append(dep)
        return False

    def group_deps(self, gid: int) -> set[int]:
        """The kernels whose values kernel ``gid`` reads, directly or through nodes outside any kernel."""
        cached = self.deps.get(gid)
        if cached is None:
            group = next((g for g in self.groups if g.gid == gid), None)
            cached = set()
            if group is not None:
                inside = set(group.members)
                for m in group.members:
                    for i in m.inputs:
                        if i in inside:
                            continue
                        cached |= self.anc.get(i, set())
                        if i in self.group_of:
                            cached.add(self.group_of[i].gid)
            self.deps[gid] = cached
        return {self.find(d) for d in cached} - {gid}

    def feeds_head(self, head: Node, members: list[Node]) -> bool:
        """Whether a member lies upstream of the BLAS ``head``: the kernel runs BLAS first, so it could not be.

        ``creates_cycle`` only sees paths that leave the group and come back; a member that is itself the product's
        operand (``d = d / n`` merged as a sibling of ``h.T @ d``) never leaves, so it is checked here.
        """
        inside = set(members) - {head}
        first = min((self.order[m] for m in inside), default=self.order[head])
        seen: set[Node] = set()
        stack = list(head.inputs)
        while stack:
            n = stack.pop()
            if n in seen or self.order.get(n, -1) < first:
                continue
            if n in inside:
                return True
            seen.add(n)
            stack.extend(n.inputs)
        return False

    def try_join(self, node: Node | None, groups: list[_Group]) -> str | None:
        """Put ``node`` (if any) into the union of ``groups`` (merging them); the reason when that is impossible."""
        base = groups[0]
        domain = base.domain
        raxes = next((g.raxes for g in groups if g.raxes), ())
        if node is not None and OPS[node.op].kind is OpKind.REDUCTION:
            raxes = raxes or tuple(node.attrs["axis"])
        if any(g.domain != domain for g in groups):
            return "its producers' kernels iterate over different domains " + \
                " vs ".join(str(list(g.domain)) for g in groups)
        if any(g.raxes and g.raxes != raxes for g in groups):
            return "its producers' kernels reduce different axes " + " vs ".join(str(g.raxes) for g in groups)
        if sum(g.head is not None for g in groups) > 1:
            return "two BLAS products in one kernel"
        extra = {node} if node is not None else set()
        members = sorted({m for g in groups for m in g.members} | extra, key=self.order.__getitem__)
        ids = {g.gid for g in groups}
        if self.creates_cycle(ids, members):
            return "fusing would create a cycle through a node computed outside the kernel"
        head = next((g.head for g in groups if g.head is not None), None)
        if head is not None and self.feeds_head(head, members):
            return f"it is needed before the kernel's BLAS call ({head.op} reads its operands from memory)"
        info = analyze(members, domain, raxes, head)
        if isinstance(info, str):
            return info
        for g in groups[1:]:
            self.alias[g.gid] = base.gid
            self.groups.remove(g)
            self.deps.pop(g.gid, None)
        self.deps.pop(base.gid, None)
        base.members, base.raxes, base.head = members, raxes, head
        for m in members:
            self.group_of[m] = base
        return None

    def merge_siblings(self) -> None:
        """Horizontal fusion: kernels that read a common operand and share a domain become one sweep.

        Done after vertical grouping, so a node first joins the kernel of its producers and consumers; merging
        siblings earlier would pull a node away from the consumer it should feed in registers.
        """
        changed = True
        while changed:
            changed = False
            for a, b in itertools.combinations(list(self.groups), 2):
                if a.domain != b.domain or (a.raxes and b.raxes and a.raxes != b.raxes):
                    continue
                reads_a = {i for m in a.members for i in m.inputs if i.op != "const"} - set(a.members)
                reads_b = {i for m in b.members for i in m.inputs if i.op != "const"} - set(b.members)
                if reads_a & reads_b and self.try_join(None, [a, b]) is None:
                    changed = True
                    break

    def new_group(self, node: Node, domain: tuple[int, ...], raxes: tuple[int, ...], head: Node | None) -> None:
        g = _Group(next(self.ids), domain, raxes, [node], head)
        self.groups.append(g)
        self.group_of[node] = g

    def place(self, node: Node) -> None:
        kind = OPS[node.op].kind
        if node.op in EPILOGUE_HEADS:
            self.new_group(node, node.type.shape, (), node)
            return
        producers = [i for i in node.inputs if i in self.group_of]
        groups: list[_Group] = []
        for p in producers:
            if self.group_of[p] not in groups:
                groups.append(self.group_of[p])
        # Try all producer groups together, then each alone (latest first), then siblings.
        attempts = ([groups] if len(groups) > 1 else []) + [[g] for g in reversed(groups)]
        reasons: dict[Node, str] = {}
        for attempt in attempts:
            why = self.try_join(node, attempt)
            if why is None:
                break
            for p in producers:
                if self.group_of.get(p) in attempt:
                    reasons.setdefault(p, why)
        if node not in self.group_of:
            if kind is OpKind.REDUCTION:
                self.new_group(node, node.inputs[0].type.shape, tuple(node.attrs["axis"]), None)
            elif node.op != "reshape":
                self.new_group(node, node.type.shape, (), None)
        mine = self.group_of.get(node)
        for p, why in reasons.items():
            if self.group_of.get(p) is not mine:
                self.cut(node, p, why)

    def run(self) -> list[_Group]:
        self.order = {n: k for k, n in enumerate(self.graph.nodes)}
        for node in self.graph.nodes:
            anc: set[int] = set()
            for i in node.inputs:
                anc |= self.anc.get(i, set())
                if i in self.group_of:
                    anc.add(self.group_of[i].gid)
            self.anc[node] = anc
            if node.op in ("input", "const") or is_scalar_closure(node):
                continue
            why = unsupported_reason(node) if node.op not in EPILOGUE_HEADS else None
            if node.op in EPILOGUE_HEADS and (node.type.ndim != 2 or node.type.dtype.kind != "f"):
                why = "BLAS op with a non-matrix or non-float result runs through NumPy"
            if why is not None:
                for i in node.inputs:
                    if i in self.group_of:
                        self.cut(node, i, f"consumer {node.op} cannot be fused ({why})")
                continue
            self.place(node)
        self.merge_siblings()
        return [g for g in self.groups if self._worth_a_kernel(g)]

    @staticmethod
    def _worth_a_kernel(g: _Group) -> bool:
        computing = [m for m in g.members if m is not g.head and m.op != "reshape"]
        if not computing:
            return False
        # A lone reduction of an operand is what NumPy's own SIMD loops already do well -- but for one over the rows
        # of a matrix (``x.sum(axis=0)``): NumPy adds one row after another on one core, where the column template
        # does the same sums on every core (the backend's cost model keeps small ones NumPy calls).
        lone = len(computing) == 1 and OPS[computing[0].op].kind is OpKind.REDUCTION and g.head is None
        return not lone or _over_rows(computing[0])


def _over_rows(node: Node) -> bool:
    """Whether the reduction ``node`` sums (or takes the max, min, ...) over the leading axis of a matrix only."""
    shape = node.inputs[0].type.shape
    axes = node.attrs.get("axis")
    return node.op in ("sum", "mean", "max", "min") and len(shape) == 2 and tuple(axes or ()) == (0,) and \
        node.attrs.get("dtype") is None and node.inputs[0].type.dtype.kind == "f"


def _kernel_name(g: _Group, index: int) -> str:
    ops: list[str] = []
    for m in g.members:
        if m.op not in ops and m.op != "reshape":
            ops.append(m.op)
    return "fused_" + "_".join(ops[:4]) + f"_{index}"


def _live_outside(graph: Graph, member_of: dict[Node, _Group]) -> set[Node]:
    """The nodes the fused graph computes outside every kernel: what the roots and the unfused nodes read, through
    unfused nodes only (a 0-d value read only by kernels is copied into them and dropped)."""
    stack = list(graph.live_roots()) + [i for n in graph.nodes if n not in member_of and not is_scalar_closure(n)
                                        for i in n.inputs]
    seen: set[Node] = set()
    while stack:
        n = stack.pop()
        if n in seen or n in member_of:
            continue
        seen.add(n)
        stack.extend(n.inputs)
    return seen


def fuse_graph(graph: Graph, *, nested: bool = False) -> Graph:
    """The fusion pass proper; see the module docstring for the rules.

    The bodies of ``loop`` / ``while`` / ``cond`` nodes are fused too, recursively (a body is planned on its own:
    its inputs are the region's parameters), so the loop driver consumes the same plan inside loops as at the top
    level. ``fused`` bodies themselves are never fused again."""
    if any(n.op == "fused" for n in graph.nodes):
        return graph
    planner = _Planner(graph)
    groups = planner.run()
    member_of: dict[Node, _Group] = {m: g for g in groups for m in g.members}
    # In a region body (run once per iteration), a 0-d value that is computed outside the kernels anyway is read by
    # them rather than copied in: a copy would compute it twice per iteration. (Top-level graphs keep the copy.)
    kept = _live_outside(graph, member_of) if nested else set()
    users = graph.users()
    roots = set(graph.live_roots())

    builder = GraphBuilder()
    mapping: dict[Node, Node] = {}
    emitted: set[int] = set()
    counter = itertools.count()

    def emit(node: Node) -> Node:
        if node in mapping:
            return mapping[node]
        g = member_of.get(node)
        if g is None:
            new_inputs = tuple(emit(i) for i in node.inputs)
            if node.op == "input":
                raise AssertionError("inputs are emitted first")
            regions = tuple(fuse_graph(r, nested=True) for r in node.regions)
            same = new_inputs == node.inputs and all(a is b for a, b in zip(regions, node.regions))
            new = Node(node.op, new_inputs, node.type, node.attrs, regions, node.loc)
            mapping[node] = builder.add(node if same else new)
            return mapping[node]
        _emit_group(g)
        return mapping[node]

    def _emit_group(g: _Group) -> None:
        if id(g) in emitted:
            return
        emitted.add(id(g))
        inside = set(g.members)
        body = GraphBuilder()
        inner: dict[Node, Node] = {}
        operands: list[Node] = []

        def operand(v: Node) -> Node:
            if v in inner:
                return inner[v]
            if v.op == "const" and isinstance(v.type, TensorType) and v.type.shape == ():
                inner[v] = body.add(Node("const", (), v.type, v.attrs, (), v.loc))
            elif v.op not in ("input", "const") and is_scalar_closure(v) and v not in kept:
                ins = tuple(operand(i) for i in v.inputs)
                inner[v] = body.add(Node(v.op, ins, v.type, v.attrs, v.regions, v.loc))
            else:
                operands.append(v)
                inner[v] = body.input(v.type, "v" + planner.names.get(v, "%").lstrip("%"))
            return inner[v]

        # Body inputs first, then 0-d constants and scalar arithmetic, then members in order.
        externals = [i for m in g.members for i in m.inputs if i not in inside]
        for i in externals:
            if i.op == "input" or not is_scalar_closure(i) or i in kept:
                operand(i)
        for i in externals:
            operand(i)
        for m in g.members:
            ins = tuple(inner[i] for i in m.inputs)
            inner[m] = body.add(Node(m.op, ins, m.type, m.attrs, m.regions, m.loc))
        escaping = [m for m in g.members if m in roots or any(u not in inside for u in users.get(m, ()))]
        body_graph = body.build([inner[m] for m in escaping])
        cuts: list[str] = []
        for m in g.members:
            cuts.extend(planner.cuts.get(m, ()))
        for v in operands:
            name = planner.names.get(v, "?")
            if v.op not in ("input", "const") and not any(c.startswith(name + " ") for c in cuts):
                if g.head is not None and v in g.head.inputs:
                    why = f"operand of the BLAS call ({g.head.op} reads it from memory)"
                else:
                    why = unsupported_reason(v) or ("computed by another kernel" if v in member_of else
                                                    "computed outside any kernel")
                cuts.append(f"{name} = {v.op}: {why}")
        outer_ops = tuple(emit(v) for v in operands)
        attrs = {"kind": g.kind, "name": _kernel_name(g, next(counter)), "cuts": tuple(dict.fromkeys(cuts))}
        out_types = tuple(m.type for m in escaping)
        ftype = out_types[0] if len(out_types) == 1 else TupleType(out_types)
        loc = g.members[-1].loc
        fused = builder.add(Node("fused", outer_ops, ftype, attrs, (body_graph,), loc))
        if len(escaping) == 1:
            mapping[escaping[0]] = fused
        else:
            for k, m in enumerate(escaping):
                mapping[m] = builder.add(Node("tuple_get", (fused,), m.type, {"index": k}, (), m.loc))

    for index, inp in enumerate(graph.inputs):
        mapping[inp] = builder.input(inp.type, graph.input_names[index] if graph.input_names else "")
    for node in graph.nodes:
        if node in member_of:
            _emit_group(member_of[node])
        elif node.op != "input":
            emit(node)
    fused = builder.build([emit(o) for o in graph.outputs], [(i, emit(n)) for i, n in graph.mutations])
    # 0-d producers copied into kernels may now be unread.
    return eliminate_dead(fused)


fuse: Callable[[Graph], Graph] = register_pass("fuse")(fuse_graph)
