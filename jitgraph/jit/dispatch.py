"""Generated dispatch: one readable Python function per cache entry that recognises a call and runs the entry.

Why: the generic path (``keys.make_key`` -> a dict lookup -> the entry's compiled guards -> ``alias_pattern``)
walks the arguments through general functions and builds a key tuple and lists on every call: a few microseconds
for three small arrays, more than a small fused kernel takes. An entry knows its argument layout exactly, so a
*runner* checks it in straight-line code (``type(v0) is ndarray and v0.shape == (16,) and ...``), with the traced
guards inlined and the aliasing check unrolled over its arrays (runner_checks.py writes those lines), then runs
the graph. The source is registered in
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
runners and the generic path (``CompiledFunction._after``), so it picks exactly what the runners would. Where
the entries after the first share its key (a method whose state was empty on its first call), the call function
is a *group call*: the layout checked once, then each entry's guards, aliasing and run in publication order.

Threads: the function's tuple of runners is replaced under the compile lock, never edited (the first runner's
``call`` is set there too: the call function an old tuple's reader picked stays valid); a runner reads its
entry's ``fast``, ``compiled`` and ``build`` at call time, so a demotion (or a benchmark's stub) takes effect at
once.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from jitgraph.generated_source import run_source
from jitgraph.jit import eager_mode, exclusive_guards
from jitgraph.jit.entries import Entry
from jitgraph.jit.hot_recompiles import ANY_ALIAS
from jitgraph.jit.runner_checks import MISS, NO, Unsupported, Writer
from jitgraph.tracer.dynamic_ints import LIMIT, view
from jitgraph.tracer.trace import parameter_names

MAX_RUNNERS = 8  # entries tried by runners before the generic key lookup (a miss costs ~0.1 us each)
_ids = itertools.count(1)

Runner = Callable[[tuple, dict[str, Any]], Any]


def build_runner(entry: Entry, name: str, index: int, hits: itertools.count, slow: Callable[..., Any],
                 every_call: bool = False) -> tuple[Runner | None, tuple[int | str, ...]]:
    """The runner of ``entry`` (None where some argument has no straight-line check), and the top-level positions
    where the traced call had a plain int in the dynamic range (once such a position is dynamic, the generic path
    wraps it and can never find this entry: see :func:`runners`). Call at publication, while the traced call's
    arguments are still there. ``every_call``: the checks of the entry once demoted (the layout alone:
    hot_recompiles.take_every_call), built before it is."""
    w = _write(entry, hits, slow, None, every_call=every_call)
    if w is None:
        return None, ()
    fn_name = f"run_entry_{index}"
    pa, pk = ("UA", "UKW") if entry.traced.dynamic else ("A", "KW")
    header = [f"def {fn_name}({pa}, {pk}):",
              f'    """Entry {index} of {name} ({entry.mode}): the call\'s layout, guards and aliasing as traced."""']
    runner = define(fn_name, header + w.lines, w.ns, f"{name} entry {index}")
    return runner, tuple(w.plain_ints)


