"""``fused`` nodes: the pipeline's fusion plan (:mod:`jitgraph.passes.fuse`), emitted as the driver's loop nests.

A kernel group is an iteration domain plus the axes its reductions reduce, and every member lines up with the
domain through an axis map (:func:`jitgraph.ir.fusion_groups.group_info`). A group that is elementwise, or whose
reductions reduce the whole domain, runs as the CPU backend's kernels run it: one sweep over the domain per
reduction level, each accumulating that level's reductions and writing the outputs it already can, then one sweep
writing the outputs computed from the last level (``x = f(a)`` and ``x.max()``: one loop; softmax: a max sweep, a
sum sweep and a write sweep). Each member is computed once per element of a sweep, as a scalar: a value read twice
gets a temporary, a value read once is written into its reader's expression.

Any other group (a reduction over some axes, a reshape, a BLAS head, ``mean``) is emitted member by member
(:func:`emit_members`), where :func:`.scope.plan_inline` decides which values stay in registers.
"""

from __future__ import annotations

from jitgraph.backends import emitter_table as shared
from jitgraph.backends.cpu import emitters as cpu_emitters
from jitgraph.backends.cpu.scalar.core import Emitter, cast_text, dtype_ctor, wrap
from jitgraph.backends.cpu.scalar.regions import bind
from jitgraph.backends.cpu.scalar.scope import Scope, is_array
from jitgraph.ir.fusion_groups import GroupInfo, group_info, is_scalar_closure
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops import OPS, OpKind

LOOP_REDUCTIONS = ("sum", "max", "min", "prod", "any", "all")


def emit_fused(em: Emitter, node: Node, indent: int) -> None:
    """A kernel group of the pipeline's fusion plan, as sweeps over its domain when its shape allows (module doc)."""
    (body,) = node.regions
    bind(em, body.inputs, node.inputs)
    info = _sweepable(node)
    if info is None:
        emit_members(em, node, body, indent)
        return
    outs = _emit_sweep(em, body, info, indent)
    if len(body.outputs) == 1:
        em.var[node] = outs[0]
        if is_array(node):
            em.scope.fresh(node, owned=True)
    else:
        em.results[node] = outs
        em.result_roots[node] = [(frozenset(), "owned")] * len(outs)


def emit_members(em: Emitter, node: Node, body: Graph, indent: int) -> None:
    """A group emitted node by node, as if its body were inline in the driver."""
    outs, scope = em.emit_graph(body, indent, set())
    entries = []
    for out in body.outputs:
        roots: frozenset[Node] = frozenset()
        for j, inp in enumerate(body.inputs):
            if inp in scope.roots.get(out, ()):
                roots |= em.scope.roots.get(node.inputs[j], frozenset())
        entries.append((roots, "shared" if roots or not scope.exclusive(out) else "owned"))
    if len(body.outputs) == 1:
        em.var[node] = outs[0]
        if is_array(node):
            roots, status = entries[0]
            em.scope.fresh(node, status == "owned", also=roots)
    else:
        em.results[node] = outs
        em.result_roots[node] = entries


def _sweepable(node: Node) -> GroupInfo | None:
    """The group's description when sweeps over its whole domain compute it, else None."""
    (body,) = node.regions
    members = [n for n in body.nodes if n.op not in ("input", "const") and not is_scalar_closure(n)]
    if not members or any(n.regions for n in body.nodes):
        return None
    for n in members:
        kind = OPS[n.op].kind
        if kind is OpKind.REDUCTION:
            if n.op not in LOOP_REDUCTIONS or n.attrs.get("keepdims") or n.attrs.get("dtype") is not None \
                    or n.inputs[0].tensor_type.size == 0 or n.inputs[0].tensor_type.dtype.kind not in "iufb":
                return None
        elif kind is not OpKind.ELEMENTWISE or n.op == "setitem" and len(n.inputs) != 2:
            return None
    try:
        info = group_info(node)
    except TypeError:  # not a group the fusion pass would make: emit it member by member
        return None
    if not info.domain:
        return None  # 0-d members only: nothing to sweep
    if info.raxes and set(info.raxes) != set(range(len(info.domain))):
        return None  # a reduction over some axes: per outer index, one sweep per level
    if any(is_array(o) and o.tensor_type.shape != info.domain for o in body.outputs if o in info.amap):
        return None
    if any(o not in info.amap for o in body.outputs):
        return None
    return info


