"""Turn one fusion group, specialised to a rank and broadcast pattern, into readable Python source for Numba.

The kernel for a group with reduction axes ``R`` over domain axes ``O + R`` reads, per outer index, like the
plan in :mod:`jitgraph.passes.fuse` describes::

    def fused_max_subtract_exp_sum_0(n0, n1, a0, o0):
        for i0 in range(np.uint64(lo), np.uint64(hi)):  # outer axes; [lo, hi) is this thread's chunk
            acc3_0 = ...                       # level-1 sweep: max, 4 independent lanes
            for i1 in range(0, n1 - n1 % 4, 4): ...
            v3 = ...                           # reduction result, in a register
            for i1 in range(n1): ...           # level-2 sweep: sum of exp(x - max)
            for i1 in range(n1): o0[i0, i1] = ...  # final sweep writes the full-shape outputs

Sizes are arguments, so one kernel serves every shape with the same rank and broadcast pattern. Every operand is
read at the top of the iteration and every output written at the end, which is what makes writing an output into
an operand's own buffer (in-place updates) safe. Intermediates are locals named after the body's ``%k``. When the
launch moves more bytes than the last-level cache holds, the final sweep computes each fresh output row into a
scratch row and writes it with streaming stores (:mod:`streaming`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from jitgraph.backends.cpu import column_sweep, divisions, flat_body, row_prefetch, streaming, sweep_helpers
from jitgraph.backends.cpu import emitters as E
from jitgraph.backends.cpu.reduction_lanes import LANES, block_sum, lane_count
from jitgraph.backends.cpu.reduction_lanes import combine as _combine
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops import OPS, OpKind
from jitgraph.ir.ops.cost import worth_keeping
from jitgraph.ir.printer import format_value, node_names

BLOCK = 256  # elements per block of a reduction sweep (its buffers stay in L1)


@dataclass(frozen=True)
class ArrayArg:
    """A kernel array argument: which body value, and which loop dims it walks (False: broadcast, index 0)."""

    name: str
    value: Node
    walks: tuple[bool, ...]


@dataclass
class KernelSpec:
    """Everything the source depends on; its text is the cache key, so no shape appears in it."""

    name: str
    body: Graph
    rank: int
    inner: tuple[int, ...]  # loop dims that are reduced (always the last ones)
    arrays: list[ArrayArg]
    scalars: list[tuple[str, Node]]
    outputs: list[ArrayArg]
    full: set[Node]  # members that vary along the reduced dims
    level: dict[Node, int]
    math: str = "fast"
    math_table: dict | None = None
    head: Node | None = None
    mean_counts: dict[Node, str] = field(default_factory=dict)
    use_of: dict[tuple[Node, Node], str] = field(default_factory=dict)  # (consumer, operand) -> array arg name
    stream: frozenset[str] = frozenset()  # outputs to write with streaming stores where they can (streaming.py)
    # Reductions over axis 0 of a matrix with more than one column: float32 sums accumulate in float32, row after
    # row, as NumPy's own reduction does there (bit for bit; column_sweep.py).
    narrow_columns: bool = False


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 1

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)


def _is_member(n: Node) -> bool:
    return n.op not in ("input", "const")


class _Emit:
    def __init__(self, spec: KernelSpec) -> None:
        self.spec = spec
        names = node_names(spec.body)
        self.var = {n: "v" + names[n].lstrip("%") for n in spec.body.nodes}
        self.members = [n for n in spec.body.nodes if _is_member(n) and n is not spec.head]
        self.args = {a.name: a for a in spec.arrays}
        self.loads_for: dict[Node, list[ArrayArg]] = {}
        for a in spec.arrays:
            self.loads_for.setdefault(a.value, []).append(a)
        self.outer_dims = tuple(d for d in range(spec.rank) if d not in spec.inner)
        self.reductions = [n for n in self.members if OPS[n.op].kind is OpKind.REDUCTION]
        self.used_math: set[tuple[str, str]] = set()
        self.helpers: list[list[str]] = []  # reassociable sweep blocks (sweep_helpers.py), emitted before the kernel
        self._done_set: set[Node] = set()
        self._lanes: dict[Node, int] = {}  # accumulators each reduction declares (its sweep decides)

    def operand(self, n: Node) -> bool:
        """Values the kernel loads from memory: body inputs and the BLAS product of an epilogue."""
        return n.op == "input" or n is self.spec.head

    # -- expressions ---------------------------------------------------------------------------------------------
    def expr(self, node: Node, suffix: str) -> str:
        skip = node.inputs[0] if node.op == "setitem" else None  # the assignment target is not read
        inputs = ["None" if i is skip and k == 0 else self.ref(i, suffix, node) for k, i in enumerate(node.inputs)]
        ctx = E.EmitContext(node, tuple(i.type.dtype for i in node.inputs), node.type.dtype, self.spec.math,
                            self.spec.math_table, self.used_math)
        if node.op == "reshape":
            return inputs[0]
        return E.cast(E.EMITTERS[node.op](inputs, ctx), node.type.dtype)

    def ref(self, node: Node, suffix: str, consumer: Node | None = None) -> str:
        if self.operand(node) and not self._invariant(node):
            arg = self.args[self.spec.use_of[(consumer, node)]]
            return f"x{arg.name}" + (suffix if self._walks_inner(arg) else "")
        if node.op == "const" or self._invariant(node) or node not in self.spec.full:
            return self.var[node]
        return self.var[node] + suffix

    def _invariant(self, node: Node) -> bool:
        return node in self.scalar_nodes

    def index(self, arg: ArrayArg, idx: dict[int, str]) -> str:
        parts = [idx[d] if walk else "0" for d, walk in enumerate(arg.walks)]
        return f"{arg.name}[{', '.join(parts)}]"

    # -- statements ------------------------------------------------------------------------------------------
    def compute(self, w: _Writer, targets: list[Node], idx: dict[int, str], suffix: str, inner: bool,
                have: set[Node] | None = None, fast: dict[Node, str] | None = None) -> None:
        """Load and compute the full values ``targets`` need (in body order); ``have`` are already defined,
        ``fast`` replaces some members' expressions."""
        fast = fast or {}
        needed: set[Node] = set()
        stack = list(targets)
        have = have or set()
        while stack:
            n = stack.pop()
            if n in have or n in needed or (not self.operand(n) and n not in self.spec.full) or n.op == "const":
                continue
            if self.operand(n) and not any(self._walks_inner(a) for a in self.loads_for.get(n, [])):
                continue
            needed.add(n)
            if not self.operand(n):
                stack.extend(n.inputs)
        for n in self.spec.body.nodes:
            if n in needed and self.operand(n):
                self.load(w, n, idx, suffix, inner=True)
        for n in self.spec.body.nodes:
            if n in needed and not self.operand(n):
                w(f"{self.var[n]}{suffix} = {fast[n] if n in fast else self.expr(n, suffix)}")

    def _walks_inner(self, a: ArrayArg) -> bool:
        return any(a.walks[d] for d in self.spec.inner)

    def load(self, w: _Writer, n: Node, idx: dict[int, str], suffix: str, inner: bool) -> None:
        for a in self.loads_for.get(n, []):
            if self._walks_inner(a) == inner:
                w(f"x{a.name}{suffix if inner else ''} = {self.index(a, idx)}")

    def loops(self, w: _Writer, dims: tuple[int, ...], idx: dict[int, str], chunked: bool) -> None:
        for k, d in enumerate(dims):
            # The chunk's loop runs in uint64: Numba adds no negative-index wraparound check to unsigned indices,
            # which would otherwise keep LLVM from vectorising (a range from an argument is not provably >= 0).
            w(f"for i{d} in range(np.uint64(lo), np.uint64(hi)):" if chunked and k == 0 else
              f"for i{d} in range(n{d}):")
            w.depth += 1
            idx[d] = f"i{d}"

    def source(self) -> list[str]:
        spec = self.spec
        sizes = [f"n{d}" for d in range(spec.rank)]
        # An output written in place through an input's own argument (see launch.GroupKernel._store_through) is no
        # parameter of its own.
        inputs = {a.name for a in spec.arrays}
        params = ["lo", "hi", *sizes, *(a.name for a in spec.arrays), *(s for s, _ in spec.scalars),
                  *(o.name for o in spec.outputs if o.name not in inputs)]
        fname = spec.name
        self.prologue: list[str] = []
        self.fence = False
        w = _Writer()
        w.lines.append(f"def {fname}({', '.join(params)}):")
        # Constants, scalar arguments and 0-d arithmetic: once per call.
        self.scalar_nodes: set[Node] = set()
        for n in spec.body.nodes:
            if n.op == "const":
                w(f"{self.var[n]} = {E.literal(n)}")
                self.scalar_nodes.add(n)
        for s, n in spec.scalars:
            w(f"{self.var[n]} = {s}")
            self.scalar_nodes.add(n)
        for n in self.members:
            if n not in spec.full and OPS[n.op].kind is OpKind.ELEMENTWISE and \
                    all(i in self.scalar_nodes for i in n.inputs):
                w(f"{self.var[n]} = {self.expr(n, '')}")
                self.scalar_nodes.add(n)
        for n, count in spec.mean_counts.items():
            w(f"cnt{self.var[n]} = {count}")
        idx: dict[int, str] = {}
        top = len(w.lines)
        if spec.inner and column_sweep.fits(self):
            column_sweep.column_body(self, w, idx)
        elif spec.inner and column_sweep.fits_levels(self):
            column_sweep.levels_body(self, w, idx)
        elif not spec.inner:
            flat_body.flat_body(self, w, idx)
        else:
            self.loops(w, self.outer_dims, idx, bool(self.outer_dims))
            self._reduction_body(w, idx)
        w.lines[top:top] = ["    " + line for line in self.prologue]
        if self.fence:
            w.depth = 1
            w("jg_stream_fence()  # the streamed rows reach memory before the launcher returns them")
        return w.lines

    def _reduction_body(self, w: _Writer, idx: dict[int, str]) -> None:
        spec = self.spec
        for n in spec.body.nodes:
            if self.operand(n):
                self.load(w, n, idx, "", inner=False)
        levels = sorted({spec.level[r] for r in self.reductions})
        self._outer_values(w, 0)
        finals = [o for o in spec.outputs if o.value in spec.full]
        keep: list[Node] = []
        for k, lvl in enumerate(levels):
            reds = [r for r in self.reductions if spec.level[r] == lvl]
            if lvl == levels[-1] and finals:
                keep = self.scratch_candidates(reds, [o.value for o in finals])
            # The first sweep brings the row into cache; the later ones compute on it and prefetch the next row.
            rows = row_prefetch.next_rows(spec, self.outer_dims) if k >= 1 else []
            self._sweep(w, reds, idx, keep, rows)
            self._outer_values(w, lvl)
        if finals:
            w("# final sweep: full-shape outputs" + (" (costly values reloaded from the last sweep)" if keep else ""))
            streamed = [o for o in finals if streaming.row_streamable(spec, o)]
            swept = self._closure([o.value for o in finals], stop=set(keep))
            recips, fast = divisions.row_divisions(self, [n for n in self.members if n in swept])
            if fast:  # divisions by a value of the row: products when every reciprocal qualifies (divisions.py)
                for name, value in recips.items():
                    w(f"{name} = {value}")
                w(f"if {' and '.join(f'{name} != 0.0' for name in recips)}:")
                w.depth += 1
                self._final_sweep(w, idx, finals, keep, streamed, fast)
                w.depth -= 1
                w("else:")
                w.depth += 1
                self._final_sweep(w, idx, finals, keep, streamed, {})
                w.depth -= 1
            else:
                self._final_sweep(w, idx, finals, keep, streamed, {})
            for o in streamed:  # the row was computed into L1; it goes to memory past the caches
                self.scratch(w, f"st{o.name}", "n1", o.value.type.dtype)
                w(f"jg_stream_row({o.name}, i0, st{o.name})")
                self.fence = True
        for o in spec.outputs:
            if o.value not in spec.full:
                w(f"{self.index(o, idx)} = {self.var[o.value]}")

    def _final_sweep(self, w: _Writer, idx: dict[int, str], finals: list[ArrayArg], keep: list[Node],
                     streamed: list[ArrayArg], fast: dict[Node, str]) -> None:
        """The loop over the reduced axes writing the full-shape outputs (``fast``: members' expressions replaced)."""
        depth = w.depth
        self.loops(w, self.spec.inner, idx, False)
        for n in keep:
            w(f"{self.var[n]} = sc{self.var[n]}[i{self.spec.inner[-1]}]")
        self.compute(w, [o.value for o in finals], idx, "", inner=True, have=set(keep), fast=fast)
        for o in finals:
            target = f"st{o.name}[i1]" if o in streamed else self.index(o, idx)
            w(f"{target} = {self.ref(o.value, '')}")
        w.depth = depth

    def _outer_values(self, w: _Writer, lvl: int) -> None:
        for n in self.members:
            if n in self.spec.full or n in self.scalar_nodes or n in self.reductions:
                continue
            if self.spec.level[n] == lvl and n not in self._done:
                w(f"{self.var[n]} = {self.expr(n, '')}")
                self._done.add(n)

    @property
    def _done(self) -> set[Node]:
        return self._done_set

    def _sweep(self, w: _Writer, reds: list[Node], idx: dict[int, str], keep: list[Node],
               rows: list[ArrayArg]) -> None:
        """One pass over the reduced axes computing ``reds``, blocked so that both halves vectorise.

        Per block of the innermost reduced axis, the reductions' operands are computed into small buffers (an
        elementwise loop, which LLVM vectorises, math library included), then folded into accumulators
        (:mod:`reduction_lanes`; float32 sums accumulate in float64). ``keep``: full values the final sweep would
        recompute at some cost; they are stored into row scratch buffers here and loaded there instead. ``rows``: arrays whose
        next row the block loops prefetch (row_prefetch.py).
        """
        spec = self.spec
        w(f"# level-{spec.level[reds[0]]} sweep: {', '.join(r.op for r in reds)}")
        accs = {r: E.accumulator_dtype(r) for r in reds}
        *outer_r, last = spec.inner
        direct = not keep and all(self.operand(r.inputs[0]) for r in reds)
        blocks = direct and all(block_sum(r) and self._walks(r, last) for r in reds)
        # A sum whose blocks a vectorised helper adds needs one accumulator; the reductions folded value by value
        # need one each or LANES (reduction_lanes.py).
        summed = {r for r in reds if block_sum(r) and (blocks or not direct)}
        folded = lane_count([r for r in reds if r not in summed])
        for r in reds:
            v = self.var[r]
            init = E.reduction_init(r.op, accs[r])
            self._lanes[r] = 1 if r in summed else folded
            w(" = ".join(f"acc{v}_{lane}" for lane in range(self._lanes[r])) + f" = {init}")
            if not direct and not all(block_sum(x) for x in reds) and not self._in_loop(r):
                self.scratch(w, f"buf{v}", str(BLOCK), self._buffer_dtype(r, accs[r]))  # block sums need none
        for n in keep:
            self.scratch(w, f"sc{self.var[n]}", f"n{last}", n.type.dtype)
        depth = w.depth
        self.loops(w, tuple(outer_r), idx, False)
        prefetch = row_prefetch.block_lines(rows if blocks or not direct else [], {a.name for a in spec.arrays})
        if prefetch:  # only the block loops prefetch; direct lanes have none
            w(row_prefetch.NEXT_ROW)
        if blocks:
            self._direct_blocks(w, reds, accs, idx, last, prefetch)
        elif direct:
            self._direct_lanes(w, reds, accs, idx, last)
        else:
            self._blocked_lanes(w, reds, accs, idx, last, keep, prefetch)
        w.depth = depth
        self._finish(w, reds)

    def _in_loop(self, r: Node) -> bool:
        """Whether ``r`` folds each value where it is computed, not from a buffer (reduction_lanes.py)."""
        return not block_sum(r) and self._lanes.get(r) == 1

    def _buffer_dtype(self, r: Node, acc: np.dtype) -> np.dtype:
        """Block sums buffer values in their own dtype (the helper sums a block in it); other reductions in the
        accumulator's."""
        return r.inputs[0].type.dtype if block_sum(r) else acc

    def _operand_arg(self, r: Node) -> ArrayArg:
        """The kernel argument a reduction reads its operand from."""
        return self.args[self.spec.use_of[(r, r.inputs[0])]]

    def _walks(self, r: Node, last: int) -> bool:
        """Whether ``r``'s operand walks the innermost reduced axis (so its blocks are slices of a row)."""
        return self._operand_arg(r).walks[last]

    def _slice_of(self, r: Node, idx: dict[int, str], last: int) -> str | None:
        """``a0[i0, jb:jb + m]``: the block of ``r``'s operand, when it walks the innermost reduced axis."""
        if not self._walks(r, last):
            return None
        arg = self._operand_arg(r)
        saved = idx.get(last)
        idx[last] = "jb:jb + m"
        text = self.index(arg, idx)
        if saved is None:
            del idx[last]
        else:
            idx[last] = saved
        return text

    def _direct_blocks(self, w: _Writer, reds: list[Node], accs: dict, idx: dict[int, str], last: int,
                       prefetch: list[str]) -> None:
        """Float sums of operands as loaded: a vectorised helper sums each block of the row in place."""
        w(f"for jb in range(0, n{last}, {BLOCK}):")
        w(f"    m = jg_imin({BLOCK}, n{last} - jb)")
        for line in prefetch:
            w(f"    {line}")
        for r in reds:
            v = self.var[r]
            block = f"{block_sum(r)}({self._slice_of(r, idx, last)})"
            w(f"    acc{v}_0 = acc{v}_0 + {E.cast(block, accs[r])}")

    def _direct_lanes(self, w: _Writer, reds: list[Node], accs: dict, idx: dict[int, str], last: int) -> None:
        """Reductions of operands as loaded: lanes read memory directly, no buffer."""
        if all(self._lanes[r] == 1 for r in reds):  # LLVM vectorises this loop itself
            w(f"for j in range(n{last}):")
            idx[last] = "j"
            self._fold(w, reds, accs, idx, 0, "    ")
            return
        w(f"for j in range(0, n{last} - n{last} % {LANES}, {LANES}):")
        for lane in range(LANES):
            idx[last] = f"j + {lane}" if lane else "j"
            self._fold(w, reds, accs, idx, lane, "    ")
        w(f"for j in range(n{last} - n{last} % {LANES}, n{last}):")
        idx[last] = "j"
        self._fold(w, reds, accs, idx, 0, "    ")

    def _fold(self, w: _Writer, reds: list[Node], accs: dict, idx: dict[int, str], lane: int, pad: str) -> None:
        for r in reds:
            (src,) = r.inputs
            arg = self._operand_arg(r)
            v = self.var[r]
            value = E.cast(self.index(arg, idx), accs[r], src.type.dtype)
            w(f"{pad}acc{v}_{lane} = {_combine(r, f'acc{v}_{lane}', value, accs[r], self._lanes[r])}")

    def _blocked_lanes(self, w: _Writer, reds: list[Node], accs: dict, idx: dict[int, str], last: int,
                       keep: list[Node], prefetch: list[str]) -> None:
        if not prefetch and all(self._in_loop(r) for r in reds):  # one loop over the row (``_element_loop``)
            self._element_loop(w, reds, accs, idx, last, keep, f"n{last}")
            return
        w(f"for jb in range(0, n{last}, {BLOCK}):")
        w.depth += 1
        w(f"m = jg_imin({BLOCK}, n{last} - jb)")
        for line in prefetch:
            w(line)
        if all(block_sum(r) for r in reds):  # the whole block in a reassociable helper (sweep_helpers.py)
            name = f"{self.spec.name}_sweep{len(self.helpers)}"
            lines, call = sweep_helpers.helper(self, _Writer(), name, reds, idx, last, keep)
            self.helpers.append(lines)
            w(f"bs_ = {call}")
            for k, r in enumerate(reds):
                v = self.var[r]
                w(f"acc{v}_0 = acc{v}_0 + {E.cast(f'bs_[{k}]', accs[r])}")
            w.depth -= 1
            return
        # The loop variable indexes the arrays directly (jb + k would cost the vectoriser a wraparound check).
        self._element_loop(w, reds, accs, idx, last, keep, "jb, jb + m")
        for r in reds:
            v = self.var[r]
            if block_sum(r):
                w(f"acc{v}_0 = acc{v}_0 + {E.cast(f'{block_sum(r)}(buf{v}[:m])', accs[r])}")
        lanes = [r for r in reds if not block_sum(r) and not self._in_loop(r)]
        if lanes:
            # Scalar lane accumulators (registers) for the other reductions (max, min, prod, integer sums).
            w(f"for k in range(0, m - m % {LANES}, {LANES}):")
            for r in lanes:
                v = self.var[r]
                for lane in range(LANES):
                    k = f"k + {lane}" if lane else "k"
                    w(f"    acc{v}_{lane} = {_combine(r, f'acc{v}_{lane}', f'buf{v}[{k}]', accs[r], LANES)}")
            w(f"for k in range(m - m % {LANES}, m):")
            for r in lanes:
                v = self.var[r]
                w(f"    acc{v}_0 = {_combine(r, f'acc{v}_0', f'buf{v}[k]', accs[r], LANES)}")
        w.depth -= 1

    def _element_loop(self, w: _Writer, reds: list[Node], accs: dict, idx: dict[int, str], last: int,
                      keep: list[Node], bounds: str) -> None:
        """``for i in range(bounds)``: each reduction's operand computed and folded into its accumulator where it
        folds in the loop, else buffered at its place in the block (``i - jb``); kept values to their scratch rows.

        Without blocks (``bounds`` the whole row: every reduction folds in the loop and nothing is prefetched) LLVM
        vectorises the fold as it does the loaded-operand one. In blocks of ``BLOCK`` each block's remainder after
        its unrolled vector loop ran in scalar code: ``np.abs(x).max(axis=1)`` over (1024, 256) float32 took 134 us
        on one thread that way, 51 us in one loop (NumPy's calls: 177-196 us); the same values in the same order."""
        w(f"for i{last} in range({bounds}):")
        w.depth += 1
        idx[last] = f"i{last}"
        self.compute(w, [r.inputs[0] for r in reds], idx, "", inner=True)
        for r in reds:
            (src,) = r.inputs
            value = E.cast(self.ref(src, "", r), self._buffer_dtype(r, accs[r]), src.type.dtype)
            v = self.var[r]
            w(f"acc{v}_0 = {_combine(r, f'acc{v}_0', value, accs[r], 1)}" if self._in_loop(r) else
              f"buf{v}[i{last} - jb] = {value}")
        for n in keep:
            w(f"sc{self.var[n]}[i{last}] = {self.var[n]}")
        w.depth -= 1

    def _finish(self, w: _Writer, reds: list[Node]) -> None:
        for r in reds:
            v = self.var[r]
            lanes = [f"acc{v}_{lane}" for lane in range(self._lanes[r])]
            while len(lanes) > 1:  # pairwise, like the lanes' own order
                acc = E.accumulator_dtype(r)
                lanes = [f"({_combine(r, a, b, acc, LANES)})" for a, b in zip(lanes[::2], lanes[1::2])]
            total = lanes[0]
            if r.op == "mean":
                total = E.mean_total(total, f"cnt{v}", r.type.dtype)
            w(f"{v} = {E.cast(total, r.type.dtype)}")
            self._done.add(r)

    def scratch(self, w: _Writer, name: str, size: str, dtype: np.dtype) -> None:
        """A scratch buffer, allocated once per call (each thread's call has its own; ``jg_empty``: helpers.py)."""
        self.prologue.append(f"{name} = jg_empty({size}, {E.np_name(dtype)})")

    def scratch_candidates(self, reds: list[Node], finals: list[Node]) -> list[Node]:
        """Full values computed for ``reds`` that the final sweep needs and that contain transcendental math."""
        if len(self.spec.inner) != 1:
            return []
        swept = self._closure([r.inputs[0] for r in reds])
        final = self._closure(finals)
        keep = [n for n in self.spec.body.nodes if n in swept and n in final and not self.operand(n)
                and worth_keeping(n.op) and all(u in final or u in swept for u in [n])]
        # Only the outermost costly values: what they are computed from need not be kept too.
        return [n for n in keep if not any(n in self._closure([k]) and k is not n for k in keep)]

    def _closure(self, targets: list[Node], stop: set[Node] | None = None) -> set[Node]:
        seen: set[Node] = set()
        stack = list(targets)
        stop = stop or set()
        while stack:
            n = stack.pop()
            if n in seen or n in stop or n not in self.spec.full or self.operand(n):
                continue
            seen.add(n)
            stack.extend(n.inputs)
        return seen