def build_call(entry: Entry, runner: Runner, owner: Any, name: str, index: int, hits: itertools.count,
               slow: Callable[..., Any], every_call: bool = False) -> Callable[..., Any] | None:
    """The compiled function's whole call, for when ``entry`` is the first to try: its runner's checks with the
    arguments as the function's own parameters (positional-only, so a keyword call is never mistaken for a
    positional one), no ``*args``/``**kwargs`` tuple and dict to unpack, no loop over runners, no second Python
    frame (~0.25 us of a ~1 us small call). A call of another form, or one this entry does not take, goes on to
    ``owner._after``: the other runners, then the generic path. None for entries traced with keywords or dynamic
    ints (their runner serves them), or where the checks would need the argument tuple itself.

    The call function also carries the entry's *tail* (``group``): its guards, aliasing and run as a function of
    the parameters and the layout's locals, for a group call (:func:`runners`)."""
    traced = entry.traced
    if traced.kwargs or traced.dynamic:
        return None
    n = len(traced.args)
    given = "(" + "".join(f"a{i}, " for i in range(n)) + ")"
    w = _write(entry, hits, slow, given, every_call=every_call)
    if w is None:
        return None
    w.ns.update(SELF=owner, RUNNER=runner, NO=NO)
    fn_name = f"call_entry_{index}"
    doc = f"{name} when entry {index} ({entry.mode}) is first: its checks on the parameters."
    call = define(fn_name, _call_header(fn_name, doc, n) + w.lines, w.ns, f"{name} call {index}", in_package=True)
    if {"A", "KW", "UA", "UKW"} & set(call.__code__.co_names):  # a check reads the argument tuple: none here
        return None
    tail = _write(entry, hits, slow, given, miss=(f"return AFTER({given}, kw)", "return MISS"), every_call=every_call)
    guarded = _dispatch_fields(entry, every_call)[0]
    if tail is not None and _checked_program(entry, guarded) is None:
        params = ", ".join([*(f"a{i}" for i in range(n)), *(f"v{k}" for k in range(tail.layout_locals)), "kw"])
        fn_name = f"tail_entry_{index}"
        header = [f"def {fn_name}({params}):", f'    """Entry {index} of {name} past its layout checks."""']
        run = define(fn_name, header + tail.lines[tail.split:], tail.ns, f"{name} tail {index}", in_package=True)
        call.group = _Tail(entry.key, tail.lines[:tail.split], tail.ns, params, run, owner, name, index, n,
                           exclusive_guards.facts(entry.guards) if guarded is not None else None)
    return call


class _Tail(NamedTuple):
    """What a group call needs of one member entry (``build_call``)."""

    key: tuple
    layout: list[str]  # the layout checks' lines, a miss going on to ``AFTER`` (past the group)
    ns: dict[str, Any]  # their namespace (the layout's constants)
    params: str  # the tail's parameters: ``a0, a1, v0, v1, kw``
    run: Callable[..., Any]  # the tail: the entry's result, or MISS
    owner: Any  # the compiled function
    name: str
    index: int
    n: int
    facts: dict | None  # what its guards pin per path (exclusive_guards.facts); None without guards


def _call_header(fn_name: str, doc: str, n: int) -> list[str]:
    """A call function's first lines: its parameters, and any other form of call going on to ``SELF._after``."""
    given = "(" + "".join(f"a{i}, " for i in range(n)) + ")"
    params = "".join(f"a{i}=NO, " for i in range(n)) + ("/, " if n else "")
    form = "rest or kw" + (f" or a{n - 1} is NO" if n else "")
    return [f"def {fn_name}({params}*rest, **kw):", f'    """{doc}"""',
            f"    if {form}:  # not {n} positional arguments alone: the other entries, the generic path",
            f"        return SELF._after(tuple([a for a in {given} if a is not NO]) + rest, kw, RUNNER)"]


_HERE = os.path.dirname(os.path.abspath(__file__))


def define(fn_name: str, lines: list[str], ns: dict[str, Any], label: str, in_package: bool = False) -> Any:
    """The function ``fn_name`` of the generated ``lines``, its source in ``linecache`` (tracebacks show it).
    ``in_package``: its file name lies in this package's folder, for a function that stays on the stack while the
    generic path runs (a call function), so that frames walked to find the user's call site (call_site.py) skip
    it as jitgraph's own."""
    source = "\n".join(lines) + "\n"
    filename = f"<jitgraph dispatch {label} #{next(_ids)}>"
    if in_package:
        filename = os.path.join(_HERE, filename)
    fn = run_source(source, filename, ns)[fn_name]
    fn.source = source
    return fn


def _dispatch_fields(entry: Entry, every_call: bool) -> tuple[Any, Any]:
    """The entry's compiled guards and aliasing pattern as its runner checks them: as they are, or (``every_call``)
    as ``hot_recompiles.take_every_call`` leaves them, none and any."""
    return (None, ANY_ALIAS) if every_call else (entry.check, entry.alias)


