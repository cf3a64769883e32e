"""Bytecode normalisation: the only module that knows which CPython version is running.

The interpreter never reads ``dis`` output directly. It runs a *normalised* instruction stream, in which:

* bookkeeping opcodes (CACHE, PRECALL, RESUME, NOP, EXTENDED_ARG, MAKE_CELL, COPY_FREE_VARS, KW_NAMES and the
  ``RETURN_GENERATOR; POP_TOP`` prologue of generators) are gone;
* every jump names its target as an *index* into the stream, and the forward/backward/no-interrupt variants of a
  jump share one name (``JUMP``, ``POP_JUMP_IF_FALSE``, ...);
* ``LOAD_GLOBAL``'s push-null bit becomes an explicit ``PUSH_NULL`` before it;
* ``CALL`` carries its keyword names (3.11's ``KW_NAMES``, 3.13's ``CALL_KW``) in ``argval``;
* ``BINARY_OP`` carries ``(symbol, inplace)`` and ``COMPARE_OP`` the comparison symbol;
* instructions covered by the exception table (``try``/``with`` bodies) are flagged ``in_try``.

Adding a Python version means adding a row to :data:`_TABLES` (opcode renames, opcodes to drop, rewrites for
opcodes that split, fuse or change meaning) — the handlers do not change. What the rows cover:

* 3.11: the base stream. ``KW_NAMES`` folds into the next ``CALL``; ``LOAD_GLOBAL``'s low bit pushes NULL first.
* 3.12: ``LOAD_ATTR`` with the low bit is ``LOAD_METHOD``; ``BINARY_SLICE``/``STORE_SLICE`` become
  ``BUILD_SLICE 2`` + ``BINARY_SUBSCR``/``STORE_SUBSCR``; ``RETURN_CONST`` is ``LOAD_CONST`` + ``RETURN_VALUE``;
  ``END_FOR`` is dropped (an exhausted ``FOR_ITER`` jumps past it); ``CALL_INTRINSIC_1`` becomes
  ``UNARY_POSITIVE``/``LIST_TO_TUPLE``; inlined comprehensions bring ``LOAD_FAST_AND_CLEAR`` (a handler of its
  own) and a cleanup entry in the exception table, which is not a ``try`` (only entries whose handler starts with
  ``PUSH_EXC_INFO`` are); ``YIELD_VALUE``'s new bookkeeping arg is dropped; a ``while`` loop's bottom test
  ``POP_JUMP_IF_FALSE exit; JUMP_BACKWARD top`` is 3.11's ``POP_JUMP_IF_TRUE top``.
* 3.13: ``LOAD_FAST_LOAD_FAST`` / ``STORE_FAST_LOAD_FAST`` / ``STORE_FAST_STORE_FAST`` split in two; ``TO_BOOL``
  is dropped; ``CALL_KW`` becomes ``CALL`` with the names constant loaded before it; ``SET_FUNCTION_ATTRIBUTE``
  folds into ``MAKE_FUNCTION``'s flags (0 when there is none); ``FORMAT_SIMPLE``/``FORMAT_WITH_SPEC`` are
  ``FORMAT_VALUE``, with the ``CONVERT_VALUE`` (``!r``/``!s``/``!a``) before them folded in unless the spec is
  computed; ``LOAD_GLOBAL`` pushes its NULL *after* the global; ``LOAD_FAST`` of a cell (building a closure) is
  ``LOAD_CLOSURE``; ``END_FOR; POP_TOP`` are skipped by an exhausted ``FOR_ITER``.

The stack convention for calls is "one NULL next to the callable": ``CALL`` takes whichever of the two slots
below the arguments is not NULL, so the 3.11 order (NULL, callable) and the 3.13 order (callable, NULL) both work.
"""

from __future__ import annotations

import dis
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jitgraph.errors import UnsupportedPythonError

SUPPORTED_VERSIONS = ((3, 11), (3, 12), (3, 13))
RUNNING_VERSION: tuple[int, int] = (sys.version_info[0], sys.version_info[1])
"""The running CPython as ``(major, minor)``: everything else reads this instead of ``sys.version_info``."""


@dataclass(frozen=True)
class Instr:
    """One normalised instruction. ``target`` is an index into the stream for jumps, else None."""

    op: str
    arg: int | None
    argval: Any
    target: int | None
    lineno: int | None
    offset: int
    in_try: bool = False


