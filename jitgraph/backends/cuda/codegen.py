"""Kernel source for elementwise and reduction groups (the matmul template lives in ``matmul.py``).

Families, chosen per group from its domain ``D`` and reduced axes ``R`` (outer axes ``O = D - R``):

* ``elementwise``: a grid-stride loop over the flattened domain; every value in registers, every output stored.
* ``row`` (block per outer index): one block owns one row (outer index) at a time; its threads stride over the
  reduced elements, accumulate in registers, and combine in shared memory (a tree, or warp shuffles on a real
  GPU: the simulator has none). Each reduction level is one sweep over the row, then one sweep writes the
  full-shape outputs, so softmax and layernorm are one kernel per row block.
* ``column`` (a warp of columns per block, rows split between the block's warps): used when the innermost domain
  axis is an outer axis (``x.sum(0)``). Lane ``l`` of every warp owns column ``base + l``, so a warp reads 32
  neighbouring addresses; the block's ``block // 32`` warps (slices) take every slice-th row and combine their
  partials in shared memory. (A thread per column reducing it serially, as before, was latency-bound: the
  (256, 512) column sum of an MLP step's bias gradient took 121 us on an H200; the rows in slices cut the
  dependent chain by the number of slices.)
* ``split`` (two stages): used when there are too few rows to fill the device (full reductions). Stage one: blocks
  own (row, chunk) pairs and write one partial per chunk; stage two: the next kernel combines the partials of a row
  before it uses the value. One kernel per reduction level plus one final kernel.

Reductions accumulate as ``emitters.accumulator_dtype`` says (float32 sums in float64).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitgraph.backends.cuda import emitters as em
from jitgraph.backends.cuda.writer import Writer
from jitgraph.ir.fusion_groups import GroupInfo
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops import OPS, OpKind


@dataclass(frozen=True)
class KernelSource:
    """One generated kernel: its name, source, and how the launcher passes arguments."""

    name: str
    source: str
    family: str
    block: int  # threads per block baked into the source (shared-memory sizes), 0 when free
    phase: int = 0  # split family: which stage (1..levels for partials, levels + 1 for the final kernel)


def reductions(body: Graph) -> list[Node]:
    return [n for n in body.nodes if n.op not in ("input", "const") and OPS[n.op].kind is OpKind.REDUCTION]


def levels(body: Graph, info: GroupInfo) -> int:
    return max((info.level[r] for r in reductions(body)), default=0)


def _outputs(outs: list[Node]) -> list[tuple[str, Node]]:
    """Output parameters are ``o0, o1, ...`` in body-output order."""
    return [(f"o{k}", n) for k, n in enumerate(outs)]


def _scalar_preamble(w: Writer, body: Graph) -> None:
    """0-d values computed from constants and scalar arguments: once per thread, before any loop."""
    for n in body.nodes:
        if n.op in ("input", "const") or n in w.leaf_index or n in w.info.amap:
            continue
        if n.tensor_type.shape == () and OPS[n.op].kind is OpKind.ELEMENTWISE:
            w.value(n)


UNROLL: int | None = None  # elements per thread per trip of the elementwise loop; None: ``unroll_for`` decides
# Measured on an H200 (benchmarks/cuda_elementwise.py): one array read per element wants 8 elements per trip to keep
# enough loads in flight, three want 2, and four or more are slower unrolled (register pressure lowers occupancy).
UNROLL_BY_LOADS = {0: 8, 1: 8, 2: 4, 3: 2}


def unroll_for(leaves: list[Node]) -> int:
    """Elements per thread per trip for an elementwise kernel over ``leaves`` (the arrays it reads)."""
    if UNROLL is not None:
        return UNROLL
    loads = sum(1 for n in leaves if n.tensor_type.shape != ())
    return UNROLL_BY_LOADS.get(loads, 1)


def elementwise(name: str, body: Graph, info: GroupInfo, leaves: list[Node], outs: list[Node],
                scalar_arrays: frozenset[int]) -> KernelSource:
    """A grid-stride loop that handles ``unroll_for(leaves)`` elements per trip: all their loads and arithmetic first,
    then all their stores.

    One element per trip leaves too few bytes in flight to cover DRAM latency when a group reads one or two arrays
    (a GELU over 1e7 floats reached under half of an H200's bandwidth); the compiler cannot hoist the next trip's
    loads above this trip's stores itself, because an output may be an input (in-place updates). Moving loads of
    *other* elements above a store is safe because a group only ever reads an aliased buffer at the element it
    writes (the fusion pass's in-place rule; anything else would already race between threads). The per-element
    work lives in two device functions, ``<name>_point`` (values) and ``<name>_store``, which NVVM inlines.
    """
    outputs = _outputs(outs)
    unroll = unroll_for(leaves)
    sizes = Writer(body, info, leaves, scalar_arrays).size_params()
    axes = list(range(len(info.domain)))

    point = Writer(body, info, leaves, scalar_arrays)
    _scalar_preamble(point, body)
    point.unravel("flat_", axes)
    results = [em.cast(point.value(n), n.tensor_type.dtype, n.tensor_type.dtype) for _, n in outputs]
    point.line(f"return ({', '.join(results)},)")
    point_params = ["flat_"] + point.leaf_params() + sizes

    store = Writer(body, info, leaves, scalar_arrays)
    store.unravel("flat_", axes)
    for k, (param, n) in enumerate(outputs):
        store.line(f"{param}[{store.store_index(n)}] = r_[{k}]")
    store_params = ["flat_", "r_"] + [p for p, _ in outputs] + sizes

    w = Writer(body, info, leaves, scalar_arrays)
    call_args = ", ".join(point.leaf_params() + sizes)
    out_args = ", ".join([p for p, _ in outputs] + sizes)
    w.line(f"total_ = {w.product(axes)}")
    w.line("step_ = cuda.gridsize(1)")
    w.open(f"for base_ in range(cuda.grid(1), total_, {unroll} * step_):")
    w.open(f"if base_ + {unroll - 1} * step_ < total_:")
    for u in range(unroll):
        w.line(f"r{u}_ = {name}_point(base_ + {u} * step_, {call_args})")
    for u in range(unroll):
        w.line(f"{name}_store(base_ + {u} * step_, r{u}_, {out_args})")
    w.close()
    w.open("else:")
    w.open("for flat_ in range(base_, total_, step_):")
    w.line(f"{name}_store(flat_, {name}_point(flat_, {call_args}), {out_args})")
    w.close()
    w.close()
    w.close()
    params = [p for p, _ in outputs] + w.leaf_params() + sizes
    source = ("@cuda.jit(device=True)\n" + point.source(f"{name}_point", point_params) + "\n\n"
              "@cuda.jit(device=True)\n" + store.source(f"{name}_store", store_params) + "\n\n"
              + w.source(name, params))
    return KernelSource(name, source, "elementwise", 0)


def choose_family(info: GroupInfo, n_outer: int, sm_count: int) -> str:
    outer = [a for a in range(len(info.domain)) if a not in info.raxes]
    if n_outer < 2 * sm_count and n_outer * 64 < _n_reduce(info):
        return "split"
    if outer and outer[-1] == len(info.domain) - 1:
        return "column"
    return "row"


def _n_reduce(info: GroupInfo) -> int:
    n = 1
    for a in info.raxes:
        n *= info.domain[a]
    return n


class _ReductionWriter:
    """Writes one kernel of the row / column / split families (see the module docstring)."""

    def __init__(self, body: Graph, info: GroupInfo, leaves: list[Node], outs: list[Node],
                 scalar_arrays: frozenset[int], family: str, block: int, shuffle: bool, phase: int) -> None:
        self.w = Writer(body, info, leaves, scalar_arrays)
        self.body, self.info, self.outs = body, info, outs
        self.family, self.block, self.shuffle, self.phase = family, block, shuffle, phase
        self.reds = reductions(body)
        self.levels = levels(body, info)
        self.outer = [a for a in range(len(info.domain)) if a not in info.raxes]
        self.raxes = list(info.raxes)

    def per_row(self, n: Node) -> bool:
        return not (self.w.axes_of(n) & set(self.raxes))

    def members_at(self, level: int) -> list[Node]:
        """Per-row (not per-element) computing members of ``level``, in body order."""
        return [n for n in self.body.nodes if n in self.info.amap and n not in self.w.leaf_index
                and OPS[n.op].kind is not OpKind.REDUCTION and self.info.level[n] == level and self.per_row(n)]

    def write(self, name: str) -> KernelSource:
        w, split = self.w, self.family == "split"
        if self.family in ("row", "split"):
            w.line("tid_ = cuda.threadIdx.x")
            if self.shuffle:
                w.line("lane_ = tid_ & 31")
                w.line("warp_ = tid_ >> 5")
            for r in self.reds:
                if not split or self.info.level[r] <= self.phase:
                    w.line(f"sm{self.rid(r)}_ = cuda.shared.array({self.block}, {em.np_name(em.accumulator_dtype(r))})")
        _scalar_preamble(w, self.body)
        if self.family == "row":
            w.open(f"for o_ in range(cuda.blockIdx.x, {w.product(self.outer)}, cuda.gridDim.x):")
        elif self.family == "column":
            n_outer = w.product(self.outer)
            w.line("tid_ = cuda.threadIdx.x")
            w.line("lane_ = tid_ % 32")
            w.line("slice_ = tid_ // 32")
            for r in self.reds:
                w.line(f"sm{self.rid(r)}_ = cuda.shared.array({self.block}, {em.np_name(em.accumulator_dtype(r))})")
            w.open(f"for ob_ in range(cuda.blockIdx.x * 32, {n_outer}, cuda.gridDim.x * 32):")
            w.line("valid_ = ob_ + lane_ < " + n_outer)
            w.line(f"o_ = ob_ + lane_ if valid_ else {n_outer} - 1  # idle lanes read the last column, store nothing")
        else:
            w.open(f"for b_ in range(cuda.blockIdx.x, {w.product(self.outer)} * nchunks_, cuda.gridDim.x):")
            w.line("o_ = b_ // nchunks_")
            w.line("c_ = b_ % nchunks_")
        w.unravel("o_", self.outer)
        for n in self.members_at(0):
            w.value(n)
        final = not split or self.phase == self.levels + 1
        for level in range(1, self.levels + 1):
            reds = [r for r in self.reds if self.info.level[r] == level]
            if split and level < self.phase:
                self.combine_partials(reds)
            elif split and level == self.phase:
                self.sweep(reds)
                break
            else:
                self.sweep(reds)
            for n in self.members_at(level):
                w.value(n)
        if final:
            self.store_outputs()
        w.close()
        params = [f"o{k}" for k in range(len(self.outs))] + w.leaf_params()
        if split:
            params += [f"p{self.rid(r)}_" for r in self.reds] + ["nchunks_", "nparts_"]
        params += w.size_params()
        return KernelSource(name, w.source(name, params), self.family, self.block, self.phase)

    def rid(self, r: Node) -> int:
        return self.reds.index(r)

    def sweep_header(self) -> str:
        n = self.w.product(self.raxes)
        if self.family == "row":
            return f"for r_ in range(tid_, {n}, {self.block}):"
        if self.family == "column":
            return f"for r_ in range(slice_, {n}, {self.block // 32}):"
        return f"for r_ in range(c_ * {self.block} + tid_, {n}, nchunks_ * {self.block}):"

    def sweep(self, reds: list[Node]) -> None:
        w = self.w
        for r in reds:
            w.line(f"acc{self.rid(r)}_ = {em.reduction_init(r)}")
        w.open(self.sweep_header())
        w.unravel("r_", self.raxes)
        for r in reds:
            (src,) = r.inputs
            v = em.reduction_value(r, w.operand(src, r))
            w.line(f"acc{self.rid(r)}_ = {em.reduction_combine(r, f'acc{self.rid(r)}_', v)}")
        w.close()
        if self.family == "column":
            self.slice_reduce(reds)
        else:
            self.block_reduce(reds)
        if self.family == "split":
            w.open("if tid_ == 0:")
            for r in reds:
                w.line(f"p{self.rid(r)}_[o_, c_] = acc{self.rid(r)}_")
            w.close()
            return
        for r in reds:
            w.line(f"{w.vname[r]} = {em.reduction_finish(r, f'acc{self.rid(r)}_', w.product(self.raxes))}")
            w.bind(r, w.vname[r])

    def combine_partials(self, reds: list[Node]) -> None:
        """Stage two: the block combines the row's partials cooperatively, then every thread has the value."""
        w = self.w
        for r in reds:
            w.line(f"acc{self.rid(r)}_ = {em.reduction_init(r)}")
        w.open(f"for q_ in range(tid_, nparts_, {self.block}):")
        for r in reds:
            k = self.rid(r)
            w.line(f"acc{k}_ = {em.reduction_combine(r, f'acc{k}_', f'p{k}_[o_, q_]')}")
        w.close()
        self.block_reduce(reds)
        for r in reds:
            w.line(f"{w.vname[r]} = {em.reduction_finish(r, f'acc{self.rid(r)}_', w.product(self.raxes))}")
            w.bind(r, w.vname[r])

    def slice_reduce(self, reds: list[Node]) -> None:
        """Column family: combine the slices' partials of each column; afterwards every thread of the column holds
        the total in ``acc{k}_``. Slice 0 adds the others' partials in slice order, so the result does not depend
        on timing."""
        w, slices = self.w, self.block // 32
        ks = [self.rid(r) for r in reds]
        for k in ks:
            w.line(f"sm{k}_[tid_] = acc{k}_")
        w.line("cuda.syncthreads()")
        w.open("if slice_ == 0:")
        w.open(f"for s_ in range(1, {slices}):")
        for r, k in zip(reds, ks):
            w.line(f"acc{k}_ = {em.cast(em.reduction_combine(r, f'acc{k}_', f'sm{k}_[s_ * 32 + lane_]'), em.accumulator_dtype(r))}")
        w.close()
        for k in ks:
            w.line(f"sm{k}_[lane_] = acc{k}_")
        w.close()
        w.line("cuda.syncthreads()")
        for r, k in zip(reds, ks):
            w.line(f"acc{k}_ = {em.cast(f'sm{k}_[lane_]', em.accumulator_dtype(r))}")
        w.line("cuda.syncthreads()")

    def block_reduce(self, reds: list[Node]) -> None:
        """Combine every thread's accumulator; afterwards each thread holds the block total in ``acc{k}_``."""
        w = self.w
        ks = [self.rid(r) for r in reds]
        if self.shuffle:
            self.warp_reduce(reds)
            w.open("if lane_ == 0:")
            for k in ks:
                w.line(f"sm{k}_[warp_] = acc{k}_")
            w.close()
            w.line("cuda.syncthreads()")
            w.open("if warp_ == 0:")
            for r, k in zip(reds, ks):
                w.line(f"acc{k}_ = sm{k}_[lane_] if lane_ < {self.block // 32} else {em.reduction_init(r)}")
            self.warp_reduce(reds)
            w.open("if lane_ == 0:")
            for k in ks:
                w.line(f"sm{k}_[0] = acc{k}_")
            w.close()
            w.close()
        else:
            for k in ks:
                w.line(f"sm{k}_[tid_] = acc{k}_")
            w.line("s_ = " + str(self.block // 2))
            w.line("cuda.syncthreads()")
            w.open("while s_ > 0:")
            w.open("if tid_ < s_:")
            for r, k in zip(reds, ks):
                w.line(f"sm{k}_[tid_] = {em.reduction_combine(r, f'sm{k}_[tid_]', f'sm{k}_[tid_ + s_]')}")
            w.close()
            w.line("cuda.syncthreads()")
            w.line("s_ //= 2")
            w.close()
        w.line("cuda.syncthreads()")
        for r, k in zip(reds, ks):
            w.line(f"acc{k}_ = {em.cast(f'sm{k}_[0]', em.accumulator_dtype(r))}")
        w.line("cuda.syncthreads()")

    def warp_reduce(self, reds: list[Node]) -> None:
        for off in (16, 8, 4, 2, 1):
            for r in reds:
                k = self.rid(r)
                other = f"cuda.shfl_down_sync(0xFFFFFFFF, acc{k}_, {off})"
                self.w.line(f"acc{k}_ = {em.cast(em.reduction_combine(r, f'acc{k}_', other), em.accumulator_dtype(r))}")

    def store_outputs(self) -> None:
        w = self.w
        per_row = [(f"o{k}", n) for k, n in enumerate(self.outs) if self.per_row(n)]
        full = [(f"o{k}", n) for k, n in enumerate(self.outs) if not self.per_row(n)]
        if per_row:
            guard = {"row": "if tid_ == 0:", "split": "if tid_ == 0 and c_ == 0:", "column": "if slice_ == 0 and valid_:"}
            w.open(guard[self.family])
            for param, n in per_row:
                w.store(param, n, n.tensor_type.dtype)
            w.close()
        if full:
            w.open(self.sweep_header())
            w.unravel("r_", self.raxes)
            if self.family == "column":
                w.open("if valid_:")
            for param, n in full:
                w.store(param, n, n.tensor_type.dtype)
            if self.family == "column":
                w.close()
            w.close()


def reduction_kernels(name: str, body: Graph, info: GroupInfo, leaves: list[Node], outs: list[Node],
                      scalar_arrays: frozenset[int], family: str, block: int, shuffle: bool) -> list[KernelSource]:
    """One kernel for the row and column families; ``levels + 1`` kernels (one per stage) for split."""
    if family != "split":
        return [_ReductionWriter(body, info, leaves, outs, scalar_arrays, family, block, shuffle, 0).write(name)]
    n = levels(body, info)
    return [_ReductionWriter(body, info, leaves, outs, scalar_arrays, family, block, shuffle, phase)
            .write(f"{name}_stage{phase}") for phase in range(1, n + 2)]


def partial_dtypes(body: Graph) -> list[np.dtype]:
    return [em.accumulator_dtype(r) for r in reductions(body)]
