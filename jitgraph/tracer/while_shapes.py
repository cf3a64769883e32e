"""The bytecode shapes of loops, read from a frame's instructions: whether a jump is the head test of a ``while``
(``cond; POP_JUMP_IF_FALSE exit; body; cond; POP_JUMP_IF_TRUE body``), where the bottom copy of its condition
starts, the operands of a condition that is an ``and``/``or`` chain (:class:`Chain`), and whether an instruction
lies inside a loop. Pure functions of the instructions (and :data:`ACTIVE`, the loops being traced now);
``branches.py`` traces what they find."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from jitgraph.tracer.bytecode import Instr, stack_effect

if TYPE_CHECKING:
    from jitgraph.tracer.frame import Frame


def is_while(frame: Frame, ins: Instr) -> bool:
    instrs = frame.program.instrs
    t = ins.target
    if ins.op != "POP_JUMP_IF_FALSE" or t is None or t < 1:
        return False
    tail = instrs[t - 1]
    return tail.op == "POP_JUMP_IF_TRUE" and tail.target == frame.pc


def _same_instr(a: Instr, b: Instr) -> bool:
    if a.op != b.op or type(a.argval) is not type(b.argval):
        return False
    return bool(a.argval is b.argval or a.argval == b.argval)  # names, symbols and constants: plain values


def condition_start(instrs: tuple[Instr, ...], body_start: int, head_jump: int, tail_end: int) -> int | None:
    """Where the bottom copy of a ``while`` condition starts: the shortest run of instructions before the bottom
    test ``tail_end`` that pushes exactly one value (the body before it leaves the stack as it found it), and
    that repeats the instructions before the head test ``head_jump`` (the compiler emits the condition twice).
    None when that is not so: a condition with its own jumps (``and``/``or``, ``a if c else b``), say."""
    depth, k = 0, tail_end
    while depth != 1:
        k -= 1
        if k < body_start or instrs[k].target is not None:
            return None
        effect = stack_effect(instrs[k])
        if effect is None:
            return None
        depth += effect
    n = tail_end - k
    if head_jump - n < 0 or not all(_same_instr(instrs[k + i], instrs[head_jump - n + i]) for i in range(n)):
        return None
    return k


def in_loop(frame: Frame, pc: int) -> bool:
    """Whether the instruction at ``pc`` lies inside a loop of its frame: a backward jump passes over it, or is it
    (3.12 compiles ``if c: break`` at a loop's end as a conditional jump back to the loop's head)."""
    return any(i.target is not None and i.target < k and i.target <= pc <= k
               for k, i in enumerate(frame.program.instrs))


# ---- while conditions that are and/or chains, and tests met at the bottom ----------------------------------------
@dataclass(frozen=True)
class Chain:
    """A ``while`` loop entered at a traced test that :func:`is_while` does not see: an operand of a condition that
    is an ``and``/``or`` chain (``while a < 4.0 and it < n``), or the bottom copy of the condition (the head test
    was decided at trace time: ``zr = 0.0`` before the loop). ``rest`` are the (start, jump) index pairs of the
    operands still to evaluate after the entry jump, with ``rest_links``; ``bottom`` the bottom copy's operands,
    whose last jump is the back edge; ``links`` per operand but the last: ``"and"`` (false leaves the loop) or
    ``"or"`` (true enters the body)."""

    body_start: int
    exit_pc: int
    rest: tuple[tuple[int, int], ...]
    rest_links: tuple[str, ...]
    bottom: tuple[tuple[int, int], ...]
    links: tuple[str, ...]


ACTIVE: set[tuple[int, int]] = set()
"""(frame id, body start) of the while loops being traced as regions now, so their tests met again inside are not
taken for a new loop."""


def _link(ins: Instr, body_start: int, exit_pc: int) -> str | None:
    if ins.op == "POP_JUMP_IF_FALSE" and ins.target == exit_pc:
        return "and"
    if ins.op == "POP_JUMP_IF_TRUE" and ins.target == body_start:
        return "or"
    return None


def _operands(instrs: tuple[Instr, ...], body_start: int, exit_pc: int
              ) -> tuple[list[int], list[tuple[int, int]], list[str]] | None:
    """The head copy's jump indices, the bottom copy's (start, jump) operands and the links of the ``while`` loop
    ``[body_start, exit_pc)``, matched operand by operand from the back (the compiler emits the condition twice)."""
    head_jump, stop = body_start - 1, exit_pc - 1
    head: list[int] = []
    bottom: list[tuple[int, int]] = []
    links: list[str] = []
    while True:
        start = condition_start(instrs, body_start, head_jump, stop)
        if start is None:
            return None
        head.insert(0, head_jump)
        bottom.insert(0, (start, stop))
        prev_head, prev_bottom = head_jump - (stop - start) - 1, start - 1
        if prev_bottom < body_start or prev_head < 0:
            break
        link = _link(instrs[prev_bottom], body_start, exit_pc)
        if link is None or _link(instrs[prev_head], body_start, exit_pc) != link:
            break
        links.insert(0, link)
        head_jump, stop = prev_head, prev_bottom
    return head, bottom, links


def while_chain(frame: Frame, ins: Instr) -> Chain | None:
    """The :class:`Chain` of the ``while`` loop whose condition (head or bottom copy) jumps at ``ins``, or None
    (an ``if``, a mixed ``A and B or C``, a conditional expression...)."""
    instrs = frame.program.instrs
    here = frame.pc - 1
    for back in range(here, len(instrs)):
        tail = instrs[back]
        body_start = tail.target
        if tail.op != "POP_JUMP_IF_TRUE" or body_start is None or not 0 < body_start <= back:
            continue
        exit_pc = back + 1
        last_head = instrs[body_start - 1]
        if last_head.op != "POP_JUMP_IF_FALSE" or last_head.target != exit_pc:
            continue
        found = _operands(instrs, body_start, exit_pc)
        if found is None:
            continue
        head, bottom, links = found
        if (id(frame), body_start) in ACTIVE:
            return None  # a test met again inside this loop's own region (a path of an ``if`` that breaks)
        if here in head:
            i = head.index(here)
            rest = tuple((head[n] + 1, head[n + 1]) for n in range(i, len(head) - 1))
        elif here in [stop for _, stop in bottom]:
            i = [stop for _, stop in bottom].index(here)
            rest = tuple(bottom[i + 1:])
        else:
            continue
        return Chain(body_start, exit_pc, rest, tuple(links[i:]), tuple(bottom), tuple(links))
    return None
