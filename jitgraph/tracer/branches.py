"""Data-dependent ``if`` and ``while`` traced into ``cond`` and ``while`` regions.

``if`` (a ``POP_JUMP_IF_*`` on a traced scalar): both paths are traced from the jump to the point where they meet
(the jump target of an ``if`` without ``else``, the target of the ``then`` block's closing ``JUMP``, or the loop
head for a branch that ends an iteration). Locals and storages changed on either path become the ``cond``'s
results, and both paths must give them the same type. A path that returns, breaks out or never meets the other
is a graph break.

``while cond:`` compiles (3.11+) to ``cond; POP_JUMP_IF_FALSE exit; body; cond; POP_JUMP_IF_TRUE body``. The
condition at the bottom (found from the stack effects of the instructions before the backward jump, and checked
against the head copy: never from line numbers, as ``while s > 1: s = s / 2`` puts the body on the same line)
becomes the test region, the body the body region, with carried values found as for ``for`` loops. Reading those
shapes from the instructions is ``while_shapes.py``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jitgraph.ir.graph import Node
from jitgraph.ir.ops.control import RegionBuilder, _project, _resignature, _shared
from jitgraph.tracer import resume
from jitgraph.tracer.bytecode import Instr
from jitgraph.tracer.context import GraphBreak
from jitgraph.tracer.region_body import Snapshot, carriable, enter, fresh_version, kind_of, step, value_node, widen
from jitgraph.tracer.region_chain import combine, record
from jitgraph.tracer.region_chain import truth as _truth
from jitgraph.tracer.side_effects import Selection
from jitgraph.tracer.values import Buffer, TArray
from jitgraph.tracer.while_shapes import ACTIVE, Chain, condition_start, in_loop, is_while, while_chain

if TYPE_CHECKING:
    from jitgraph.tracer.frame import Frame


def _step(frame: Frame) -> None:
    step(frame, "a data-dependent region", "return inside a data-dependent branch or loop (early exit)")


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
        if merge is None and pc <= branch_pc:
            # Back at or before the branch: a nested if's paths met at the enclosing loop's head (``elif`` as the
            # last statement of a loop body). That is where this path ends too; stepping on would run the loop's
            # FOR_ITER again, as a new loop, without end.
            return pc
        ins = instrs[pc]
        if ins.op == "RETURN_VALUE" and merge in (None, RETURNS):
            return RETURNS  # both paths return (3.12+ copies a short tail, like ``return x + (1 if s else 2)``)
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


def _changes(frame: Frame, state: Snapshot) -> tuple[list[str], list[Buffer]]:
    return state.changed_locals(frame), state.written()


_MISSING = object()
RETURNS = -1
"""The "merge point" of paths that both end at a ``RETURN_VALUE``: the returned value becomes the cond's result."""


def trace_if(frame: Frame, ins: Instr, condition: TArray, jump_when: bool,
             refuse: Callable[[str], Any] | None = None) -> None:
    """Record the ``if`` at ``ins`` as a ``cond``; a failure is reported at the ``if`` line, like the tracer's own
    data-dependent-branch break, with the reason the paths could not be traced. ``refuse(why)`` is called at the
    end of the trace when a cond result that stands for an array one path kept turns out not to be exact (None:
    no such result is made)."""
    tx, where = frame.tx, (frame.code.co_filename, ins.lineno)
    try:
        _trace_if(frame, ins, condition, jump_when, refuse)
    except GraphBreak as exc:
        tx.at(*where)
        tx.graph_break(f"branch on a value computed from array data that cannot become a cond: {exc.reason}",
                       exc.user_error)


def _check_pure(frame: Frame, state: Snapshot) -> None:
    if state.python_objects_changed():
        state.restore(frame)
        frame.tx.graph_break("a path changes a Python object (list, dict, closure variable)")


def _pushed(frame: Frame, state: Snapshot, merge: int) -> list[Any]:
    """What a path left on the stack above what it found there: the value of a conditional expression
    (``a if c else b``), or the value it returns. A path that consumed values from below is a graph break, unless
    it returns (a return discards the rest of the stack)."""
    base, stack = state.stack, frame.stack
    if merge == RETURNS:
        return stack[-1:]
    if len(stack) < len(base) or any(a is not b for a, b in zip(stack, base)):
        frame.tx.graph_break("a path of a data-dependent if changes the values below it on the stack")
    return stack[len(base):]