@dataclass(frozen=True)
class Program:
    """A code object's normalised instruction stream, cached per code object."""

    code: types.CodeType
    instrs: tuple[Instr, ...]


def check_version() -> None:
    """Refuse a CPython whose bytecode has no table here (called by ``jitgraph.compile``)."""
    if not version_supported():
        major, minor = RUNNING_VERSION
        supported = ", ".join(f"{a}.{b}" for a, b in SUPPORTED_VERSIONS)
        raise UnsupportedPythonError(
            f"jitgraph's tracer has no bytecode table for Python {major}.{minor} (supported: {supported})",
            hint=f"run under Python {supported} to compile; without fullgraph=True the function runs eagerly")


def version_supported() -> bool:
    return RUNNING_VERSION in SUPPORTED_VERSIONS


def _binary_op(ins: dis.Instruction, st: _State) -> list[_Out]:
    symbol = dis._nb_ops[ins.arg][1]  # type: ignore[attr-defined]
    inplace = symbol.endswith("=")
    return [("BINARY_OP", ins.arg, (symbol.rstrip("=") if inplace else symbol, inplace))]


# A rewrite turns one raw instruction into normalised ``(op, arg, argval)`` triples (none, one or several).
_Out = tuple[str, Any, Any]


@dataclass
class _State:
    """What a rewrite may need besides its instruction: the code object, what was emitted, pending names."""

    code: types.CodeType
    out: list[list[Any]]
    kw_names: tuple[str, ...] = ()
    skip_pop: bool = False


def _kw_names(ins: dis.Instruction, st: _State) -> list[_Out]:
    st.kw_names = st.code.co_consts[ins.arg]
    return []


def _call(ins: dis.Instruction, st: _State) -> list[_Out]:
    names, st.kw_names = st.kw_names, ()
    return [("CALL", ins.arg, names)]


def _call_kw(ins: dis.Instruction, st: _State) -> list[_Out]:
    """3.13: the names tuple is the constant loaded just before; fold it into the call."""
    last = st.out.pop()
    assert last[0] == "LOAD_CONST" and isinstance(last[2], tuple), last
    return [("CALL", ins.arg, last[2])]


def _global_null_before(ins: dis.Instruction, st: _State) -> list[_Out]:
    head = [("PUSH_NULL", None, None)] if ins.arg & 1 else []
    return head + [("LOAD_GLOBAL", ins.arg, ins.argval)]


def _global_null_after(ins: dis.Instruction, st: _State) -> list[_Out]:
    return [("LOAD_GLOBAL", ins.arg, ins.argval)] + ([("PUSH_NULL", None, None)] if ins.arg & 1 else [])


def _load_attr_method_bit(ins: dis.Instruction, st: _State) -> list[_Out]:
    return [("LOAD_METHOD" if ins.arg & 1 else "LOAD_ATTR", ins.arg, ins.argval)]


def _return_const(ins: dis.Instruction, st: _State) -> list[_Out]:
    return [("LOAD_CONST", ins.arg, ins.argval), ("RETURN_VALUE", None, None)]


def _binary_slice(ins: dis.Instruction, st: _State) -> list[_Out]:
    return [("BUILD_SLICE", 2, 2), ("BINARY_SUBSCR", None, None)]


def _store_slice(ins: dis.Instruction, st: _State) -> list[_Out]:
    return [("BUILD_SLICE", 2, 2), ("STORE_SUBSCR", None, None)]


_INTRINSICS = {5: "UNARY_POSITIVE", 6: "LIST_TO_TUPLE"}


def _intrinsic(ins: dis.Instruction, st: _State) -> list[_Out]:
    return [(_INTRINSICS.get(ins.arg, f"CALL_INTRINSIC_1[{ins.argrepr}]"), None, None)]


def _end_for_313(ins: dis.Instruction, st: _State) -> list[_Out]:
    st.skip_pop = True  # FOR_ITER's exhaustion jump skips END_FOR and the POP_TOP after it
    return []


def _pair(first: str, second: str) -> Callable[[dis.Instruction, _State], list[_Out]]:
    """3.13 superinstructions: the two local indices are packed in one arg (high and low nibble)."""

    def split(ins: dis.Instruction, st: _State) -> list[_Out]:
        a, b = ins.argval
        return [_fast(st, first, ins.arg >> 4, a), _fast(st, second, ins.arg & 15, b)]

    return split


