"""Golden normalised instruction streams, one per (function, Python version), and the version gate.

Each function below exercises a construct whose bytecode changed between 3.11, 3.12 and 3.13. Its normalised stream
is rendered as text (see :func:`render`) and compared with ``golden/bytecode.txt``, whose sections name the versions
they hold for (``== slices 3.11 3.12 3.13``). One section serves every version wherever the normalisation promises
the same stream; a function gets one section per version group only where the streams legitimately differ (3.12
inlines comprehensions, 3.13 pushes a call's NULL after the callable, ...). Only the running version's streams can be
checked in one process, so CI runs this file under each supported version; ``test_goldens_cover_every_version``
makes sure none of them can be missing, and an unsupported interpreter fails here instead of skipping.

Every function is also traced and compared with eager NumPy, so a stream that reads right also runs right.

To print the running version's streams (to update a golden after a deliberate normalisation change):
``python -m tests.tracer.test_bytecode_golden``.
"""

from __future__ import annotations

import pathlib
import tomllib
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import jitgraph
from jitgraph.errors import UnsupportedPythonError
from jitgraph.tracer import bytecode
from tests.tracer.helpers import run_both

GOLDEN = pathlib.Path(__file__).parent / "golden" / "bytecode.txt"
ROOT = pathlib.Path(__file__).parents[2]

# Ops whose handler reads ``arg`` (a count or flags); for the others the meaning is in ``argval`` (a name, a
# constant, an operator) or ``target``. Raw args such as LOAD_ATTR's name index are version-specific, so not shown.
ARG_OPS = frozenset({"CALL", "CALL_FUNCTION_EX", "MAKE_FUNCTION", "COPY", "SWAP", "FORMAT_VALUE", "CONVERT_VALUE",
                     "LIST_APPEND", "SET_ADD", "MAP_ADD", "LIST_EXTEND", "SET_UPDATE", "DICT_UPDATE", "DICT_MERGE",
                     "UNPACK_SEQUENCE", "UNPACK_EX", "IS_OP", "CONTAINS_OP", "RAISE_VARARGS", "RERAISE"})


def render(code: types.CodeType) -> str:
    """One line per normalised instruction: index, line relative to the ``def``, op, operand, ``[try]`` flag."""
    lines = []
    for i, ins in enumerate(bytecode.normalize(code).instrs):
        parts = [f"{i:2}", f"L{ins.lineno - code.co_firstlineno}" if ins.lineno is not None else "L?", ins.op]
        if ins.target is not None:
            parts.append(f"-> {ins.target}")
        elif ins.op in ARG_OPS or ins.op.startswith("BUILD_"):
            parts.append(str(ins.arg))
            if ins.op == "CALL" and ins.argval:
                parts.append(repr(ins.argval))
        elif isinstance(ins.argval, types.CodeType):
            parts.append(f"<code {ins.argval.co_name}>")
        elif ins.argval is not None or ins.op == "LOAD_CONST":
            parts.append(repr(ins.argval))
        if ins.in_try:
            parts.append("[try]")
        lines.append(" ".join(parts))
    return "\n".join(lines)


# ---- the functions ---------------------------------------------------------------------------------------------
def combine(a, b, scale=1.0):
    return (a - b) * scale


def arith(x, y):
    z = (x + y) * 2 - x / y
    z **= 2
    return -z


def calls_kw(x):
    return np.sum(x, axis=0, keepdims=True)


def user_call_kw(x):
    return combine(x, 1.0, scale=2.0)


def methods(x):
    return x.reshape(2, -1).sum(axis=1)


def listcomp(xs):
    return [x * 2 for x in xs if x is not None]


def genexpr(xs):
    return sum(v * v for v in xs)


def slices(x, y):
    y[1:3] = x[:2]
    return x[1:-1] + x[::2]


def loop(x, n):
    for i in range(n):
        x = x + i
    return x


def while_loop(x, tol):
    err = np.max(x)
    while err > tol:
        x = x * 0.5
        err = np.max(x)
    return x


def returns_const(x, flag):
    if flag:
        x[0] = 0.0
        return None
    return x * 2


