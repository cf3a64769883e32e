"""The compiled graph: a generated Python *driver* that calls fused kernels, BLAS and NumPy in order.

The driver is source text, like the kernels, so it can be read (``compiled.driver_source``) and shows in
tracebacks. One statement per top-level node::

    def driver(args):
        v0, v1, v2 = args
        v3, = K3((v0, v1, v2), {0: 0})   # fused kernel; output 0 written into operand 0 (in place)
        del v1                          # memory plan: last reader done
        ...
        return [v3]

Kernels are :class:`~jitgraph.backends.cpu.launch.GroupKernel` objects; nodes without a kernel run their NumPy
reference implementation (shape ops therefore stay NumPy views; ``matmul`` of a transposed view passes BLAS its
trans flag). Mutations of caller inputs are written by the kernel straight into the caller's buffer when that is
safe (see :func:`_inplace_plan`); otherwise the value is copied in at the end, as the eager interpreter does.
"""

from __future__ import annotations

import itertools
import linecache
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from jitgraph.backends.cpu.launch import GroupKernel
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops import OPS
from jitgraph.ir.printer import node_names
from jitgraph.ir.types import TensorType, python_type
from jitgraph.passes.fuse import fuse_graph
from jitgraph.ir.fusion_groups import unfused_reasons
from jitgraph.passes.plan_memory import _is_view, memory_plan

_ids = itertools.count()


def _aliases(graph: Graph, node: Node) -> set[Node]:
    """``node`` and every view of it (transitively)."""
    out = {node}
    for n in graph.nodes:
        if n.inputs and n.inputs[0] in out and n.op not in ("input", "const", "fused") and _is_view(n):
            out.add(n)
    return out


def _inplace_plan(graph: Graph) -> dict[Node, dict[int, int]]:
    """For each fused node, ``{kernel output k: operand j}`` writes that go straight into a caller buffer.

    Safe when the caller's array is an operand of that kernel, every other reader of it (or of a view of it) runs
    no later than the kernel, and no view of it escapes. Callers' arrays that overlap each other are detected at
    call time (the driver then falls back to copying).
    """
    position = {n: k for k, n in enumerate(graph.nodes)}
    roots = set(graph.outputs)
    producer: dict[Node, tuple[Node, int]] = {}
    for n in graph.nodes:
        if n.op == "fused":
            producer[n] = (n, 0)
        elif n.op == "tuple_get" and n.inputs[0].op == "fused":
            producer[n] = (n.inputs[0], n.attrs["index"])
    plan: dict[Node, dict[int, int]] = {}
    for index, value in graph.mutations:
        if value not in producer:
            continue
        fused, out_index = producer[value]
        target = graph.inputs[index]
        if target not in fused.inputs:
            continue
        aliases = _aliases(graph, target)
        if aliases & roots or any(a is not target and a in fused.inputs for a in aliases):
            continue  # escapes, or the kernel also reads it through a view (other elements than it writes)
        readers = [n for n in graph.nodes if any(i in aliases for i in n.inputs) and n not in aliases]
        if any(position[r] > position[fused] for r in readers):
            continue
        body = fused.regions[0]
        head = next((n for n in body.nodes if n.op in ("matmul", "dot")), None)
        kernel_outputs = [o for o in body.outputs if o is not head]
        out_node = body.outputs[out_index]
        if out_node is head:
            continue
        plan.setdefault(fused, {})[kernel_outputs.index(out_node)] = fused.inputs.index(target)
    return plan


