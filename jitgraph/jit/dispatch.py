"""Generated dispatch: one readable Python function per cache entry that recognises a call and runs the entry.

Why: the generic path (``keys.make_key`` -> a dict lookup -> the entry's compiled guards -> ``alias_pattern``)
walks the arguments through general functions and builds a key tuple and lists on every call: a few microseconds
for three small arrays, more than a small fused kernel takes. An entry knows its argument layout exactly, so a
*runner* checks it in straight-line code (``type(v0) is ndarray and v0.shape == (16,) and ...``), with the traced
guards inlined and the aliasing check unrolled over its arrays, then runs the graph. The source is registered in
``linecache`` under ``<jitgraph dispatch NAME entry N>``, so tracebacks and ``inspect.getsource`` show it, and
``runner_source(entry)`` returns it.

Where the backend offers a function that checks the arrays' shapes and strides itself and runs the graph (the CPU
backend's BLAS programs, ``checked_program``), the runner checks only the arguments' types and aliasing, calls it
with outputs it allocates, and counts a call it refuses as a miss (the generic path then decides): reading
``shape`` and ``strides`` costs ~0.3 us an array in Python, nothing in Numba.

Exactness: a runner accepts a call exactly when the generic path would pick its entry. It mirrors
``keys.flatten`` branch for branch (the same exact types, so the same branch; the same key parts compared), runs
the same guard code, and where the aliasing cannot be decided from owners alone (an array whose memory comes
through a non-array object, two views of one buffer) it calls ``keys.alias_pattern`` as the generic path does.
A user object (``self``) is keyed by its exact type alone (``keys.keyed_by_type``), its attributes by the traced
guards and read as extra inputs. Values with no straight-line check (device arrays, named tuples, slices, sets,
objects of classes with ``__getattr__``, ...) leave the entry without a runner. Runners are tried in publication
order, and only for the leading entries that all have one (``runners``), so the first entry that matches is the
one the generic path would find; calls no runner takes go the generic way.

The first runner's entry also gets a *call function* (``build_call``): the same checks with the arguments as
positional-only parameters, which the compiled function's ``__call__`` runs directly -- no ``*args``/``**kwargs``
to pack, no loop, no second frame. Any other form of call, or a call it does not take, goes on to the other
runners and the generic path (``CompiledFunction._after``), so it picks exactly what the runners would.

Threads: the function's tuple of runners is replaced under the compile lock, never edited; a runner reads its
entry's ``fast``, ``compiled`` and ``build`` at call time, so a demotion (or a benchmark's stub) takes effect at
once.
"""

from __future__ import annotations

import ast
import itertools
import linecache
import os
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from jitgraph.device_arrays import is_device_array
from jitgraph.jit.entries import Entry
from jitgraph.jit.guard_code import straight_line
from jitgraph.tracer.dynamic_ints import LIMIT, DynamicInt, view
from jitgraph.tracer.keys import alias_pattern, is_namedtuple, keyed_by_type
from jitgraph.tracer.trace import parameter_names

MISS = object()  # what a runner returns when the call is not its entry's (never a user's value)
MAX_RUNNERS = 8  # entries tried by runners before the generic key lookup (a miss costs ~0.1 us each)
_PAIRWISE_MAX = 6  # up to this many arrays the owners are compared pairwise, above it through a set

_IDENTITY_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type, np.ufunc, types.MethodType)
_ids = itertools.count(1)

Runner = Callable[[tuple, dict[str, Any]], Any]


class _Unsupported(Exception):
    """A value with no straight-line check: the entry gets no runner."""


class _Writer:
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
        self._n = 0

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
            # One dimension: ``ndim`` and ``len`` read two C ints, where ``shape`` builds a tuple to compare.
            shape = (f"{v}.ndim != 1 or len({v}) != {value.shape[0]}" if value.ndim == 1 else
                     f"{v}.shape != {value.shape!r}")
            full = (f"type({v}) is not ndarray or {shape} or {v}.strides != {value.strides!r} or "
                    f"({v}.dtype is not {dtype} and {v}.dtype != {dtype})")
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
            raise _Unsupported

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

    def aliasing(self, entry: Entry, exact: bool) -> None:
        """Unrolled owner comparison (``keys.alias_pattern``'s first pass) for an entry whose arrays share no
        memory; ``alias_pattern`` itself where that pass cannot decide, or for ``exact`` patterns."""
        if exact:
            self.lines.append(f"    if alias_pattern([{', '.join(self.leaves)}]) != {self.const(entry.alias)}:"
                              "  # aliasing as traced")
            self.lines.append(f"        {self.miss}")
            return
        arrays, extras = self.arrays, self.extras
        if len(arrays) + len(extras) < 2:
            return
        pad = "    "
        if not extras:  # first, the usual call: distinct arrays that own their memory
            if len(arrays) <= _PAIRWISE_MAX:
                same = " or ".join(f"{p} is {q}" for p, q in itertools.combinations(arrays, 2))
            else:
                same = f"len({{{', '.join(f'id({a})' for a in arrays)}}}) != {len(arrays)}"
            owning = " and ".join(f"{a}.base is None" for a in arrays)
            self.lines.append(f"    if not ({owning}) or {same}:  # not all distinct arrays owning their memory")
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
        if len(owners) <= _PAIRWISE_MAX:
            same = " or ".join(f"{p} == {q}" for p, q in itertools.combinations(owners, 2))
        else:
            same = f"len({{{', '.join(owners)}}}) != {len(owners)}"
        self.lines.append(f"{pad}if not ({' and '.join(owners)}) or {same}:  # shared or unknown: the exact check")
        self.lines.append(f"{pad}    if alias_pattern([{', '.join(self.leaves)}]) is not None:")
        self.lines.append(f"{pad}        {self.miss}")


