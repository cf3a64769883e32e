"""What loop regions (``regions.py``) and branch regions (``branches.py``) share when they trace a body.

Tracing a body is speculative: a discovery pass finds what the body changes, later passes re-run it with carried
inputs, and a failed attempt must leave the tracer as it was. :class:`Snapshot` records everything a pass can
change (locals, the stack, the pc, the builder, storages' contents, Python containers and cells) and puts it back.
:func:`enter` swaps in a region's builder, :func:`step` runs one instruction inside a body (with the checks a body
needs), and the helpers below turn the values a body leaves into carried region values.
"""

from __future__ import annotations

import itertools
import types
from typing import TYPE_CHECKING, Any

import numpy as np

from jitgraph.ir.graph import Node
from jitgraph.ir.ops.control import RegionBuilder
from jitgraph.ir.types import TensorType
from jitgraph.tracer.context import MAX_STEPS, TraceContext
from jitgraph.tracer.region_state import enter_region
from jitgraph.tracer.values import Buffer, TArray

if TYPE_CHECKING:
    from jitgraph.tracer.frame import Frame

_epochs = itertools.count(1 << 40)  # fresh buffer versions: invalidates every cached view read on restore


def fresh_version() -> int:
    """A buffer version no view has read yet (set on every storage a pass rebinds, so cached reads go stale)."""
    return next(_epochs)


def enter(frame: Frame) -> RegionBuilder:
    """Start a region nested in what the frame builds now; ops go into it until a snapshot restores the builder."""
    region, builder = enter_region(frame.tx.builder)
    frame.tx.builder = builder
    return region


def step(frame: Frame, inside: str, on_return: str) -> None:
    """Run the instruction at ``frame.pc`` inside a body. Anything a region cannot hold breaks: a ``try`` block, an
    opcode without a handler, an over-long trace (``cannot trace OP inside <inside>``) and a return (``on_return``)."""
    tx = frame.tx
    ins = frame.program.instrs[frame.pc]
    frame.pc += 1
    tx.steps += 1
    tx.at(frame.code.co_filename, ins.lineno)
    handler = frame.handlers.get(ins.op)
    if tx.steps > MAX_STEPS or ins.in_try or handler is None:
        tx.graph_break(f"cannot trace {ins.op} inside {inside}")
    if ins.op == "RETURN_VALUE" or handler(frame, ins) is not None:
        tx.graph_break(on_return)


class Snapshot:
    """Everything a body trace changes, so a failed or discovery pass can be undone."""

    def __init__(self, frame: Frame) -> None:
        tx = frame.tx
        self.locals = dict(frame.locals)
        self.stack = list(frame.stack)
        self.pc = frame.pc
        self.n_yielded = None if frame.yielded is None else len(frame.yielded)  # a body pass may yield (a genexpr)
        self.builder = tx.builder
        self.n_buffers = len(tx.buffers)
        self.nodes = [(b, b.node) for b in _reachable_buffers(frame)]
        self.mutables = _snapshot_mutables(frame)

    def python_objects_changed(self) -> bool:
        """Whether a trace pass mutated a Python list/dict/set or closure cell (a side effect regions cannot
        carry: the pass is undone and the loop unrolled, or the branch is a graph break)."""
        return any(_contents(obj) != saved[0] for obj, saved in self.mutables)

    def changed_objects(self) -> list[tuple[Any, Any]]:
        """The Python lists, dicts, sets and cells the pass changed, each with its contents before the pass."""
        return [(obj, saved[1]) for obj, saved in self.mutables if _contents(obj) != saved[0]]

    def stored_items(self, frame: Frame, mark: tuple[Any, ...], outer_region: bool) -> list[tuple[Any, Any]]:
        """The dict and list items a pass rebound, as ``(container, key)``, for an ``if`` traced as a cond: a path
        may store into containers the trace writes back (``grads[k] = grads[k] * s``) when it keeps their keys and
        lengths; any other change to a Python object (a new key, an append, a closure variable, an attribute or
        global store since the side-effect ``mark``) is a graph break, as is a store inside another region."""
        tx, slots = frame.tx, []
        for obj, values in self.changed_objects():
            if outer_region or not isinstance(obj, dict | list) or id(obj) not in tx.side_effects.written:
                break
            if isinstance(obj, dict) and list(obj) != list(values) or \
                    isinstance(obj, list) and len(obj) != len(values):
                break
            keys = values if isinstance(obj, dict) else range(len(values))
            slots += [(obj, k) for k in keys if obj[k] is not values[k]]
        else:
            if tx.side_effects.only_items_since(mark):
                return slots
        self.restore(frame)
        tx.graph_break("a path changes a Python object (list, dict, closure variable, attribute or global)")

    def changed_locals(self, frame: Frame) -> list[str]:
        """Locals the pass bound to another value (new locals included)."""
        return [n for n, v in frame.locals.items() if self.locals.get(n, _MISSING) is not v]

    def written(self) -> list[Buffer]:
        """Storages the pass wrote."""
        return [b for b, node in self.nodes if b.node is not node]

    def restore(self, frame: Frame) -> None:
        tx = frame.tx
        frame.locals.clear()
        frame.locals.update(self.locals)
        frame.stack[:] = self.stack
        frame.pc = self.pc
        if self.n_yielded is not None and frame.yielded is not None:
            del frame.yielded[self.n_yielded:]
        tx.builder = self.builder
        del tx.buffers[self.n_buffers:]
        for buffer, node in self.nodes:
            buffer.node = node
            buffer.version = fresh_version()
        for obj, saved in self.mutables:
            _set_contents(obj, saved)


