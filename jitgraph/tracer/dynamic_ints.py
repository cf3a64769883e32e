"""Automatic dynamic ints: a Python int argument that changes between calls becomes a graph input.

A step counter (``adam(p, g, m, v, t)``) is specialised by value like every int at first, so each new ``t`` would
recompile, and after ``cache_limit`` entries the function would run eagerly. As in ``torch.compile``, the first
recompile caused by an int argument's value retraces with that argument as a runtime value instead: it is wrapped
in :class:`DynamicInt`, which the dispatch key lists as a leaf (by type, not value) and the tracer turns into a
weak (NEP 50) ``pyint`` input.

Python ints are unbounded where the graph computes in int64, and the trace cannot branch, index or shape on a value
it does not know. So the dynamic trace is kept only when the int flows straight into float arithmetic (``0.9 **
t``, ``t * 0.5``, ``x / t``, where int64 holds every value a guard lets in): any graph break, any direct use with an
integer or boolean result, any use inside a loop or branch region, or returning it, and the argument goes back to
being specialised by value, for good. Values outside ``|t| < 2**31`` are always keyed by value.
"""

from __future__ import annotations

from typing import Any

from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops import OPS, OpKind
from jitgraph.ir.types import TensorType

LIMIT = 2**31  # dynamic only for |t| < LIMIT: every product or power of such an int in float64 stays ordinary


class DynamicInt(int):
    """A Python int argument traced as a runtime value (its key part is its type)."""

    __slots__ = ()


def view(args: tuple, kwargs: dict[str, Any], dynamic: frozenset[int | str]) -> tuple[tuple, dict[str, Any]]:
    """``args``/``kwargs`` with the arguments at ``dynamic`` positions (ints or keyword names) wrapped."""

    def wrap(v: Any) -> Any:
        return DynamicInt(v) if type(v) is int and -LIMIT < v < LIMIT else v

    args = tuple(wrap(v) if i in dynamic else v for i, v in enumerate(args))
    if kwargs:
        kwargs = {k: wrap(v) if k in dynamic else v for k, v in kwargs.items()}
    return args, kwargs


def int_arguments(args: tuple, kwargs: dict[str, Any]) -> dict[int | str, int]:
    """The top-level plain int arguments by position or keyword."""
    found: dict[int | str, int] = {i: v for i, v in enumerate(args) if type(v) is int}
    found.update({k: v for k, v in kwargs.items() if type(v) is int})
    return found


def changed(before: dict[int | str, int], now: dict[int | str, int]) -> frozenset[int | str]:
    """Positions of int arguments present in both calls with different values."""
    return frozenset(p for p, v in now.items() if p in before and before[p] != v)


def uses_are_float(graph: Graph) -> bool:
    """Whether every weak-int input of ``graph`` (the dynamic ints) is read only by elementwise ops whose result is
    floating point, and is no output of its own."""
    ints = {n for n in graph.inputs if isinstance(n.type, TensorType) and n.type.weak and n.type.dtype.kind in "iu"}
    if not ints:
        return True
    if any(o in ints for o in graph.outputs):
        return False
    return all(_float_reader(n, ints) for n in _all_nodes(graph))


def _float_reader(n: Node, ints: set[Node]) -> bool:
    if not any(i in ints for i in n.inputs):
        return True
    t = n.type
    return not n.regions and OPS[n.op].kind is OpKind.ELEMENTWISE and isinstance(t, TensorType) and t.dtype.kind in "fc"


def _all_nodes(graph: Graph) -> list[Node]:
    nodes = []
    for n in graph.nodes:
        nodes.append(n)
        for region in n.regions:
            nodes.extend(_all_nodes(region))
    return nodes