def fstring(x, name, n):
    label = f"{name}: {n!r} {n:>4} {n!s:>5}"
    return x * n, label


def swap(a, b):
    a, b = b, a
    return a - b


def bool_tests(x, flag, items, factor, n):
    if flag and not items:
        x = x + 1
    scale = factor or 2
    return x * scale if n > 0 else -x


def closure(x, k):
    def add(v, *, w=1):
        return v + k * w

    return add(x, w=2)


def star_call(x, *rest):
    return combine(*rest, +x)


def guarded(x):
    try:
        y = x + 1
    except ValueError:
        y = x
    return y


rng = np.random.default_rng(8)
A = rng.standard_normal((3, 4)).astype(np.float32)
V = rng.standard_normal(4).astype(np.float32)

# name -> (code object whose stream is golden, function to trace, its arguments, graphs expected: 1, or 0 = fallback)
CASES: dict[str, tuple[types.CodeType, Callable[..., Any], tuple[Any, ...], int]] = {
    "arith": (arith.__code__, arith, (A, A + 3), 1),
    "calls_kw": (calls_kw.__code__, calls_kw, (A,), 1),
    "user_call_kw": (user_call_kw.__code__, user_call_kw, (A,), 1),
    "methods": (methods.__code__, methods, (A,), 1),
    "listcomp": (listcomp.__code__, listcomp, ([V, None, A],), 1),
    "genexpr": (genexpr.__code__, genexpr, ([V, V + 1, V * 2],), 1),
    "genexpr.<genexpr>": (next(c for c in genexpr.__code__.co_consts if isinstance(c, types.CodeType)),
                          genexpr, ([A, A],), 1),
    "slices": (slices.__code__, slices, (V, V * 3), 1),
    "loop": (loop.__code__, loop, (A, 3), 1),
    "while_loop": (while_loop.__code__, while_loop, (np.abs(V) + 1, 0.3), 1),
    "returns_const": (returns_const.__code__, returns_const, (V, True), 1),
    "fstring": (fstring.__code__, fstring, (V, "w", 3), 1),
    "swap": (swap.__code__, swap, (A, A * 2), 1),
    "bool_tests": (bool_tests.__code__, bool_tests, (A, True, [], None, 2), 1),
    "closure": (closure.__code__, closure, (V, 3.0), 1),
    "star_call": (star_call.__code__, star_call, (V, A), 1),
    "guarded": (guarded.__code__, guarded, (V,), 0),
}


def parse_goldens(text: str) -> dict[tuple[str, tuple[int, int]], str]:
    """``== name 3.11 3.12`` starts a section holding for those versions; ``#`` lines outside sections are notes."""
    goldens: dict[tuple[str, tuple[int, int]], str] = {}
    name, versions, body = None, [], []

    def close() -> None:
        for v in versions:
            assert (name, v) not in goldens, f"two goldens for {name} on {v}"
            goldens[name, v] = "\n".join(body).strip("\n")

    for line in text.splitlines():
        if line.startswith("== "):
            if name is not None:
                close()
            name, *vs = line[3:].split()
            versions = [tuple(int(p) for p in v.split(".")) for v in vs]
            body = []
        elif name is not None:
            body.append(line)
        else:
            assert not line.strip() or line.startswith("#"), f"text before the first section: {line!r}"
    if name is not None:
        close()
    return goldens


GOLDENS = parse_goldens(GOLDEN.read_text())


def version_name(version: tuple[int, int]) -> str:
    return ".".join(map(str, version))


# ---- golden streams ---------------------------------------------------------------------------------------------
def test_goldens_cover_every_version():
    """Every case has exactly one expected stream per supported version, and no golden is left without a case."""
    assert bytecode.SUPPORTED_VERSIONS == ((3, 11), (3, 12), (3, 13))
    assert set(bytecode._TABLES) == set(bytecode.SUPPORTED_VERSIONS)
    expected = {(name, v) for name in CASES for v in bytecode.SUPPORTED_VERSIONS}
    assert set(GOLDENS) == expected, (
        f"missing: {sorted(expected - set(GOLDENS))}; without a case: {sorted(set(GOLDENS) - expected)}")


