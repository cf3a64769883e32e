"""The straight-line checks a dispatch runner makes for one cache entry (jit/dispatch.py builds the runners): the
arguments' layout as ``keys.flatten`` keys it, branch for branch, the traced guards (guard_code.py), and the
aliasing of the arrays, each written as generated Python source lines.

Why its own module: what a runner checks (this) is one concept, how runners are assembled into functions and
tried in order (dispatch.py) another.
"""

from __future__ import annotations

import ast
import itertools
import types
from typing import Any

import numpy as np

from jitgraph.device_arrays import is_device_array
from jitgraph.jit.entries import Entry
from jitgraph.jit.guard_code import straight_line
from jitgraph.jit.hot_recompiles import ANY_ALIAS
from jitgraph.tracer.dynamic_ints import LIMIT, DynamicInt
from jitgraph.tracer.keys import alias_pattern, is_namedtuple, keyed_by_type

MISS = object()  # what a runner returns when the call is not its entry's (never a user's value)


class _NotPassed:
    """A parameter of a generated call function the caller did not pass (never a user's value)."""

    def __repr__(self) -> str:
        return "NO"


NO = _NotPassed()  # the default of such parameters: dispatch's call functions and eager mode's (eager_mode.py)
_PAIRWISE_MAX = 6  # up to this many arrays the owners are compared pairwise, above it through a set

_IDENTITY_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type, np.ufunc, types.MethodType)


class Unsupported(Exception):
    """A value with no straight-line check: the entry gets no runner."""