def build_runner(entry: Entry, name: str, index: int, hits: itertools.count, slow: Callable[..., Any]
                 ) -> tuple[Runner | None, tuple[int | str, ...]]:
    """The runner of ``entry`` (None where some argument has no straight-line check), and the top-level positions
    where the traced call had a plain int in the dynamic range (once such a position is dynamic, the generic path
    wraps it and can never find this entry: see :func:`runners`). Call at publication, while the traced call's
    arguments are still there."""
    w = _write(entry, hits, slow, None)
    if w is None:
        return None, ()
    fn_name = f"run_entry_{index}"
    pa, pk = ("UA", "UKW") if entry.traced.dynamic else ("A", "KW")
    header = [f"def {fn_name}({pa}, {pk}):",
              f'    """Entry {index} of {name} ({entry.mode}): the call\'s layout, guards and aliasing as traced."""']
    runner = _define(fn_name, header + w.lines, w.ns, f"{name} entry {index}")
    return runner, tuple(w.plain_ints)


def build_call(entry: Entry, runner: Runner, owner: Any, name: str, index: int, hits: itertools.count,
               slow: Callable[..., Any]) -> Callable[..., Any] | None:
    """The compiled function's whole call, for when ``entry`` is the first to try: its runner's checks with the
    arguments as the function's own parameters (positional-only, so a keyword call is never mistaken for a
    positional one), no ``*args``/``**kwargs`` tuple and dict to unpack, no loop over runners, no second Python
    frame (~0.25 us of a ~1 us small call). A call of another form, or one this entry does not take, goes on to
    ``owner._after``: the other runners, then the generic path. None for entries traced with keywords or dynamic
    ints (their runner serves them), or where the checks would need the argument tuple itself."""
    traced = entry.traced
    if traced.kwargs or traced.dynamic:
        return None
    n = len(traced.args)
    given = "(" + "".join(f"a{i}, " for i in range(n)) + ")"
    w = _write(entry, hits, slow, given)
    if w is None:
        return None
    w.ns.update(SELF=owner, RUNNER=runner, NO=_NO)
    fn_name = f"call_entry_{index}"
    params = "".join(f"a{i}=NO, " for i in range(n)) + ("/, " if n else "")
    form = "rest or kw" + (f" or a{n - 1} is NO" if n else "")
    header = [f"def {fn_name}({params}*rest, **kw):",
              f'    """{name} when entry {index} ({entry.mode}) is first: its checks on the parameters."""',
              f"    if {form}:  # not {n} positional arguments alone: the other entries, the generic path",
              f"        return SELF._after(tuple([a for a in {given} if a is not NO]) + rest, kw, RUNNER)"]
    call = _define(fn_name, header + w.lines, w.ns, f"{name} call {index}", in_package=True)
    if {"A", "KW", "UA", "UKW"} & set(call.__code__.co_names):  # a check reads the argument tuple: none here
        return None
    return call


_HERE = os.path.dirname(os.path.abspath(__file__))
_NO = object()  # a parameter of a call function the caller did not pass (never a user's value)


def _define(fn_name: str, lines: list[str], ns: dict[str, Any], label: str, in_package: bool = False) -> Any:
    """The function ``fn_name`` of the generated ``lines``, its source in ``linecache`` (tracebacks show it).
    ``in_package``: its file name lies in this package's folder, for a function that stays on the stack while the
    generic path runs (a call function), so that frames walked to find the user's call site (call_site.py) skip
    it as jitgraph's own."""
    source = "\n".join(lines) + "\n"
    filename = f"<jitgraph dispatch {label} #{next(_ids)}>"
    if in_package:
        filename = os.path.join(_HERE, filename)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), ns)  # noqa: S102 - our own generated source
    fn = ns[fn_name]
    fn.source = source
    return fn


