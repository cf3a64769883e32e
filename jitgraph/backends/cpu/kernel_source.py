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

The reduction sweeps are :mod:`row_sweep`'s; a group reduced over a matrix's columns takes :mod:`column_sweep`'s
template, an elementwise one :mod:`flat_body`'s loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from jitgraph.backends.cpu import column_sweep, divisions, flat_body, row_prefetch, row_sweep, streaming
from jitgraph.backends.cpu import emitters as E
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops import OPS, OpKind
from jitgraph.ir.ops.cost import worth_keeping
from jitgraph.ir.printer import format_value, node_names


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
    # float32 divisions by the divider only, where the products would also do (measured_choice.py builds both)
    divide: bool = False


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
        self.lanes: dict[Node, int] = {}  # accumulators each reduction declares (its sweep decides)

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
            row_sweep.sweep(self, w, reds, idx, keep, rows)
            self._outer_values(w, lvl)
        if finals:
            w("# final sweep: full-shape outputs" + (" (costly values reloaded from the last sweep)" if keep else ""))
            streamed = [o for o in finals if streaming.row_streamable(spec, o)]
            swept = self._closure([o.value for o in finals], stop=set(keep))
            recips, fast = divisions.row_divisions(self, [n for n in self.members if n in swept])

            def sweep(products: bool) -> None:
                self._final_sweep(w, idx, finals, keep, streamed, fast if products else {})

            if fast:  # divisions by a value of the row: products when every reciprocal qualifies (divisions.py)
                divisions.products_or_divisions(w, recips, [], sweep)
            else:
                sweep(False)
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
