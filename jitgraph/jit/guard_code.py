"""The traced guards of a cache entry as a dispatch runner's straight-line code (jit/dispatch.py), each value read
once.

Why: a guard set reads the same path again and again -- ``type(A[0].m['W']) is ndarray and A[0].m['W'].shape ==
... and A[0].m['W'].dtype == ... and A[0].m['W'].strides == ...``, then ``A[0].m['W']`` once more as an extra
input -- each read an attribute load and a dict lookup, and compares dtypes with ``==`` (~70 ns, a rich
comparison) where the dtype is nearly always the very object traced. For a method over an object holding a few
dicts of arrays that is a microsecond or more per call. The rewrite (:func:`straight_line`):

* reads argument paths the runner already holds from its locals (``A[0]`` -> ``a0``), and the entry's constants
  ``K[3]`` from names bound to them (``K3``);
* binds a path read more than once to a local at its first read, where that read happens on every call whose
  guards hold (``(g0 := a0.m['W'])``), and reads the local after it: in the later guards and the extra inputs;
* compares a dtype with a traced dtype by identity first (``d is K3 or d == K3``: a dtype equals itself).

* checks the structure first -- types, dict keys, lengths, scalar values -- and the arrays' shapes, strides,
  dtypes and flags after it: a call of another state (the first call of an optimiser whose ``self.m`` was still
  ``{}``, tried before the entry of every later call) then fails within a few cheap checks instead of after every
  array's (a dict-of-arrays training step: ~3.5 us per call of guards that failed at the optimiser's keys).

Exactness: only repeated reads of a path already read are dropped, and the order of the conjuncts changes: the
guards are reads without effects, so their conjunction has one value in any order (a read that raises, which
fails the guards, can only raise where some guard is false anyway). The paths a trace guards are reads without effects (instance-dict
attributes, items of dicts, lists and tuples whose exact type an earlier guard checked, module globals; a property
is traced through its getter, so its path is never guarded), so a repeated read gives what the first one gave.
An expression outside the simple forms the guard builder writes (a lambda, a comprehension, a walrus, a starred
argument) leaves the whole guard set as it is.
"""

from __future__ import annotations

import ast
import itertools
from typing import Any

import numpy as np


class _Opaque(Exception):
    """An expression whose evaluation order is not modelled here: the guards stay as they are."""


def with_locals(code: str, known: dict[str, str], ns: dict[str, Any]) -> ast.expr:
    """``code`` with the argument paths the runner holds in locals (``known``: ``A[0]['W1']`` -> ``v3``) replaced by
    those locals, and the entry's constants (``K[1]``: the list only grows while tracing) by names bound to them in
    ``ns``."""

    class Locals(ast.NodeTransformer):
        def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
            name = known.get(ast.unparse(node))
            if name is not None:
                return ast.Name(name, ast.Load())
            k = node.slice
            if isinstance(node.value, ast.Name) and node.value.id == "K" and isinstance(k, ast.Constant) and \
                    type(k.value) is int:
                ns[f"K{k.value}"] = ns["K"][k.value]
                return ast.Name(f"K{k.value}", ast.Load())
            return self.generic_visit(node)

    return Locals().visit(ast.parse(code, mode="eval")).body


def straight_line(guards: list[str], extras: list[str], known: dict[str, str], ns: dict[str, Any]
                  ) -> tuple[str, list[str]]:
    """The source of the guards' conjunction and of each extra input (evaluated after it, where it held)."""
    guard_trees = [with_locals(code, known, ns) for code in guards]
    extra_trees = [with_locals(code, known, ns) for code in extras]
    plain = (" and ".join(f"({ast.unparse(t)})" for t in guard_trees) or "True", [ast.unparse(t) for t in extra_trees])
    try:
        conjuncts = _structure_first([_with_dtype_identity(c, ns) for t in guard_trees for c in conjuncts_of(t)])
        counts: dict[str, int] = {}
        for tree in conjuncts + extra_trees:
            for node, _ in _in_order(tree, True):
                if _is_path(node):
                    key = ast.unparse(node)
                    counts[key] = counts.get(key, 0) + 1
        reuse = _Reuse({k for k, n in counts.items() if n > 1})
        held = [reuse.rewrite(c, True) for c in conjuncts]
        values = [reuse.rewrite(t, False) for t in extra_trees]
    except _Opaque:
        return plain
    return " and ".join(f"({ast.unparse(c)})" for c in held) or "True", [ast.unparse(v) for v in values]


_ARRAY_PROPERTIES = frozenset({"shape", "strides", "dtype", "flags", "ndim"})


def _structure_first(conjuncts: list[ast.expr]) -> list[ast.expr]:
    """The conjuncts that read no array property (types, keys, lengths, values), then those that do, each group in
    its own order (module docstring)."""
    later = [c for c in conjuncts
             if any(isinstance(n, ast.Attribute) and n.attr in _ARRAY_PROPERTIES for n in ast.walk(c))]
    return [c for c in conjuncts if not any(c is x for x in later)] + later