def _fast(st: _State, op: str, arg: int | None, name: str) -> _Out:
    """3.13 loads a closure's cells with LOAD_FAST; our frames keep cells apart from locals."""
    if op == "LOAD_FAST" and name in st.code.co_cellvars + st.code.co_freevars:
        op = "LOAD_CLOSURE"
    return (op, arg, name)


def _load_fast_313(ins: dis.Instruction, st: _State) -> list[_Out]:
    return [_fast(st, "LOAD_FAST", ins.arg, ins.argval)]


def _make_function_313(ins: dis.Instruction, st: _State) -> list[_Out]:
    """3.13: no flags in the instruction; the SET_FUNCTION_ATTRIBUTEs after it add them."""
    return [("MAKE_FUNCTION", 0, None)]


def _yield_value(ins: dis.Instruction, st: _State) -> list[_Out]:
    """3.12+: the arg is interpreter bookkeeping (exception depth, 3.13's yield-from bit); 3.11 had none."""
    return [("YIELD_VALUE", None, None)]


def _set_function_attribute(ins: dis.Instruction, st: _State) -> list[_Out]:
    """3.13: fold into the MAKE_FUNCTION before it; the stack holds the same values as 3.11's flagged form."""
    last = st.out[-1]
    assert last[0] == "MAKE_FUNCTION", last
    last[1] |= ins.arg
    return []


def _format_simple(ins: dis.Instruction, st: _State) -> list[_Out]:
    """3.13: ``CONVERT_VALUE n; FORMAT_SIMPLE`` is 3.11's ``FORMAT_VALUE n`` (``f"{x!r}"``)."""
    return [("FORMAT_VALUE", _take_conversion(st, -1), None)]


def _format_with_spec(ins: dis.Instruction, st: _State) -> list[_Out]:
    """3.13: ``CONVERT_VALUE n; LOAD_CONST spec; FORMAT_WITH_SPEC`` is ``LOAD_CONST spec; FORMAT_VALUE n|4``. A
    computed spec (``f"{x!r:{w}}"``) keeps its ``CONVERT_VALUE``, which has a handler of its own."""
    conversion = _take_conversion(st, -2) if st.out[-1][0] == "LOAD_CONST" else 0
    return [("FORMAT_VALUE", conversion | 0x04, None)]


def _take_conversion(st: _State, at: int) -> int:
    """Remove the ``CONVERT_VALUE`` at ``st.out[at]`` and return its conversion (0 when there is none). Nothing
    jumps between a replacement field's value and its format, so no jump target moves."""
    if len(st.out) >= -at and st.out[at][0] == "CONVERT_VALUE":
        return st.out.pop(at)[1]
    return 0


_RENAMES_311 = {
    "JUMP_FORWARD": "JUMP", "JUMP_BACKWARD": "JUMP", "JUMP_BACKWARD_NO_INTERRUPT": "JUMP",
    "POP_JUMP_FORWARD_IF_FALSE": "POP_JUMP_IF_FALSE", "POP_JUMP_BACKWARD_IF_FALSE": "POP_JUMP_IF_FALSE",
    "POP_JUMP_FORWARD_IF_TRUE": "POP_JUMP_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE": "POP_JUMP_IF_TRUE",
    "POP_JUMP_FORWARD_IF_NONE": "POP_JUMP_IF_NONE", "POP_JUMP_BACKWARD_IF_NONE": "POP_JUMP_IF_NONE",
    "POP_JUMP_FORWARD_IF_NOT_NONE": "POP_JUMP_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE": "POP_JUMP_IF_NOT_NONE",
}
_DROP_311 = frozenset({"CACHE", "PRECALL", "RESUME", "NOP", "EXTENDED_ARG", "MAKE_CELL", "COPY_FREE_VARS"})
_REWRITE_311 = {"BINARY_OP": _binary_op, "KW_NAMES": _kw_names, "CALL": _call, "LOAD_GLOBAL": _global_null_before}
_RENAMES_312 = {**_RENAMES_311, "LOAD_FAST_CHECK": "LOAD_FAST"}
_REWRITE_312 = {**_REWRITE_311, "LOAD_ATTR": _load_attr_method_bit, "RETURN_CONST": _return_const,
                "BINARY_SLICE": _binary_slice, "STORE_SLICE": _store_slice, "CALL_INTRINSIC_1": _intrinsic,
                "YIELD_VALUE": _yield_value}
