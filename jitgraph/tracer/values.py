"""Symbolic values the interpreter pushes on its stack.

Everything known at trace time stays an ordinary Python value (ints, strings, shapes, dtypes, tuples, lists and
dicts of symbolic values). Only array data is symbolic: a :class:`TArray` names a :class:`Buffer` (the storage,
whose current contents is an IR node) and a *view path* from that storage, so an in-place update through a view
is replayed on its base as ``setitem``/inverse reshape and every other view of the same storage sees it, just as
NumPy's shared memory would.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jitgraph.ir.graph import Node

_buffer_ids = itertools.count()


class _Null:
    """The NULL the CPython stack holds below a callable (``PUSH_NULL``, ``LOAD_GLOBAL`` with the null bit)."""

    def __repr__(self) -> str:
        return "NULL"


NULL = _Null()


@dataclass(frozen=True)
class ViewStep:
    """One NumPy view operation (``getitem`` with a basic index, ``reshape``, ``transpose``, ``broadcast_to``)."""

    op: str
    attrs: tuple[tuple[str, Any], ...]

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.attrs)


@dataclass(eq=False)
class Buffer:
    """Storage of one array. ``node`` is its current contents; writes replace it and bump ``version``.

    ``input_index`` is set for caller-owned storage (a graph input): its final contents become a graph mutation.
    ``origin`` is the node the storage was created with: its type's layout is the *physical* layout, which writes
    never change (NumPy decides view-or-copy from it).
    """

    node: Node
    input_index: int | None = None
    version: int = 0
    uid: int = field(default_factory=lambda: next(_buffer_ids))
    origin: Node | None = None

    def __post_init__(self) -> None:
        if self.origin is None:
            self.origin = self.node


@dataclass(eq=False)
class TArray:
    """A tracked NumPy value: an array, a NumPy scalar or a runtime Python float.

    ``kind`` is what NumPy would hand back for this value: ``"array"`` (ndarray, 0-d included), ``"scalar"``
    (``np.float32(...)`` and friends) or ``"py"`` (a Python float/int that is a graph input, weak under NEP 50).
    """

    buffer: Buffer
    path: tuple[ViewStep, ...] = ()
    kind: str = "array"
    _cache: tuple[int, Node] | None = None

    @property
    def is_view(self) -> bool:
        return bool(self.path)

    def __bool__(self) -> bool:  # never let a symbolic value decide Python control flow by accident
        raise TypeError("TArray has no truth value at trace time")

    def __repr__(self) -> str:
        return f"<TArray {self.kind} buffer#{self.buffer.uid} path={len(self.path)}>"


@dataclass(eq=False)
class ArrayMethod:
    """``x.sum`` before it is called: the method name bound to a tracked array."""

    self_: TArray
    name: str


@dataclass(eq=False)
class BoundBuiltin:
    """A method of a trace-time container (``lst.append``, ``d.items``), called through the container table."""

    self_: Any
    name: str


@dataclass(eq=False)
class UfuncMethod:
    """``np.add.at`` and friends: a ufunc's method, before it is called."""

    ufunc: np.ufunc
    name: str


@dataclass(eq=False)
class BoundMethod:
    """A user function bound to a (possibly external) object: ``self.forward``."""

    self_: Any
    func: Any


@dataclass(eq=False)
class Yielded:
    """Values a generator frame yielded, consumed like a list (generators are run eagerly when created)."""

    values: list[Any]

    def __iter__(self) -> Any:
        return iter(self.values)


PLAIN_SCALARS = (int, float, bool, complex, str, bytes, type(None))


def is_plain(value: Any, depth: int = 0) -> bool:
    """True for trace-time data that Python can operate on directly without calling user code."""
    if isinstance(value, (*PLAIN_SCALARS, np.generic)) or value is Ellipsis:
        return True
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return True
    if isinstance(value, slice):
        return all(is_plain(v) for v in (value.start, value.stop, value.step))
    if isinstance(value, range):
        return True
    if depth < 8 and isinstance(value, tuple | list):
        return all(is_plain(v, depth + 1) for v in value)
    if depth < 8 and isinstance(value, dict):
        return all(is_plain(k, depth + 1) and is_plain(v, depth + 1) for k, v in value.items())
    return False


def contains_tarray(value: Any, depth: int = 0) -> bool:
    if isinstance(value, TArray):
        return True
    if depth < 8 and isinstance(value, tuple | list):
        return any(contains_tarray(v, depth + 1) for v in value)
    if depth < 8 and isinstance(value, dict):
        return any(contains_tarray(v, depth + 1) for v in value.values())
    return False


@dataclass(eq=False)
class ExternalCell:
    """A closure cell of a function defined outside the trace: read through a guard, never written."""

    cell: Any
    source: Any


@dataclass(eq=False)
class Return:
    """What a handler returns to end its frame."""

    value: Any
