"""``fused`` nodes: the pipeline's fusion plan (:mod:`jitgraph.passes.fuse`), emitted as the driver's loop nests.

A kernel group is an iteration domain plus the axes its reductions reduce, and every member lines up with the
domain through an axis map (:func:`jitgraph.ir.fusion_groups.group_info`). A group whose reductions reduce trailing
axes (rows, or the whole domain) or that has none runs as the CPU backend's kernels run it: a loop over the other
axes, and inside it one sweep over the reduced axes per reduction level, each accumulating that level's reductions
and writing the outputs it already can, then one sweep writing the outputs computed from the last level
(``x = f(a)`` and ``x.max()``: one loop; softmax: a max sweep, a sum sweep and a write sweep). Each member is
computed once per element of a sweep, as a scalar: a value read twice gets a temporary, a value read once is
written into its reader's expression.

Any other group (a reduction over leading axes, a reshape, a BLAS head, ``mean``) is emitted member by member
(:func:`emit_members`), where :func:`.scope.plan_inline` decides which values stay in registers.

The fusion pass plans region bodies too (recursively), so the ``fused`` nodes of a loop / while / cond body come
here exactly like the top level's: a Newton ``while`` body is one sweep.
"""

from __future__ import annotations

from jitgraph.backends import emitter_table as shared
from jitgraph.backends.cpu.scalar.core import Emitter, cast_text, dtype_ctor, reduction_step, wrap
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
            if n.op not in LOOP_REDUCTIONS or n.attrs.get("dtype") is not None \
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
    swept = set(info.amap)
    if any(n.op != "input" and n not in swept and any(i in swept for i in n.inputs) for n in body.nodes):
        return None  # a 0-d value computed from a member: the sweeps compute 0-d values before they start
    d = len(info.domain)
    numpy_can = all(n.op == "sum" and len(n.attrs["axis"]) == 1 and not n.attrs.get("keepdims")
                    for n in members if OPS[n.op].kind is OpKind.REDUCTION)
    if set(info.raxes) != set(range(d - len(info.raxes), d)) and numpy_can:
        return None  # sweeping leading axes strides through memory: NumPy's axis sum, member by member, does better
    if any(o not in info.amap for o in body.outputs):
        return None
    return info


def _is_reduction(n: Node) -> bool:
    return OPS[n.op].kind is OpKind.REDUCTION


