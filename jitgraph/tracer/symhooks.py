"""Tracer hooks for slices with symbolic bounds inside loop regions (the lowering itself is in ``symslice``).

Inside a region body, ``a[i, :i]`` (a slice bound that is a traced integer) yields a :class:`SymArray` instead of
a graph break. Arithmetic with scalars and other symbolic slices builds an elementwise expression; ``np.dot``,
``np.sum``, ``np.outer`` and ``@`` on them, and assigning one (``a[k + 1:, k] /= a[k, k]``) are lowered to loops.
Anything else a SymArray meets is a graph break that names the operation, and the loop is then unrolled or the
call falls back, as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from jitgraph.ir.graph import Node
from jitgraph.tracer import symslice
from jitgraph.tracer.regions import _BodyBuilder
from jitgraph.tracer.values import NULL, TArray

if TYPE_CHECKING:
    from jitgraph.tracer.bytecode import Instr
    from jitgraph.tracer.frame import Frame

OPS = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "//": "floor_divide", "%": "remainder",
       "**": "power"}


@dataclass(eq=False)
class SymArray:
    """A traced value that is a symbolic-bound view, or an elementwise expression / outer product of them."""

    expr: Any

    def __bool__(self) -> bool:
        raise TypeError("SymArray has no truth value at trace time")


def _symbolic(index: Any) -> bool:
    entries = index if isinstance(index, tuple) else (index,)
    return any(isinstance(e, slice) and any(isinstance(p, TArray) for p in (e.start, e.stop, e.step))
               for e in entries)


def _facts(frame: Frame) -> frozenset[Node]:
    return frozenset(frame.tx.__dict__.get("_nonneg", ()))


def _node(frame: Frame, value: Any) -> Node:
    tx = frame.tx
    if isinstance(value, TArray):
        if tx.type_of(value).shape != ():
            tx.graph_break("a whole array mixed with a slice of symbolic length (only scalars broadcast here)")
        return tx.read(value)
    if isinstance(value, bool | int | float | np.number):
        return tx.builder.const(value)
    tx.graph_break(f"a {type(value).__name__} in an expression with a slice of symbolic length")


def _operand(frame: Frame, value: Any) -> Any:
    return value.expr if isinstance(value, SymArray) else _node(frame, value)


def _view(frame: Frame, container: TArray, index: Any) -> symslice.SymView:
    tx = frame.tx
    key = []
    for e in index if isinstance(index, tuple) else (index,):
        if isinstance(e, slice):
            if e.step not in (None, 1):
                tx.graph_break("a slice with a step and a symbolic bound")
            bounds = [None if p is None else tx.read(p) if isinstance(p, TArray) else int(p) for p in (e.start, e.stop)]
            key.append(slice(*bounds))
        elif isinstance(e, TArray) and tx.type_of(e).shape == ():
            key.append(tx.read(e))
        elif isinstance(e, int | np.integer):
            key.append(int(e))
        else:
            tx.graph_break("a symbolic slice combined with an index other than ints and slices")
    return symslice.sym_view(tx.builder, tx.read(container), key, _facts(frame))


def _in_region(frame: Frame) -> bool:
    return isinstance(frame.tx.builder, _BodyBuilder)


def binary_subscr(original: Any) -> Any:
    def handler(frame: Frame, ins: Instr) -> None:
        index, container = frame.stack[-1], frame.stack[-2]
        if isinstance(container, TArray) and container.kind == "array" and _symbolic(index) and _in_region(frame):
            frame.popn(2)
            frame.push(SymArray(_view(frame, container, index)))
            return None
        return original(frame, ins)

    return handler


def store_subscr(original: Any) -> Any:
    def handler(frame: Frame, ins: Instr) -> None:
        index, container, value = frame.stack[-1], frame.stack[-2], frame.stack[-3]
        if isinstance(container, TArray) and _symbolic(index) and _in_region(frame):
            frame.popn(3)
            tx = frame.tx
            target = _view(frame, container, index)
            new = symslice.assign(tx.builder, target, _operand(frame, value), _facts(frame))
            tx.write(container, new)
            return None
        if isinstance(value, SymArray):
            frame.tx.graph_break("storing a slice of symbolic length into a fixed slice")
        return original(frame, ins)

    return handler


def binary_op(original: Any) -> Any:
    def handler(frame: Frame, ins: Instr) -> None:
        b, a = frame.stack[-1], frame.stack[-2]
        if not (isinstance(a, SymArray) or isinstance(b, SymArray)):
            return original(frame, ins)
        symbol, _ = ins.argval
        frame.popn(2)
        tx = frame.tx
        if symbol == "@":
            frame.push(_dot(frame, a, b))
        elif symbol in OPS:
            frame.push(SymArray(symslice.Map(OPS[symbol], (_operand(frame, a), _operand(frame, b)))))
        else:
            tx.graph_break(f"operator {symbol} on a slice of symbolic length")
        return None

    return handler


def _dot(frame: Frame, a: Any, b: Any) -> TArray:
    if not (isinstance(a, SymArray) and isinstance(b, SymArray) and isinstance(a.expr, symslice.SymView)
            and isinstance(b.expr, symslice.SymView)):
        frame.tx.graph_break("np.dot of a symbolic slice with something other than another symbolic slice")
    return frame.tx.result(symslice.dot(frame.tx.builder, a.expr, b.expr))


def call(original: Any) -> Any:
    def handler(frame: Frame, ins: Instr) -> None:
        n = ins.arg or 0
        if ins.argval or len(frame.stack) < n + 2:
            return original(frame, ins)
        args = frame.stack[len(frame.stack) - n:] if n else []
        slot_a, slot_b = frame.stack[-n - 2], frame.stack[-n - 1]
        fn = slot_b if slot_a is NULL else slot_a if slot_b is NULL else None
        if fn not in (np.dot, np.outer, np.sum, np.matmul) or not any(isinstance(a, SymArray) for a in args):
            return original(frame, ins)
        frame.popn(n + 2)
        tx = frame.tx
        if fn in (np.dot, np.matmul) and len(args) == 2:
            frame.push(_dot(frame, *args))
        elif fn is np.outer and len(args) == 2 and all(isinstance(a, SymArray) for a in args):
            frame.push(SymArray(symslice.Outer(args[0].expr, args[1].expr)))
        elif fn is np.sum and len(args) == 1:
            frame.push(tx.result(symslice.reduce_sum(tx.builder, args[0].expr)))
        else:
            tx.graph_break(f"{fn.__name__} of slices of symbolic length with these arguments")
        return None

    return handler


def build_slice(original: Any) -> Any:
    """Inside a region a slice may hold traced integers; BINARY_SUBSCR/STORE_SUBSCR then see a symbolic index."""

    def handler(frame: Frame, ins: Instr) -> None:
        parts = frame.stack[len(frame.stack) - (ins.arg or 0):]
        if _in_region(frame) and any(isinstance(p, TArray) for p in parts):
            frame.popn(ins.arg)
            frame.push(slice(*parts))
            return None
        return original(frame, ins)

    return handler


HOOKS = {"BUILD_SLICE": build_slice, "BINARY_SUBSCR": binary_subscr, "STORE_SUBSCR": store_subscr, "BINARY_OP": binary_op, "CALL": call}
