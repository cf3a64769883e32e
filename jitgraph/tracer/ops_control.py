"""Opcode handlers: jumps, branches, loops, return and yield.

A branch on a trace-time value is taken at trace time. A branch on a traced scalar (data-dependent control flow)
becomes a ``cond`` or ``while`` region (``branches.py``), and a ``for`` over a long or symbolic ``range`` a
``loop`` region (``regions.py``); what cannot become a region is a graph break at the user's line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jitgraph.tracer import branches, regions
from jitgraph.tracer.bytecode import Instr
from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.iteration import iterate
from jitgraph.tracer.values import Return, TArray, Yielded, is_plain

if TYPE_CHECKING:
    from jitgraph.tracer.frame import Frame


def truth(tx: TraceContext, value: Any) -> bool:
    """``bool(value)`` at trace time, or a graph break when it depends on array data or on user code."""
    if isinstance(value, TArray):
        tx.graph_break("branch on a value computed from array data (data-dependent control flow); "
                       "use np.where, or keep the decision in a Python argument")
    if is_plain(value) or isinstance(value, set | frozenset):
        return bool(value)
    cls = type(value)
    if any(hasattr(cls, m) for m in ("__bool__", "__len__")) and tx.source_of(value) is not None:
        tx.graph_break(f"truth value of a {cls.__name__} object calls its __bool__/__len__")
    try:
        return bool(value)
    except Exception as exc:  # noqa: BLE001 - anything else is not a trace-time decision
        tx.graph_break(f"truth value of {cls.__name__}", exc)


class ControlOps:
    def op_JUMP(self: Frame, ins: Instr) -> None:
        self.jump(ins)

    def op_POP_JUMP_IF_FALSE(self: Frame, ins: Instr) -> None:
        value = self.pop()
        if isinstance(value, TArray):
            branches.branch(self, ins, value, jump_when=False)
        elif not truth(self.tx, value):
            self.jump(ins)

    def op_POP_JUMP_IF_TRUE(self: Frame, ins: Instr) -> None:
        value = self.pop()
        if isinstance(value, TArray):
            branches.branch(self, ins, value, jump_when=True)
        elif truth(self.tx, value):
            self.jump(ins)

    def op_POP_JUMP_IF_NONE(self: Frame, ins: Instr) -> None:
        if self.pop() is None:
            self.jump(ins)

    def op_POP_JUMP_IF_NOT_NONE(self: Frame, ins: Instr) -> None:
        if self.pop() is not None:
            self.jump(ins)

    def op_JUMP_IF_FALSE_OR_POP(self: Frame, ins: Instr) -> None:
        if not truth(self.tx, self.stack[-1]):
            self.jump(ins)
        else:
            self.pop()

    def op_JUMP_IF_TRUE_OR_POP(self: Frame, ins: Instr) -> None:
        if truth(self.tx, self.stack[-1]):
            self.jump(ins)
        else:
            self.pop()

    def op_GET_ITER(self: Frame, ins: Instr) -> None:
        value = self.pop()
        self.push(regions.RegionIter(value) if regions.wants_region(value) else iterate(self.tx, value))

    def op_FOR_ITER(self: Frame, ins: Instr) -> None:
        top = self.stack[-1]
        if isinstance(top, regions.RegionIter) and regions.for_iter(self, ins, top):
            return  # traced as a loop region; else for_iter put a plain iterator in its place, to unroll
        try:
            self.push(next(self.stack[-1]))
        except StopIteration:
            self.pop()
            self.jump(ins)

    def op_RETURN_VALUE(self: Frame, ins: Instr) -> Return:
        value = self.pop()
        if self.yielded is not None:  # a generator: the caller gets its values, and knows it was a generator
            return Return(Yielded(self.yielded))
        return Return(value)

    def op_YIELD_VALUE(self: Frame, ins: Instr) -> None:
        if self.yielded is None:
            self.tx.graph_break("yield outside a generator that is consumed at once")
        self.yielded.append(self.pop())
        self.push(None)

    def op_RAISE_VARARGS(self: Frame, ins: Instr) -> None:
        self.tx.graph_break("raise statement (the call runs eagerly so the exception is raised by Python)")

    def op_LOAD_ASSERTION_ERROR(self: Frame, ins: Instr) -> None:
        self.push(AssertionError)