class _Sweeps:
    """The loop nests of one group: outer loops over the axes no reduction reduces, and inside them, per reduction
    level, one sweep over the reduced (trailing) axes, then a sweep writing what the last level feeds. Values that
    walk only the outer axes (reduction results, and what is computed from them per row) are scalars per outer
    index; the rest are computed once per element of each sweep that needs them."""

    def __init__(self, em: Emitter, body: Graph, info: GroupInfo) -> None:
        self.em, self.body, self.info = em, body, info
        self.members = [n for n in body.nodes if n in info.amap]
        reduced = set(info.raxes)
        self.outer_axes = [a for a in range(len(info.domain)) if a not in reduced]
        self.loop_vars = [f"f{a}" for a in range(len(info.domain))]
        # A member walking a reduced axis is computed inside the sweeps; the others once per outer index.
        self.inner = {n for n in self.members if not _is_reduction(n)
                      and (not reduced or any(a in reduced for a in info.amap[n] if a is not None))}
        self.names = {n: em.vname(n) for n in self.members}
        self.scalars: dict[Node, str] = {}  # per outer index: reduction accumulators and outer-only values

    def index(self, n: Node) -> str:
        return ", ".join("0" if a is None else self.loop_vars[a] for a in self.info.amap[n])

    def operand(self, i: Node, reader: Node, texts: dict[Node, str]) -> str:
        if i in texts:
            return texts[i]
        if i in self.scalars:
            return self.scalars[i]
        if not is_array(i):
            return self.em.var[i]
        offset = reader.tensor_type.ndim - i.tensor_type.ndim
        axes = self.info.amap[reader]
        parts = ["0" if size == 1 else self.loop_vars[axes[offset + k]]  # type: ignore[index]
                 for k, size in enumerate(i.tensor_type.shape)]
        return f"{self.em.var[i]}[{', '.join(parts)}]"

    def value(self, n: Node, texts: dict[Node, str]) -> str:
        return wrap(self.em.op_text(n, [self.operand(i, n, texts) for i in n.inputs]), n.tensor_type.dtype)

    def emit(self, indent: int) -> list[str]:
        em, info, body = self.em, self.info, self.body
        self.allocate_outputs(indent)
        for k, a in enumerate(self.outer_axes):
            em.write(indent + k, f"for {self.loop_vars[a]} in range({em.size(info.domain[a])}):")
        at = indent + len(self.outer_axes)
        if not self.sweep_levels(at):
            self.sweep([], [], at)
        if not self.outer_axes:  # whole-domain reductions are the results themselves
            return [self.scalars.get(o, self.names[o]) for o in body.outputs]
        return [self.names[o] for o in body.outputs]

    def allocate_outputs(self, indent: int) -> None:
        """The group's escaping arrays, allocated before its loops."""
        outputs = set(self.body.outputs)
        for n in self.members:
            if n in outputs and is_array(n):
                self.em.write(indent, f"{self.names[n]} = np.empty({self.em.shape_text(n.tensor_type.shape)}, "
                                      f"{dtype_ctor(n.tensor_type.dtype)})")

    def sweep_levels(self, at: int) -> bool:
        """One sweep per reduction level (each also writes the full-shape outputs of lower levels), then one for the
        outputs left; whether any sweep was emitted."""
        info, outputs = self.info, set(self.body.outputs)
        levels = sorted({info.level[n] for n in self.members if _is_reduction(n)})
        written: set[Node] = set()
        self.outer_values(0, at)
        for level in levels:
            targets = [n for n in self.members if _is_reduction(n) and info.level[n] == level]
            writes = [n for n in self.members if n in self.inner and n in outputs and info.level[n] < level
                      and n not in written]
            self.sweep(targets, writes, at)
            written.update(writes)
            self.outer_values(level, at)
        rest = [n for n in self.members if n in self.inner and n in outputs and n not in written]
        if rest:
            self.sweep([], rest, at)
        return bool(levels or rest)

    def outer_values(self, level: int, at: int) -> None:
        """Once per outer index: the outer-only values of ``level`` (after that level's reductions)."""
        for n in self.members:
            if n in self.inner or _is_reduction(n) or self.info.level[n] != level:
                continue
            temp = "e" + self.names[n][1:]
            self.em.write(at, f"{temp} = {self.value(n, {})}")
            self.scalars[n] = temp
            if n in self.body.outputs and is_array(n):
                self.em.write(at, f"{self.names[n]}[{self.index(n)}] = {temp}")

    def needed(self, roots: list[Node]) -> set[Node]:
        """The inner members a sweep computes for ``roots`` (its reductions and writes), transitively."""
        seen: set[Node] = set()
        stack = list(roots)
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                stack.extend(i for i in n.inputs if i in self.inner)
        return seen

    def sweep_body(self, order: list[Node], uses: dict[Node, int], accumulators: dict[Node, str],
                   writes: list[Node], inner: int) -> None:
        """The innermost statements of a sweep: each reduction target combined into its accumulator (a scalar, or
        a column partial's element), other values computed once (a temporary where read twice), the full-shape
        outputs among ``writes`` stored."""
        em = self.em
        texts: dict[Node, str] = {}
        for n in order:
            if n in accumulators:
                (x,) = n.inputs
                acc = shared.accumulator_dtype(n.op, n.tensor_type.dtype)
                value = self.operand(x, n, texts) if x in texts else f"{em.var[x]}[{', '.join(self.loop_vars)}]"
                if n.op not in ("any", "all"):  # those combine truth values of the reduced dtype
                    value = cast_text(value, x.tensor_type.dtype, acc)
                em.write(inner, f"{accumulators[n]} = "
                                f"{reduction_step(n.op, accumulators[n], value, acc)}")
                continue
            text = self.value(n, texts)
            if uses[n] > 1:
                temp = "e" + self.names[n][1:]
                em.write(inner, f"{temp} = {text}")
                text = temp
            texts[n] = text
            if n in writes:
                em.write(inner, f"{self.names[n]}[{self.index(n)}] = {text}")

    def sweep(self, targets: list[Node], writes: list[Node], at: int) -> None:
        em, info = self.em, self.info
        order = [n for n in self.body.nodes if n in self.needed(targets + writes)]
        uses = {n: sum(u.inputs.count(n) for u in order) + (n in writes) for n in order}
        for n in targets:
            acc = shared.accumulator_dtype(n.op, n.tensor_type.dtype)
            name = self.names[n] if not is_array(n) else "r" + self.names[n][1:]
            em.write(at, f"{name} = {shared.reduction_init(n.op, acc)}")
            self.scalars[n] = name
        reduced = list(info.raxes)
        for k, a in enumerate(reduced):
            em.write(at + k, f"for {self.loop_vars[a]} in range({em.size(info.domain[a])}):")
        self.sweep_body(order, uses, {n: self.scalars[n] for n in targets}, writes, at + len(reduced))
        for n in targets:
            final = f"{dtype_ctor(n.tensor_type.dtype)}({self.scalars[n]})"
            em.write(at, f"{self.scalars[n]} = {final}")
            if is_array(n) and n in self.body.outputs:
                em.write(at, f"{self.names[n]}[{self.index(n)}] = {self.scalars[n]}")


