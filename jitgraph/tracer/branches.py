"""Data-dependent ``if`` and ``while`` traced into ``cond`` and ``while`` regions.

``if`` (a ``POP_JUMP_IF_*`` on a traced scalar): both paths are traced from the jump to the point where they meet
(the jump target of an ``if`` without ``else``, the target of the ``then`` block's closing ``JUMP``, or the loop
head for a branch that ends an iteration). Locals and storages changed on either path become the ``cond``'s
results, and both paths must give them the same type. A path that returns, breaks out or never meets the other
is a graph break.

``while cond:`` compiles (3.11+) to ``cond; POP_JUMP_IF_FALSE exit; body; cond; POP_JUMP_IF_TRUE body``. The
condition at the bottom (the instructions on the ``while`` line just before the backward jump) becomes the test
region, the body the body region, with carried values found as for ``for`` loops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jitgraph.ir.graph import Node
from jitgraph.ir.ops.control import RegionBuilder, _project, _resignature, _shared
from jitgraph.tracer.context import GraphBreak
from jitgraph.tracer.regions import (
    _BodyBuilder,
    _carriable,
    _epochs,
    _kind,
    _State,
    _value_node,
    _widen,
)
from jitgraph.tracer.values import Buffer, TArray

if TYPE_CHECKING:
    from jitgraph.tracer.bytecode import Instr
    from jitgraph.tracer.frame import Frame


def _enter(frame: Frame) -> RegionBuilder:
    tx = frame.tx
    outer = tx.builder
    parent = outer.region if isinstance(outer, _BodyBuilder) else outer
    root = outer.root if isinstance(outer, _BodyBuilder) else outer
    rb = RegionBuilder(parent)
    tx.builder = _BodyBuilder(rb, root)
    return rb


def _step(frame: Frame) -> None:
    from jitgraph.tracer.context import MAX_STEPS
    from jitgraph.tracer.frame import HANDLERS

    tx = frame.tx
    ins = frame.program.instrs[frame.pc]
    frame.pc += 1
    tx.steps += 1
    tx.at(frame.code.co_filename, ins.lineno)
    if tx.steps > MAX_STEPS or ins.in_try or ins.op not in HANDLERS:
        tx.graph_break(f"cannot trace {ins.op} inside a data-dependent region")
    if ins.op == "RETURN_VALUE" or HANDLERS[ins.op](frame, ins) is not None:
        tx.graph_break("return inside a data-dependent branch or loop (early exit)")


def _run_path(frame: Frame, start: int, branch_pc: int, else_pc: int, merge: int | None) -> int:
    """Run one path of an ``if`` from ``start`` until it reaches ``merge`` (or, when unknown, decide it)."""
    tx, instrs = frame.tx, frame.program.instrs
    frame.pc = start
    while True:
        pc = frame.pc
        if merge is not None and pc == merge:
            return merge
        if merge is None and pc == else_pc and start != else_pc:
            return else_pc
        ins = instrs[pc]
        if ins.op == "JUMP":
            outward = ins.target >= else_pc or ins.target <= branch_pc
            if merge is None and outward:
                return ins.target
            if merge is not None and ins.target == merge:
                return merge
        if merge is not None and merge > branch_pc and pc > merge:
            tx.graph_break("the branches of a data-dependent if do not meet again (break or continue in one)")
        if pc <= branch_pc and pc != merge and merge is not None:
            tx.graph_break("the branches of a data-dependent if do not meet again")
        _step(frame)


def _changes(frame: Frame, state: _State) -> tuple[list[str], list[Buffer]]:
    names = [n for n, v in frame.locals.items() if state.locals.get(n, _MISSING) is not v]
    written = [b for b, node in state.nodes if b.node is not node]
    return names, written


_MISSING = object()


def trace_if(frame: Frame, ins: Instr, condition: TArray, jump_when: bool) -> None:
    """Record the ``if`` at ``ins`` as a ``cond``; a failure is reported at the ``if`` line, like the tracer's own
    data-dependent-branch break, with the reason the paths could not be traced."""
    tx, where = frame.tx, (frame.code.co_filename, ins.lineno)
    try:
        _trace_if(frame, ins, condition, jump_when)
    except GraphBreak as exc:
        tx.at(*where)
        tx.graph_break(f"branch on a value computed from array data that cannot become a cond: {exc.reason}",
                       exc.user_error)


def _check_pure(frame: Frame, state: _State) -> None:
    if state.python_objects_changed():
        state.restore(frame)
        frame.tx.graph_break("a path changes a Python object (list, dict, closure variable)")


def _trace_if(frame: Frame, ins: Instr, condition: TArray, jump_when: bool) -> None:
    tx = frame.tx
    t = tx.type_of(condition)
    if t.shape != ():
        err = ValueError("The truth value of an array with more than one element is ambiguous")
        tx.graph_break(str(err), err)
    pred = tx.read(condition)
    branch_pc, target = frame.pc - 1, ins.target
    state = _State(frame)
    merge = _run_path(frame, branch_pc + 1, branch_pc, target, None)
    _check_pure(frame, state)
    names1, written1 = _changes(frame, state)
    state.restore(frame)
    _run_path(frame, target, branch_pc, target, merge)
    _check_pure(frame, state)
    names2, written2 = _changes(frame, state)
    state.restore(frame)
    names = [n for n in dict.fromkeys(names1 + names2) if n in state.locals or (n in names1 and n in names2)]
    written = list(dict.fromkeys(written1 + written2))
    paths: list[tuple[RegionBuilder, list[Node], list[Any]]] = []
    for start in (branch_pc + 1, target):
        rb = _enter(frame)
        _run_path(frame, start, branch_pc, target, merge)
        values = [frame.locals.get(n, _MISSING) for n in names]
        if any(v is _MISSING or not _carriable(v) for v in values):
            bad = next(n for n, v in zip(names, values) if v is _MISSING or not _carriable(v))
            tx.graph_break(f"a data-dependent if sets {bad!r} on one path only, or to a non-numeric value")
        outs = [_value_node(tx, v) for v in values] + [b.node for b in written]
        paths.append((rb, outs, values))
        state.restore(frame)
    (rb_fall, outs_fall, vals_fall), (rb_jump, outs_jump, _) = paths
    for a, b, name in zip(outs_fall, outs_jump, names + [f"array #{b.uid}" for b in written]):
        ta, tb = a.tensor_type, b.tensor_type
        if (ta.shape, ta.dtype, ta.weak) != (tb.shape, tb.dtype, tb.weak):
            tx.graph_break(f"the branches of a data-dependent if give {name!r} different types ({ta} and {tb})")
    # The fall-through path runs when the jump is not taken.
    order = [(rb_jump, outs_jump), (rb_fall, outs_fall)] if jump_when else [(rb_fall, outs_fall), (rb_jump, outs_jump)]
    graphs = [rb.finish(outs) for rb, outs in order]
    builders = [rb for rb, _ in order]
    shared = _shared(builders)
    regions = tuple(_resignature(g, 0, rb.captured, shared) for g, rb in zip(graphs, builders))
    node = tx.op("cond", pred, *shared, regions=regions)
    results = _project(tx.builder, node)
    for name, value, result in zip(names, vals_fall, results):
        frame.locals[name] = TArray(Buffer(result), (), _kind(value, result.tensor_type))
    for buffer, result in zip(written, results[len(names):]):
        buffer.node = result
        buffer.version = next(_epochs)
    frame.pc = merge


def is_while(frame: Frame, ins: Instr) -> bool:
    instrs = frame.program.instrs
    t = ins.target
    if ins.op != "POP_JUMP_IF_FALSE" or t is None or t < 1:
        return False
    tail = instrs[t - 1]
    return tail.op == "POP_JUMP_IF_TRUE" and tail.target == frame.pc


def trace_while(frame: Frame, ins: Instr) -> None:
    """``while`` on traced data, at its first ``POP_JUMP_IF_FALSE`` (the head test is already evaluated)."""
    tx, where = frame.tx, (frame.code.co_filename, ins.lineno)
    try:
        _trace_while(frame, ins)
    except GraphBreak as exc:
        tx.at(*where)
        tx.graph_break(f"loop on a value computed from array data that cannot become a while region: {exc.reason}",
                       exc.user_error)


def _trace_while(frame: Frame, ins: Instr) -> None:
    tx, instrs = frame.tx, frame.program.instrs
    body_start, exit_pc = frame.pc, ins.target
    tail_end = exit_pc - 1
    tail_start = tail_end
    while tail_start - 1 >= body_start and instrs[tail_start - 1].lineno == ins.lineno:
        tail_start -= 1
    state = _State(frame)

    def run(start: int, stop: int) -> None:
        frame.pc = start
        while frame.pc != stop:
            if not body_start <= frame.pc < stop:
                tx.graph_break("early exit (break) from a data-dependent while loop")
            _step(frame)

    _enter(frame)
    run(body_start, tail_start)
    _check_pure(frame, state)
    changed, written = _changes(frame, state)
    changed = [n for n in changed if n in state.locals]
    state.restore(frame)
    for _ in range(3):
        olds = [state.locals[n] for n in changed]
        if not all(_carriable(v) for v in olds):
            tx.graph_break("a data-dependent while loop rebinds a non-numeric value")
        inits = [_value_node(tx, v) for v in olds] + [b.node for b in written]
        types = [n.tensor_type for n in inits]
        kinds = [_kind(v, t) for v, t in zip(olds, types)]
        regions_built = []
        for start, stop in ((tail_start, tail_end), (body_start, tail_start)):
            rb = _enter(frame)
            carried = [rb.fixed_input(t, name) for t, name in zip(types, changed + [f"buf{b.uid}" for b in written])]
            for name, node, kind in zip(changed, carried, kinds):
                frame.locals[name] = TArray(Buffer(node), (), kind)
            for buffer, node in zip(written, carried[len(changed):]):
                buffer.node, buffer.version = node, next(_epochs)
            run(start, stop)
            if stop == tail_end:
                flag = frame.stack.pop()
                if not isinstance(flag, TArray):
                    tx.graph_break("a while condition that is decided at trace time inside the loop")
                outs = [tx.op("not_equal", tx.read(flag), tx.builder.const(0))
                        if tx.type_of(flag).dtype.kind != "b" else tx.read(flag)]
            else:
                outs = [_value_node(tx, frame.locals.get(n)) for n in changed] + [b.node for b in written]
            regions_built.append((rb, outs))
            state.restore(frame)
        out_types = [o.tensor_type for o in regions_built[1][1]]
        if any((a.shape, a.dtype, a.weak) != (b.shape, b.dtype, b.weak) for a, b in zip(types, out_types)):
            for name, before, after in zip(changed, types, out_types):
                wide = _widen(tx, before, after)
                if wide != before:
                    state.locals[name] = tx.fresh(tx.op("astype", _value_node(tx, state.locals[name]),
                                                        dtype=wide.dtype), "py" if wide.weak else "scalar")
            continue
        builders = [rb for rb, _ in regions_built]
        graphs = [rb.finish(outs) for rb, outs in regions_built]
        shared = _shared(builders)
        regions = tuple(_resignature(g, len(inits), rb.captured, shared) for g, rb in zip(graphs, builders))
        node = tx.op("while", *inits, *shared, regions=regions, carried=len(inits))
        results = _project(tx.builder, node)
        for name, kind, result in zip(changed, kinds, results):
            frame.locals[name] = TArray(Buffer(result), (), kind)
        for buffer, result in zip(written, results[len(changed):]):
            buffer.node, buffer.version = result, next(_epochs)
        frame.pc = exit_pc
        return
    tx.graph_break("the values a data-dependent while loop carries do not settle on one type")


def pop_jump(original: Any, jump_when: bool) -> Any:
    def handler(frame: Frame, ins: Instr) -> None:
        value = frame.stack[-1]
        if not isinstance(value, TArray):
            return original(frame, ins)
        frame.pop()
        if not jump_when and is_while(frame, ins):
            trace_while(frame, ins)
        else:
            trace_if(frame, ins, value, jump_when)
        return None

    return handler
