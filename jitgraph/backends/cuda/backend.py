"""``compile(graph, options)`` for ``backend="cuda"``: run the fused graph with one or more kernels per group.

How a call runs:

* **Arguments.** Device arrays (anything exposing ``__cuda_array_interface__``) are used in place. Host NumPy
  arrays are copied to the device on every call and the results copied back: that path pays for the transfers.
  Results come back as Numba device arrays when any argument was a device array, else as NumPy values.
* **Nodes.** ``fused`` nodes launch their plan's kernels. Views (``reshape`` of a contiguous array, ``transpose``,
  basic slicing) are made on the device without copying. Every other node, and every group that has no CUDA
  emitter, runs **on the host through NumPy**: its operands are copied down, the result copied back up. That keeps
  results exact; :meth:`CudaCompiledGraph.explain` lists each such node and why.
* **Mutations.** Values are computed first, then written into the caller's arrays, as the eager interpreter does.
  A value computed by a kernel that reads the mutated input only at the element it writes is written by the
  kernel straight into the argument's buffer (Adam's ``p``, ``m``, ``v``: no copies per step); the rest are
  written by a device copy kernel. Host arguments that are mutated get the new values copied back.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jitgraph import config
from jitgraph.backends import eager
from jitgraph.backends.base import KernelSource, require_lowered
from jitgraph.backends.cuda import compiler, graphs, runtime
from jitgraph.backends.cuda.plan import GroupPlan, make_plan
from jitgraph.backends.cuda.plan import run as run_plan
from jitgraph.backends.cuda.pool import BufferPool
from jitgraph.backends.cuda.staging import Staging
from jitgraph.backends.cuda.writer import Writer
from jitgraph.backends.inplace import plan_inplace, whole_assignment
from jitgraph.ir.fusion_groups import unsupported_reason
from jitgraph.ir.graph import Graph, GraphBuilder, Node
from jitgraph.ir.ops import OPS
from jitgraph.ir.ops.indexing import Operand
from jitgraph.ir.printer import node_names
from jitgraph.ir.types import TensorType, python_type

TRANSFER_NOTE = ("host NumPy arguments are copied to the device on every call and results copied back; pass "
                 "numba.cuda device arrays to keep data resident")


@dataclass
class CudaCompiledGraph:
    """The CompiledGraph of the CUDA backend; plain data about its kernels for ``explain``."""

    graph: Graph
    plans: dict[Node, GroupPlan]
    direct: dict[tuple[Node, int], int]  # (fused node, output position) -> input index written in place
    consts: dict[Node, Any] = field(default_factory=dict)
    host_nodes: list[tuple[str, str]] = field(default_factory=list)  # (printed node, reason)
    pool: BufferPool | None = None  # intermediates and partials (JITGRAPH_CUDA_POOL=0: allocated per call)
    replay: graphs.Replay | None = None  # CUDA-graph replay of calls on device arguments
    staging: Staging = field(default_factory=Staging)  # pinned buffers for host arguments and results
    codegen_seconds: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)  # the pool serves one call at a time

    def __call__(self, args: Sequence[Any]) -> list[Any]:
        if len(args) != len(self.graph.inputs):
            raise TypeError(f"graph takes {len(self.graph.inputs)} arguments, got {len(args)}")
        if not self.lock.acquire(blocking=False):  # another thread is in a call: no pool, no replay
            return self._run(args, None, pooled=False)
        try:
            if self.replay is not None:
                out = self.replay.call(args, lambda a, pool: self._run(a, pool, pooled=pool is None),
                                       _snapshot, _restore)
                if out is not None:
                    return out
            return self._run(args, None, pooled=True)
        finally:
            self.lock.release()

    def run_launching(self, args: Sequence[Any]) -> list[Any]:
        """One call that launches every kernel (no graph replay): for kernel timing with CUDA events."""
        return self._run(args, None, pooled=False)

    def _run(self, args: Sequence[Any], pool: BufferPool | None, pooled: bool) -> list[Any]:
        """One call launching every kernel. ``pool``: where buffers come from (a recording's own pool), else the
        graph's pool when ``pooled``; the graph's pool gets back at the end what no result shares memory with."""
        own = pool is None and pooled and self.pool is not None
        if own:
            pool = self.pool
        device_mode = any(runtime.is_device_array(a) for a in args)
        dev_args = [self._to_device_arg(k, a, pool) for k, a in enumerate(args)]
        direct_ok = self._direct_targets(dev_args)
        env: dict[Node, Any] = {}
        for node in self.graph.nodes:
            env[node] = self._eval(node, env, dev_args, direct_ok, pool)
        outputs = [args[o.attrs["index"]] if o.op == "input" else env[o] for o in self.graph.outputs]
        values = [env[n] for _, n in self.graph.mutations]
        if self.graph.mutations:
            outputs = self._detach(outputs, args, dev_args)
        self._write_mutations(args, dev_args, values)
        if device_mode:
            result = [_device_result(o, v) for o, v in zip(self.graph.outputs, outputs)]
        else:
            result = [v if o.op == "input" else _host_result(o, self.staging.download(("out", k), v))
                      for k, (o, v) in enumerate(zip(self.graph.outputs, outputs))]
            self.staging.finish()
        if own:
            assert pool is not None
            pool.release(result)
        return result

    def _to_device_arg(self, index: int, value: Any, pool: BufferPool | None) -> Any:
        if isinstance(value, np.ndarray) and value.ndim and not runtime.is_device_array(value):
            return self.staging.upload(index, value, pool)
        return _to_device_arg(value)

    # ---- nodes ---------------------------------------------------------------------------------------------------
    def _eval(self, node: Node, env: dict[Node, Any], args: list[Any], direct_ok: set[int],
              pool: BufferPool | None) -> Any:
        if node.op == "input":
            return args[node.attrs["index"]]
        if node.op == "const":
            return self.consts.get(node, node.attrs["value"])
        operands = [env[i] for i in node.inputs]
        if node.op == "tuple_get":
            return operands[0][node.attrs["index"]]
        plan = self.plans.get(node)
        if plan is not None and plan.host_reason is None:
            buffers = {k: args[i] for (n, k), i in self.direct.items() if n is node and i in direct_ok}
            if plan.node is not node:  # a lone op wrapped in a one-node group: its operands minus inlined consts
                operands = [env[i] for i in plan.node.inputs]
            outs = run_plan(plan, operands, buffers, pool)
            return outs[0] if len(outs) == 1 else tuple(outs)
        view = _device_view(node, operands)
        if view is not None:
            return view
        if node.op == "setitem" and _basic_setitem(node) and runtime.is_device_array(operands[0]):
            return _device_setitem(node, operands[0], operands[1])
        return _host_eval(node, operands)

    # ---- mutations -----------------------------------------------------------------------------------------------
    def _direct_targets(self, dev_args: list[Any]) -> set[int]:
        """Inputs that kernels may write in place this call: device buffers that overlap no other argument."""
        wanted = set(self.direct.values())
        ok = set()
        for i in wanted:
            target = dev_args[i]
            if not runtime.is_device_array(target):
                continue
            others = [a for k, a in enumerate(dev_args) if k != i and runtime.is_device_array(a)]
            if not any(a is target or runtime.may_share_memory(a, target) for a in others):
                ok.add(i)
        return ok

    def _detach(self, outputs: list[Any], args: Sequence[Any], dev_args: list[Any]) -> list[Any]:
        """Outputs are values as of when they were computed: one that shares memory with an argument about to be
        written (an input returned as is, or a view of it) is copied first, as the eager interpreter does."""
        mutated = [i for i, _ in self.graph.mutations]
        out = []
        for value in outputs:
            if isinstance(value, np.ndarray) and any(
                    isinstance(args[i], np.ndarray) and np.may_share_memory(value, args[i]) for i in mutated):
                value = value.copy()
            elif runtime.is_device_array(value) and any(
                    runtime.is_device_array(dev_args[i]) and runtime.may_share_memory(value, dev_args[i])
                    for i in mutated):
                copy = runtime.empty(value.shape, value.dtype)
                compiler.assign(copy, runtime.as_numba_device(value))
                value = copy
            out.append(value)
        return out

    def _write_mutations(self, args: Sequence[Any], dev_args: list[Any], values: list[Any]) -> None:
        targets = [dev_args[i] for i, _ in self.graph.mutations]
        pending = []
        for (index, _), value in zip(self.graph.mutations, values):
            target = dev_args[index]
            if value is target:
                pending.append((index, value, True))
                continue
            if runtime.is_device_array(value) and any(
                    runtime.is_device_array(t) and runtime.may_share_memory(value, t) for t in targets):
                copy = runtime.empty(value.shape, value.dtype)
                compiler.assign(copy, value)
                value = copy
            pending.append((index, value, False))
        for index, value, in_place in pending:
            caller = args[index]
            if runtime.is_device_array(caller):
                if not in_place:
                    compiler.assign(runtime.as_numba_device(caller), _as_device(value))
            elif isinstance(caller, np.ndarray):
                np.copyto(caller, self.staging.download(("mut", index), value), casting="unsafe")

    # ---- explain -------------------------------------------------------------------------------------------------
    def explain(self) -> str:
        names = node_names(self.graph)
        lines = [f"CUDA backend on {runtime.device_info().name}; {TRANSFER_NOTE}"]
        for node, plan in self.plans.items():
            where = "host (NumPy)" if plan.host_reason else plan.family
            line = f"  {names[node]} {plan.name}: {where}"
            if plan.host_reason:
                line += f" because {plan.host_reason}"
            lines.append(line)
            if plan.gemm is not None:
                lines.append(f"    {plan.gemm.describe()}")
            launches = plan.gemm_variants.get(frozenset()) if plan.gemm is not None and plan.gemm.active else None
            for launch in launches or plan.variants.get(frozenset(), []):
                if launch.source.family == "cublas":
                    lines.append(f"    library call {launch.source.name} (cuBLASLt)")
                else:
                    lines.append(f"    kernel {launch.source.name} grid={launch.grid} block={launch.block}")
        for (node, k), i in self.direct.items():
            lines.append(f"  {names[node]} output {k} is written in place into argument {i}")
        for name, reason in self.host_nodes:
            lines.append(f"  {name} runs on the host: {reason}")
        if self.replay is not None:
            lines.append(f"  calls on device arguments: {self.replay.describe()}")
        lines.append(f"  {self.pool.stats()}" if self.pool is not None else
                     "  buffer pool: off (JITGRAPH_CUDA_POOL=0); intermediates are allocated per call")
        return "\n".join(lines)

    @property
    def sources(self) -> dict[str, str]:
        """Kernel name -> generated source, of every kernel built so far."""
        return {launch.source.name: launch.source.source for plan in self.plans.values()
                for variants in (plan.variants, plan.gemm_variants) for launches in variants.values()
                for launch in launches if launch.source.source}

    # ---- the CompiledGraph protocol ------------------------------------------------------------------------------
    def kernel_sources(self) -> list[KernelSource]:
        """Every CUDA kernel's source, in plan order (variants for device-array scalars appear once built)."""
        return [KernelSource(f"CUDA kernel {name}", source) for name, source in self.sources.items()]

    def regions(self) -> list[Any]:
        return []  # control-flow regions run on the host through their NumPy implementation

    def compile_times(self) -> dict[str, float]:
        """Seconds generating kernel source (at compile time) and in the first launches of its kernels, where
        Numba compiles them (kernels another graph launched first cost nothing here)."""
        return {"codegen": self.codegen_seconds,
                "numba": sum(plan.first_launch_seconds for plan in self.plans.values())}

    def fallback_reason(self) -> str | None:
        return None


def require() -> None:
    """Raise BackendError unless kernels can run: numba-cuda importable, and a GPU or the simulator."""
    runtime.require_cuda()


def compile(graph: Graph, options: Mapping[str, Any]) -> CudaCompiledGraph:
    """Compile a lowered graph (the pipeline's output) for ``backend="cuda"``."""
    return compile_graph(graph, options)


def compile_graph(graph: Graph, options: Mapping[str, Any]) -> CudaCompiledGraph:
    require_lowered(graph, "cuda")
    start = time.perf_counter()
    disk_cache = bool(config.option(options, "cache"))
    plans = {n: make_plan(n, disk_cache) for n in graph.nodes if n.op == "fused"}
    names = node_names(graph)
    for n in graph.nodes:
        if n.op not in ("input", "const", "tuple_get", "fused") and unsupported_reason(n) is None \
                and n.op != "reshape" and isinstance(n.type, TensorType) and _on_device(n, plans):
            plan = make_plan(_one_node_group(n, names[n]), disk_cache)
            if plan.host_reason is None:
                plans[n] = plan
    compiled = CudaCompiledGraph(graph, plans, _direct_writes(graph, plans))
    for node in graph.nodes:
        if node.op == "const" and isinstance(node.attrs["value"], np.ndarray) and node.attrs["value"].ndim:
            compiled.consts[node] = runtime.to_device(node.attrs["value"])
        elif node.op not in ("input", "const", "tuple_get", "fused") and node not in plans and not _viewable(node) \
                and not (node.op == "setitem" and _basic_setitem(node)):
            compiled.host_nodes.append((f"{names[node]} = {node.op}", _host_reason(node)))
    if config.env_flag("JITGRAPH_CUDA_POOL"):
        compiled.pool = BufferPool()
    compiled.replay = _replay_for(compiled)
    compiled.codegen_seconds = time.perf_counter() - start
    return compiled


def _replay_for(compiled: CudaCompiledGraph) -> graphs.Replay:
    """Graph replay for calls on device arguments, or the reason there is none: every node must run on the device
    (a host node reads device values, which a recorded graph cannot do)."""
    found, reason = graphs.recorder()
    graph = compiled.graph
    if not reason and compiled.host_nodes:
        reason = f"{compiled.host_nodes[0][0]} runs on the host"
    if not reason and any(p.host_reason for p in compiled.plans.values()):
        reason = "a fused group runs on the host"
    if not reason and not any(isinstance(i.type, TensorType) and i.type.ndim for i in graph.inputs):
        reason = "the graph has no array argument"
    replay = graphs.Replay(found, reason)
    replay.output_inputs = {k: o.attrs["index"] for k, o in enumerate(graph.outputs) if o.op == "input"}
    replay.mutated = [i for i, _ in graph.mutations]
    return replay


def _snapshot(value: Any) -> Any:
    """A device copy of a device argument (graph replay's recording call restores it)."""
    copy = runtime.empty(tuple(value.shape), value.dtype)
    compiler.assign(copy, runtime.as_numba_device(value))
    return copy


def _restore(value: Any, saved: Any) -> None:
    compiler.assign(runtime.as_numba_device(value), saved)


def _on_device(node: Node, plans: dict[Node, GroupPlan]) -> bool:
    """Whether ``node`` computes on device values (arrays, or results of kernels); scalar arithmetic on Python
    and NumPy scalars stays on the host, where it costs nothing."""
    if node.tensor_type.ndim or any(isinstance(i.type, TensorType) and i.type.ndim for i in node.inputs):
        return True
    return any(i.op in ("fused", "tuple_get") or i in plans for i in node.inputs)


def _one_node_group(node: Node, name: str) -> Node:
    """A ``fused`` node whose body is just ``node``: lone elementwise ops and reductions the fusion pass leaves
    to NumPy (on the CPU that is as fast; on the GPU the alternative is a round trip to the host)."""
    body = GraphBuilder()
    inner, operands = [], []
    for i in node.inputs:
        if i.op == "const" and i.tensor_type.shape == ():
            inner.append(body.add(i))
        else:
            operands.append(i)
            inner.append(body.input(i.type, f"v{len(operands) - 1}"))
    copy = body.add(Node(node.op, tuple(inner), node.type, node.attrs, (), node.loc))
    kernel = f"single_{node.op}_{name.lstrip('%')}"
    return Node("fused", tuple(operands), node.type, {"kind": "single", "name": kernel, "cuts": ()},
                (body.build([copy]),), node.loc)


# ---- in-place writes -------------------------------------------------------------------------------------------
def _direct_writes(graph: Graph, plans: dict[Node, GroupPlan]) -> dict[tuple[Node, int], int]:
    """Mutations that a kernel writes straight into the caller's buffer: ``(node, output) -> argument``.

    The graph-level rules are :mod:`jitgraph.backends.inplace`'s. What a CUDA kernel adds: the node runs as a kernel
    (not on the host), and it reads the target only at the element it writes, by the thread that writes it (row and
    column kernels finish their reduction sweeps over a row before its write sweep; the stages of a two-stage
    reduction are separate launches). ``x[...] = v`` runs outside kernels here, so the kernel computing ``v`` may
    write it into ``x`` directly.
    """

    def kernel_ok(node: Node, k: int, target: Node) -> bool:
        plan = plans.get(node)
        return plan is not None and not plan.host_reason and \
            _reads_same_element(plan, target, plan.body.outputs[k], node)

    writes = plan_inplace(graph, kernel_ok, through_assignments=True)
    return {(w.node, w.output): w.argument for w in writes}


def _reads_same_element(plan: GroupPlan, target: Node, out: Node, fused: Node) -> bool:
    assert plan.info is not None
    w = Writer(plan.body, plan.info, list(plan.body.inputs))
    want = tuple(w.store_index(out).split(", "))
    users = plan.body.users()
    for leaf, outer in zip(plan.body.inputs, plan.node.inputs):
        if outer is not target:
            continue
        for consumer in users.get(leaf, []):
            if consumer.op in ("matmul", "dot"):
                return False  # the tiled product reads whole rows and columns
            if consumer.op == "setitem" and consumer.inputs[0] is leaf and consumer.inputs[1] is not leaf:
                continue  # x[...] = v never reads x
            if w.operand_index(leaf.tensor_type, consumer) != want:
                return False
    return True


# ---- values ----------------------------------------------------------------------------------------------------
def _to_device_arg(value: Any) -> Any:
    if runtime.is_device_array(value):
        return runtime.as_numba_device(value)
    if isinstance(value, np.ndarray):
        return runtime.to_device(value) if value.ndim else value[()]
    return value


def _as_device(value: Any) -> Any:
    if runtime.is_device_array(value):
        return value
    return runtime.to_device(np.asarray(value))


def _device_result(node: Node, value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.ndim:
        return runtime.to_device(value)
    return value


def _host_result(node: Node, value: Any) -> Any:
    value = runtime.to_host(value)
    t = node.type
    if isinstance(t, TensorType) and t.shape == () and isinstance(value, np.ndarray):
        value = value[()]
    if isinstance(t, TensorType) and t.weak:
        return python_type(t.dtype)(value)
    return value


def _viewable(node: Node) -> bool:
    if node.op in ("reshape", "transpose"):
        return True
    if node.op == "getitem":
        return len(node.inputs) == 1 and all(isinstance(s, int | slice) for s in node.attrs["spec"])
    return False


def _device_view(node: Node, operands: list[Any]) -> Any:
    """A device view for views NumPy makes without copying; None when the node must run on the host."""
    if not _viewable(node) or not runtime.is_device_array(operands[0]):
        return None
    x = operands[0]
    try:
        if node.op == "transpose":
            return runtime.transpose(x, node.attrs.get("axes"))
        if node.op == "reshape":
            shape = node.tensor_type.shape
            return x.reshape(shape) if x.is_c_contiguous() else None
        spec = node.attrs["spec"]
        if any(isinstance(s, Operand) for s in spec):
            return None
        result = x[runtime.expand_ellipsis(tuple(spec), x.ndim)]
        return result if runtime.is_device_array(result) else None
    except Exception:  # noqa: BLE001 - a view the device array cannot express: the host computes it
        return None


def _host_reason(node: Node) -> str:
    if node.op in ("reshape", "getitem", "transpose"):
        return "this view has no device equivalent"
    return f"{node.op} has no CUDA kernel outside a fusion group (operands copied to the host and back)"


def _host_eval(node: Node, operands: list[Any]) -> Any:
    host = [runtime.to_host(v) for v in operands]
    impl = OPS[node.op].impl
    with np.errstate(all="ignore"):
        if node.regions:
            result = impl(*host, regions=node.regions, run=eager.run_region, **node.attrs)
        else:
            result = impl(*host, **node.attrs)
    return _upload(node, result)


def _upload(node: Node, result: Any) -> Any:
    if isinstance(result, tuple):
        return tuple(_upload(node, r) for r in result)
    t = node.type
    if isinstance(t, TensorType) and t.weak:
        return python_type(t.dtype)(result)
    if isinstance(result, np.ndarray) and result.ndim:
        return runtime.to_device(result)
    return result


def _basic_setitem(node: Node) -> bool:
    """``x[spec] = v`` with ints, slices and ``...`` only (no index arrays): a device view can take the write."""
    return len(node.inputs) == 2 and all(isinstance(e, int | slice) or e is Ellipsis for e in node.attrs["spec"])


def _device_setitem(node: Node, x: Any, value: Any) -> Any:
    if whole_assignment(node) and runtime.is_device_array(value):
        return value
    result = runtime.empty(x.shape, x.dtype)
    compiler.assign(result, x)
    spec = runtime.expand_ellipsis(tuple(node.attrs["spec"]), result.ndim)
    target = result[spec] if spec else result
    if not runtime.is_device_array(target):  # an int index selected one element: write through a 1-element view
        spec = tuple(slice(e, e + 1 if e != -1 else None) if isinstance(e, int) else e for e in spec)
        target = result[spec]
    compiler.assign(target, _as_device(value if runtime.is_device_array(value) else np.asarray(value, x.dtype)))
    return result
