"""Opcode handlers: attribute access, calls and function creation (semantics live in ``calls.py``; NumPy calls on
slices of symbolic length inside loop regions in ``symarrays.py``)."""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

from jitgraph.tracer import calls, side_effects, supers, symarrays
from jitgraph.tracer.bytecode import Instr
from jitgraph.tracer.iteration import iterate
from jitgraph.tracer.values import NULL

if TYPE_CHECKING:
    from jitgraph.tracer.frame import Frame


class CallOps:
    def op_LOAD_ATTR(self: Frame, ins: Instr) -> None:
        self.push(calls.load_attr(self.tx, self.pop(), ins.argval))

    def op_LOAD_METHOD(self: Frame, ins: Instr) -> None:
        value = calls.load_attr(self.tx, self.pop(), ins.argval)
        self.push(NULL)
        self.push(value)

    def op_STORE_ATTR(self: Frame, ins: Instr) -> None:
        obj = self.pop()
        value = self.pop()
        tx, name = self.tx, ins.argval
        if not tx.side_effects.has_attr(obj, name) and tx.attribute_unchanged(obj, name, value):
            return  # ``self.W -= g`` stores back the array it updated in place: nothing changes
        side_effects.refuse_attr_store(tx, obj, name)
        tx.side_effects.store_attr(tx, obj, name, value)  # replayed after the graph (side_effects.py)

    def op_DELETE_ATTR(self: Frame, ins: Instr) -> None:
        self.tx.graph_break(f"deleting attribute '{ins.argval}' is a side effect")

    def op_CALL(self: Frame, ins: Instr) -> None:
        kwnames: tuple[str, ...] = ins.argval or ()
        values = self.popn(ins.arg)
        a, b = self.popn(2)
        if a is NULL:
            fn, args = b, values
        elif b is NULL:
            fn, args = a, values
        else:  # CPython's [method, self] layout
            fn, args = a, [b] + values
        if not kwnames and symarrays.takes_call(fn, args):
            self.push(symarrays.call(self.tx, fn, args))
            return
        npos = len(args) - len(kwnames)
        kwargs = dict(zip(kwnames, args[npos:]))
        if fn is super and not kwargs:  # super() reads this frame's __class__ cell and first argument
            self.push(supers.make_super(self.tx, self, list(args)))
            return
        self.push(calls.call(self.tx, fn, list(args[:npos]), kwargs))

    def op_LOAD_SUPER_ATTR(self: Frame, ins: Instr) -> None:
        """3.12+: ``super().name`` with ``super``, the class and the instance on the stack; bit 0 of the argument
        asks for a method (pushed after a NULL, as LOAD_METHOD does), bit 1 marks ``super(cls, obj)``."""
        cls, obj = self.popn(2)
        self.pop()  # the global super
        proxy = supers.make_super(self.tx, self, [cls, obj])
        value = calls.load_attr(self.tx, proxy, ins.argval)
        if (ins.arg or 0) & 1:
            self.push(NULL)
        self.push(value)

    def op_CALL_FUNCTION_EX(self: Frame, ins: Instr) -> None:
        kwargs = self.pop() if ins.arg & 1 else {}
        args = self.pop()
        fn = self.pop()
        if fn is NULL:  # one NULL next to the callable, on either side (bytecode.py's call convention)
            fn = self.pop()
        elif self.stack and self.stack[-1] is NULL:
            self.pop()
        if not isinstance(kwargs, dict):
            self.tx.graph_break("** of a non-dict")
        self.push(calls.call(self.tx, fn, list(iterate(self.tx, args)), dict(kwargs)))

    def op_MAKE_FUNCTION(self: Frame, ins: Instr) -> None:
        code = self.pop()
        flags = ins.arg or 0
        closure = self.pop() if flags & 0x08 else None
        if flags & 0x04:
            self.pop()  # annotations: not needed to trace
        kwdefaults = self.pop() if flags & 0x02 else None
        defaults = self.pop() if flags & 0x01 else None
        fn = types.FunctionType(code, self.globals, code.co_name, defaults, closure)
        if kwdefaults:
            fn.__kwdefaults__ = kwdefaults
        calls.register_made_function(self.tx, fn, self.globals_source)
        self.push(fn)

    def op_BEFORE_WITH(self: Frame, ins: Instr) -> None:
        self.tx.graph_break("with blocks are not traced")

    def op_PRINT_EXPR(self: Frame, ins: Instr) -> Any:
        self.tx.graph_break("printing is a side effect")
