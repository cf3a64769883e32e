"""Slices with symbolic bounds, as the opcode handlers meet them (the lowering is ``symslice``).

``a[i, :i]`` or ``data[indptr[i]:indptr[i + 1]]`` (a slice bound that is a traced integer: the induction variable
or array data) yields a :class:`SymArray` instead of a graph break, and so does a gather through a 1-D one
(``x[indices[start:end]]``). Arithmetic with scalars and other symbolic slices builds an elementwise expression;
``np.dot``, ``np.sum``, ``np.outer`` and ``@`` on them, and assigning one (``a[k + 1:, k] /= a[k, k]``) are lowered
to loops. Anything else a SymArray meets is a graph break that names the operation, and the loop is then unrolled
or the call falls back, as before. Outside loop regions (``np.sum(data[indptr[0]:indptr[1]])``) the same holds,
for at most :data:`MAX_OUTSIDE` views a trace.

The handlers ask first (:func:`is_symbolic_view`, :func:`involves`, :func:`takes_call`) and then hand the values
over; each function here gets the trace context and plain values, never the frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from jitgraph.ir.graph import Node
from jitgraph.tracer import symslice
from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.values import TArray

OPS = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "//": "floor_divide", "%": "remainder",
       "**": "power"}
CALLS = (np.dot, np.outer, np.sum, np.matmul)
"""NumPy functions that take symbolic slices (everything else they meet breaks)."""
MAX_OUTSIDE = 8
"""Symbolic views a trace lowers outside loop regions (``data[indptr[0]:indptr[1]]`` at top level) before it
breaks: each is a loop of its own, and a loop unrolled because its region failed would make one per iteration (a
thousand small loops would take minutes to compile; the eager loop is faster)."""


@dataclass(eq=False)
class SymArray:
    """A traced value that is a symbolic-bound view, or an elementwise expression / outer product of them."""

    expr: Any
    __hash__ = None  # type: ignore[assignment]  # an ndarray is unhashable: ``{view: 1}`` raises TypeError

    def __bool__(self) -> bool:
        raise TypeError("SymArray has no truth value at trace time")

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        """NumPy must not wrap it as an object array constant: it has no data at trace time."""
        raise TypeError("a slice of symbolic length has no data at trace time")

    def stand_in(self) -> np.ndarray:
        """An object of the type NumPy gives the value (an ndarray), for isinstance/type checks."""
        return np.empty((0,), symslice.element_type(self.expr).dtype)


# ---- questions the handlers ask ----------------------------------------------------------------------------------
def is_symbolic_index(tx: TraceContext, index: Any) -> bool:
    """Whether ``index`` holds a slice with a traced bound (or a gather through one)."""
    entries = index if isinstance(index, tuple) else (index,)
    return any(isinstance(e, SymArray) or (isinstance(e, slice) and any(isinstance(p, TArray)
                                                                         for p in (e.start, e.stop, e.step)))
               for e in entries)


def is_symbolic_view(tx: TraceContext, container: Any, index: Any) -> bool:
    """``BINARY_SUBSCR``: ``a[i, :i]`` of a traced array inside a region."""
    return isinstance(container, TArray) and container.kind == "array" and is_symbolic_index(tx, index)


def involves(*values: Any) -> bool:
    """Whether an operator's operands include a symbolic slice."""
    return any(isinstance(v, SymArray) for v in values)


def takes_call(fn: Any, args: list[Any]) -> bool:
    """``CALL`` (without keywords): one of :data:`CALLS` with a symbolic slice among its arguments."""
    return any(fn is f for f in CALLS) and involves(*args)


# ---- what they do then -------------------------------------------------------------------------------------------
def getitem(tx: TraceContext, container: TArray, index: Any) -> SymArray:
    """``a[i, :i]``, ``a[indptr[i]:indptr[i + 1]]``, or a gather through one: ``x[indices[start:end]]``."""
    if isinstance(index, SymArray):
        try:
            return SymArray(symslice.gather(tx.read(container), index.expr))
        except (NotImplementedError, IndexError) as err:
            tx.graph_break(str(err), err if isinstance(err, IndexError) else None)
    return SymArray(_view(tx, container, index))