class Writer:
    """Collects the runner's lines, the constants it names, its leaves and arrays."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {"ndarray": np.ndarray, "generic": np.generic, "MISS": MISS,
                                   "alias_pattern": alias_pattern}
        self.leaves: list[str] = []
        self.arrays: list[str] = []
        self.extras: list[str] = []  # the traced guards' extra inputs (globals), of types known only at run time
        self.plain_ints: list[int | str] = []  # top-level positions holding a plain int of the dynamic range
        self.known: dict[str, str] = {}  # argument paths as the guards write them -> the local holding the value
        # Where a compiled program checks the arrays' shapes and strides itself (program_path), their full checks
        # are collected here, for the path that does not run it, instead of being written at once.
        self.deferred: list[str] | None = None
        self.types: list[str] = []
        self.miss = "return MISS"  # how the code says "not this entry" (a call function goes on to the others)
        self.split = 0  # the first line past the layout checks, and the locals made until then (``layout_locals``)
        self.layout_locals = 0
        self._n = 0

    def end_layout(self) -> None:
        """Mark the end of the layout checks: what follows (guards, aliasing, the run) is the entry's own *tail*,
        which a group of entries with one key runs after checking that layout once (dispatch.py)."""
        self.split, self.layout_locals = len(self.lines), self._n

    def const(self, value: Any) -> str:
        name = f"C{len(self.ns)}"
        self.ns[name] = value
        return name

    def local(self, expr: str) -> str:
        if expr.isidentifier():
            return expr
        name = f"v{self._n}"
        self._n += 1
        self.lines.append(f"    {name} = {expr}")
        return name

    def unpack(self, args: str, n: int) -> None:
        """The positional arguments as locals ``a0, a1, ...`` (one unpacking; a wrong count is a miss)."""
        if n == 0:
            self.fail_if(args, "no positional arguments")
            return
        names = ", ".join(f"a{i}" for i in range(n)) + ("," if n == 1 else "")
        self.lines += ["    try:", f"        {names} = {args}",
                       "    except ValueError:  # another number of positional arguments", f"        {self.miss}"]

    def fail_if(self, condition: str, why: str) -> None:
        self.lines.append(f"    if {condition}:  # {why}")
        self.lines.append(f"        {self.miss}")

    def walk(self, value: Any, expr: str, label: str, path: str | None) -> None:
        """The checks ``keys.flatten`` makes of ``value`` (the traced call's), for the expression ``expr``; ``path``
        is the same value as the traced guards name it (``A[0]['W1']``), None where unknown."""
        t = type(value)
        if t is np.ndarray:
            v, dtype = self.local(expr), self.const(value.dtype)
            self.know(path, v)
            why = f"{label}: {value.dtype}{list(value.shape)}, strides {value.strides}"
            # One dimension: the strides (one entry per dimension) say ``ndim`` is 1, and ``len`` reads a C int where
            # ``shape`` builds a tuple to compare (~0.01 us each).
            strides = f"{v}.strides != {value.strides!r}"
            shape = (f"{strides} or len({v}) != {value.shape[0]}" if value.ndim == 1 else
                     f"{v}.shape != {value.shape!r} or {strides}")
            full = f"type({v}) is not ndarray or {shape} or ({v}.dtype is not {dtype} and {v}.dtype != {dtype})"
            if self.deferred is None:
                self.fail_if(full, why)
            else:  # only the type here, all at once (``types``); the rest in Numba, or after it (``deferred``)
                self.types.append(f"type({v}) is not ndarray")
                self.deferred += [f"    if {full}:  # {why}", f"        {self.miss}"]
            self.leaves.append(v)
            self.arrays.append(v)
        elif t is float:
            v = self.local(expr)
            self.know(path, v)
            self.fail_if(f"type({v}) is not float", f"{label}: a float (a graph input)")
            self.leaves.append(v)
        elif t is DynamicInt:
            v = self.local(expr)
            self.fail_if(f"type({v}) is not int or not -{LIMIT} < {v} < {LIMIT}", f"{label}: an int (a runtime value)")
            self.leaves.append(v)
        elif t is bool or value is None:
            self.fail_if(f"{expr} is not {value!r}", f"{label} is {value!r}")
        elif t is int or t is str or t is bytes:
            v = self.local(expr)
            self.fail_if(f"type({v}) is not {t.__name__} or {v} != {self.const(value)}", f"{label} == {value!r}"[:80])
        elif t is dict:
            v = self.local(expr)
            self.know(path, v)
            self.fail_if(f"type({v}) is not dict or len({v}) != {len(value)} or tuple({v}) != "
                         f"{self.const(tuple(value))}", f"{label}: a dict with keys {list(value)}"[:100])
            for k, item in value.items():
                simple = type(k) in (str, int)
                key = repr(k) if simple else self.const(k)
                self.walk(item, f"{v}[{key}]", f"{label}[{k!r}]", f"{path}[{k!r}]" if path and simple else None)
        elif t is tuple or t is list:
            v = self.local(expr)
            self.know(path, v)
            self.fail_if(f"type({v}) is not {t.__name__} or len({v}) != {len(value)}",
                         f"{label}: a {t.__name__} of {len(value)}")
            for i, item in enumerate(value):
                self.walk(item, f"{v}[{i}]", f"{label}[{i}]", f"{path}[{i}]" if path else None)
        elif isinstance(value, np.generic):
            v = self.local(expr)
            self.know(path, v)
            self.fail_if(f"type({v}) is not {self.const(t)}", f"{label}: a NumPy {t.__name__} (a graph input)")
            self.leaves.append(v)
        elif isinstance(value, _IDENTITY_TYPES) and not is_namedtuple(value):
            v = self.local(expr)
            self.fail_if(f"type({v}) is not {self.const(t)} or id({v}) != {id(value)}",
                         f"{label} is {getattr(value, '__qualname__', t.__name__)}")
        elif keyed_by_type(t) and not is_device_array(value):  # an object: the guards check the attributes read
            v = self.local(expr)
            self.know(path, v)
            # is_device_array's test, where an instance dict may hold the names (keyed_by_type: not the class)
            device = f" or hasattr({v}, '__cuda_array_interface__') or getattr({v}, '__cuda_ndarray__', False) is True"
            self.fail_if(f"type({v}) is not {self.const(t)}" + (device if t.__dictoffset__ else ""),
                         f"{label}: a {t.__qualname__}")
        else:
            raise Unsupported

    def guards(self, entry: Entry) -> None:
        """The entry's traced guards and extra inputs (globals and attributes read by the trace), as
        ``GuardSet.compile``, each path read once (guard_code.py). A miss is decided inside the ``try`` but taken
        after it, so that a call function's going on to the other entries (which may raise the user's own exception)
        never runs under the guards' ``except``."""
        guards = entry.guards
        self.ns["K"] = guards.constants
        held, extras = straight_line([g.code for g in guards.guards], [s.code for s in guards.extra_inputs],
                                     self.known, self.ns)
        self.lines.append("    try:")
        self.lines += [f"        # {g.text[:100]}" for g in guards.guards]
        self.lines.append(f"        held = {held}")
        if extras:
            self.lines.append("        if held:")
        for k, value in enumerate(extras):
            self.lines.append(f"            x{k} = {value}")
            self.leaves.append(f"x{k}")
            self.extras.append(f"x{k}")
        self.lines += ["    except Exception:", "        held = False"]
        self.fail_if("not held", "a guard failed")

    def know(self, path: str | None, local: str) -> None:
        if path is not None:
            self.known[ast.unparse(ast.parse(path, mode="eval"))] = local

    def aliasing(self, alias: tuple | None, exact: bool) -> None:
        """Unrolled owner comparison (``keys.alias_pattern``'s first pass) for an entry whose arrays share no
        memory, or whose pattern is some arrays passed more than once (``x`` as ``CACHE['last']``: checked by
        identity, then one array of each kind by owner); ``alias_pattern`` itself where that pass cannot decide,
        or for patterns with overlapping views. ``alias``: the entry's pattern; ANY_ALIAS for a catch-all entry
        (hot_recompiles.py): any aliasing, nothing checked."""
        if alias is ANY_ALIAS:
            return
        pairs = _same_pairs(alias) if exact else []
        check = f"alias_pattern([{', '.join(self.leaves)}])" + (f" != {self.const(alias)}" if exact else
                                                                 " is not None")
        if pairs is None:
            self.fail_if(check, "aliasing as traced")
            return
        if pairs:
            self.fail_if(" or ".join(f"{self.leaves[i]} is not {self.leaves[j]}" for i, j in pairs),
                         "not the same arrays as traced")
        dropped = {self.leaves[j] for _, j in pairs}  # the same array as an earlier leaf: its owner is that one's
        arrays = [a for a in self.arrays if a not in dropped]
        extras = [x for x in self.extras if x not in dropped]
        if len(arrays) + len(extras) < (1 if pairs else 2):
            return
        # First, the usual call: distinct arrays that own their memory (an attribute's or a global's value among
        # them, where it is such an array or a Python number), which share none; else the owners below. (Two equal
        # numbers may be one object: the owners then decide, a false alarm, never a miss of real sharing.)
        same = _coincide(arrays + extras, "is", "id({})")
        owning = " and ".join([*(f"{a}.base is None" for a in arrays),
                               *(f"(type({x}) is ndarray and {x}.base is None or type({x}) is int or "
                                 f"type({x}) is float)" for x in extras)])  # a number has no memory
        self.lines.append(f"    if {' or '.join([f'not ({owning})', *same])}:  # not all distinct arrays owning "
                          "their memory")
        pad = "        "
        owners = []
        for k, a in enumerate(arrays):  # the owner of each array's memory; 0 where it comes through another object
            self.lines.append(f"{pad}o{k} = id({a}) if (b := {a}.base) is None else "
                              "id(b) if type(b) is ndarray and b.base is None else 0")
            owners.append(f"o{k}")
        # A global's or an attribute's value: an array, a number (no memory: alias_pattern compares only arrays and
        # device arrays), or unknown (0: the exact check).
        for k, x in enumerate(extras, len(arrays)):
            self.lines.append(f"{pad}o{k} = (id({x}) if (b := {x}.base) is None else id(b) if type(b) is ndarray and "
                              f"b.base is None else 0) if type({x}) is ndarray else -{k + 1} if type({x}) is float "
                              f"or type({x}) is int or isinstance({x}, generic) else 0")
            owners.append(f"o{k}")
        same = _coincide(owners, "==", "{}")
        unknown = f"not ({' and '.join(owners)})"
        self.lines.append(f"{pad}if {' or '.join([unknown, *same])}:  # shared or unknown: the exact check")
        self.lines.append(f"{pad}    if {check}:")
        self.lines.append(f"{pad}        {self.miss}")


