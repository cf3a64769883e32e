"""A fused group as the cost model sees it (``ir/ops/cost.py``): what NumPy would compute for each of its ops, and
what the generated kernel computes, sweep by sweep.

Why apart from ``program.py``: the driver asks this once per group at compile time to decide whether the group runs
as its kernel or as NumPy calls in the driver (``numpy_is_enough``); how many sweeps a value costs depends on the
kernel's plan (``launch.GroupKernel``: reduction levels, full-shape members, scratch rows), not on the driver.
"""

from __future__ import annotations

import math

from jitgraph.backends.cpu.launch import GroupKernel
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops import OPS, OpKind
from jitgraph.ir.ops.cost import GroupWork, OpWork, worth_keeping


def group_work(node: Node, kernel: GroupKernel, writes_in_place: bool) -> GroupWork | None:
    """What the cost model weighs to choose between the fused ``node``'s kernel and its NumPy calls, or None when
    the kernel is not in question: only groups of plain elementwise ops and reductions, with no output planned into
    a caller's buffer, may run as NumPy calls in the driver; and a BLAS product with such an epilogue (``x @ W + b``),
    which both ways calls the same BLAS routine (not an in-place ``gemm`` update, which needs no kernel)."""
    head = kernel.head
    if writes_in_place or (head is not None and (kernel.update is not None or head.op != "matmul")):
        return None
    members = [m for m in node.regions[0].nodes if m.op not in ("input", "const") and m is not head]
    if any(m.op == "setitem" or OPS[m.op].kind not in (OpKind.ELEMENTWISE, OpKind.REDUCTION) for m in members):
        return None
    arrays = [m for m in members if m.type.shape != () or OPS[m.op].kind is OpKind.REDUCTION]
    sweeps = sweeps_per_member(node.regions[0], kernel)
    innermost = len(kernel.domain) - 1 in kernel.raxes
    work = GroupWork(ops=tuple(op_work(m, sweeps.get(m, 1), innermost) for m in arrays),
                     scalar_ops=len(members) - len(arrays),
                     elements=math.prod(kernel.domain), arrays=len(kernel.uses) + len(kernel.kernel_outputs),
                     itemsize=max((m.type.dtype.itemsize for m in members), default=8),
                     parallel_from=kernel.threshold, blas=head is not None)
    return work if work.ops else None


def sweeps_per_member(body: Graph, kernel: GroupKernel) -> dict[Node, int]:
    """How many sweeps over the domain compute each full-shape member: one per reduction level it feeds, plus the
    final sweep when it feeds a full-shape output (values of the outer axes only are computed once per row)."""
    needs: dict[Node, set[int | str]] = {}
    outputs = set(body.outputs)
    for m in reversed(body.nodes):
        mine: set[int | str] = set()
        if m in outputs and m in kernel.full:
            mine.add("out")
        for user in (u for u in body.nodes if m in u.inputs):
            if OPS[user.op].kind is OpKind.REDUCTION and m in kernel.full:
                mine.add(kernel.info.level.get(user, 0))
            elif user in kernel.full:
                mine |= needs.get(user, set())
        if worth_keeping(m.op) and len(mine) > 1:  # computed once, kept in a scratch row (kernel_source.py)
            mine = {min(mine, key=str)}
        needs[m] = mine
    return {m: max(len(n), 1) for m, n in needs.items() if m in kernel.full}


def op_work(member: Node, sweeps: int, innermost: bool) -> OpWork:
    """The cost model's view of one array op of a group: what NumPy computes for it, and what the kernel does (a
    full-shape value in each sweep that needs it, a smaller one once). ``innermost``: the kernel reduces along its
    innermost axis (a reduction there over a value computed in the group is a chain, ``OpWork.chained``)."""
    if OPS[member.op].kind is OpKind.REDUCTION:
        size = math.prod(member.inputs[0].type.shape)
        return OpWork(member.op, size, True, size, innermost and member.inputs[0].op != "input")
    size = math.prod(member.type.shape)
    return OpWork(member.op, size, False, size * sweeps)
