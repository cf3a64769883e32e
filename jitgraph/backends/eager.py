"""The reference interpreter: runs each node's NumPy implementation in order.

As ``backend="eager"`` it is also a backend (:func:`compile`): the graph runs node by node, with nothing generated.
It defines what every compiled backend must compute, mutations of caller buffers included: values are computed
first, and only then copied into the caller's arrays, so a graph that reads an input after "mutating" it sees the
old value exactly as its functional form says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from jitgraph.backends.base import KernelSource
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops import OPS
from jitgraph.ir.ops.control import RegionInfo, describe_regions
from jitgraph.ir.types import TensorType, python_type


def evaluate(graph: Graph, args: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """Compute ``(outputs, mutation values)`` without touching the caller's buffers."""
    if len(args) != len(graph.inputs):
        raise TypeError(f"graph takes {len(graph.inputs)} arguments, got {len(args)}")
    env: dict[Node, Any] = {}
    for node in graph.nodes:
        env[node] = _eval_node(node, env, args)
    return [env[o] for o in graph.outputs], [env[n] for _, n in graph.mutations]


def _eval_node(node: Node, env: dict[Node, Any], args: Sequence[Any]) -> Any:
    if node.op == "input":
        return args[node.attrs["index"]]
    if node.op == "const":
        return node.attrs["value"]
    operands = [env[i] for i in node.inputs]
    impl = OPS[node.op].impl
    with np.errstate(all="ignore"):
        if node.regions:
            result = impl(*operands, regions=node.regions, run=run_region, **node.attrs)
        else:
            result = impl(*operands, **node.attrs)
    t = node.type
    if isinstance(t, TensorType) and t.weak:
        return python_type(t.dtype)(result)
    if (isinstance(t, TensorType) and t.layout == "C" and isinstance(result, np.ndarray)
            and not result.flags.c_contiguous and not OPS[node.op].makes_view(tuple(i.type for i in node.inputs),
                                                                               node.attrs)):
        # NumPy keeps an F-ordered operand's order (``order="K"``); the IR types fresh results C-ordered, as
        # compiled backends allocate them, and later views of this value inherit that promise.
        result = np.ascontiguousarray(result)
    return result


def run_region(body: Graph, args: Sequence[Any]) -> list[Any]:
    """Run a region body; region ops' implementations call back into this."""
    outputs, _ = evaluate(body, args)
    return outputs


def apply_mutations(graph: Graph, args: Sequence[Any], values: Sequence[Any]) -> None:
    """Write every mutation value into its caller array, all as of *before* the first write.

    A value that shares memory with any target (``a <- b, b <- a``, or ``x <- x.T``) is copied first; writing
    straight from it would let one write leak into a value that a later write reads.
    """
    targets = [args[index] for index, _ in graph.mutations]
    pending = []
    for (index, _), value in zip(graph.mutations, values):
        target = args[index]
        if target is value:
            continue
        if isinstance(value, np.ndarray) and any(np.may_share_memory(value, t) for t in targets):
            value = value.copy()
        pending.append((target, value))
    for target, value in pending:
        np.copyto(target, value, casting="unsafe")


def run(graph: Graph, args: Sequence[Any]) -> list[Any]:
    """Run ``graph`` on ``args`` like a compiled backend would: returns outputs, writes mutated inputs."""
    outputs, values = evaluate(graph, args)
    if graph.mutations:
        # Outputs are values *at the point they were computed*; a view of an input that is about to be written
        # must be detached first, or the write would leak into it.
        mutated = [args[i] for i, _ in graph.mutations]
        outputs = [np.array(o, copy=True) if isinstance(o, np.ndarray) and
                   any(np.may_share_memory(o, m) for m in mutated) else o for o in outputs]
    # A constant's array is frozen and shared by every call; hand the caller its own writable copy, as NumPy
    # would have computed a fresh array (``return np.arange(3) * 2`` folded to a constant is still writable).
    frozen = [n.attrs["value"] for n in graph.nodes if n.op == "const" and isinstance(n.attrs["value"], np.ndarray)]
    if frozen:
        outputs = [np.array(o, copy=True) if isinstance(o, np.ndarray) and not o.flags.writeable and
                   any(np.may_share_memory(o, c) for c in frozen) else o for o in outputs]
    apply_mutations(graph, args, values)
    return outputs


class EagerCompiled:
    """The eager backend's CompiledGraph: the reference interpreter bound to one graph."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def __call__(self, args: Sequence[Any]) -> list[Any]:
        return run(self.graph, args)

    def kernel_sources(self) -> list[KernelSource]:
        return []  # nothing is generated: every node runs its NumPy implementation

    def explain(self) -> str:
        return "eager backend: every node runs its NumPy reference implementation, in order"

    def regions(self) -> list[RegionInfo]:
        return describe_regions(self.graph)

    def compile_times(self) -> dict[str, float]:
        return {"codegen": 0.0, "numba": 0.0}

    def fallback_reason(self) -> str | None:
        return None  # interpreting is what this backend was asked to do, not a fallback


def compile(graph: Graph, options: Mapping[str, Any]) -> EagerCompiled:
    """The eager backend: any graph, lowered or not (it needs no kernels and no memory plan)."""
    return EagerCompiled(graph)
