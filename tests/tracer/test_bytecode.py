"""The normalised instruction stream: what the interpreter may rely on, whatever the CPython version."""

from __future__ import annotations

import dis
import pathlib

import numpy as np

import jitgraph
from jitgraph.tracer.bytecode import _JUMPS, normalize
from tests.tracer.test_bytecode_golden import guarded

DROPPED = {"CACHE", "PRECALL", "RESUME", "NOP", "EXTENDED_ARG", "MAKE_CELL", "COPY_FREE_VARS", "KW_NAMES",
           "RETURN_GENERATOR"}


def sample(x, ws, n=3):
    total = np.zeros_like(x)
    for i in range(n):
        if i % 2:
            total += x * i
        else:
            total -= np.sum(x, axis=0, keepdims=True)
    k = lambda v: v + n
    squares = [k(w) for w in ws]
    return total, squares, {"a": 1, "b": 2}


def test_no_bookkeeping_opcodes_survive():
    ops = {ins.op for ins in normalize(sample.__code__).instrs}
    assert not ops & DROPPED
    assert not any(op.startswith(("POP_JUMP_FORWARD", "POP_JUMP_BACKWARD", "JUMP_BACKWARD")) for op in ops)


def test_jump_targets_are_indices_of_the_original_targets():
    program = normalize(sample.__code__)
    raw = {ins.offset: ins for ins in dis.get_instructions(sample.__code__)}
    for ins in program.instrs:
        if ins.op in _JUMPS:
            assert 0 <= ins.target < len(program.instrs)
            target_offset = raw[ins.offset].argval
            landed = program.instrs[ins.target]
            assert landed.offset >= target_offset  # the original target, or the next kept instruction
            # ... and nothing kept lies between the original target and where the jump lands
            assert not any(target_offset <= i.offset < landed.offset for i in program.instrs)


def test_calls_carry_keyword_names_and_globals_push_null():
    instrs = normalize(sample.__code__).instrs
    calls = [ins for ins in instrs if ins.op == "CALL"]
    assert any(ins.argval == ("axis", "keepdims") for ins in calls)
    raw = {ins.offset: ins for ins in dis.get_instructions(sample.__code__)}
    for i, ins in enumerate(instrs):
        if ins.op == "LOAD_GLOBAL":
            pushes_null = bool(raw[ins.offset].arg & 1)
            nulls = [j for j in (i - 1, i + 1) if instrs[j].op == "PUSH_NULL" and instrs[j].offset == ins.offset]
            assert len(nulls) == pushes_null
    binary = {ins.argval for ins in instrs if ins.op == "BINARY_OP"}
    assert {("*", False), ("+", True), ("-", True), ("%", False)} <= binary


def test_try_bodies_are_flagged():
    program = normalize(guarded.__code__)
    flagged = [ins for ins in program.instrs if ins.in_try]
    assert flagged and flagged[0].lineno == guarded.__code__.co_firstlineno + 2


def test_normalisation_is_cached():
    assert normalize(sample.__code__) is normalize(sample.__code__)


def test_version_checks_only_in_bytecode_module():
    """Per-version behaviour lives in one module: no other source, test, benchmark or script reads the version
    tuple (``git grep`` for it lists only ``jitgraph/tracer/bytecode.py``)."""
    root = pathlib.Path(jitgraph.__file__).parents[1]
    needle = "version" + "_info"  # spelled apart so that this test does not list itself
    files = [root / ".ci" / "run", *(p for d in ("jitgraph", "tests", "benchmarks", "examples", "scripts")
                                     for p in (root / d).rglob("*.py"))]
    users = sorted(str(p.relative_to(root)) for p in files if p.exists() and needle in p.read_text())
    assert users == ["jitgraph/tracer/bytecode.py"]