def _write(entry: Entry, hits: itertools.count, slow: Callable[..., Any], given: str | None,
           miss: tuple[str, str] | None = None, every_call: bool = False) -> Writer | None:
    """The body's lines (the layout, guards, aliasing, then the run) of a runner, or, with ``given`` (the tuple
    expression of the parameters ``a0, a1, ...``), of a call function: its arguments are parameters already, and
    "not this entry" goes on to the other entries instead of returning MISS (or says ``miss``: what the layout
    checks and then the rest say). None where some argument has no straight-line check."""
    traced = entry.traced
    args, kwargs = traced.args, traced.kwargs
    w = Writer()
    guarded, alias = _dispatch_fields(entry, every_call)
    checked = _checked_program(entry, guarded)
    if checked is not None:
        w.deferred = []
    if given is None:
        pa, pk = ("UA", "UKW") if traced.dynamic else ("A", "KW")  # the caller's arguments (unwrapped ints)
    else:
        pa, pk = given, "kw"
        w.miss = miss[0] if miss else f"return SELF._after({given}, kw, RUNNER)"
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
    except Unsupported:
        return None
    if w.types:
        w.fail_if(" or ".join(w.types), "not all arrays")
    w.end_layout()
    if miss:
        w.miss = miss[1]
    if traced.dynamic:  # the guards, the graph and the result builder see the dynamic ints wrapped
        w.ns["view"], w.ns["DYNAMIC"] = view, traced.dynamic
        w.lines.append("    A, KW = view(UA, UKW, DYNAMIC)")
    if guarded is not None:
        w.guards(entry)
    w.ns.update(E=entry, HITS=hits, SLOW=slow, RAISED=slow.__self__._raised)
    eager = _eager_lines(w, slow, pa, pk)
    # An entry that takes every call of its key (a catch-all, a demoted one: hot_recompiles.py) runs eagerly: its
    # hit calls the function first, without the leaves list the graph paths need (~0.05 us of a ~1 us call).
    eager_first = alias is ANY_ALIAS and checked is None and bool(eager)
    # The leaves list is built only where it is read: the direct hit passes the leaves by name (~0.03 us).
    leaves = f"    leaves = [{', '.join(w.leaves)}]"
    if eager_first:
        w.lines += ["    next(HITS)", *eager]
    w.aliasing(alias, exact=alias is not None)
    ba, bk = ("A", "KW") if given is None else (pa, pk)  # the arguments as the graph sees them (ints wrapped)
    raised = f"return RAISED(E, exc, {pa}, {pk})"  # a graph's raise, to the driver (CompiledFunction._raised)
    direct = _direct_lines(entry, w, ba, bk, alias, raised)
    if checked is not None and direct:
        w.lines += _program_lines(entry, w, checked)
    if w.deferred:
        w.lines += w.deferred
    if not eager_first:
        w.lines.append("    next(HITS)")
    w.lines += direct
    w.lines += [leaves, "    if E.fast:", *_caught(["        o = E.compiled(leaves)"], raised),
                f"        return E.build(o, leaves, {ba}, {bk})"]
    w.lines += [] if eager_first else eager
    w.lines.append(f"    return SLOW(E, leaves, {ba}, {bk}, {pa}, {pk})")
    return w


def _eager_lines(w: Writer, slow: Callable[..., Any], pa: str, pk: str) -> list[str]:
    """The hit of an eager entry (a break, a graph measured slower, a catch-all: hot_recompiles.py): the user's
    function called here, as ``CompiledFunction._run_slow`` does for it (a fallback counted), without that frame and
    its argument packing (~0.4 us of a demoted call). Read at call time, so a demotion takes effect at once; only
    where ``slow`` is such a method (its owner has ``_fn`` and ``_fallbacks``: tiering's ``_Demoted`` too)."""
    owner = getattr(slow, "__self__", None)
    if not hasattr(owner, "_fallbacks"):
        return []
    w.ns.update(FN=owner._fn, FALLBACKS=owner._fallbacks)
    tick = ["        next(FALLBACKS)"]
    if hasattr(owner, "_eager_tick"):  # a look every TICK eager runs: eager_mode.py
        w.ns.update(TICK=owner._eager_tick)
        tick = [f"        if not next(FALLBACKS) % {eager_mode.TICK}:", "            TICK()"]
    return ['    if E.mode == "eager":  # the user\'s function', *tick,
            f"        return FN{pa}" if pa.startswith("(") else f"        return FN(*{pa}, **{pk})"]  # kw: empty there