_REWRITE_313 = {**_REWRITE_312, "LOAD_GLOBAL": _global_null_after, "CALL_KW": _call_kw, "END_FOR": _end_for_313,
                "LOAD_FAST_LOAD_FAST": _pair("LOAD_FAST", "LOAD_FAST"),
                "STORE_FAST_LOAD_FAST": _pair("STORE_FAST", "LOAD_FAST"),
                "STORE_FAST_STORE_FAST": _pair("STORE_FAST", "STORE_FAST"), "LOAD_FAST": _load_fast_313,
                "MAKE_FUNCTION": _make_function_313, "SET_FUNCTION_ATTRIBUTE": _set_function_attribute,
                "FORMAT_SIMPLE": _format_simple, "FORMAT_WITH_SPEC": _format_with_spec}


_INVERSE = {"POP_JUMP_IF_FALSE": "POP_JUMP_IF_TRUE", "POP_JUMP_IF_TRUE": "POP_JUMP_IF_FALSE",
            "POP_JUMP_IF_NONE": "POP_JUMP_IF_NOT_NONE", "POP_JUMP_IF_NOT_NONE": "POP_JUMP_IF_NONE"}


def _fold_jump_over_jump(code: types.CodeType, raw: list[dis.Instruction]) -> list[dis.Instruction]:
    """3.12+: ``POP_JUMP_IF_X past; JUMP_BACKWARD top; past:`` becomes ``POP_JUMP_IF_NOT_X top`` (3.11's bottom
    test of a ``while`` loop), unless something else jumps to that ``JUMP_BACKWARD``."""
    targets = {ins.argval for ins in raw if ins.opcode in dis.hasjabs or ins.opcode in dis.hasjrel}
    targets |= {entry.target for entry in dis.Bytecode(code).exception_entries}
    out: list[dis.Instruction] = []
    i = 0
    while i < len(raw):
        ins = raw[i]
        if (ins.opname in _INVERSE and i + 2 < len(raw) and raw[i + 1].opname == "JUMP_BACKWARD"
                and ins.argval == raw[i + 2].offset and raw[i + 1].offset not in targets):
            out.append(ins._replace(opname=_INVERSE[ins.opname], argval=raw[i + 1].argval))
            i += 2
            continue
        out.append(ins)
        i += 1
    return out


@dataclass(frozen=True)
class _Table:
    renames: dict[str, str]
    drop: frozenset[str]
    rewrite: dict[str, Callable[[dis.Instruction, _State], list[_Out]]]
    peephole: Callable[[types.CodeType, list[dis.Instruction]], list[dis.Instruction]] | None = None


_TABLES: dict[tuple[int, int], _Table] = {
    (3, 11): _Table(_RENAMES_311, _DROP_311, _REWRITE_311),
    (3, 12): _Table(_RENAMES_312, _DROP_311 | {"END_FOR"}, _REWRITE_312, _fold_jump_over_jump),
    (3, 13): _Table(_RENAMES_312, _DROP_311 | {"TO_BOOL"}, _REWRITE_313, _fold_jump_over_jump),
}

_JUMPS = frozenset({"JUMP", "POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE",
                    "JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP", "FOR_ITER"})
_CACHE: dict[types.CodeType, Program] = {}


def normalize(code: types.CodeType) -> Program:
    """The normalised stream of ``code`` (cached: a code object's bytecode never changes)."""
    program = _CACHE.get(code)
    if program is None:
        check_version()
        program = _CACHE[code] = _normalize(code, _TABLES[RUNNING_VERSION])
    return program


