"""Whether two cache entries' guards can never both hold, so that a group call may try them in either order.

Why: a method whose state is empty on its first call (an optimiser's ``self.m == {}``) gets two entries of one key:
the first call's, then every later call's. The group call (jit/dispatch.py) tries them in publication order, so
every later call first runs the first entry's guards and fails them (~0.4-0.9 us of a 7-60 us call). Where each
pair of the group's guard sets contradicts itself on some path, at most one entry can match any call, so trying
the latest entry first picks exactly the entry the generic path picks (the first whose guards hold, in publication
order), and the usual call finds its entry first.

What counts as a contradiction, on one guarded path ``P`` (the forms ``tracer/guards.py`` writes):

* ``type(P) is A`` in one set, ``type(P) is B`` in the other, ``A is not B`` (``P is None`` is ``type(P) is
  NoneType``);
* the dict keys ``tuple(P) == K[i]`` differ, where ``P`` is pinned to be a dict and every key is a str or an int
  (whose ``==`` is identity of value: a float key ``0.0`` equals ``-0.0``);
* the value ``P == K[i]`` differs, for ``P`` pinned to the exact type int, str or bool (floats again excepted);
* the length ``len(P) == n`` differs, for ``P`` pinned to a dict, list or tuple.

A fact counts only beside the type it needs, in the same set: an object of another class could answer ``==``,
``tuple()`` or ``len()`` as it likes, differently at each read.

Anything else -- aliasing patterns, array shapes, floats -- is not used: a pair of sets with no such contradiction
keeps publication order.
"""

from __future__ import annotations

import ast
import itertools
from typing import Any

from jitgraph.jit.guard_code import conjuncts_of
from jitgraph.tracer.guards import GuardSet

_EXACT = (int, str, bool)  # types whose == never equates two different values of that type

Fact = tuple[str, str]  # (path, kind): kind "type", "keys", "value" or "len"


def facts(guards: GuardSet) -> dict[Fact, Any]:
    """What the guard set pins per path: its exact type, dict keys, value or length (see the module docstring)."""
    found: dict[Fact, Any] = {}
    for guard in guards.guards:
        try:
            tree = ast.parse(guard.code, mode="eval").body
        except SyntaxError:
            continue
        for part in conjuncts_of(tree):
            fact = _fact(part, guards.constants)
            # A path through a constant (``K[2](A[0].lr)``: a float's bits) means what that entry's K[2] is.
            if fact is not None and "K[" not in fact[0][0]:
                found[fact[0]] = fact[1]
    return found


def exclusive(a: dict[Fact, Any], b: dict[Fact, Any]) -> bool:
    """Whether no call can satisfy both guard sets whose :func:`facts` are ``a`` and ``b``."""
    for fact, value in a.items():
        if fact not in b:
            continue
        other = b[fact]
        if fact[1] == "type":
            if value is not other:
                return True
            continue
        needs = _NEEDS[fact[1]]
        pinned = (a.get((fact[0], "type")), b.get((fact[0], "type")))
        if all(t in needs for t in pinned) and _comparable(value) and _comparable(other) and value != other:
            return True
    return False


# The exact types a fact's path must be pinned to (in each set) for the fact to count.
_NEEDS = {"keys": (dict,), "value": _EXACT, "len": (dict, list, tuple)}
_BUILTIN_TYPES = {"dict": dict, "list": list, "tuple": tuple, "int": int, "str": str, "bool": bool}


def pairwise_exclusive(sets: list[dict[Fact, Any]]) -> bool:
    return all(exclusive(a, b) for a, b in itertools.combinations(sets, 2))


def _fact(node: ast.expr, constants: list[Any]) -> tuple[Fact, Any] | None:
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
        return None
    left, op, right = node.left, node.ops[0], node.comparators[0]
    if isinstance(op, ast.Is) and isinstance(right, ast.Constant) and right.value is None:
        return (ast.unparse(left), "type"), type(None)
    if isinstance(op, ast.Is) and _call_of(left, "type"):
        expected = _BUILTIN_TYPES.get(right.id) if isinstance(right, ast.Name) else _constant(right, constants)
        return ((ast.unparse(left.args[0]), "type"), expected) if isinstance(expected, type) else None
    if not isinstance(op, ast.Eq):
        return None
    expected = _constant(right, constants) if not isinstance(right, ast.Constant) else right.value
    if _call_of(left, "tuple"):
        return (ast.unparse(left.args[0]), "keys"), expected
    if _call_of(left, "len"):
        return (ast.unparse(left.args[0]), "len"), expected
    if type(expected) in _EXACT:
        return (ast.unparse(left), "value"), expected
    return None


def _comparable(value: Any) -> bool:
    if type(value) is tuple:
        return all(type(v) in (int, str) for v in value)
    return type(value) in _EXACT


def _call_of(node: ast.expr, name: str) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
            and len(node.args) == 1 and not node.keywords)


def _constant(node: ast.expr, constants: list[Any]) -> Any:
    """``K[i]``'s value, else a sentinel that matches nothing."""
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "K"
            and isinstance(node.slice, ast.Constant) and type(node.slice.value) is int
            and 0 <= node.slice.value < len(constants)):
        return constants[node.slice.value]
    return _UNKNOWN


_UNKNOWN = object()