class CpuCompiled:
    """A graph compiled for the CPU backend; call it with the flat argument list."""

    def __init__(self, graph: Graph, options: Mapping[str, Any]) -> None:
        if not any(n.op == "fused" for n in graph.nodes):
            graph = fuse_graph(graph)
        self.graph = graph
        self.options = dict(options)
        self.memory = memory_plan(graph)
        self.kernels = {n: GroupKernel(n, options) for n in graph.nodes if n.op == "fused"}
        self.numpy_nodes = unfused_reasons(graph)
        self.inplace = _inplace_plan(graph)
        self.driver_source, namespace = self._driver(self.inplace)
        self._fast = namespace["driver"]
        self._safe = self._driver({})[1]["driver"] if self.inplace else self._fast
        self._array_args = [k for k, n in enumerate(graph.inputs) if isinstance(n.type, TensorType) and
                            not n.type.weak and n.type.shape != ()]

    def explain(self) -> str:
        """Kernels with their cut reasons, nodes left to NumPy and why, in-place writes, memory plan."""
        names = node_names(self.graph)
        lines = []
        for node, kernel in self.kernels.items():
            info = kernel.info
            ops = [n.op for n in info.amap]
            variants = sorted({launch.kernel.py_func.__name__ for launch in kernel.launches.values()})
            if kernel.gemm_updates:
                variants.append("BLAS gemm with beta=1 (the update folded into the product, no kernel)")
            lines.append(f"{names[node]} kernel {kernel.name} ({node.attrs['kind']}, {len(ops)} ops, domain "
                         f"{list(info.domain)}, reduces {info.raxes or '-'}; ran: {', '.join(variants) or '-'})")
            lines += [f"    not fused with {cut}" for cut in node.attrs.get("cuts", ())]
            for k, j in sorted(self.inplace.get(node, {}).items()):
                lines.append(f"    output {k} written in place into {names[node.inputs[j]]}")
        for node, why in self.numpy_nodes.items():
            if node.op not in ("tuple_get",):
                lines.append(f"{names[node]} {node.op} via NumPy: {why}")
        lines.append(self.memory.format())
        return "\n".join(lines)

    def __call__(self, args: Sequence[Any]) -> list[Any]:
        if self.inplace and self._overlapping(args):
            return self._safe(list(args))
        return self._fast(args)

    def _overlapping(self, args: Sequence[Any]) -> bool:
        arrays = [args[k] for k in self._array_args if isinstance(args[k], np.ndarray)]
        return any(np.may_share_memory(a, b) for a, b in itertools.combinations(arrays, 2))

    # -- driver source -------------------------------------------------------------------------------------------
    def _driver(self, inplace: Mapping[Node, dict[int, int]]) -> tuple[str, dict[str, Any]]:
        graph = self.graph
        names = node_names(graph)
        var = {n: "v" + names[n].lstrip("%") for n in graph.nodes}
        ns: dict[str, Any] = {"np": np, "_copy_back": _copy_back, "_detach": _detach}
        lines = ["def driver(args):"]
        if graph.inputs:
            lines.append(f"    {', '.join(var[n] for n in graph.inputs)}, = args")
        for k, n in enumerate(graph.nodes):
            if n.op == "input":
                continue
            v = var[n]
            if n.op == "const":
                ns[f"C{v}"] = n.attrs["value"]
                lines.append(f"    {v} = C{v}")
                continue
            args = ", ".join(var[i] for i in n.inputs)
            if n.op == "fused":
                ns[f"K{v}"] = self.kernels[n]
                plan = tuple(sorted(inplace.get(n, {}).items()))
                lines.append(f"    {v} = K{v}(({args}{',' if len(n.inputs) == 1 else ''}), {plan!r})"
                             f"  # {n.attrs['name']}")
                if len(n.regions[0].outputs) == 1:
                    lines.append(f"    {v} = {v}[0]")
            elif n.op == "tuple_get":
                lines.append(f"    {v} = {args}[{n.attrs['index']}]")
            else:
                ns[f"F{v}"] = OPS[n.op].impl
                ns[f"A{v}"] = dict(n.attrs)
                call = f"F{v}({args}, **A{v})" if n.inputs else f"F{v}(**A{v})"
                if isinstance(n.type, TensorType) and n.type.weak:
                    ns[f"T{v}"] = python_type(n.type.dtype)
                    call = f"T{v}({call})"
                lines.append(f"    {v} = {call}  # {n.op} via NumPy: {self.numpy_nodes.get(n, '')}")
            dead = [b for b in self.memory.release_after.get(k, ()) if b is not n]
            if dead:
                lines.append(f"    del {', '.join(var[b] for b in dead)}")
        outs = ", ".join(var[o] for o in graph.outputs)
        if graph.mutations:
            mutated = ", ".join(var[graph.inputs[i]] for i, _ in graph.mutations)
            lines.append(f"    outs = _detach([{outs}], ({mutated},))")
            for i, n in graph.mutations:
                lines.append(f"    _copy_back({var[graph.inputs[i]]}, {var[n]})")
            lines.append("    return outs")
        else:
            lines.append(f"    return [{outs}]")
        if any(n.op not in ("input", "const", "fused", "tuple_get") for n in graph.nodes):
            # NumPy calls run under the reference interpreter's error state (no floating-point warnings).
            lines[1:] = ["    with np.errstate(all='ignore'):"] + ["    " + line for line in lines[1:]]
        source = "\n".join(lines) + "\n"
        filename = f"<jitgraph driver #{next(_ids)}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(compile(source, filename, "exec"), ns)  # noqa: S102 - our own generated source
        return source, ns


def _copy_back(target: np.ndarray, value: Any) -> None:
    if target is not value:
        np.copyto(target, value, casting="unsafe")


def _detach(outputs: list[Any], mutated: tuple[Any, ...]) -> list[Any]:
    """Outputs are values at the time they were computed: copy any that share memory with a mutated input."""
    return [np.array(o, copy=True) if isinstance(o, np.ndarray) and any(np.may_share_memory(o, m) for m in mutated)
            else o for o in outputs]