def _write(entry: Entry, hits: itertools.count, slow: Callable[..., Any], given: str | None) -> _Writer | None:
    """The body's lines (the layout, guards, aliasing, then the run) of a runner, or, with ``given`` (the tuple
    expression of the parameters ``a0, a1, ...``), of a call function: its arguments are parameters already, and
    "not this entry" goes on to the other entries instead of returning MISS. None where some argument has no
    straight-line check."""
    traced = entry.traced
    args, kwargs = traced.args, traced.kwargs
    w = _Writer()
    checked = _checked_program(entry)
    if checked is not None:
        w.deferred = []
    if given is None:
        pa, pk = ("UA", "UKW") if traced.dynamic else ("A", "KW")  # the caller's arguments (unwrapped ints)
    else:
        pa, pk = given, "kw"
        w.miss = f"return SELF._after({given}, kw, RUNNER)"
        for i in range(len(args)):
            w.know(f"A[{i}]", f"a{i}")
    names = parameter_names(traced.fn, len(args))
    try:
        if given is None:
            w.unpack(pa, len(args))
        for i, value in enumerate(args):
            w.walk(value, f"a{i}", names[i] if i < len(names) else f"args[{i}]", None if traced.dynamic else f"A[{i}]")
            _note_plain_int(w, i, value)
        if kwargs:
            w.fail_if(f"len({pk}) != {len(kwargs)} or tuple({pk}) != {w.const(tuple(kwargs))}",
                      f"keywords {list(kwargs)}")
            for k, value in kwargs.items():
                w.walk(value, f"{pk}[{k!r}]", k, None if traced.dynamic else f"KW[{k!r}]")
                _note_plain_int(w, k, value)
        elif given is None:
            w.fail_if(pk, "no keyword arguments")
    except _Unsupported:
        return None
    if w.types:
        w.fail_if(" or ".join(w.types), "not all arrays")
    if traced.dynamic:  # the guards, the graph and the result builder see the dynamic ints wrapped
        w.ns["view"], w.ns["DYNAMIC"] = view, traced.dynamic
        w.lines.append("    A, KW = view(UA, UKW, DYNAMIC)")
    if entry.check is not None:
        w.guards(entry)
    leaves = f"    leaves = [{', '.join(w.leaves)}]"
    if checked is None:
        w.lines.append(leaves)
    w.aliasing(entry, exact=entry.alias is not None)
    w.ns.update(E=entry, HITS=hits, SLOW=slow)
    ba, bk = ("A", "KW") if given is None else (pa, pk)  # the arguments as the graph sees them (ints wrapped)
    direct = _direct_lines(entry, w, ba, bk)
    if checked is not None and direct:
        w.lines += _program_lines(entry, w, checked)
    if checked is not None:  # the list only past the program's hit
        w.lines.append(leaves)
    if w.deferred:
        w.lines += w.deferred
    w.lines += ["    next(HITS)", "    if E.fast:"]
    w.lines += direct
    w.lines += [f"        return E.build(E.compiled(leaves), leaves, {ba}, {bk})",
                f"    return SLOW(E, leaves, {ba}, {bk}, {pa}, {pk})"]
    return w


def _direct_lines(entry: Entry, w: _Writer, ba: str, bk: str) -> list[str]:
    """The hit of an entry as published, without the layers: the backend's ``run_direct`` callable (the CPU driver
    itself, not the object wrapping it) and, for the usual return values -- an array, or a tuple or list of arrays
    -- the result built inline, where the builder (``tracer.outputs.build_output``) would run a lambda per part.
    Other results, and replayed side effects (an attribute or a dict entry stored), go to the builder.

    Both are checked at call time (``E.compiled is COMPILED and E.build is BUILD``), so a demotion or a stub takes
    effect at once, and a value the inline code does not expect (not an ndarray: a device array, a scalar) goes to
    the builder. Not for resumable graphs, whose artifact and builder do more. Together ~0.4 us of a ~2 us small
    call."""
    traced = entry.traced
    if entry.compiled is None or entry.build is None or traced.resumable:
        return []
    # An entry traced without aliasing runs only on leaves that share no memory (the check above): the backend may
    # then skip its own overlap check (``run_unaliased``).
    run = getattr(entry.compiled, "run_unaliased", None) if entry.alias is None else None
    w.ns.update(COMPILED=entry.compiled, BUILD=entry.build,
                RUN=run or getattr(entry.compiled, "run_direct", entry.compiled))
    head = "        if E.compiled is COMPILED and E.build is BUILD:  # as published: the driver"
    parts, wrap = _inline_result(entry)
    if not parts:
        return [head, f"            return BUILD(RUN(leaves), leaves, {ba}, {bk})"]
    names = [f"r{j}" for j in range(len(parts))]
    ready = " and ".join(f"type({r}) is ndarray" for r in names)
    return [head + ", the result inline",
            "            o = RUN(leaves)",
            *(f"            {r} = o[{k}]" for r, k in zip(names, parts)),
            f"            if {ready}:",
            f"                return {_result(names, wrap)}",
            f"            return BUILD(o, leaves, {ba}, {bk})"]