def _aliases(frame: Frame, state: Snapshot, labels: list[str], values: list[Any], olds: list[Any],
             may_keep: bool) -> list[bool]:
    """Which values a path left as the old value of their local or slot (an array reachable before the ``if``).

    A ``cond`` result is a new array: choosing an array that something else also refers to (an argument, a view,
    another name set on the path) would lose the aliasing, so a later write through one would miss the other. The
    one exception (``may_keep``) is a local or slot the path leaves as the caller's array it was: the result then
    stands for that very array (a :class:`~jitgraph.tracer.side_effects.Selection`, checked at the end of the trace)."""
    before = {id(b) for b, _ in state.nodes}
    seen: set[int] = set()
    kept = []
    for label, v, old in zip(labels, values, olds):
        keeps = v is old and isinstance(v, TArray) and v.kind == "array"
        kept.append(keeps)
        if isinstance(v, TArray) and v.kind == "array":
            if keeps and may_keep and not v.path and v.buffer.input_index is not None:
                continue  # (a caller's array: the replay hands back that very object)
            if id(v.buffer) in before or id(v.buffer) in seen:
                frame.tx.graph_break(f"a data-dependent if sets {label!r} to an array that is also reachable "
                                     "another way (a cond result would not alias it)")
            seen.add(id(v.buffer))
    return kept


def _key(slot: tuple[Any, Any]) -> tuple[int, str]:
    return id(slot[0]), repr(slot[1])


def _trace_if(frame: Frame, ins: Instr, condition: TArray, jump_when: bool,
              refuse: Callable[[str], Any] | None = None) -> None:
    tx, effects = frame.tx, frame.tx.side_effects
    outer_region = tx.in_region
    t = tx.type_of(condition)
    if t.shape != ():
        err = ValueError("The truth value of an array with more than one element is ambiguous")
        tx.graph_break(str(err), err)
    pred = tx.read(condition)
    branch_pc, target = frame.pc - 1, ins.target
    state, mark = Snapshot(frame), effects.mark()
    merge = _run_path(frame, branch_pc + 1, branch_pc, target, None)
    slots1 = state.stored_items(frame, mark, outer_region)
    names1, written1 = _changes(frame, state)
    n_pushed = len(_pushed(frame, state, merge))
    state.restore(frame)
    effects.rollback(mark)
    _run_path(frame, target, branch_pc, target, merge)
    slots2 = state.stored_items(frame, mark, outer_region)
    names2, written2 = _changes(frame, state)
    if len(_pushed(frame, state, merge)) != n_pushed:
        tx.graph_break("the paths of a data-dependent if leave different numbers of values on the stack")
    state.restore(frame)
    effects.rollback(mark)
    names = [n for n in dict.fromkeys(names1 + names2) if n in state.locals or (n in names1 and n in names2)]
    names = [] if merge == RETURNS else names  # locals die with the frame
    slots = list({_key(s): s for s in slots1 + slots2}.values())
    written = list(dict.fromkeys(written1 + written2))
    labels = names + [f"value #{i} of a conditional expression" for i in range(n_pushed)] + \
        [f"item {k!r} of a {type(c).__name__}" for c, k in slots]
    olds = [state.locals.get(n, _MISSING) for n in names] + [_MISSING] * n_pushed + [c[k] for c, k in slots]
    may_keep = refuse is not None and not outer_region
    paths: list[tuple[RegionBuilder, list[Node], list[Any], list[bool]]] = []
    for start in (branch_pc + 1, target):
        rb = enter(frame)
        effects.cond_paths.append(None if outer_region else tx.builder)  # (inside a loop region: no stores)
        try:
            _run_path(frame, start, branch_pc, target, merge)
        finally:
            effects.cond_paths.pop()
        end_pc = frame.pc
        values = [frame.locals.get(n, _MISSING) for n in names] + _pushed(frame, state, merge) + \
            [c[k] for c, k in slots]
        if any(v is _MISSING or not carriable(v) for v in values):
            bad = next(n for n, v in zip(labels, values) if v is _MISSING or not carriable(v))
            tx.graph_break(f"a data-dependent if sets {bad!r} on one path only, or to a non-numeric value")
        kept = _aliases(frame, state, labels, values, olds, may_keep)
        if {_key(s) for s in state.stored_items(frame, mark, outer_region)} - {_key(s) for s in slots}:
            tx.graph_break("a path of a data-dependent if stores into other items on another pass")
        outs = [value_node(tx, v) for v in values] + [b.node for b in written]
        paths.append((rb, outs, values, kept))
        state.restore(frame)
        effects.rollback(mark)
    (rb_fall, outs_fall, vals_fall, kept_fall), (rb_jump, outs_jump, _, kept_jump) = paths
    for a, b, name in zip(outs_fall, outs_jump, labels + [f"array #{b.uid}" for b in written]):
        ta, tb = a.tensor_type, b.tensor_type
        if (ta.shape, ta.dtype, ta.weak) != (tb.shape, tb.dtype, tb.weak):
            tx.graph_break(f"the branches of a data-dependent if give {name!r} different types ({ta} and {tb})")
    kept_buffers = {id(v.buffer) for v, k1, k2 in zip(olds, kept_fall, kept_jump) if k1 or k2}
    if kept_buffers & {id(b) for b in written} or any(k1 and k2 for k1, k2 in zip(kept_fall, kept_jump)):
        tx.graph_break("a data-dependent if writes an array that one path keeps as the value of a name or item")
    # The fall-through path runs when the jump is not taken.
    order = [(rb_jump, outs_jump), (rb_fall, outs_fall)] if jump_when else [(rb_fall, outs_fall), (rb_jump, outs_jump)]
    graphs = [rb.finish(outs) for rb, outs in order]
    builders = [rb for rb, _ in order]
    shared = _shared(builders)
    regions = tuple(_resignature(g, 0, rb.captured, shared) for g, rb in zip(graphs, builders))
    node = tx.op("cond", pred, *shared, regions=regions)
    results = _project(tx.builder, node)
    values = [TArray(Buffer(result), (), kind_of(value, result.tensor_type))
              for value, result in zip(vals_fall, results)]
    for old, value, k1, k2 in zip(olds, values, kept_fall, kept_jump):
        if (k1 or k2) and refuse is not None:  # the fall-through path runs when the truth is ``not jump_when``
            effects.selections.append(Selection(value, value.buffer.node, old, old.buffer.node,
                                                TArray(Buffer(pred), (), "scalar"), k2 == jump_when, refuse))
    for name, value in zip(names, values):
        frame.locals[name] = value
    frame.stack.extend(values[len(names):len(names) + n_pushed])  # a return's value: its RETURN_VALUE pops it
    for (container, key), value in zip(slots, values[len(names) + n_pushed:]):
        effects.mutate_container(tx, container, "an item store in a data-dependent if")
        container[key] = value  # recorded once, after the cond, with the value it selected
    for buffer, result in zip(written, results[len(values):]):
        buffer.node = result
        buffer.version = fresh_version()
    frame.pc = end_pc if merge == RETURNS else merge


