"""A symbolic frame: locals, cells, the value stack and the instruction loop.

Handlers are methods named ``op_<OPCODE>`` spread over one mixin per opcode family (``ops_*.py``); the loop looks
them up in a table built once from those names (:data:`HANDLERS`), and what a handler's method says is what runs:
loop, branch and symbolic-slice regions are called from the handlers themselves. A missing entry is a graph break
naming the opcode, never a crash. Region bodies run instructions through the same table (``frame.handlers``).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, ClassVar

from jitgraph.tracer.bytecode import Instr, normalize
from jitgraph.tracer.context import MAX_STEPS, TraceContext
from jitgraph.tracer.guards import Source
from jitgraph.tracer.ops_arith import ArithOps
from jitgraph.tracer.ops_calls import CallOps
from jitgraph.tracer.ops_control import ControlOps
from jitgraph.tracer.ops_stack import StackOps


class Frame(StackOps, ControlOps, ArithOps, CallOps):
    handlers: ClassVar[dict[str, Callable[[Frame, Instr], Any]]]
    """The opcode table (:data:`HANDLERS`), for code that steps a frame by itself (region bodies)."""

    def __init__(self, tx: TraceContext, code: types.CodeType, locals_: dict[str, Any], cells: dict[str, Any],
                 globals_: dict[str, Any], globals_source: Source | None, builtins: dict[str, Any]) -> None:
        self.tx = tx
        self.code = code
        self.program = normalize(code)
        self.locals = locals_
        self.cells = cells
        self.globals = globals_
        self.globals_source = globals_source
        self.builtins = builtins
        self.stack: list[Any] = []
        self.pc = 0
        self.yielded: list[Any] | None = None

    def push(self, value: Any) -> None:
        self.stack.append(value)

    def pop(self) -> Any:
        return self.stack.pop()

    def popn(self, n: int) -> list[Any]:
        if n == 0:
            return []
        values = self.stack[-n:]
        del self.stack[-n:]
        return values

    def run(self) -> Any:
        tx = self.tx
        instrs = self.program.instrs
        filename = self.code.co_filename
        while True:
            ins = instrs[self.pc]
            self.pc += 1
            tx.steps += 1
            tx.at(filename, ins.lineno)
            if tx.steps > MAX_STEPS:
                tx.graph_break(f"trace longer than {MAX_STEPS} instructions (a loop too long to unroll)")
            if ins.in_try:
                tx.graph_break("try/except and with blocks are not traced")
            handler = HANDLERS.get(ins.op)
            if handler is None:
                tx.graph_break(f"unsupported bytecode {ins.op}")
            result = handler(self, ins)
            if result is not None:
                return result.value

    def jump(self, ins: Instr) -> None:
        assert ins.target is not None
        self.pc = ins.target


HANDLERS: dict[str, Callable[[Frame, Instr], Any]] = {
    name[3:]: getattr(Frame, name) for name in dir(Frame) if name.startswith("op_")}
Frame.handlers = HANDLERS


def run_frame(tx: TraceContext, code: types.CodeType, locals_: dict[str, Any], cells: dict[str, Any],
              globals_: dict[str, Any], globals_source: Source | None, builtins: dict[str, Any],
              generator: bool) -> Any:
    """Run ``code`` in a new frame and return what it returns (a generator's yielded values, as ``Yielded``): the
    interpreter entry point that a trace context carries for inlined calls (``TraceContext.run_frame``)."""
    frame = Frame(tx, code, locals_, cells, globals_, globals_source, builtins)
    if generator:
        frame.yielded = []
    return frame.run()