@pytest.mark.parametrize("name", list(CASES))
def test_golden_stream(name):
    running = bytecode.RUNNING_VERSION
    assert running in bytecode.SUPPORTED_VERSIONS, f"Python {version_name(running)} has no golden streams"
    code = CASES[name][0]
    assert render(code) == GOLDENS[name, running], (
        f"normalised stream of {name} on Python {version_name(running)} changed; now:\n{render(code)}")


def test_streams_shared_across_versions():
    """3.12 keeps 3.11's stream except where the bytecode means something else (inlined comprehensions, ``or``
    without JUMP_IF_TRUE_OR_POP, the try layout, generators' StopIteration handler); 3.13 keeps 3.12's except for
    where a call's NULL goes (after the callable: the CALL handler takes either order)."""
    v311, v312, v313 = bytecode.SUPPORTED_VERSIONS
    assert sorted(n for n in CASES if GOLDENS[n, v311] != GOLDENS[n, v312]) == [
        "bool_tests", "genexpr.<genexpr>", "guarded", "listcomp"]
    for name in CASES:
        assert without_nulls(GOLDENS[name, v312]) == without_nulls(GOLDENS[name, v313]), name


def without_nulls(stream: str) -> list[str]:
    """The stream less its PUSH_NULLs and index column (a NULL moved within a call shifts no later index)."""
    return [line.split(None, 1)[1] for line in stream.splitlines() if line.split()[2] != "PUSH_NULL"]


@pytest.mark.parametrize("name", list(CASES))
def test_golden_function_traces_like_eager(name):
    _, fn, args, graphs = CASES[name]
    run_both(fn, *args, graphs=graphs)


def test_bool_tests_other_branch():
    run_both(bool_tests, A, False, [1], 3, -1)


def test_returns_const_other_branch():
    run_both(returns_const, V, False)


def fstring_fields(x, n, w, c):
    return x * n, f"{n!r:{w}}|{n!a:>{w}}|{(n if c else w)!r}|{'a' if c else 'b'!s:>3}"


@pytest.mark.parametrize("c", [True, False])
def test_fstring_conversions_with_computed_specs_and_branches(c):
    """3.13 folds CONVERT_VALUE into the format unless the spec is computed; a branch may join at the conversion."""
    run_both(fstring_fields, V, 3, 4, c)


# ---- the version gate ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", [(3, 10), (3, 14), (4, 0)])
def test_unsupported_version_is_refused_at_compile_time(monkeypatch, version):
    monkeypatch.setattr(bytecode, "RUNNING_VERSION", version)
    monkeypatch.setattr(bytecode, "_CACHE", {})
    with pytest.raises(UnsupportedPythonError, match=rf"no bytecode table for Python {version_name(version)} ") as e:
        bytecode.check_version()
    assert "3.11, 3.12, 3.13" in str(e.value)
    with pytest.raises(UnsupportedPythonError):
        bytecode.normalize(arith.__code__)  # never a KeyError from the table lookup
    warning = rf"Python {version_name(version)} \(supported: 3\.11, 3\.12, 3\.13\); arith runs eagerly"
    with pytest.warns(RuntimeWarning, match=warning):
        f = jitgraph.compile(arith, backend="eager")
    np.testing.assert_array_equal(f(A, A + 3), arith(A, A + 3))
    with pytest.raises(UnsupportedPythonError, match="supported: 3.11, 3.12, 3.13"):
        jitgraph.compile(arith, backend="eager", fullgraph=True)


def test_supported_versions_match_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    versions = [version_name(v) for v in bytecode.SUPPORTED_VERSIONS]
    assert project["requires-python"] == f">={versions[0]},<3.{bytecode.SUPPORTED_VERSIONS[-1][1] + 1}"
    declared = [c.rsplit(" :: ", 1)[1] for c in project["classifiers"]
                if c.startswith("Programming Language :: Python :: 3.")]
    assert declared == versions


if __name__ == "__main__":
    for case, (case_code, *_) in CASES.items():
        print(f"== {case} {version_name(bytecode.RUNNING_VERSION)}\n{render(case_code)}\n")