def conjuncts_of(tree: ast.expr) -> list[ast.expr]:
    """``a and (b and c)`` as ``[a, b, c]``: each is evaluated whole when those before it held."""
    if isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.And):
        return [c for v in tree.values for c in conjuncts_of(v)]
    return [tree]


def _children(node: ast.AST) -> list[tuple[ast.AST, bool]]:
    """``node``'s operands in evaluation order, each with whether it is evaluated whenever ``node`` is."""
    if isinstance(node, ast.BoolOp):
        return [(node.values[0], True)] + [(v, False) for v in node.values[1:]]
    if isinstance(node, ast.Compare):
        return [(node.left, True), (node.comparators[0], True)] + [(c, False) for c in node.comparators[1:]]
    if isinstance(node, ast.IfExp):
        return [(node.test, True), (node.body, False), (node.orelse, False)]
    if isinstance(node, ast.Call):
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise _Opaque
        return [(node.func, True), *((a, True) for a in node.args), *((k.value, True) for k in node.keywords)]
    if isinstance(node, ast.Attribute):
        return [(node.value, True)]
    if isinstance(node, ast.Subscript):
        if isinstance(node.slice, ast.Slice):
            raise _Opaque
        return [(node.value, True), (node.slice, True)]
    if isinstance(node, ast.BinOp):
        return [(node.left, True), (node.right, True)]
    if isinstance(node, ast.UnaryOp):
        return [(node.operand, True)]
    if isinstance(node, ast.Tuple | ast.List):
        return [(e, True) for e in node.elts]
    if isinstance(node, ast.Name | ast.Constant):
        return []
    raise _Opaque


def _in_order(node: ast.AST, certain: bool) -> Any:
    """Every node under ``node`` (itself last, as Python evaluates it) with whether it is evaluated for sure."""
    for child, always in _children(node):
        yield from _in_order(child, certain and always)
    yield node, certain


def _is_path(node: ast.AST) -> bool:
    """An attribute or constant-index read of a name or of another path: ``a0.m['W']``, ``K1['np']``."""
    if not isinstance(node, ast.Attribute | ast.Subscript):
        return False
    while isinstance(node, ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Constant):
            return False
        node = node.value
    return isinstance(node, ast.Name)


class _Reuse:
    """Binds each path in ``repeated`` at its first sure read and reads the bound local after it."""

    def __init__(self, repeated: set[str]) -> None:
        self.repeated = repeated
        self.bound: dict[str, str] = {}
        self.names = (f"g{k}" for k in itertools.count())

    def rewrite(self, node: ast.AST, certain: bool) -> Any:
        """``node`` rewritten; ``certain``: it is evaluated whenever the guards hold (False for extra inputs, which
        only read locals bound before them)."""
        key = ast.unparse(node) if _is_path(node) else None  # before its operands are rewritten
        if key in self.bound:
            return ast.Name(self.bound[key], ast.Load())
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.AST):
                setattr(node, field, self._child(node, value, certain))
            elif isinstance(value, list):
                setattr(node, field, [self._child(node, v, certain) if isinstance(v, ast.AST) else v for v in value])
        if certain and key in self.repeated:
            self.bound[key] = name = next(self.names)
            return ast.NamedExpr(ast.Name(name, ast.Store()), node)
        return node

    def _child(self, parent: ast.AST, child: ast.AST, certain: bool) -> Any:
        if isinstance(child, ast.keyword):
            child.value = self._child(parent, child.value, certain)
            return child
        if isinstance(child, ast.expr_context | ast.operator | ast.cmpop | ast.boolop | ast.unaryop):
            return child
        always = next((a for c, a in _children(parent) if c is child), False)
        return self.rewrite(child, certain and always)


def _with_dtype_identity(tree: ast.expr, ns: dict[str, Any]) -> ast.expr:
    """``x.dtype == K3`` as ``(x.dtype is K3 or x.dtype == K3)`` where ``K3`` is a traced dtype."""

    class Identity(ast.NodeTransformer):
        def visit_Compare(self, node: ast.Compare) -> ast.AST:
            self.generic_visit(node)
            right = node.comparators[0]
            if (len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq) and isinstance(node.left, ast.Attribute)
                    and node.left.attr == "dtype" and isinstance(right, ast.Name)
                    and isinstance(ns.get(right.id), np.dtype)):
                same = ast.Compare(node.left, [ast.Is()], [right])
                return ast.BoolOp(ast.Or(), [same, ast.Compare(_copy(node.left), [ast.Eq()], [_copy(right)])])
            return node

    return Identity().visit(tree)


def _copy(node: ast.expr) -> ast.expr:
    return ast.parse(ast.unparse(node), mode="eval").body
