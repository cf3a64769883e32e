"""The backend contract and registry.

A backend is a function ``compile(graph, options) -> CompiledGraph``. A CompiledGraph is called with the flat list
of graph arguments, returns the flat list of outputs, and has written every ``graph.mutations`` entry into the
caller's buffers before it returns, exactly like :func:`jitgraph.backends.eager.run`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from jitgraph.errors import UnsupportedError
from jitgraph.ir.graph import Graph


class CompiledGraph(Protocol):
    def __call__(self, args: Sequence[Any]) -> list[Any]: ...


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
