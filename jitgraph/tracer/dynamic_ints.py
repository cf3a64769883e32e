"""Automatic dynamic ints: a Python int argument that changes between calls becomes a graph input.

A step counter (``adam(p, g, m, v, t)``) is specialised by value like every int at first, so each new ``t`` would
recompile, and after ``cache_limit`` entries the function would run eagerly. As in ``torch.compile``, the first
recompile caused by an int argument's value retraces with that argument as a runtime value instead: it is wrapped
in :class:`DynamicInt`, which the dispatch key lists as a leaf (by type, not value) and the tracer turns into a
weak (NEP 50) ``pyint`` input.

Python ints are unbounded where the graph computes in int64, and the trace cannot branch, index or shape on a value
it does not know. So the dynamic trace is kept only when the int flows straight into float arithmetic (``0.9 **
t``, ``t * 0.5``, ``x / t``, where int64 holds every value a guard lets in) or bounds a loop region (``for _ in
range(n)``: the region's trip count is read at run time): any graph break, any direct use with an integer or boolean
result, any use inside a loop or branch region, or returning it, and the argument goes back to being specialised by
value, for good. Values outside ``|t| < 2**31`` are always keyed by value.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from jitgraph.errors import JitgraphError
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
    floating point, or as a bound of a loop region (``for _ in range(n)``), and is no output of its own."""
    ints = {n for n in graph.inputs if isinstance(n.type, TensorType) and n.type.weak and n.type.dtype.kind in "iu"}
    if not ints:
        return True
    if any(o in ints for o in graph.outputs):
        return False
    return all(_float_reader(n, ints) for n in _all_nodes(graph))


def _float_reader(n: Node, ints: set[Node]) -> bool:
    if not any(i in ints for i in n.inputs):
        return True
    if n.op == "loop" and not any(i in ints for i in n.inputs[3:]):
        return True  # ``for i in range(n)``: a bound of a loop region (start, stop, step) is a run-time trip count
    t = n.type
    return not n.regions and OPS[n.op].kind is OpKind.ELEMENTWISE and isinstance(t, TensorType) and t.dtype.kind in "fc"


def _all_nodes(graph: Graph) -> list[Node]:
    nodes = []
    for n in graph.nodes:
        nodes.append(n)
        for region in n.regions:
            nodes.extend(_all_nodes(region))
    return nodes


# ---- dynamic dimensions (``jitgraph.mark_dynamic`` / ``mark_static``, ``compile(dynamic=...)``) ------------------
# NumPy arrays take no attributes (torch.compile marks a tensor by one) and are unhashable, so marks live in a table
# keyed by ``id(array)``, each with a weak reference whose callback removes the entry when the array dies: a new
# array that reuses the id is never seen as marked. Marks are read on a cache miss only (as torch reads them when it
# traces): the warm path never looks at them.
_MARKS: dict[int, tuple[weakref.ref, set[int], set[int]]] = {}
_MARKS_LOCK = threading.RLock()  # reentrant: a weakref callback may run (garbage collection) while mark() holds it


def mark(array: Any, dim: int | Sequence[int], dynamic: bool) -> None:
    """Record that ``array``'s dimension(s) ``dim`` are dynamic (or static) for every compiled function it is
    passed to; a later mark of the same dimension replaces an earlier one."""
    if not isinstance(array, np.ndarray):
        raise JitgraphError(f"mark_{'dynamic' if dynamic else 'static'} takes a NumPy array, not "
                            f"{type(array).__name__}", hint="mark the array argument itself")
    dims = [dim] if isinstance(dim, int) else list(dim)
    for d in dims:
        if not isinstance(d, int) or not -array.ndim <= d < array.ndim:
            raise JitgraphError(f"dimension {d!r} is out of range for an array of shape {array.shape}",
                                hint=f"give a dimension between {-array.ndim} and {array.ndim - 1}")
    key = id(array)
    with _MARKS_LOCK:
        found = _MARKS.get(key)
        if found is None or found[0]() is not array:
            found = (weakref.ref(array, lambda _ref, key=key: _forget(key, _ref)), set(), set())
            _MARKS[key] = found
        add, drop = (found[1], found[2]) if dynamic else (found[2], found[1])
        for d in dims:
            add.add(d % array.ndim)
            drop.discard(d % array.ndim)


def _forget(key: int, ref: weakref.ref) -> None:
    with _MARKS_LOCK:
        found = _MARKS.get(key)
        if found is not None and found[0] is ref:
            del _MARKS[key]


def marked_dims(args: tuple, kwargs: dict[str, Any], names: list[str]) -> tuple[set[str], set[str]]:
    """The dimensions marked dynamic and static among the call's arrays (top level, and inside dicts, lists and
    tuples), as labels of the call's facts: ``x.shape[0]``, ``batch['x'].shape[1]``."""
    dynamic: set[str] = set()
    static: set[str] = set()
    if not _MARKS:
        return dynamic, static

    def walk(value: Any, label: str) -> None:
        t = type(value)
        if t is np.ndarray:
            found = _MARKS.get(id(value))
            if found is not None and found[0]() is value:
                dynamic.update(f"{label}.shape[{d}]" for d in found[1])
                static.update(f"{label}.shape[{d}]" for d in found[2])
        elif t is dict:
            for k, v in value.items():
                walk(v, f"{label}[{k!r}]")
        elif t is list or t is tuple:
            for i, v in enumerate(value):
                walk(v, f"{label}[{i}]")

    for name, value in list(zip(names, args)) + list(kwargs.items()):
        walk(value, name)
    return dynamic, static


def size_changes(old: dict[str, Any], new: dict[str, Any]) -> set[str] | None:
    """The dimensions (``x.shape[0]``) in which two calls' facts (``keys.describe``) differ, when they differ in
    array sizes only: the same arguments, types, dtypes, ranks and layouts (strides may follow the sizes). None when
    anything else differs, or nothing does."""
    if old.keys() != new.keys():
        return None
    dims: set[str] = set()
    for label, a in old.items():
        b = new[label]
        if label.endswith(".strides") or a is b:
            continue
        if label.endswith(".shape") and type(a) is tuple and type(b) is tuple and len(a) == len(b):
            dims.update(f"{label}[{i}]" for i, (x, y) in enumerate(zip(a, b)) if x != y)
            continue
        if not _same(a, b):
            return None
    for label, a in old.items():  # strides that changed with the same shape: another layout, not another size
        if label.endswith(".strides") and a != new[label] and old.get(label[:-8] + ".shape") == new.get(
                label[:-8] + ".shape"):
            return None
    return dims or None


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and repr(a) == repr(b)
    except Exception:  # noqa: BLE001 - facts that cannot be compared differ
        return False
