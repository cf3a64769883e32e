"""The backend contract and registry.

A backend is a function ``compile(graph, options) -> CompiledGraph``. The graph it gets is the pipeline's output:
fused, memory-planned (``jitgraph.passes``); a backend runs no pass itself. A CompiledGraph is called with the flat
list of graph arguments, returns the flat list of outputs, and has written every ``graph.mutations`` entry into
the caller's buffers before it returns, exactly like :func:`jitgraph.backends.eager.run`.

Everything the inspection views show about a compiled graph comes through the methods declared here, never by
guessing attribute names: its generated sources, its explain text, its control-flow regions, how its compile time
splits into code generation and Numba, and whether it interprets the graph instead of running generated code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from jitgraph.errors import UnsupportedError
from jitgraph.ir.graph import Graph


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
_BACKENDS: dict[str, Callable[[], BackendFn]] = {}


def register_backend(name: str, loader: Callable[[], BackendFn]) -> None:
    """Register a backend lazily: ``loader`` imports it on first use, so importing jitgraph stays cheap and an
    optional dependency (numba-cuda) is only asked for by the backend that needs it."""
    _BACKENDS[name] = loader


def get_backend(name: str) -> BackendFn:
    try:
        loader = _BACKENDS[name]
    except KeyError:
        raise UnsupportedError(f"unknown backend {name!r}", hint=f"use one of {sorted(_BACKENDS)}") from None
    return loader()


def _eager_loader() -> BackendFn:
    from jitgraph.backends import eager

    def compile_eager(graph: Graph, options: Mapping[str, Any]) -> CompiledGraph:
        return lambda args: eager.run(graph, args)

    return compile_eager


register_backend("eager", _eager_loader)

# Registers "cuda" lazily: the package imports no numba.cuda until a graph is compiled with backend="cuda".
import jitgraph.backends.cuda  # noqa: F401


def _cpu_loader() -> BackendFn:
    # Importing the package re-registers "cpu" with its own loader; numba loads only now, on first use.
    from jitgraph.backends.cpu import compile_cpu

    return compile_cpu


if "cpu" not in _BACKENDS:
    register_backend("cpu", _cpu_loader)