def setitem(tx: TraceContext, container: TArray, index: Any, value: Any) -> None:
    """``container[index] = value`` with a symbolic slice in ``index``."""
    if any(isinstance(e, SymArray) for e in (index if isinstance(index, tuple) else (index,))):
        tx.graph_break("storing through an index of symbolic length (a scatter x[idx[a:b]] = v)")
    target = _view(tx, container, index)
    new = symslice.assign(tx.builder, target, _operand(tx, value), _facts(tx))
    tx.write(container, new)


def binary(tx: TraceContext, symbol: str, a: Any, b: Any) -> Any:
    """``a <symbol> b`` with a symbolic slice on either side."""
    if symbol == "@":
        return _dot(tx, a, b)
    if symbol in OPS:
        return SymArray(symslice.Map(OPS[symbol], (_operand(tx, a), _operand(tx, b))))
    tx.graph_break(f"operator {symbol} on a slice of symbolic length")


def call(tx: TraceContext, fn: Any, args: list[Any]) -> Any:
    """``np.dot``/``np.matmul``/``np.outer``/``np.sum`` of symbolic slices."""
    if fn in (np.dot, np.matmul) and len(args) == 2:
        return _dot(tx, *args)
    if fn is np.outer and len(args) == 2 and all(isinstance(a, SymArray) for a in args):
        return SymArray(symslice.Outer(args[0].expr, args[1].expr))
    if fn is np.sum and len(args) == 1:
        return tx.result(symslice.reduce_sum(tx.builder, args[0].expr))
    tx.graph_break(f"{fn.__name__} of slices of symbolic length with these arguments")


# ---- helpers -----------------------------------------------------------------------------------------------------
def _facts(tx: TraceContext) -> frozenset[Node]:
    return frozenset(tx.regions.nonneg)


def _node(tx: TraceContext, value: Any) -> Node:
    if isinstance(value, TArray):
        if tx.type_of(value).shape != ():
            tx.graph_break("a whole array mixed with a slice of symbolic length (only scalars broadcast here)")
        return tx.read(value)
    if isinstance(value, bool | int | float | np.number):
        return tx.builder.const(value)
    tx.graph_break(f"a {type(value).__name__} in an expression with a slice of symbolic length")


def _operand(tx: TraceContext, value: Any) -> Any:
    return value.expr if isinstance(value, SymArray) else _node(tx, value)


def _view(tx: TraceContext, container: TArray, index: Any) -> symslice.SymView:
    key = []
    for e in index if isinstance(index, tuple) else (index,):
        if isinstance(e, slice):
            if e.step not in (None, 1):
                tx.graph_break("a slice with a step and a symbolic bound")
            for p in (e.start, e.stop):
                err = symslice.bound_error(tx.type_of(p)) if isinstance(p, TArray) else None
                if err is not None:
                    tx.graph_break(str(err), err)
            bounds = [None if p is None else tx.read(p) if isinstance(p, TArray) else int(p) for p in (e.start, e.stop)]
            key.append(slice(*bounds))
        elif isinstance(e, TArray) and tx.type_of(e).shape == ():
            key.append(tx.read(e))
        elif isinstance(e, int | np.integer):
            key.append(int(e))
        elif isinstance(e, SymArray):
            tx.graph_break("a gather of symbolic length combined with other indices (only x[idx[a:b]] of a 1-D x)")
        else:
            tx.graph_break("a symbolic slice combined with an index other than ints and slices")
    if not tx.in_region:
        outside = tx.builder.__dict__.setdefault("_symarrays_outside", [0])
        outside[0] += 1
        if outside[0] > MAX_OUTSIDE:
            tx.graph_break(f"slice bounds computed from array data in more than {MAX_OUTSIDE} slices outside loop "
                           "regions (a loop unrolled because its region failed? logger jitgraph.regions at DEBUG "
                           "says why)")
    return symslice.sym_view(tx.builder, tx.read(container), key, _facts(tx))


def _dot(tx: TraceContext, a: Any, b: Any) -> TArray:
    views = symslice.SymView | symslice.Gather
    if not (isinstance(a, SymArray) and isinstance(b, SymArray) and isinstance(a.expr, views)
            and isinstance(b.expr, views)):
        tx.graph_break("np.dot of a symbolic slice with something other than another symbolic slice")
    return tx.result(symslice.dot(tx.builder, a.expr, b.expr))
