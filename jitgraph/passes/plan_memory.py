"""The pipeline's last pass: compute the graph's memory plan once and attach it for the backend.

The plan itself (what a buffer is, when it dies, the peak bytes) is :mod:`jitgraph.ir.memory`; this pass runs it on
the fused graph and returns the same graph with ``memory`` set, which is what marks a graph as lowered.
"""

from __future__ import annotations

import dataclasses

from jitgraph.ir.graph import Graph
from jitgraph.ir.memory import MemoryPlan, memory_plan
from jitgraph.passes.manager import register_pass

__all__ = ["MemoryPlan", "memory_plan", "plan_memory"]


@register_pass("plan_memory")
def plan_memory(graph: Graph) -> Graph:
    """The graph with its memory plan attached (same nodes, inputs, outputs and mutations)."""
    return dataclasses.replace(graph, memory=memory_plan(graph))