def _inline_result(entry: Entry) -> tuple[list[int], str | None]:
    """The graph outputs that make the call's result, and how they are wrapped (None: the one array itself, or
    "tuple" or "list"), for a result of arrays the runner builds inline; ``[]`` where the builder must run (other
    values, replayed side effects)."""
    traced = entry.traced
    spec = traced.out_spec
    if traced.object_effects:
        return [], None
    if spec[0] == "out" and spec[2] == "array":
        return [spec[1]], None
    if spec[0] in ("tuple", "list") and 0 < len(spec[1]) <= 8 and all(p[0] == "out" and p[2] == "array"
                                                                      for p in spec[1]):
        return [p[1] for p in spec[1]], spec[0]
    return [], None


def _checked_program(entry: Entry) -> Any | None:
    """The backend's function that checks the arrays' shapes and strides itself and runs the graph (CpuCompiled's
    ``checked_program``: a BLAS program), for an entry whose arguments are all positional arrays, the leaves as
    they are (no dynamic ints, no globals read by the guards); else None."""
    traced = entry.traced
    make = getattr(entry.compiled, "checked_program", None)
    if make is None or traced.dynamic or traced.kwargs or traced.resumable or traced.object_effects:
        return None
    if entry.check is not None and entry.guards.extra_inputs:
        return None
    if not traced.args or not all(type(a) is np.ndarray for a in traced.args) or not _inline_result(entry)[0]:
        return None
    return make(list(traced.args))


def _program_lines(entry: Entry, w: _Writer, checked: tuple[Any, tuple]) -> list[str]:
    """The hit through a program that checks the arrays' shapes and strides itself (``_checked_program``): Numba
    has them unboxed, where each ``shape``/``strides`` read here builds a tuple (~0.3 us an array). The runner
    allocates the outputs (cheaper than Numba boxing arrays it allocated); the program returns False for other
    shapes or strides and raises TypeError for other dtypes or layouts (it compiles nothing more): a miss either
    way, which the generic path then decides. Only for the entry as published (``E.compiled is COMPILED``);
    otherwise the full checks follow."""
    function, outputs = checked
    parts, wrap = _inline_result(entry)
    w.ns.update(CHECKED=function, EMPTY=np.empty, **{f"OD{k}": dtype for k, (_, dtype) in enumerate(outputs)})
    outs = [f"r{k}" for k in range(len(outputs))]
    return ["    if E.fast and E.compiled is COMPILED and E.build is BUILD:  # Numba checks shapes and strides",
            *(f"        {r} = EMPTY({n}, OD{k})" for k, (r, (n, _)) in enumerate(zip(outs, outputs))),
            "        try:",
            f"            ran = CHECKED({', '.join(w.arrays + outs)})",
            "        except Exception:  # another dtype, layout or read-only: the generic path decides",
            "            ran = False",
            "        if not ran:  # other shapes or strides, or the above",
            f"            {w.miss}",
            "        next(HITS)",
            f"        return {_result([outs[k] for k in parts], wrap)}"]


def _result(names: list[str], wrap: str | None) -> str:
    """The expression of the call's result from the output variables ``names``."""
    if wrap is None:
        return names[0]
    if wrap == "tuple" and len(names) == 1:
        return f"({names[0]},)"
    return ("({})" if wrap == "tuple" else "[{}]").format(", ".join(names))


def _note_plain_int(w: _Writer, position: int | str, value: Any) -> None:
    if type(value) is int and -LIMIT < value < LIMIT:
        w.plain_ints.append(position)


def runners(entries: list[Entry], dynamic: frozenset[int | str]) -> tuple[Runner, ...]:
    """The runners to try, in publication order: those of the leading entries, up to the first entry without one
    (a later runner must not take a call that entry would match first) and at most :data:`MAX_RUNNERS`. An entry the
    generic path can no longer reach (a plain int traced where the position has since become dynamic) is skipped."""
    out: list[Runner] = []
    for entry in entries:
        if entry.plain_ints and not dynamic.isdisjoint(entry.plain_ints):
            continue
        if entry.runner is None or len(out) == MAX_RUNNERS:
            break
        out.append(entry.runner)
    return tuple(out)


def runner_source(entry: Entry) -> str | None:
    """The generated source of an entry's runner (None when it has none)."""
    return getattr(entry.runner, "source", None)