def _same_pairs(pattern: tuple | None) -> list[tuple[int, int]] | None:
    """An aliasing pattern of arrays passed more than once and nothing else (``alias_pattern`` lists every pair of
    one array's leaves as "same"), as the pairs (first leaf of the array, a later one); [] for no aliasing, None for
    a pattern with overlapping views (only ``alias_pattern`` decides those)."""
    if pattern is None:
        return []
    if any(kind != "same" for kind, _, _ in pattern):
        return None
    first: dict[int, int] = {}
    for _, i, j in sorted(pattern, key=lambda p: (p[1], p[2])):
        first.setdefault(j, first.get(i, i))
    members: dict[int, list[int]] = {}
    for j, i in first.items():
        members.setdefault(i, [i]).append(j)
    expected = {("same", p, q) for group in members.values() for p, q in itertools.combinations(sorted(group), 2)}
    return sorted((i, j) for j, i in first.items()) if expected == set(pattern) else None


def _coincide(names: list[str], op: str, key: str) -> list[str]:
    """Conditions of which one holds when two of ``names`` are the same (``op``: ``is`` or ``==``): pairwise up to
    :data:`_PAIRWISE_MAX` names, above it one test of the size of the set of their ``key`` (``id({})``)."""
    if len(names) <= _PAIRWISE_MAX:
        return [f"{p} {op} {q}" for p, q in itertools.combinations(names, 2)]
    return [f"len({{{', '.join(key.format(n) for n in names)}}}) != {len(names)}"]
