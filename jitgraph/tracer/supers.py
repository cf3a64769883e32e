"""``super()`` at trace time: a proxy that looks attributes up the instance's MRO after the defining class.

Zero-argument ``super()`` reads what CPython reads: the ``__class__`` cell of the method being traced and its
first argument (3.11 calls ``super`` with no arguments; 3.12+ compiles ``super().name`` to ``LOAD_SUPER_ATTR``
with the class and the instance on the stack). Methods found are bound to the instance and inlined like any other
method; ``object.__init__`` is a no-op. Other attributes (properties, data descriptors, class data) break with that
reason.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.values import BoundMethod, ExternalCell, TArray

if TYPE_CHECKING:
    from jitgraph.tracer.frame import Frame


@dataclass(eq=False)
class SuperProxy:
    """``super(thisclass, obj)``: attribute lookups start after ``thisclass`` in ``obj``'s MRO."""

    thisclass: type
    obj: Any


def _object_init(self: Any, /) -> None:
    """``object.__init__(self)``: nothing to do (the tracer inlines this instead of calling a C slot)."""


def make_super(tx: TraceContext, frame: Frame, args: list[Any]) -> SuperProxy:
    """``super()`` or ``super(cls, obj)`` called in ``frame``."""
    if len(args) == 2:
        cls, obj = args
    elif not args:
        cls, obj = _implicit(tx, frame)
    else:
        tx.graph_break("super() with one argument (an unbound super object)")
    if isinstance(obj, TArray) or not isinstance(cls, type):
        err = TypeError("super() argument 1 must be a type")
        tx.graph_break(str(err), err)
    owner = obj if isinstance(obj, type) else type(obj)
    if not issubclass(owner, cls):
        err = TypeError("super(type, obj): obj must be an instance or subtype of type")
        tx.graph_break(str(err), err)
    return SuperProxy(cls, obj)


def _implicit(tx: TraceContext, frame: Frame) -> tuple[type, Any]:
    code = frame.code
    cell = frame.cells.get("__class__")
    if cell is None or (code.co_argcount + code.co_kwonlyargcount == 0 and not code.co_flags & 0x04):
        err = RuntimeError("super(): no arguments" if cell is not None else "super(): __class__ cell not found")
        tx.graph_break(str(err), err)
    try:
        cls = cell.cell.cell_contents if isinstance(cell, ExternalCell) else cell.cell_contents
    except ValueError:
        err = RuntimeError("super(): empty __class__ cell")
        tx.graph_break(str(err), err)
    first = code.co_varnames[0] if code.co_varnames else None
    if first in frame.locals:
        return cls, frame.locals[first]
    holder = frame.cells.get(first)
    if holder is not None and not isinstance(holder, ExternalCell):
        return cls, holder.cell_contents
    err = RuntimeError("super(): arg[0] deleted")
    tx.graph_break(str(err), err)


def super_attr(tx: TraceContext, proxy: SuperProxy, name: str, call: Callable[..., Any]) -> Any:
    """``proxy.name``: the first definition after ``thisclass`` in the MRO, bound as Python would bind it."""
    owner = proxy.obj if isinstance(proxy.obj, type) else type(proxy.obj)
    mro = owner.__mro__
    for klass in mro[mro.index(proxy.thisclass) + 1:]:
        if name not in klass.__dict__:
            continue
        raw = klass.__dict__[name]
        if klass is object and name == "__init__":
            return BoundMethod(proxy.obj, _object_init)
        if isinstance(raw, staticmethod):
            return raw.__func__
        if isinstance(raw, classmethod):
            return BoundMethod(owner, raw.__func__)
        if isinstance(raw, types.FunctionType):
            return raw if isinstance(proxy.obj, type) else BoundMethod(proxy.obj, raw)
        if isinstance(raw, property) and raw.fget is not None and not isinstance(proxy.obj, type):
            return call(tx, raw.fget, [proxy.obj], {})
        tx.graph_break(f"super().{name} is a {type(raw).__name__} of {klass.__name__}, which the tracer does not "
                       "look up through super()")
    err = AttributeError(f"'super' object has no attribute '{name}'")
    tx.graph_break(str(err), err)