def _caught(lines: list[str], handler: str) -> list[str]:
    """``lines`` (a graph's run, indented for the ``if`` they sit in) inside ``try``, the raise handed to the
    driver (``RAISED``: the caller's error, or an eager rerun where the entry's policy is RERUN, effects.py). Only
    the run: a miss or a result builder inside would have its errors taken for the graph's."""
    return ["        try:", *("    " + line for line in lines), "        except Exception as exc:",
            f"            {handler}"]


def _direct_lines(entry: Entry, w: Writer, ba: str, bk: str, alias: Any, handler: str) -> list[str]:
    """The hit of an entry as published, without the layers: the backend's ``run_direct`` callable (the CPU driver
    itself, not the object wrapping it) and, for the usual return values -- an array, or a tuple or list of arrays
    -- the result built inline, where the builder (``tracer.outputs.build_output``) would run a lambda per part.
    Other results, and replayed side effects (an attribute or a dict entry stored), go to the builder.

    Both are checked at call time (``E.go is COMPILED``: the entry runs fast, with its published builder, this
    compiled graph: ``Entry.go``), so a demotion or a stub takes effect at once, and a value the inline code does
    not expect (not an ndarray: a device array, a scalar) goes to the builder. Not for resumable graphs, whose
    artifact and builder do more. Together ~0.4 us of a ~2 us small call."""
    traced = entry.traced
    if entry.compiled is None or entry.build is None or traced.resumable:
        return []
    # An entry traced without aliasing runs only on leaves that share no memory (the check above): the backend may
    # then skip its own overlap check (``run_unaliased``).
    run = getattr(entry.compiled, "run_unaliased", None) if alias is None else None
    w.ns.update(COMPILED=entry.compiled, BUILD=entry.build,
                RUN=run or getattr(entry.compiled, "run_direct", entry.compiled))
    head = "    if E.go is COMPILED:  # as published: the driver"
    parts, wrap = _inline_result(entry)
    run, outs = _run_lines(w, w.ns["RUN"], getattr(entry.compiled, "inline_driver", None), w.leaves)
    run = _caught(run, handler)
    # The driver's outputs: ``o``, or, inlined, by name (the list then built only for the builder).
    made = "o" if outs is None else "[" + ", ".join(outs) + "]"
    build = [f"        leaves = [{', '.join(w.leaves)}]", f"        return BUILD({made}, leaves, {ba}, {bk})"]
    if not parts:
        return [head, *run, *build]
    names = [f"r{j}" for j in range(len(parts))]
    ready = " and ".join(f"type({r}) is ndarray" for r in names)
    return [head + ", the result inline", *run,
            *(f"        {r} = {f'o[{k}]' if outs is None else outs[k]}" for r, k in zip(names, parts)),
            f"        if {ready}:",
            f"            return {_result(names, wrap)}",
            *build]