_EMPTY = object()
_MISSING = object()


def _contents(obj: Any) -> Any:
    """Identity-level contents of a mutable Python object, comparable with ``==`` (ids, not values)."""
    if isinstance(obj, list):
        return [id(v) for v in obj]
    if isinstance(obj, dict):
        return [(k, id(v)) for k, v in obj.items()]
    if isinstance(obj, set):
        return sorted(id(v) for v in obj)
    try:
        return id(obj.cell_contents)
    except ValueError:
        return _EMPTY


def _set_contents(obj: Any, saved: Any) -> None:
    values = saved[1]
    if isinstance(obj, list):
        obj[:] = values
    elif isinstance(obj, dict | set):
        obj.clear()
        obj.update(values)
    elif values is _EMPTY:
        try:
            del obj.cell_contents
        except ValueError:
            pass
    else:
        obj.cell_contents = values


def _snapshot_mutables(frame: Frame) -> list[tuple[Any, Any]]:
    """Lists, dicts, sets and closure cells reachable from the frame, with their contents (to undo a pass)."""
    todo: list[Any] = [*frame.locals.values(), *frame.cells.values(), *frame.stack]
    seen: set[int] = set()
    out: list[tuple[Any, Any]] = []
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, list | dict | set):
            values = list(obj) if isinstance(obj, list) else dict(obj) if isinstance(obj, dict) else set(obj)
            out.append((obj, (_contents(obj), values)))
            todo.extend(obj.values() if isinstance(obj, dict) else obj)
        elif isinstance(obj, types.CellType):  # hasattr raises ValueError for an empty cell
            try:
                contents = obj.cell_contents
            except ValueError:
                contents = _EMPTY
            out.append((obj, (_contents(obj), contents)))
            if contents is not _EMPTY:
                todo.append(contents)
    return out


def _reachable_buffers(frame: Frame) -> list[Buffer]:
    """Every storage the body could write: caller arrays, and the arrays (and views) held by locals, cells, the
    stack and wrapped globals (fresh op results are not in ``tx.buffers``)."""
    tx = frame.tx
    found: dict[int, Buffer] = {id(b): b for b in tx.buffers}
    todo: list[Any] = [*frame.locals.values(), *frame.cells.values(), *frame.stack, *tx.wrapped_outside_values()]
    seen: set[int] = set()
    while todo:
        value = todo.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, TArray):
            found.setdefault(id(value.buffer), value.buffer)
        elif isinstance(value, list | tuple):
            todo.extend(value)
        elif isinstance(value, dict):
            todo.extend(value.values())
        elif isinstance(value, types.CellType):
            try:  # an empty cell (a comprehension's variable before its first pass) holds nothing
                todo.append(value.cell_contents)
            except ValueError:
                pass
        # an ExternalCell (an outside cell) is read through a guard: skipped
    return list(found.values())


# ---- carried values ----------------------------------------------------------------------------------------------
def value_node(tx: TraceContext, value: Any) -> Node:
    """The node of a value a body carries in or out (a traced scalar, or a trace-time number as a constant)."""
    return tx.read(value) if isinstance(value, TArray) else tx.builder.const(value)


def carriable(value: Any) -> bool:
    """Whether a region can carry ``value``: a traced value or a plain number (not a bool, list, object...)."""
    return isinstance(value, TArray) or (isinstance(value, int | float | np.number) and not isinstance(value, bool))


def kind_of(value: Any, t: TensorType) -> str:
    """The ``TArray.kind`` a region result takes for the value it replaces."""
    if isinstance(value, TArray):
        return value.kind if value.kind != "array" or t.shape != () else "array"
    return "py" if t.weak else "scalar"


def widen(tx: TraceContext, before: TensorType, after: TensorType) -> TensorType:
    """The type a carried value settles on when a pass changes it (``s = 0`` then ``s = s + 0.5``)."""
    if (before.shape, before.dtype, before.weak) == (after.shape, after.dtype, after.weak):
        return before
    if before.shape != after.shape:
        tx.graph_break(f"a loop-carried value changes shape from {before} to {after}")
    # NEP 50: a weak (Python) scalar takes the other side's dtype, so ``t = 0; t = t + int8`` carries an int8.
    dtype = np.result_type(*(t.proto() if t.weak else t.dtype for t in (before, after)))
    return TensorType(after.shape, dtype, weak=before.weak and after.weak)
