"""The backend contract and registry.

A backend is a function ``compile(graph, options) -> CompiledGraph``. The graph it gets is the pipeline's output:
fused, memory-planned (``jitgraph.passes``); a backend runs no pass itself. A CompiledGraph is called with the flat
list of graph arguments, returns the flat list of outputs, and has written every ``graph.mutations`` entry into
the caller's buffers before it returns, exactly like :func:`jitgraph.backends.eager.run`.

Backends are found by name in a table of module paths (``_BACKENDS``), imported on first use.

Everything the inspection views show about a compiled graph comes through the methods declared here, never by
guessing attribute names: its generated sources, its explain text, its control-flow regions, how its compile time
splits into code generation and Numba, and whether it interprets the graph instead of running generated code.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from jitgraph.errors import BackendError, UnsupportedError
from jitgraph.ir.graph import Graph
from jitgraph.ir.memory import MemoryPlan


@dataclass(frozen=True)
class KernelSource:
    """One generated source a backend produced: a fused kernel, a driver, a loop driver. ``note`` says why the
    source is empty (a kernel built lazily on its first call) or anything else worth showing beside it."""

    title: str
    source: str
    note: str = ""


@runtime_checkable
class CompiledGraph(Protocol):
    """What a backend returns for one graph."""

    def __call__(self, args: Sequence[Any]) -> list[Any]:
        """Run the graph on the flat argument list; returns the flat outputs, mutations written."""
        ...

    def kernel_sources(self) -> list[KernelSource]:
        """Every generated source, in the order it runs (empty for an interpreting backend)."""
        ...

    def explain(self) -> str:
        """Plain text for ``explain``: kernels, launches, host fallbacks, in-place writes, memory plan."""
        ...

    def regions(self) -> list[Any]:
        """Control-flow regions as compiled (loop/while/cond, trip count, parallel or not); empty if none."""
        ...

    def compile_times(self) -> dict[str, float]:
        """Seconds spent so far in ``codegen`` and ``numba`` (kernels built lazily add to these on first call)."""
        ...

    def fallback_reason(self) -> str | None:
        """Why this graph is interpreted with NumPy instead of compiled, or None when it runs generated code."""
        ...


BackendFn = Callable[[Graph, Mapping[str, Any]], CompiledGraph]

# Backend name -> the module that implements it. Each module exposes ``compile(graph, options) -> CompiledGraph``
# and may expose ``require()``, which raises BackendError when what the backend needs at run time is missing (no
# GPU, no numba-cuda). Modules are imported on first use, so importing jitgraph imports neither numba nor
# numba.cuda, and an optional dependency is only asked for by the backend that needs it.
_BACKENDS: dict[str, str] = {
    "eager": "jitgraph.backends.eager",
    "cpu": "jitgraph.backends.cpu.backend",
    "cuda": "jitgraph.backends.cuda.backend",
}


def register_backend(name: str, module: str) -> None:
    """Make backend ``name`` the one implemented by ``module`` (a dotted module path, imported on first use)."""
    _BACKENDS[name] = module


def get_backend(name: str) -> BackendFn:
    """The compile function of backend ``name``; raises BackendError when its runtime is missing."""
    try:
        path = _BACKENDS[name]
    except KeyError:
        raise UnsupportedError(f"unknown backend {name!r}", hint=f"use one of {sorted(_BACKENDS)}") from None
    module = importlib.import_module(path)
    require = getattr(module, "require", None)
    if require is not None:
        require()
    return module.compile


def require_lowered(graph: Graph, backend: str) -> MemoryPlan:
    """The memory plan of a lowered graph; a clear BackendError for a graph that skipped the pass pipeline.

    Backends consume what the pipeline decided (fusion groups, the memory plan) and run no pass themselves; the
    driver always lowers a graph before it compiles it, so only a caller that builds graphs by hand meets this."""
    if graph.memory is None:
        raise BackendError(f"backend={backend!r} compiles lowered graphs, and this one has no memory plan",
                           hint="run it through jitgraph.passes.run_pipeline(graph, options) first (its last pass, "
                                "plan_memory, attaches the plan; a custom options['passes'] list must end with "
                                "'fuse', 'plan_memory')")
    return graph.memory