def _is_reduction(n: Node) -> bool:
    return OPS[n.op].kind is OpKind.REDUCTION


def _emit_sweep(em: Emitter, body: Graph, info: GroupInfo, indent: int) -> list[str]:
    """One sweep per reduction level (each accumulates that level's reductions and writes the outputs it can), then
    one writing the outputs computed from the last level's reductions, as the CPU backend's kernels run a group."""
    outer_scope, em.scope = em.scope, Scope(body, set())
    for n in body.nodes:  # the 0-d values every element reads, once, before the loops
        if n.op != "input" and n not in info.amap:
            em.emit_node(n, indent)
    members = [n for n in body.nodes if n in info.amap]
    names = {n: em.vname(n) for n in members}
    arrays = [n for n in members if n in body.outputs and not _is_reduction(n)]
    levels = sorted({info.level[n] for n in members if _is_reduction(n)})
    written: set[Node] = set()
    for level in levels:
        targets = [n for n in members if _is_reduction(n) and info.level[n] == level]
        writes = [n for n in arrays if info.level[n] < level and n not in written]
        _sweep(em, body, info, names, targets, writes, indent)
        written.update(writes)
    rest = [n for n in arrays if n not in written]
    if rest:
        _sweep(em, body, info, names, [], rest, indent)
    em.scope = outer_scope
    return [names[o] for o in body.outputs]


def _needed(roots: list[Node], info: GroupInfo) -> set[Node]:
    """The members a sweep computes for ``roots``: their member operands, transitively, up to earlier reductions."""
    seen: set[Node] = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        stack.extend(i for i in n.inputs if i in info.amap and (i in roots or not _is_reduction(i)))
    return seen


def _sweep(em: Emitter, body: Graph, info: GroupInfo, names: dict[Node, str], targets: list[Node],
           writes: list[Node], indent: int) -> None:
    """One loop nest over the domain: compute what ``targets`` (reductions) and ``writes`` (outputs) read, once
    per element; a value read twice gets a temporary, a value read once goes into its reader's expression."""
    needed = _needed(targets + writes, info)
    order = [n for n in body.nodes if n in needed]
    uses = {n: sum(u.inputs.count(n) for u in order) + (n in writes) for n in order}
    for n in targets:
        acc = shared.accumulator_dtype(n.op, n.tensor_type.dtype)
        em.write(indent, f"{names[n]} = {shared.reduction_init(n.op, acc)}")
    for n in writes:
        em.write(indent, f"{names[n]} = np.empty({info.domain!r}, {dtype_ctor(n.tensor_type.dtype)})")
    loop_vars = [f"f{d}" for d in range(len(info.domain))]
    for d, extent in enumerate(info.domain):
        em.write(indent + d, f"for {loop_vars[d]} in range({extent}):")
    inner = indent + len(info.domain)
    index = ", ".join(loop_vars)
    texts: dict[Node, str] = {}

    def operand(i: Node, reader: Node) -> str:
        if i in texts:
            return texts[i]
        if i in names and _is_reduction(i):
            return names[i]  # an earlier level's result: a scalar by now
        if not is_array(i):
            return em.var[i]
        offset = reader.tensor_type.ndim - i.tensor_type.ndim
        axes = info.amap[reader]
        parts = ["0" if size == 1 else loop_vars[axes[offset + k]]  # type: ignore[index]
                 for k, size in enumerate(i.tensor_type.shape)]
        return f"{em.var[i]}[{', '.join(parts)}]"

    for n in order:
        if n in targets:
            (x,) = n.inputs
            acc = shared.accumulator_dtype(n.op, n.tensor_type.dtype)
            value = operand(x, n) if x in texts else f"{em.var[x]}[{index}]"
            if n.op not in ("any", "all"):  # those combine truth values of the reduced dtype
                value = cast_text(value, x.tensor_type.dtype, acc)
            em.write(inner, f"{names[n]} = {cpu_emitters.reduction_combine(n.op, names[n], value)}")
            continue
        text = wrap(em.op_text(n, [operand(i, n) for i in n.inputs]), n.tensor_type.dtype)
        if uses[n] > 1:
            temp = "e" + names[n][1:]
            em.write(inner, f"{temp} = {text}")
            text = temp
        texts[n] = text
        if n in writes:
            em.write(inner, f"{names[n]}[{index}] = {text}")
    for n in targets:
        em.write(indent, f"{names[n]} = {dtype_ctor(n.tensor_type.dtype)}({names[n]})")