class _ColumnSweeps(_Sweeps):
    """The sweeps of a group reducing leading (or middle) axes: each sweep walks the whole domain in memory order
    and keeps one accumulator per outer index in an array (a column max of a C-order matrix walks rows, with the
    per-column partials side by side, which LLVM vectorises), instead of striding through memory once per
    outer index. Values that walk only the outer axes are arrays over the outer axes, filled by a pass over them
    after the reductions of their level."""

    def __init__(self, em: Emitter, body: Graph, info: GroupInfo) -> None:
        super().__init__(em, body, info)
        self.outer_shape = tuple(info.domain[a] for a in self.outer_axes)
        self.outer_index = ", ".join(self.loop_vars[a] for a in self.outer_axes)

    def emit(self, indent: int) -> list[str]:
        self.allocate_outputs(indent)
        self.sweep_levels(indent)
        return [self.names[o] for o in self.body.outputs]

    def _over_outer(self, indent: int) -> int:
        for k, a in enumerate(self.outer_axes):
            self.em.write(indent + k, f"for {self.loop_vars[a]} in range({self.em.size(self.info.domain[a])}):")
        return indent + len(self.outer_axes)

    def outer_values(self, level: int, at: int) -> None:
        """After ``level``'s reductions: its outer-only values, each an array over the outer axes (or written
        straight into its output)."""
        todo = [n for n in self.members if n not in self.inner and not _is_reduction(n) and self.info.level[n] == level]
        if not todo:
            return
        for n in todo:
            if not (n in self.body.outputs and is_array(n)):
                self.em.write(at, f"e{self.names[n][1:]} = np.empty({self.em.shape_text(self.outer_shape)}, "
                                  f"{dtype_ctor(n.tensor_type.dtype)})")
        inner = self._over_outer(at)
        for n in todo:
            target = f"{self.names[n]}[{self.index(n)}]" if n in self.body.outputs and is_array(n) \
                else f"e{self.names[n][1:]}[{self.outer_index}]"
            self.em.write(inner, f"{target} = {self.value(n, {})}")
            self.scalars[n] = target

    def sweep(self, targets: list[Node], writes: list[Node], at: int) -> None:
        em = self.em
        order = [n for n in self.body.nodes if n in self.needed(targets + writes)]
        uses = {n: sum(u.inputs.count(n) for u in order) + (n in writes) for n in order}
        accumulators = {}
        for n in targets:
            acc = shared.accumulator_dtype(n.op, n.tensor_type.dtype)
            name = "r" + self.names[n][1:]
            em.write(at, f"{name} = np.empty({em.shape_text(self.outer_shape)}, {dtype_ctor(acc)})")
            accumulators[n] = f"{name}[{self.outer_index}]"
        if targets:
            start = self._over_outer(at)
            for n in targets:
                acc = shared.accumulator_dtype(n.op, n.tensor_type.dtype)
                em.write(start, f"{accumulators[n]} = {shared.reduction_init(n.op, acc)}")
        for a in range(len(self.info.domain)):
            em.write(at + a, f"for {self.loop_vars[a]} in range({em.size(self.info.domain[a])}):")
        self.sweep_body(order, uses, accumulators, writes, at + len(self.info.domain))
        for n in targets:
            self.scalars[n] = f"{dtype_ctor(n.tensor_type.dtype)}({accumulators[n]})"
        results = [n for n in targets if is_array(n) and n in self.body.outputs]
        if results:
            start = self._over_outer(at)
            for n in results:
                em.write(start, f"{self.names[n]}[{self.index(n)}] = {self.scalars[n]}")


def _emit_sweep(em: Emitter, body: Graph, info: GroupInfo, indent: int) -> list[str]:
    outer_scope, em.scope = em.scope, Scope(body, set(), plan=False)
    for n in body.nodes:  # the 0-d values every element reads, once, before the loops
        if n.op != "input" and n not in info.amap:
            em.emit_node(n, indent)
    d = len(info.domain)
    trailing = set(info.raxes) == set(range(d - len(info.raxes), d))
    outs = (_Sweeps if trailing else _ColumnSweeps)(em, body, info).emit(indent)
    em.scope = outer_scope
    return outs
