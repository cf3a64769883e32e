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

Adding a Python version means adding a row to :data:`_TABLES` (opcode renames, opcodes to drop, a function for
any opcode that splits or fuses) — the handlers do not change. Notes for the versions not yet wired in:

* 3.12: ``LOAD_ATTR`` with the low bit set is 3.11's ``LOAD_METHOD``; ``LOAD_SUPER_ATTR``; ``BINARY_SLICE`` /
  ``STORE_SLICE`` can be emitted as ``BUILD_SLICE`` + ``BINARY_SUBSCR``/``STORE_SUBSCR``; ``RETURN_CONST`` as
  ``LOAD_CONST`` + ``RETURN_VALUE``; ``END_FOR`` is dropped and ``FOR_ITER``'s target moved past it;
  ``CALL_INTRINSIC_1`` (``INTRINSIC_LIST_TO_TUPLE`` -> ``LIST_TO_TUPLE``, ``UNARY_POSITIVE``); inlined
  comprehensions use ``LOAD_FAST_AND_CLEAR`` (a ``LOAD_FAST`` that tolerates unbound) and their cleanup handler
  sits in the exception table, so only entries whose handler is not a comprehension cleanup count as ``in_try``.
* 3.13: ``LOAD_FAST_LOAD_FAST`` / ``STORE_FAST_STORE_FAST`` / ``STORE_FAST_LOAD_FAST`` split into two
  instructions; ``TO_BOOL`` is dropped; ``CALL_KW`` becomes ``CALL`` with the names taken from the constant
  below the arguments; ``FORMAT_SIMPLE`` is ``FORMAT_VALUE 0``; ``SET_FUNCTION_ATTRIBUTE`` folds into
  ``MAKE_FUNCTION``; the callable sits *below* its self-or-NULL slot (``CALL`` finds whichever is not NULL).