def _run_lines(w: Writer, run: Callable[..., Any], inline: Any, leaves: list[str]
               ) -> tuple[list[str], list[str] | None]:
    """``o = RUN(leaves)``, or the driver's own lines in its place where the backend offers them for exactly the
    function ``RUN`` is (``inline``: the CPU backend's ``InlineDriver``) and its names do not clash with the call
    function's: a Python frame, an argument list and a call less (~0.1 us of a 1.5 us ``np.maximum`` over 1000
    floats). The lines are the driver's, so the call function's source shows what runs. With them, the names of
    the driver's outputs where it returns a list of names (``[v3, v7]``), else None (``o`` holds them)."""
    listing = "[" + ", ".join(leaves) + "]"
    if inline is None or inline.fn is not run or any(k in w.ns and w.ns[k] is not v for k, v in inline.names.items()):
        return [f"        o = RUN({listing})"], None
    w.ns.update(inline.names)
    # The driver unpacks its leaves from a list (``_v0, _v1 = leaves``): here they are the call's names.
    body = list(inline.lines)
    for i, line in enumerate(body):
        if line.endswith(" = leaves"):
            body[i] = line[: -len("leaves")] + (f"{', '.join(leaves)}," if leaves else "()")
            break
    if any(re.search(r"\bleaves\b", line) for line in body):  # read otherwise too: the list first
        body.insert(0, f"leaves = {listing}")
    lines = ["        # the driver, inline", *(" " * 8 + line for line in body)]
    listed = re.fullmatch(r"\[(\w+(?:, \w+)*)\]", inline.result)
    if listed:
        return lines, listed.group(1).split(", ")
    return [*lines, f"        o = {inline.result}"], None


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


def _checked_program(entry: Entry, guarded: Any) -> Any | None:
    """The backend's function that checks the arrays' shapes and strides itself and runs the graph (CpuCompiled's
    ``checked_program``: a BLAS program), for an entry whose arguments are all positional arrays, the leaves as
    they are (no dynamic ints, no globals read by the guards); else None."""
    traced = entry.traced
    make = getattr(entry.compiled, "checked_program", None)
    if make is None or traced.dynamic or traced.kwargs or traced.resumable or traced.object_effects:
        return None
    if guarded is not None and entry.guards.extra_inputs:
        return None
    if not traced.args or not all(type(a) is np.ndarray for a in traced.args) or not _inline_result(entry)[0]:
        return None
    return make(list(traced.args))


