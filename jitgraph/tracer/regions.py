"""Loops traced once into ``loop`` regions instead of being unrolled.

A ``for`` over ``range(...)`` whose trip count exceeds :data:`UNROLL_MAX`, or whose bounds are symbolic (computed
from array data, like CSR row pointers), is traced *once*, with the induction variable as a symbolic Python int:

1. the body runs once symbolically to discover what it changes (locals rebound, array storages written);
2. it runs again with those values as carried body inputs (types widened once if, say, ``s = 0`` becomes a
   float64), and its final values become the body's outputs;
3. a ``loop`` node is recorded in the enclosing graph and the changed locals and storages are rebound to its
   results, so code after the loop (and views of the same storages) see them.

A ``break``/``return`` inside the body, a side effect on a Python object, or a branch on the induction variable
makes the attempt fail; the tracer's state is restored and the loop is unrolled as before when its trip count is
known (so nothing that traced before stops tracing), or the call falls back with the reason when it is not.

Hooks: :func:`get_iter` and :func:`for_iter` wrap the tracer's ``GET_ITER``/``FOR_ITER`` handlers and
:func:`range_call` its ``range`` builtin. :func:`enable` installs them at run time (until the tracer calls them
directly).
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from jitgraph.ir.graph import GraphBuilder, Node
from jitgraph.ir.ops.control import INDEX_TYPE, RegionBuilder, _project, _resignature
from jitgraph.ir.types import TensorType
from jitgraph.tracer.context import GraphBreak
from jitgraph.tracer.values import Buffer, TArray

if TYPE_CHECKING:
    from jitgraph.tracer.bytecode import Instr
    from jitgraph.tracer.frame import Frame

UNROLL_MAX = 16
_log = logging.getLogger("jitgraph.regions")
_epochs = itertools.count(1 << 40)  # fresh buffer versions: invalidates every cached view read on restore


@dataclass(eq=False)
class SymRange:
    """``range(start, stop, step)`` with at least one bound that is a traced integer."""

    start: Any
    stop: Any
    step: Any


@dataclass(eq=False)
class RegionIter:
    """What GET_ITER pushes for a loop to be traced as a region (FOR_ITER recognises it)."""

    rng: range | SymRange


class _BodyBuilder:
    """Stands in for ``tx.builder`` while a body is traced: ops go into the region; graph inputs (an array global
    first read in the body) and constants go to the root graph, from which the region captures them."""

    def __init__(self, region: RegionBuilder, root: GraphBuilder) -> None:
        object.__setattr__(self, "region", region)
        object.__setattr__(self, "root", root)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.region, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.region, name, value)
        if name == "loc":
            self.root.loc = value

    @property
    def inputs(self) -> list[Node]:
        return self.root.inputs

    @property
    def input_names(self) -> list[str]:
        return self.root.input_names

    def input(self, type_: Any, name: str = "") -> Node:
        return self.root.input(type_, name)

    def const(self, value: Any, type_: TensorType | None = None) -> Node:
        return self.root.const(value, type_)


def range_call(tx: Any, *args: Any) -> range | SymRange:
    if not any(isinstance(a, TArray) for a in args):
        return range(*args)
    for a in args:
        if isinstance(a, TArray):
            t = tx.type_of(a)
            if t.shape != () or t.dtype.kind not in "iu":
                err = TypeError(f"'{t.dtype}' object cannot be interpreted as an integer")
                tx.graph_break(str(err), err)
        elif not isinstance(a, int | np.integer):
            err = TypeError(f"'{type(a).__name__}' object cannot be interpreted as an integer")
            tx.graph_break(str(err), err)
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else 1)
    return SymRange(start, stop, step)


class _Unroll(Exception):
    """A short loop whose body does not index arrays with the loop variable: unrolling is better."""


def wants_region(value: Any) -> bool:
    return isinstance(value, SymRange) or (type(value) is range and len(value) > 1)


def _indexes_with(graph_nodes: list[Node], induction: Node) -> bool:
    """Whether the induction variable reaches an index operand (directly or through scalar arithmetic)."""
    derived = {induction}
    for node in graph_nodes:
        if node.op in ("getitem", "setitem", "scatter_add"):
            first = 2 if node.op != "getitem" else 1
            if any(i in derived for i in node.inputs[first:]):
                return True
        elif node.regions:
            return True  # a nested region: keep the outer loop a region too (its body is not unrollable cheaply)
        elif any(i in derived for i in node.inputs) and node.type.shape == ():  # type: ignore[union-attr]
            derived.add(node)
    return False


class _State:
    """Everything a body trace changes, so a failed or discovery pass can be undone."""

    def __init__(self, frame: Frame) -> None:
        tx = frame.tx
        self.locals = dict(frame.locals)
        self.stack = list(frame.stack)
        self.pc = frame.pc
        self.builder = tx.builder
        self.n_buffers = len(tx.buffers)
        self.nodes = [(b, b.node) for b in _reachable_buffers(frame)]
        self.mutables = _snapshot_mutables(frame)

    def python_objects_changed(self) -> bool:
        """Whether a trace pass mutated a Python list/dict/set or closure cell (a side effect regions cannot
        carry: the pass is undone and the loop unrolled, or the branch is a graph break)."""
        return any(_contents(obj) != saved[0] for obj, saved in self.mutables)

    def restore(self, frame: Frame) -> None:
        tx = frame.tx
        frame.locals.clear()
        frame.locals.update(self.locals)
        frame.stack[:] = self.stack
        frame.pc = self.pc
        tx.builder = self.builder
        del tx.buffers[self.n_buffers:]
        for buffer, node in self.nodes:
            buffer.node = node
            buffer.version = next(_epochs)
        for obj, saved in self.mutables:
            _set_contents(obj, saved)


_EMPTY = object()


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
        elif hasattr(obj, "cell_contents") and not isinstance(obj, TArray):
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
    todo: list[Any] = [*frame.locals.values(), *frame.cells.values(), *frame.stack, *tx._by_source.values()]
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
        elif hasattr(value, "cell_contents") or type(value).__name__ == "ExternalCell":
            todo.append(getattr(value, "cell_contents", None))
    return list(found.values())


def _run_body(frame: Frame, head: int, exit_pc: int) -> None:
    """Interpret instructions from ``frame.pc`` until the back-edge returns to the loop head ``head``."""
    from jitgraph.tracer.context import MAX_STEPS
    from jitgraph.tracer.frame import HANDLERS

    tx, instrs = frame.tx, frame.program.instrs
    filename = frame.code.co_filename
    while frame.pc != head:
        if not head < frame.pc < exit_pc:
            tx.graph_break("early exit (break) from a loop traced as a region")
        ins = instrs[frame.pc]
        frame.pc += 1
        tx.steps += 1
        tx.at(filename, ins.lineno)
        if tx.steps > MAX_STEPS or ins.in_try or ins.op not in HANDLERS:
            tx.graph_break(f"cannot trace {ins.op} inside a loop region")
        if HANDLERS[ins.op](frame, ins) is not None:
            tx.graph_break("return inside a loop traced as a region")


def _value_node(tx: Any, value: Any) -> Node:
    return tx.read(value) if isinstance(value, TArray) else tx.builder.const(value)


def _carriable(value: Any) -> bool:
    return isinstance(value, TArray) or (isinstance(value, int | float | np.number) and not isinstance(value, bool))


def _kind(value: Any, t: TensorType) -> str:
    if isinstance(value, TArray):
        return value.kind if value.kind != "array" or t.shape != () else "array"
    return "py" if t.weak else "scalar"


def _trace_body(frame: Frame, head: int, exit_pc: int, names: list[str], buffers: list[Buffer],
                types: list[TensorType], kinds: list[str], counts_up_from_nonneg: bool = False,
                ) -> tuple[RegionBuilder, Node, list[Node], list[Any]]:
    """One pass over the body with ``names``/``buffers`` as carried inputs of ``types``; returns the region
    builder, the induction input, the carried inputs and the final values (TArrays or plain numbers)."""
    tx = frame.tx
    outer = tx.builder
    parent = outer.region if isinstance(outer, _BodyBuilder) else outer
    root = outer.root if isinstance(outer, _BodyBuilder) else outer
    rb = RegionBuilder(parent)
    induction = rb.fixed_input(INDEX_TYPE, "i")
    if counts_up_from_nonneg:  # a fact for the symbolic-slice lowering (index >= 0, so no wrap-around)
        tx.__dict__.setdefault("_nonneg", set()).add(induction)
    carried = [rb.fixed_input(t, name) for t, name in zip(types, names + [f"buf{b.uid}" for b in buffers])]
    tx.builder = _BodyBuilder(rb, root)
    for name, node, kind in zip(names, carried, kinds):
        frame.locals[name] = TArray(Buffer(node), (), kind)
    for buffer, node in zip(buffers, carried[len(names):]):
        buffer.node = node
        buffer.version = next(_epochs)
    frame.push(TArray(Buffer(induction), (), "py"))
    _run_body(frame, head, exit_pc)
    finals = [frame.locals.get(name) for name in names] + [b.node for b in buffers]
    return rb, induction, carried, finals


def _counts_up_from_nonneg(tx: Any, rng: range | SymRange) -> bool:
    start, step = rng.start, rng.step
    if isinstance(step, TArray) or step <= 0:
        return False
    if isinstance(start, TArray):
        return tx.type_of(start).dtype.kind in "ub" or tx.read(start) in tx.__dict__.get("_nonneg", ())
    return start >= 0


def trace_loop(frame: Frame, ins: Instr, rng: range | SymRange) -> None:
    """FOR_ITER on a :class:`RegionIter`: record the whole loop as one ``loop`` node, then jump past it."""
    tx = frame.tx
    head, exit_pc = frame.pc - 1, ins.target
    state = _State(frame)
    bounds = [_value_node(tx, v) for v in ((rng.start, rng.stop, rng.step))]
    # Pass 1: discover which locals and storages the body changes.
    up = _counts_up_from_nonneg(tx, rng)
    rb, induction, _, _ = _trace_body(frame, head, exit_pc, [], [], [], [], up)
    if state.python_objects_changed():
        state.restore(frame)
        if isinstance(rng, SymRange):
            tx.graph_break("a loop with a side effect on a Python object (list, dict, closure variable)")
        raise _Unroll
    if not isinstance(rng, SymRange) and len(rng) <= UNROLL_MAX and not _indexes_with(rb.nodes, induction):
        state.restore(frame)
        raise _Unroll
    changed = [n for n, v in frame.locals.items() if n in state.locals and v is not state.locals[n]]
    written = [b for b, node in state.nodes if b.node is not node]
    state.restore(frame)
    for _ in range(3):
        olds = [state.locals[n] for n in changed]
        if not all(_carriable(v) for v in olds):
            bad = next(n for n, v in zip(changed, olds) if not _carriable(v))
            tx.graph_break(f"the loop rebinds {bad!r}, a {type(olds[0]).__name__}, which a loop region cannot carry")
        inits = [_value_node(tx, v) for v in olds] + [b.node for b in written]
        types = [n.tensor_type for n in inits]
        kinds = [_kind(v, t) for v, t in zip(olds, types)]
        rb, _, _, finals = _trace_body(frame, head, exit_pc, changed, written, types, kinds, up)
        if state.python_objects_changed():
            state.restore(frame)
            tx.graph_break("a loop with a side effect on a Python object (list, dict, closure variable)")
        more = [n for n, v in frame.locals.items() if n in state.locals and n not in changed
                and v is not state.locals[n]]
        more_written = [b for b, node in state.nodes if b not in written and b.node is not node]
        outs = [_value_node(tx, v) if not isinstance(v, Node) else v for v in finals]
        out_types = [o.tensor_type for o in outs]
        same = all((a.shape, a.dtype, a.weak) == (b.shape, b.dtype, b.weak) for a, b in zip(types, out_types))
        state.restore(frame)
        if more or more_written:
            changed, written = changed + more, written + more_written
            continue
        if not same:
            widened = [_widen(tx, a, b) for a, b in zip(types, out_types)]
            state_inits = list(zip(changed, widened[:len(changed)]))
            for name, t in state_inits:
                if t != types[changed.index(name)]:
                    widened_value = tx.op("astype", _value_node(tx, state.locals[name]), dtype=t.dtype)
                    state.locals[name] = tx.fresh(widened_value, "py" if t.weak else "scalar")
            if widened[len(changed):] != types[len(changed):]:
                tx.graph_break("a loop changes the dtype of an array it updates")
            continue
        graph = rb.finish(outs)
        graph = _resignature(graph, 1 + len(inits), rb.captured, rb.captured)
        node = tx.op("loop", *bounds, *inits, *rb.captured, regions=(graph,), carried=len(inits))
        results = _project(tx.builder, node)
        for name, kind, value in zip(changed, kinds, results):
            frame.locals[name] = TArray(Buffer(value), (), kind)
        for buffer, value in zip(written, results[len(changed):]):
            buffer.node = value
            buffer.version = next(_epochs)
        frame.stack[:] = state.stack[:-1]  # the body left the stack as it found it; FOR_ITER's exit pops the iterator
        frame.pc = exit_pc
        return
    tx.graph_break("the values a loop carries do not settle on one type")


def _widen(tx: Any, before: TensorType, after: TensorType) -> TensorType:
    if (before.shape, before.dtype, before.weak) == (after.shape, after.dtype, after.weak):
        return before
    if before.shape != after.shape:
        tx.graph_break(f"a loop-carried value changes shape from {before} to {after}")
    # NEP 50: a weak (Python) scalar takes the other side's dtype, so ``t = 0; t = t + int8`` carries an int8.
    dtype = np.result_type(*(t.proto() if t.weak else t.dtype for t in (before, after)))
    return TensorType(after.shape, dtype, weak=before.weak and after.weak)


def get_iter(original: Any) -> Any:
    def handler(frame: Frame, ins: Instr) -> None:
        value = frame.stack[-1]
        if wants_region(value):
            frame.stack[-1] = RegionIter(value)
            return None
        return original(frame, ins)

    return handler


def for_iter(original: Any) -> Any:
    def handler(frame: Frame, ins: Instr) -> None:
        top = frame.stack[-1]
        if not isinstance(top, RegionIter):
            return original(frame, ins)
        state = _State(frame)
        try:
            trace_loop(frame, ins, top.rng)
        except (GraphBreak, _Unroll) as exc:
            if isinstance(top.rng, SymRange):
                raise
            if isinstance(exc, GraphBreak):
                _log.debug("loop at %s:%s unrolled instead of traced as a region: %s", exc.filename, exc.lineno,
                           exc.reason)
            state.restore(frame)  # fall back to unrolling, exactly what the tracer did before regions
            frame.stack[-1] = iter(top.rng)
            return original(frame, ins)
        return None

    return handler


def _number_call(fn: type, original: Any) -> Any:
    """``int(x)``/``float(x)`` of a traced scalar inside a loop region: a symbolic Python number. Outside regions
    the tracer's own rule stands (it breaks: there the value usually steers Python control flow)."""

    def lowering(tx: Any, *args: Any, **kwargs: Any) -> Any:
        if (len(args) == 1 and not kwargs and isinstance(args[0], TArray) and isinstance(tx.builder, _BodyBuilder)
                and tx.type_of(args[0]).shape == ()):
            return tx.fresh(tx.op("to_python", tx.read(args[0]), kind=fn.__name__), "py")
        return original(tx, *args, **kwargs)

    return lowering