"""

from __future__ import annotations

import dis
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jitgraph.errors import UnsupportedPythonError

SUPPORTED_VERSIONS = ((3, 11),)


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
    if tuple(sys.version_info[:2]) not in SUPPORTED_VERSIONS:
        raise UnsupportedPythonError(
            f"jitgraph's tracer has no bytecode table for Python {sys.version_info[0]}.{sys.version_info[1]}",
            hint="supported: " + ", ".join(f"{a}.{b}" for a, b in SUPPORTED_VERSIONS)
                 + "; the function runs eagerly meanwhile")


def version_supported() -> bool:
    return tuple(sys.version_info[:2]) in SUPPORTED_VERSIONS


_BINARY_SYMBOLS = {
    "+": "add", "-": "subtract", "*": "multiply", "/": "true_divide", "//": "floor_divide", "%": "remainder",
    "**": "power", "@": "matmul", "&": "and", "|": "or", "^": "xor", "<<": "lshift", ">>": "rshift",
}


def _binary_op(ins: dis.Instruction) -> tuple[str, Any]:
    symbol = dis._nb_ops[ins.arg][1]  # type: ignore[attr-defined]
    inplace = symbol.endswith("=")
    return "BINARY_OP", (symbol.rstrip("=") if inplace else symbol, inplace)


_RENAMES_311 = {
    "JUMP_FORWARD": "JUMP", "JUMP_BACKWARD": "JUMP", "JUMP_BACKWARD_NO_INTERRUPT": "JUMP",
    "POP_JUMP_FORWARD_IF_FALSE": "POP_JUMP_IF_FALSE", "POP_JUMP_BACKWARD_IF_FALSE": "POP_JUMP_IF_FALSE",
    "POP_JUMP_FORWARD_IF_TRUE": "POP_JUMP_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE": "POP_JUMP_IF_TRUE",
    "POP_JUMP_FORWARD_IF_NONE": "POP_JUMP_IF_NONE", "POP_JUMP_BACKWARD_IF_NONE": "POP_JUMP_IF_NONE",
    "POP_JUMP_FORWARD_IF_NOT_NONE": "POP_JUMP_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE": "POP_JUMP_IF_NOT_NONE",
}
_DROP_311 = frozenset({"CACHE", "PRECALL", "RESUME", "NOP", "EXTENDED_ARG", "MAKE_CELL", "COPY_FREE_VARS"})


@dataclass(frozen=True)
class _Table:
    renames: dict[str, str]
    drop: frozenset[str]
    # opcode -> (normalised op, argval) for opcodes whose argument changes meaning
    rewrite: dict[str, Callable[[dis.Instruction], tuple[str, Any]]]


_TABLES: dict[tuple[int, int], _Table] = {
    (3, 11): _Table(_RENAMES_311, _DROP_311, {"BINARY_OP": _binary_op}),
}

_JUMPS = frozenset({"JUMP", "POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE",
                    "JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP", "FOR_ITER"})
_CACHE: dict[types.CodeType, Program] = {}


def normalize(code: types.CodeType) -> Program:
    """The normalised stream of ``code`` (cached: a code object's bytecode never changes)."""
    program = _CACHE.get(code)
    if program is None:
        program = _CACHE[code] = _normalize(code, _TABLES[tuple(sys.version_info[:2])])
    return program


def _normalize(code: types.CodeType, table: _Table) -> Program:
    raw = list(dis.get_instructions(code))
    covered = _try_offsets(code)
    # First pass: decide what each raw instruction becomes; remember where each offset lands in the new stream.
    out: list[tuple[str, int | None, Any, int | None, int | None, int, bool]] = []
    index_of: dict[int, int] = {}
    lineno: int | None = code.co_firstlineno
    kw_names: tuple[str, ...] = ()
    skip_pop = False
    for ins in raw:
        index_of[ins.offset] = len(out)
        if ins.positions is not None and ins.positions.lineno is not None:
            lineno = ins.positions.lineno
        elif ins.starts_line is not None:
            lineno = ins.starts_line
        name = table.renames.get(ins.opname, ins.opname)
        in_try = ins.offset in covered
        if name in table.drop:
            continue
        if name == "RETURN_GENERATOR":
            skip_pop = True
            continue
        if skip_pop and name == "POP_TOP":
            skip_pop = False
            continue
        if name == "KW_NAMES":
            kw_names = code.co_consts[ins.arg]
            continue
        argval: Any = ins.argval
        if name in table.rewrite:
            name, argval = table.rewrite[name](ins)
        elif name == "LOAD_GLOBAL":
            if ins.arg & 1:
                out.append(("PUSH_NULL", None, None, None, lineno, ins.offset, in_try))
            argval = ins.argval
        elif name == "CALL":
            argval, kw_names = kw_names, ()
        elif name in ("LOAD_FAST", "STORE_FAST", "DELETE_FAST", "LOAD_DEREF", "STORE_DEREF", "LOAD_CLOSURE",
                      "DELETE_DEREF", "LOAD_CLASSDEREF"):
            argval = ins.argval
        target = ins.argval if name in _JUMPS else None
        out.append((name, ins.arg, argval, target, lineno, ins.offset, in_try))
    instrs = tuple(Instr(op, arg, argval, index_of[target] if target is not None else None, line, offset, in_try)
                   for op, arg, argval, target, line, offset, in_try in out)
    return Program(code, instrs)


def _try_offsets(code: types.CodeType) -> set[int]:
    """Offsets inside a ``try``/``with`` body or handler (the exception table's covered ranges)."""
    covered: set[int] = set()
    for entry in dis.Bytecode(code).exception_entries:
        covered.update(range(entry.start, entry.end, 2))
        covered.add(entry.target)
    return covered


CO_VARARGS = 0x04
CO_VARKEYWORDS = 0x08
CO_GENERATOR = 0x20
CO_COROUTINE = 0x80
CO_ASYNC_GENERATOR = 0x200
