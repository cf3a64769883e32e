"""Opcode handlers: operators, comparisons, membership and subscripts (semantics live in ``arrays.py``; slices
of symbolic length inside loop regions in ``symarrays.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jitgraph.tracer import arrays, symarrays
from jitgraph.tracer.bytecode import Instr
from jitgraph.tracer.ops_control import truth
from jitgraph.tracer.values import TArray, is_plain

if TYPE_CHECKING:
    from jitgraph.tracer.frame import Frame


class ArithOps:
    def op_BINARY_OP(self: Frame, ins: Instr) -> None:
        symbol, inplace = ins.argval
        b = self.pop()
        a = self.pop()
        if symarrays.involves(a, b):
            self.push(symarrays.binary(self.tx, symbol, a, b))
        else:
            self.push(arrays.binary(self.tx, symbol, a, b, inplace))

    def op_COMPARE_OP(self: Frame, ins: Instr) -> None:
        b = self.pop()
        a = self.pop()
        self.push(arrays.compare(self.tx, ins.argval, a, b))

    def op_UNARY_NEGATIVE(self: Frame, ins: Instr) -> None:
        self.push(arrays.unary(self.tx, "-", self.pop()))

    def op_UNARY_POSITIVE(self: Frame, ins: Instr) -> None:
        self.push(arrays.unary(self.tx, "+", self.pop()))

    def op_UNARY_INVERT(self: Frame, ins: Instr) -> None:
        self.push(arrays.unary(self.tx, "~", self.pop()))

    def op_UNARY_NOT(self: Frame, ins: Instr) -> None:
        self.push(not truth(self.tx, self.pop()))

    def op_IS_OP(self: Frame, ins: Instr) -> None:
        b = self.pop()
        a = self.pop()
        self.push(arrays.identical(self.tx, a, b) != bool(ins.arg))

    def op_CONTAINS_OP(self: Frame, ins: Instr) -> None:
        container = self.pop()
        item = self.pop()
        if isinstance(item, TArray) or isinstance(container, TArray):
            self.tx.graph_break("`in` test on array data")
        if not isinstance(container, list | tuple | dict | set | frozenset | str | range) or not is_plain(item):
            self.tx.graph_break(f"`in` test on a {type(container).__name__}")
        if isinstance(container, list | tuple) and not is_plain(container):
            self.tx.graph_break("`in` test on a list holding arrays compares their data")
        self.push((item in container) != bool(ins.arg))

    def op_BINARY_SUBSCR(self: Frame, ins: Instr) -> None:
        index = self.pop()
        container = self.pop()
        if symarrays.is_symbolic_view(self.tx, container, index):
            self.push(symarrays.getitem(self.tx, container, index))
        else:
            self.push(arrays.getitem(self.tx, container, index))

    def op_STORE_SUBSCR(self: Frame, ins: Instr) -> None:
        index = self.pop()
        container = self.pop()
        value = self.pop()
        if isinstance(container, TArray) and symarrays.is_symbolic_index(self.tx, index):
            symarrays.setitem(self.tx, container, index, value)
        elif symarrays.involves(value):
            self.tx.graph_break("storing a slice of symbolic length into a fixed slice")
        elif _callers_container(self, container, index):
            current = container.get(index) if isinstance(container, dict) else None
            if current is not None and current is value:
                return  # ``d[k] -= x`` stores back the same (updated in place) array: nothing to do
            self.tx.side_effects.mutate_container(self.tx, container, "an item assignment")
            try:
                container[index] = value  # the tracer's copy; the caller's object is rewritten after the graph
            except Exception as exc:  # noqa: BLE001
                self.tx.graph_break(f"Python raises {type(exc).__name__}: {exc}", exc)
        else:
            arrays.setitem(self.tx, container, index, value)

    def op_DELETE_SUBSCR(self: Frame, ins: Instr) -> None:
        index = self.pop()
        container = self.pop()
        if isinstance(container, list | dict) and is_plain(index):
            if id(container) in self.tx.caller_owned:
                self.tx.side_effects.mutate_container(self.tx, container, "del of an item")
            try:
                del container[index]
            except Exception as exc:  # noqa: BLE001
                self.tx.graph_break(f"Python raises {type(exc).__name__}: {exc}", exc)
            return
        self.tx.graph_break("del of an item of a caller's container or an array")


def _callers_container(frame: Frame, container: object, index: object) -> bool:
    """A list or dict the tracer copied from the caller's (an argument, an attribute, a global), with a plain
    index: the store is recorded as a side effect (side_effects.py) instead of breaking."""
    return isinstance(container, list | dict) and id(container) in frame.tx.caller_owned and is_plain(index)