def _program_lines(entry: Entry, w: Writer, checked: tuple[Any, tuple]) -> list[str]:
    """The hit through a program that checks the arrays' shapes and strides itself (``_checked_program``): Numba
    has them unboxed, where each ``shape``/``strides`` read here builds a tuple (~0.3 us an array). The runner
    allocates the outputs (cheaper than Numba boxing arrays it allocated); the program returns False for other
    shapes or strides and raises TypeError for other dtypes or layouts (it compiles nothing more): a miss either
    way, which the generic path then decides. Only for the entry as published (``E.go is COMPILED``);
    otherwise the full checks follow."""
    function, outputs = checked
    parts, wrap = _inline_result(entry)
    w.ns.update(CHECKED=function, EMPTY=np.empty, **{f"OD{k}": dtype for k, (_, dtype) in enumerate(outputs)})
    outs = [f"r{k}" for k in range(len(outputs))]
    return ["    if E.go is COMPILED:  # as published: Numba checks shapes and strides",
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


def _note_plain_int(w: Writer, position: int | str, value: Any) -> None:
    if type(value) is int and -LIMIT < value < LIMIT:
        w.plain_ints.append(position)


def runners(entries: list[Entry], dynamic: frozenset[int | str]) -> tuple[Runner, ...]:
    """The runners to try, in publication order: those of the leading entries, up to the first entry without one
    (a later runner must not take a call that entry would match first) and at most :data:`MAX_RUNNERS`. An entry the
    generic path can no longer reach (a plain int traced where the position has since become dynamic) is skipped.
    The first runner's call function becomes a group call where the entries after it share its key
    (:func:`_group_call`)."""
    out: list[Runner] = []
    for entry in entries:
        if entry.retired or (entry.plain_ints and not dynamic.isdisjoint(entry.plain_ints)):
            continue
        if entry.runner is None or len(out) == MAX_RUNNERS:
            break
        out.append(entry.runner)
    if out:
        first = out[0]
        own = first.__dict__.setdefault("own_call", getattr(first, "call", None))
        first.call = _group_call(out) or own
    return tuple(out)


def covers(entries: list[Entry], tried: tuple[Runner, ...]) -> bool:
    """Whether a call that all of ``tried`` declined matches none of ``entries`` (so the generic path need not look
    again): every entry has its runner there, and none defers checks to a program that may decline a call its entry
    takes (``_program_lines``)."""
    return len(tried) == sum(not e.retired for e in entries) and all("CHECKED" not in run.__code__.co_names for run in tried)


def _own_call(runner: Runner) -> Any:
    return runner.__dict__.get("own_call") or getattr(runner, "call", None)


def _group_call(out: list[Runner]) -> Callable[..., Any] | None:
    """One call function for the leading entries that share the first one's key -- the usual second entry of a
    method whose state was empty on its first call (``self.m == {}``, then a dict of arrays): the layout checked
    once, then each entry's tail (guards, aliasing, run) in publication order, where trying the entries one by one
    checks the layout again for each (~1-3 us). Exact: entries with one key have the very same layout checks
    (their lines and constants are compared here), and the generic path tries them in this order too; a call none
    takes goes on to the runners past the group, then the generic path. Where every two of the entries' guards
    contradict each other (jit/exclusive_guards.py: the first call's ``self.m == {}``, every later call's four keys),
    at most one can match a call, so the latest is tried first: the usual call no longer fails the first call's
    guards on its way. None where fewer than two entries qualify."""
    tails = []
    for runner in out:
        tail = getattr(_own_call(runner), "group", None)
        if tail is None or (tails and not _same_layout(tails[0], tail)):
            break
        tails.append(tail)
    if len(tails) < 2:
        return None
    first = tails[0]
    ns = {**first.ns, "MISS": MISS, "SELF": first.owner, "RUNNER": out[0], "NO": NO,
          "AFTER": _past(first.owner, tuple(out[len(tails):]))}
    fn_name = f"call_group_{first.index}"
    doc = f"{first.name} when entries {', '.join(str(t.index) for t in tails)} (one key) are first."
    lines = _call_header(fn_name, doc, first.n) + first.layout
    facts = [t.facts for t in tails]
    order = tails[::-1] if all(f is not None for f in facts) and exclusive_guards.pairwise_exclusive(facts) else tails
    for j, tail in enumerate(order):
        ns[f"T{j}"] = tail.run
        lines += [f"    r = T{j}({tail.params})  # entry {tail.index}: its guards, aliasing and run",
                  "    if r is not MISS:", "        return r"]
    given = "(" + "".join(f"a{i}, " for i in range(first.n)) + ")"
    lines.append(f"    return AFTER({given}, kw)")
    return define(fn_name, lines, ns, f"{first.name} group {first.index}", in_package=True)


def _past(owner: Any, rest: tuple[Runner, ...]) -> Callable[[tuple, dict[str, Any]], Any]:
    """A call past a group: the runners after it, then the generic path (the group's own runners would check the
    same layout and tails again)."""

    def past_group(args: tuple, kwargs: dict[str, Any]) -> Any:
        for run in rest:
            result = run(args, kwargs)
            if result is not MISS:
                return result
        return owner._dispatch(args, kwargs)

    return past_group


def _same_layout(a: _Tail, b: _Tail) -> bool:
    """The same key, the same layout lines and the same constants in them (types by identity)."""
    if a.key != b.key or a.layout != b.layout or a.params != b.params:
        return False
    for name in set(re.findall(r"\bC\d+\b", "\n".join(a.layout))):
        x, y = a.ns[name], b.ns[name]
        if x is not y and (type(x) is not type(y) or isinstance(x, type) or not _equal(x, y)):
            return False
    return True


def _equal(x: Any, y: Any) -> bool:
    try:
        return bool(x == y)
    except Exception:  # noqa: BLE001 - not comparable: not the same layout
        return False


def runner_source(entry: Entry) -> str | None:
    """The generated source of an entry's runner (None when it has none)."""
    return getattr(entry.runner, "source", None)