def trace_while(frame: Frame, ins: Instr, flag: TArray, chain: Chain | None = None) -> None:
    """``while`` on traced data, at its first ``POP_JUMP_IF_FALSE`` (the head test is already evaluated: ``flag``),
    or at the first jump of a condition that is an ``and``/``or`` chain (``chain``)."""
    tx, where = frame.tx, (frame.code.co_filename, ins.lineno)
    key = (id(frame), chain.body_start if chain is not None else frame.pc)
    ACTIVE.add(key)
    try:
        _trace_while(frame, ins, flag, chain)
    except GraphBreak as exc:
        tx.at(*where)
        tx.graph_break(f"loop on a value computed from array data that cannot become a while region: {exc.reason}",
                       exc.user_error)
    finally:
        ACTIVE.discard(key)


def _trace_while(frame: Frame, ins: Instr, flag: TArray, chain: Chain | None = None) -> None:
    """The loop is ``head test; body; test; ...``. When the test only reads (the usual case) the ``while`` node's
    test region is the condition and its body region the body. A condition that assigns (``(t := s * 2) > 3``) or
    writes an array cannot be a test region (a test region has no results): then the test's value is carried too,
    the body region runs the body and then the condition, and the test region just reads the carried flag."""
    tx, instrs = frame.tx, frame.program.instrs
    if chain is None:
        body_start, exit_pc = frame.pc, ins.target
        tail_end = exit_pc - 1
        tail_start = condition_start(instrs, body_start, body_start - 1, tail_end)
        if tail_start is None:
            tx.graph_break("its condition is not one jump-free expression (a conditional expression, or and/or "
                           "mixed)")
        chain = Chain(body_start, exit_pc, (), (), ((tail_start, tail_end),), ())
    body_start, exit_pc = chain.body_start, chain.exit_pc
    tail_start, tail_end = chain.bottom[0][0], exit_pc - 1
    lowest = min([body_start] + [start for start, _ in chain.rest])

    def run(start: int, stop: int) -> None:
        frame.pc = start
        while frame.pc != stop:
            if not lowest <= frame.pc < stop:
                tx.graph_break("early exit (break) from a data-dependent while loop")
            _step(frame)

    def test() -> Any:
        """The loop test from the bottom copy of the condition; an ``and``/``or`` chain keeps Python's short
        circuit where an operand after the first reads arrays (``j >= 0 and a[j] > key``: region_chain)."""
        operands = [record(tx, lambda start=start, stop=stop: evaluate(start, stop)) for start, stop in chain.bottom]
        return combine(tx, operands[0].value, operands[1:], chain.links, frame.locals.values())

    def evaluate(start: int, stop: int) -> Any:
        run(start, stop)
        return frame.pop()

    if chain.rest:  # the condition's operands after the one tested (``flag``): the test's value is needed
        first = record(tx, lambda: flag).value
        rest = [record(tx, lambda start=start, stop=stop: evaluate(start, stop)) for start, stop in chain.rest]
        flag = combine(tx, first, rest, chain.rest_links, frame.locals.values())
    frame.pc = body_start
    state = Snapshot(frame)

    enter(frame)
    run(body_start, tail_start)
    after_body = (dict(frame.locals), [(b, b.node) for b, _ in state.nodes])
    test()
    _check_pure(frame, state)
    carry_flag = (any(after_body[0].get(n, _MISSING) is not v for n, v in frame.locals.items())
                  or any(b.node is not node for b, node in after_body[1]))
    changed, written = _changes(frame, state)
    changed = [n for n in changed if n in state.locals]
    state.restore(frame)
    for _ in range(3):
        olds = [state.locals[n] for n in changed]
        if not all(carriable(v) for v in olds):
            tx.graph_break("a data-dependent while loop rebinds a non-numeric value")
        inits = [value_node(tx, v) for v in olds] + [b.node for b in written]
        inits += [_truth(tx, flag)] if carry_flag else []
        types = [n.tensor_type for n in inits]
        kinds = [kind_of(v, t) for v, t in zip(olds, types)]
        labels = changed + [f"buf{b.uid}" for b in written] + (["test"] if carry_flag else [])
        regions_built = []
        for is_test in (True, False):
            rb = enter(frame)
            carried = [rb.fixed_input(t, name) for t, name in zip(types, labels)]
            for name, node, kind in zip(changed, carried, kinds):
                frame.locals[name] = TArray(Buffer(node), (), kind)
            for buffer, node in zip(written, carried[len(changed):]):
                buffer.node, buffer.version = node, fresh_version()
            if is_test and carry_flag:
                outs = [carried[-1]]
            elif is_test:
                outs = [_truth(tx, test())]
            else:
                run(body_start, tail_start)
                tested = [_truth(tx, test())] if carry_flag else []
                outs = [value_node(tx, frame.locals.get(n)) for n in changed] + [b.node for b in written] + tested
            regions_built.append((rb, outs))
            state.restore(frame)
        out_types = [o.tensor_type for o in regions_built[1][1]]
        if any((a.shape, a.dtype, a.weak) != (b.shape, b.dtype, b.weak) for a, b in zip(types, out_types)):
            for name, before, after in zip(changed, types, out_types):
                wide = widen(tx, before, after)
                if wide != before:
                    state.locals[name] = tx.fresh(tx.op("astype", value_node(tx, state.locals[name]),
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
            buffer.node, buffer.version = result, fresh_version()
        frame.pc = exit_pc
        return
    tx.graph_break("the values a data-dependent while loop carries do not settle on one type")


def branch(frame: Frame, ins: Instr, value: TArray, jump_when: bool) -> None:
    """``POP_JUMP_IF_FALSE``/``POP_JUMP_IF_TRUE`` on a traced value (already popped): the head test of a ``while``
    loop (or the first operand of its ``and``/``or`` condition) becomes a ``while`` region, any other test a
    ``cond``."""
    tx = frame.tx
    head = not jump_when and is_while(frame, ins)
    chain = None if head else while_chain(frame, ins)
    resuming = tx.resume is not None and tx.resume.enabled
    ordinal: int | None = None
    if resuming:
        ordinal, cut_now = resume.next_branch(tx, value)
        if cut_now:  # a cond failed here in an earlier pass: take the branch as observed at run time
            tx.at(frame.code.co_filename, ins.lineno)
            if resume.branch_cut(tx, value) == jump_when:
                frame.jump(ins)
            return
        # (asked before a region attempt changes the builder). Not in a loop of this frame: a cut per iteration
        # runs a graph per element, slower than the loop eagerly; the loop's own break stands.
        resuming = resume.branch_possible(tx, value) and not head and chain is None and \
            not in_loop(frame, frame.pc - 1)
    try:
        if head:
            trace_while(frame, ins, value)
            return
        if chain is not None:
            trace_while(frame, ins, value, chain)
        else:
            trace_if(frame, ins, value, jump_when, _refuser(tx, ins, frame.code.co_filename, ordinal, resuming))
    except GraphBreak as exc:
        if not resuming or exc.user_error is not None:
            raise
        raise resume.Retry(ordinal) from None  # trace again, cutting here (the paths may have changed objects)


def _refuser(tx: Any, ins: Instr, filename: str, ordinal: int | None, resuming: bool) -> Callable[[str], Any]:
    """What a :class:`Selection` made at ``ins`` does when it is not exact: trace again with the branch cut (as
    when the cond fails), or break where no cut is possible."""

    def refuse(why: str) -> None:
        if resuming and ordinal is not None:
            raise resume.Retry(ordinal)
        tx.at(filename, ins.lineno)
        tx.graph_break(f"a data-dependent if keeps an array on one path whose cond result {why}")

    return refuse