def _normalize(code: types.CodeType, table: _Table) -> Program:
    raw = list(dis.get_instructions(code))
    covered = _try_offsets(code, raw)
    if table.peephole is not None:
        raw = table.peephole(code, raw)
    st = _State(code, [])
    # Each raw offset maps to the index of the first normalised instruction at or after it, so a jump to a dropped
    # instruction lands on the next one that survives.
    index_of: dict[int, int] = {}
    lineno: int | None = code.co_firstlineno
    for ins in raw:
        index_of[ins.offset] = len(st.out)
        line = ins.positions.lineno if ins.positions is not None else None
        lineno = line if line is not None else (getattr(ins, "line_number", None) or lineno)
        name = table.renames.get(ins.opname, ins.opname)
        if name in table.drop:
            continue
        if name == "RETURN_GENERATOR":
            st.skip_pop = True
            continue
        if st.skip_pop and name == "POP_TOP":
            st.skip_pop = False
            continue
        rewrite = table.rewrite.get(name)
        emitted = rewrite(ins, st) if rewrite is not None else [(name, ins.arg, ins.argval)]
        index_of[ins.offset] = min(index_of[ins.offset], len(st.out))  # a rewrite that folded what came before
        for op, arg, argval in emitted:
            target = ins.argval if op in _JUMPS else None
            st.out.append([op, arg, argval, target, lineno, ins.offset, ins.offset in covered])
    instrs = tuple(Instr(op, arg, argval, index_of[target] if target is not None else None, line, offset, in_try)
                   for op, arg, argval, target, line, offset, in_try in st.out)
    return Program(code, instrs)


# Net stack effects of normalised instructions whose meaning differs from (or is absent in) ``dis``'s opcode of that
# name: the stream's own conventions (explicit PUSH_NULL, one NULL per CALL, jumps never taken).
_EFFECTS = {"JUMP": 0, "POP_JUMP_IF_FALSE": -1, "POP_JUMP_IF_TRUE": -1, "POP_JUMP_IF_NONE": -1,
            "POP_JUMP_IF_NOT_NONE": -1, "JUMP_IF_FALSE_OR_POP": -1, "JUMP_IF_TRUE_OR_POP": -1, "FOR_ITER": 1,
            "PUSH_NULL": 1, "LOAD_GLOBAL": 1, "LOAD_ATTR": 0, "LOAD_METHOD": 1, "LOAD_CONST": 1, "LOAD_FAST": 1,
            "LOAD_CLOSURE": 1, "STORE_FAST": -1, "BINARY_OP": -1, "COMPARE_OP": -1, "BINARY_SUBSCR": -1,
            "STORE_SUBSCR": -3, "RETURN_VALUE": -1, "UNARY_POSITIVE": 0, "LIST_TO_TUPLE": 0, "YIELD_VALUE": 0}


def stack_effect(ins: Instr) -> int | None:
    """How many values ``ins`` leaves on the stack minus how many it takes (a jump counted as not taken), or None
    when unknown. Lets callers find where an expression starts without reading line numbers."""
    if ins.op in _EFFECTS:
        return _EFFECTS[ins.op]
    if ins.op == "CALL":
        return -(ins.arg + 1)  # the arguments and the callable/NULL pair in, the result out
    if ins.op == "BUILD_SLICE":
        return 1 - ins.arg
    if ins.op == "MAKE_FUNCTION":
        return -(ins.arg & 0x0F).bit_count()
    if ins.op == "FORMAT_VALUE":
        return -1 if ins.arg & 0x04 else 0
    opcode = dis.opmap.get(ins.op)
    if opcode is None:
        return None
    try:
        return dis.stack_effect(opcode, ins.arg if opcode >= dis.HAVE_ARGUMENT else None, jump=False)
    except (ValueError, TypeError):
        return None


def _try_offsets(code: types.CodeType, raw: list[dis.Instruction]) -> set[int]:
    """Offsets inside a ``try``/``with`` body: ranges of exception-table entries whose handler starts with
    ``PUSH_EXC_INFO``. Other entries (3.12+ inlined-comprehension cleanup, generators' StopIteration guard) only
    matter when an exception is raised, which a trace never does."""
    opname_at = {ins.offset: ins.opname for ins in raw}
    covered: set[int] = set()
    for entry in dis.Bytecode(code).exception_entries:
        if opname_at.get(entry.target) == "PUSH_EXC_INFO":
            covered.update(range(entry.start, entry.end, 2))
    return covered


CO_VARARGS = 0x04
CO_VARKEYWORDS = 0x08
CO_GENERATOR = 0x20
CO_COROUTINE = 0x80
CO_ITERABLE_COROUTINE = 0x100
CO_ASYNC_GENERATOR = 0x200