def kernel_source(spec: KernelSpec, cache: bool) -> str:
    """Module source of the kernel: one function over the outer-loop chunk ``[lo, hi)``.

    Parallelism is by chunks of the outermost loop, run on a small thread pool (:mod:`threads`), rather than
    Numba's ``prange``: a parallel Numba function takes 2.5x longer to compile, and its threading layers spin or
    oversubscribe next to OpenBLAS (see :mod:`jitgraph.backends.cpu.threads`)."""
    emit = _Emit(spec)
    body = [f"@njit(cache={cache}, error_model='numpy', fastmath=False, nogil=True)"] + emit.source() + ["", ""]
    for lines in emit.helpers:
        body = [line.replace("cache=CACHE", f"cache={cache}") for line in lines] + ["", ""] + body
    used = emit.used_math
    # The docstring shows the body without sizes: the source (the cache key) must not depend on shapes.
    text = re.sub(r"\[[0-9,]+\]", lambda m: "[" + ",".join("_" for _ in m.group().split(",")) + "]", str(spec.body))
    text = re.sub(r"shape=\([^)]*\)", "shape=...", re.sub(r"input\[[^\]]*\]", "input", text))
    doc = text.replace('"""', "'''").replace("\\", "\\\\").splitlines()
    header = [f'"""Generated by jitgraph: kernel {spec.name}. Body:', *("    " + line for line in doc), '"""',
              "import math", "", "import numpy as np", "from jitgraph.backends.cpu.vector_width import njit", "",
              "from jitgraph.backends.cpu.helpers import *  # noqa: F403"]
    if used:
        header.append("from jitgraph.backends.cpu.mathlib import VECTOR_MATH as _VM")
        header += [f"VM_{name}_{dt} = _VM[({name!r}, {dt!r})]" for name, dt in sorted(used)]
    return "\n".join(header + ["", ""] + body).rstrip() + "\n"


__all__ = ["ArrayArg", "KernelSpec", "format_value", "kernel_source"]
