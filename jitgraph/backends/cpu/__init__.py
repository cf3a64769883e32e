"""The CPU backend: fused loop-nest kernels compiled with Numba, BLAS through NumPy, and a disk cache.

Importing this package registers it as backend ``"cpu"``. Options: ``cache`` (bool, default True: kernels are
stored under ``$JITGRAPH_CACHE_DIR``), ``math`` (``"fast"``: the vectorisable math library, the default;
``"libm"``: scalar libm calls, bit-exact with NumPy but slower).

Graphs with control-flow regions (``loop``/``while``/``cond``) go to the region driver in
:mod:`jitgraph.backends.cpu.scalar`; all others are fused (if the pipeline has not done it already) and run by a
generated driver (:mod:`jitgraph.backends.cpu.program`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jitgraph.backends.base import BackendFn, CompiledGraph, register_backend
from jitgraph.ir.graph import Graph

_CONTROL_FLOW = ("loop", "while", "cond")


def compile_cpu(graph: Graph, options: Mapping[str, Any]) -> CompiledGraph:
    if any(n.op in _CONTROL_FLOW for n in graph.nodes):
        from jitgraph.backends.cpu.scalar import compile_or_eager

        return compile_or_eager(graph, options)
    from jitgraph.backends.cpu.program import CpuCompiled

    return CpuCompiled(graph, options)


def _loader() -> BackendFn:
    return compile_cpu


register_backend("cpu", _loader)
