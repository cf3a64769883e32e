"""Per-group launch plans: which kernel family runs a ``fused`` node, its sources, and how to launch them.

A :class:`GroupPlan` is made once per fused node at compile time (that is where an op without a CUDA emitter is
found, and the group is marked to run on the host instead); kernel variants for 0-d operands that arrive as device
arrays rather than host scalars are generated lazily, the first time a call needs them.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jitgraph.backends.cuda import codegen, compiler, cublas, matmul, runtime
from jitgraph.backends.cuda.codegen import KernelSource
from jitgraph.errors import UnsupportedError
from jitgraph.ir.fusion_groups import EPILOGUE_HEADS, GroupInfo, group_info
from jitgraph.ir.graph import Graph, Node


@dataclass
class Launch:
    """One kernel launch of a plan: the source, grid and block, and which extra arguments it takes."""

    source: KernelSource
    grid: tuple[int, ...]
    block: tuple[int, ...]
    leaves: list[Node]
    outs: list[Node]
    nchunks: int = 0
    nparts: int = 0


@dataclass
class GroupPlan:
    node: Node
    name: str
    body: Graph
    info: GroupInfo | None
    family: str = "host"
    host_reason: str | None = None
    variants: dict[frozenset[int], list[Launch]] = field(default_factory=dict)
    disk_cache: bool = True  # kernels compiled with cuda.jit(cache=True) from a module file (compiler.py)
    gemm: cublas.GemmState | None = None  # matmul groups: the cuBLAS call, or why the tiled kernel runs
    gemm_variants: dict[frozenset[int], list[Launch]] = field(default_factory=dict)
    first_launch_seconds: float = 0.0  # first launches of kernels compiled for this plan (Numba jits on launch)

    @property
    def head(self) -> Node | None:
        return next((n for n in self.body.nodes if n.op in EPILOGUE_HEADS), None)

    def launches(self, scalar_arrays: frozenset[int]) -> list[Launch]:
        if scalar_arrays not in self.variants:
            self.variants[scalar_arrays] = _build(self, scalar_arrays)
        return self.variants[scalar_arrays]

    def gemm_launches(self, scalar_arrays: frozenset[int]) -> list[Launch]:
        """The launches with the product through cuBLAS (the first launch) and the rest as kernels."""
        if scalar_arrays not in self.gemm_variants:
            family = self.family  # the explain line names the hand-written plan's family
            self.gemm_variants[scalar_arrays] = _build(self, scalar_arrays, self.gemm.spec if self.gemm else None)
            self.family = family
        return self.gemm_variants[scalar_arrays]


def make_plan(node: Node, disk_cache: bool = True) -> GroupPlan:
    (body,) = node.regions
    name = str(node.attrs.get("name", "fused"))
    plan = GroupPlan(node, name, body, None, disk_cache=disk_cache)
    try:
        plan.info = group_info(node)
        if any(d == 0 for d in plan.info.domain):
            raise UnsupportedError("zero-size domain")
        plan.launches(frozenset())
        if plan.head is not None:
            plan.gemm = cublas.state_for(plan.body, plan.head)
    except UnsupportedError as exc:
        plan.family, plan.host_reason = "host", exc.message
        plan.variants.clear()
    return plan


def _n(axes: list[int], domain: tuple[int, ...]) -> int:
    return math.prod(domain[a] for a in axes)


def _build(plan: GroupPlan, scalar_arrays: frozenset[int], gemm: cublas.GemmSpec | None = None) -> list[Launch]:
    info, body = plan.info, plan.body
    assert info is not None
    dev = runtime.device_info()
    leaves, outs = list(body.inputs), list(body.outputs)
    head = plan.head
    launches: list[Launch] = []
    if head is not None:
        if not matmul.result_dtype_ok(head):
            raise UnsupportedError(f"matmul with {head.tensor_type.dtype} result has no CUDA kernel")
        tile = 8 if dev.simulated else 16
        m, n = head.tensor_type.shape
        grid = (math.ceil(n / tile), math.ceil(m / tile))
        if gemm is not None:  # one library call computes gemm.node; the rest of the group reads it as an operand
            launches.append(Launch(KernelSource(plan.name + "_cublas", "", "cublas", 0), (), (), gemm.leaves,
                                   [gemm.node]))
            leaves, outs = leaves + [gemm.node], [o for o in outs if o is not gemm.node]
            if not outs:
                return launches
            head = None
        elif grid[1] > 65535:
            raise UnsupportedError("matmul with more than 65535 row tiles")
        elif not codegen.reductions(body):
            src = matmul.matmul_kernel(plan.name, body, info, head, leaves, outs, scalar_arrays, tile)
            plan.family = "matmul+epilogue"
            return [Launch(src, grid, (tile, tile), leaves, outs)]
        else:  # product first, then the rest of the group reads it as an operand
            p_leaves, p_outs = matmul.product_only(body, head)
            src = matmul.matmul_kernel(plan.name + "_product", body, info, head, p_leaves, p_outs,
                                       frozenset(), tile, epilogue=False)
            launches.append(Launch(src, grid, (tile, tile), p_leaves, p_outs))
            leaves, outs = leaves + [head], [o for o in outs if o is not head]
    name = plan.name + "_after_gemm" if gemm is not None else plan.name
    raxes = list(info.raxes)
    outer = [a for a in range(len(info.domain)) if a not in raxes]
    if not raxes:
        total = _n(list(range(len(info.domain))), info.domain)
        blocks, threads = runtime.grid_stride(-(-total // codegen.unroll_for(leaves)), dev)
        src = codegen.elementwise(name, body, info, leaves, outs, scalar_arrays)
        plan.family = "elementwise" if head is None else "matmul+epilogue"
        launches.append(Launch(src, (blocks,), (threads,), leaves, outs))
        return launches
    n_outer, n_red = _n(outer, info.domain), _n(raxes, info.domain)
    family = codegen.choose_family(info, n_outer, dev.sm_count)
    block = runtime.column_block_threads(n_red, dev) if family == "column" else runtime.row_block_threads(n_red, dev)
    shuffle = not dev.simulated
    sources = codegen.reduction_kernels(name, body, info, leaves, outs, scalar_arrays, family, block, shuffle)
    plan.family = family if head is None else f"matmul, then {family} reduction"
    if family == "row":
        launches.append(Launch(sources[0], (min(n_outer, dev.max_blocks * 4),), (block,), leaves, outs))
    elif family == "column":
        blocks = max(1, min(math.ceil(n_outer / 32), dev.max_blocks * 4))
        launches.append(Launch(sources[0], (blocks,), (block,), leaves, outs))
    else:
        # Enough chunks to fill the device, each thread taking at least ~8 elements; the next stage combines
        # the partials of a row cooperatively in every block, so fewer chunks also means less stage-two work.
        per_row = max(1, min(math.ceil(n_red / (block * 8)), dev.split_blocks // max(n_outer, 1)))
        for src in sources:
            final = src.phase == len(sources)
            full_outputs = any(set(info.amap[o]) & set(raxes) for o in outs if o in info.amap)
            chunks = per_row if not final or full_outputs else 1
            grid = (min(n_outer * chunks, dev.max_blocks * 4),)
            launches.append(Launch(src, grid, (block,), leaves, outs, chunks, per_row))
    return launches


def run(plan: GroupPlan, operands: list[Any], out_buffers: dict[int, Any], pool: Any = None) -> list[Any]:
    """Launch ``plan``'s kernels on device operands; returns the outputs (0-d ones as 0-d device arrays).

    ``operands`` are the fused node's operand values: device arrays for arrays, host scalars or device arrays for
    0-d values. ``out_buffers`` maps an output position to a caller buffer to write straight into. ``pool`` (a
    ``pool.BufferPool``) provides the buffers of outputs and partials; without one they are allocated.

    A group whose product goes through cuBLAS (``plan.gemm``) runs the hand-written kernels too on the first call
    of each variant and compares (``cublas.compare``); a mismatch or a library error switches the group to the
    hand-written kernels for good, with the reason in ``explain``.
    """
    scalar_arrays = frozenset(k for k, (leaf, v) in enumerate(zip(plan.body.inputs, operands))
                              if leaf.tensor_type.shape == () and runtime.is_device_array(v))
    gemm = plan.gemm
    if gemm is not None and gemm.active:
        try:
            if scalar_arrays in gemm.checked:
                return _run_launches(plan, plan.gemm_launches(scalar_arrays), operands, out_buffers, pool)
            got = _run_launches(plan, plan.gemm_launches(scalar_arrays), operands, {}, None)
            want = _run_launches(plan, plan.launches(scalar_arrays), operands, {}, None)
            problem = cublas.compare(got, want, plan.body.outputs)
            if problem is None:
                gemm.checked.add(scalar_arrays)
            else:
                gemm.fail(f"its first result disagreed with the hand-written kernel's: {problem}")
            outs = got if problem is None else want
            for k, buf in out_buffers.items():
                compiler.assign(buf, outs[k])
                outs[k] = buf
            return outs
        except cublas.GemmFailed as exc:  # raised by the library call, the first launch: nothing written yet
            if runtime.capturing():
                raise  # failing only inside a CUDA-graph recording: that recording fails, the GEMM path stays
            gemm.fail(str(exc))
        except UnsupportedError as exc:
            gemm.fail(f"the kernels after the GEMM could not be generated ({exc.message})")
    return _run_launches(plan, plan.launches(scalar_arrays), operands, out_buffers, pool)


def _run_launches(plan: GroupPlan, launches: list[Launch], operands: list[Any], out_buffers: dict[int, Any],
                  pool: Any) -> list[Any]:
    info = plan.info
    assert info is not None
    env: dict[Node, Any] = {}
    for leaf, value in zip(plan.body.inputs, operands):
        env[leaf] = _kernel_arg(leaf, value)
    parts: list[Any] = []
    results: dict[Node, Any] = {}
    late: list[tuple[Node, Any]] = []  # (node, caller buffer) for library results: copied after every kernel ran

    def alloc(shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return pool.take(shape, dtype) if pool is not None else runtime.empty(shape, dtype)

    for launch in launches:
        if launch.source.family == "cublas":
            assert plan.gemm is not None
            (node,) = launch.outs
            with runtime.timed(launch.source.name):
                result = cublas.execute(plan.gemm, env)
            buf = out_buffers.get(plan.body.outputs.index(node)) if node in plan.body.outputs else None
            if buf is not None:
                late.append((node, buf))
            results[node] = result
            continue
        outs = []
        for o in launch.outs:
            if o in results:
                outs.append(results[o])
                continue
            buf = out_buffers.get(plan.body.outputs.index(o)) if o in plan.body.outputs else None
            if buf is None:
                t = o.tensor_type
                buf = alloc(t.shape if t.shape else (1,), t.dtype)
            results[o] = buf
            outs.append(buf)
        args = outs + [env[leaf] if leaf in env else results[leaf] for leaf in launch.leaves]
        sizes = list(info.domain)
        if launch.source.family == "split":
            if launch.source.phase == 1:
                n_outer = _n([a for a in range(len(info.domain)) if a not in info.raxes], info.domain)
                parts = [alloc((n_outer, launch.nparts), dt) for dt in codegen.partial_dtypes(plan.body)]
            args += parts + [launch.nchunks, launch.nparts]
        args += sizes
        if launch.source.family == "matmul":
            args.append(plan.head.inputs[0].tensor_type.shape[1])  # type: ignore[union-attr]
        kernel = compiler.kernel_from_source(launch.source.name, launch.source.source, plan.disk_cache)
        first = launch.source.name not in _LAUNCHED
        start = time.perf_counter() if first else 0.0
        with runtime.timed(launch.source.name):
            runtime.launch(kernel, launch.grid, launch.block, args)
        if first:  # Numba compiles a kernel on its first launch: that time is the kernel's compile time
            _LAUNCHED.add(launch.source.name)
            plan.first_launch_seconds += time.perf_counter() - start
    for node, buf in late:
        compiler.assign(buf, results[node])
        results[node] = buf
    out = []
    for o in plan.body.outputs:
        buf = results[o]
        out.append(buf.reshape(()) if o.tensor_type.shape == () and buf.shape != () else buf)
    return out


_LAUNCHED: set[str] = set()  # kernel names launched at least once in this process


def _kernel_arg(leaf: Node, value: Any) -> Any:
    t = leaf.tensor_type
    if t.shape == ():
        if runtime.is_device_array(value):
            return value.reshape(1) if value.shape != (1,) else value
        return t.dtype.type(value) if not isinstance(value, np.generic) or value.dtype != t.dtype else value
    return value