_ORIGINALS: dict[str, Any] = {}


def enable() -> None:
    """Install the hooks into the tracer's dispatch tables (idempotent; :func:`disable` undoes it)."""
    from jitgraph.tracer import builtins_table, frame
    from jitgraph.tracer.branches import pop_jump

    if _ORIGINALS:
        return
    handlers, table = frame.HANDLERS, builtins_table.BUILTINS
    for op in ("GET_ITER", "FOR_ITER", "POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE"):
        _ORIGINALS[op] = handlers[op]
    for fn in (range, int, float):
        _ORIGINALS[fn.__name__] = table[fn]
    handlers["GET_ITER"] = get_iter(_ORIGINALS["GET_ITER"])
    handlers["FOR_ITER"] = for_iter(_ORIGINALS["FOR_ITER"])
    handlers["POP_JUMP_IF_FALSE"] = pop_jump(_ORIGINALS["POP_JUMP_IF_FALSE"], False)
    handlers["POP_JUMP_IF_TRUE"] = pop_jump(_ORIGINALS["POP_JUMP_IF_TRUE"], True)
    table[range] = range_call
    for fn in (int, float):
        table[fn] = _number_call(fn, _ORIGINALS[fn.__name__])
    from jitgraph.tracer.symhooks import HOOKS

    for op, hook in HOOKS.items():
        _ORIGINALS[op] = handlers[op]
        handlers[op] = hook(_ORIGINALS[op])


def disable() -> None:
    from jitgraph.tracer import builtins_table, frame

    for key, value in _ORIGINALS.items():
        if key.isupper():
            frame.HANDLERS[key] = value
        else:
            builtins_table.BUILTINS[{"range": range, "int": int, "float": float}[key]] = value
    _ORIGINALS.clear()
