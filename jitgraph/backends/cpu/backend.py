"""``compile(graph, options)`` for ``backend="cpu"``: the region driver for control flow, else the kernel driver."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jitgraph.backends.base import CompiledGraph, require_lowered
from jitgraph.backends.cpu.program import CpuCompiled
from jitgraph.backends.cpu.scalar import compile_or_eager
from jitgraph.ir.graph import Graph

_CONTROL_FLOW = ("loop", "while", "cond")


def compile(graph: Graph, options: Mapping[str, Any]) -> CompiledGraph:
    """Compile a lowered graph (the pipeline's output) for the CPU; an unlowered one raises BackendError."""
    require_lowered(graph, "cpu")
    if any(n.op in _CONTROL_FLOW for n in graph.nodes):
        return compile_or_eager(graph, options)
    return CpuCompiled(graph, options)
