"""Eager mode: a compiled function whose calls all run the user's function skips its checks on most calls.

Why: "never slower than eager" (issue 21). A call that ends in the user's function -- an entry measured slower
than NumPy (tiering.py), a graph break, a catch-all for a hot recompile, a function past its recompile limit --
still paid for finding its entry: the call function's checks of every argument's type, shape, strides and dtype,
and of each attribute the graph read (0.4-0.6 us). On the 2-5 us functions of a from-scratch layer or optimiser
that is 10-30% slower than calling the function itself. TorchDynamo never pays it for a frame it could not
capture: it marks the code object skipped, for good. Here the skip is reversible: the arguments may change (a
larger batch a graph would win on, a value that avoids the break), so one call in :data:`CHECK_EVERY` still goes
through the checks, and where that call runs a graph the function leaves eager mode.

When: at once where no entry of the function is a graph any more (the runners are set under the compile lock
after every publication and demotion: CallPath's ``_runners`` setter); else after a look, every :data:`TICK` eager
runs (from the call function's eager hit, ``CompiledFunction._run_slow`` and ``_run_disabled``), that compares the
hit and fallback counters with the last look's: every call since then ran eagerly when the fallbacks grew by as many
as the hits (each an eager entry's hit) or the hits did not grow at all (each a miss past the recompile limit): the
graph entries there are take no call (an optimiser's first-call entry, its state still empty). A publication sets
the call function again, which leaves eager mode unless every entry is eager.

What it costs: a skipped call is the partial's call of the generated function (:func:`source`: the user's own
parameters where they are plain), one counter and the user's function (~0.07 us over calling the function, ~0.13
with the partial); every :data:`CHECK_EVERY`-th call the checks and two counter reads. What it changes: a call
with new arguments is compiled up to :data:`CHECK_EVERY` - 1 calls later, running eagerly until then (never
slower than NumPy, as the user's own function); a checked call passes the arguments positionally, so a function
called with keywords may get one more entry, keyed on the positional form. ``cache_info()`` counts a skipped call
as a hit and a fallback, as the eager entry it skipped to would have (:func:`skipped`); past the recompile limit,
only checked calls count as misses.

Device arrays: a call on GPU arrays must meet the checks that refuse to run the function eagerly on them
(refusals.py), so a process that can hold any (``device_arrays.may_exist``: numba.cuda or CuPy imported, torch with
CUDA) never enters eager mode, and a checked call leaves it once such a module is imported.

Threads: the counters are ``itertools.count`` (one C call); a race costs at most one look or one checked call.
"""

from __future__ import annotations

import inspect
import itertools
import types
from collections.abc import Callable
from typing import Any

from jitgraph.jit.runner_checks import NO
from jitgraph.jit.threads import tally

CHECK_EVERY = 128  # in eager mode, one call in this many goes through the checks (a new layout compiles): a power of 2
TICK = 64  # eager runs between two looks at whether every call since the last look ran eagerly
MAX_POSITIONAL = 8  # the call function names at most this many positional parameters (more: packed, slower)


def skipped(calls: itertools.count) -> int:
    """How many eager-mode calls skipped the checks (``calls`` drew one number per eager-mode call; every
    :data:`CHECK_EVERY`-th, from the first, was checked)."""
    n = tally(calls)
    return n - -(-n // CHECK_EVERY)


def describe() -> str:
    """What ``explain()`` says of a function in eager mode."""
    return (f"calls run the function itself without checking their arguments; one call in {CHECK_EVERY} is "
            "checked (a new argument layout compiles then, and a call that runs a graph leaves eager mode)")


def all_eager(hits: int, fallbacks: int, last: tuple[int, int]) -> bool:
    """Whether the calls between the look that saw ``last`` (hits, fallbacks) and this one all ran eagerly."""
    grew = hits - last[0]
    return grew == 0 or grew == fallbacks - last[1]


def positional_count(fn: Callable[..., Any]) -> int:
    """How many positional parameters the call function of eager mode names for ``fn`` (its code's positional
    parameters, a bound method's ``self`` aside); calls that pass another count take the packed path."""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is None:
        return 0
    return max(0, min(MAX_POSITIONAL, code.co_argcount - hasattr(fn, "__self__")))


def source(fn: Callable[..., Any]) -> list[str]:
    """The source of the call function of eager mode for ``fn``: its own parameters where they are plain
    (:func:`mirrored_lines`), else ``n`` positional ones and the packed rest (:func:`call_lines`)."""
    return mirrored_lines(fn) or call_lines(positional_count(fn))


def name_like(call: Any, fn: Callable[..., Any]) -> None:
    """Give the generated ``call`` the name of the Python function ``fn``, so that a call with the wrong arguments
    raises the TypeError the function itself would (``f() missing 1 required positional argument: 'x'``) where the
    call function has ``fn``'s parameters (:func:`mirrored_lines`); the packed one takes any arguments and passes
    them on, so ``fn`` raises its own, and the name only labels the frame."""
    code = getattr(fn, "__code__", None)
    if type(fn) is types.FunctionType and code is not None:
        call.__code__ = call.__code__.replace(co_name=code.co_name, co_qualname=code.co_qualname)
        call.__name__, call.__qualname__ = fn.__name__, fn.__qualname__


_OURS = frozenset({"FN", "CALLS", "CHECKED", "CHECKED_CALL", "NO", "BIND", "next"})  # the names the source uses


def mirrored_lines(fn: Callable[..., Any]) -> list[str] | None:
    """The call function of eager mode with ``fn``'s own positional parameters (names, positional-only marker;
    a default stands as ``NO`` and is left to the function), so that a call binds exactly as it binds to ``fn`` and
    passes its arguments on positionally, without packing ``*args``/``**kwargs`` (~45 ns). None for parameters
    that are not plain: ``*args``, ``**kwargs``, keyword-only ones, more than :data:`MAX_POSITIONAL`, a name the
    source uses, or ``fn`` not a Python function (a bound method, a callable object)."""
    code = getattr(fn, "__code__", None)
    if type(fn) is not types.FunctionType or code is None or fn.__kwdefaults__:
        return None
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) or code.co_kwonlyargcount:
        return None
    names = code.co_varnames[:code.co_argcount]
    if not names or len(names) > MAX_POSITIONAL or _OURS.intersection(names):
        return None
    optional = names[len(names) - len(fn.__defaults__ or ()):] if fn.__defaults__ else ()
    params = [p if p not in optional else f"{p}=NO" for p in names]
    if code.co_posonlyargcount:
        params.insert(code.co_posonlyargcount, "/")
    given, mask = ", ".join(names), CHECK_EVERY - 1
    lines = [f"def eager_mode_call({', '.join(params)}):",
             ('    """Eager mode (jitgraph.jit.eager_mode): the user\'s function, and one call in '
              f'{CHECK_EVERY} checked."""')]
    required = names[:len(names) - len(optional)]
    for j in range(len(optional)):  # the first j defaults given, the rest left to the function: passed as given
        cond = " and ".join([f"{p} is not NO" for p in optional[:j]] + [f"{p} is NO" for p in optional[j:]])
        passed = ", ".join(required + optional[:j])
        lines += [f"    if {cond}:", f"        if next(CALLS) & {mask}:", f"            return FN({passed})",
                  f"        return CHECKED_CALL(CHECKED, ({passed},), {{}})"]
    if len(optional) > 1:
        lines += [f"    if {' or '.join(f'{p} is NO' for p in optional)}:  # a default left out before one given",
                  f"        args, kw = BIND(({given},), {names!r})",
                  f"        if next(CALLS) & {mask}:",
                  "            return FN(*args, **kw)",
                  "        return CHECKED_CALL(CHECKED, args, kw)"]
    return lines + [f"    if next(CALLS) & {mask}:", f"        return FN({given})",
                    f"    return CHECKED_CALL(CHECKED, ({given},), {{}})"]


def bind(values: tuple, names: tuple[str, ...]) -> tuple[tuple, dict[str, Any]]:
    """The arguments a mirrored call passes on where some default was left out (``NO``): positionally up to the
    first one left out, by name after it (a positional-only parameter after one left out cannot have been given)."""
    args: list[Any] = []
    kw: dict[str, Any] = {}
    for name, value in zip(names, values):
        if value is NO:
            continue
        if kw or len(args) < names.index(name):
            kw[name] = value
        else:
            args.append(value)
    return tuple(args), kw


def call_lines(n: int) -> list[str]:
    """The source of the call function of eager mode for ``n`` positional parameters: the user's function ``FN``,
    but every :data:`CHECK_EVERY`-th call through ``CHECKED_CALL(CHECKED, args, kwargs)`` (the call function it
    replaced; CallPath._checked_call leaves eager mode where that call ran a graph). ``NO`` stands for a parameter
    the caller did not pass, as in dispatch's call functions; another count or keywords take the packed path."""
    params = [f"a{i}" for i in range(n)]
    given = "".join(f"{p}, " for p in params)
    mask = CHECK_EVERY - 1
    head = [f"def eager_mode_call({''.join(f'{p}=NO, ' for p in params)}{'/, ' if n else ''}*rest, **kw):",
            ('    """Eager mode (jitgraph.jit.eager_mode): the user\'s function, and one call in '
            f'{CHECK_EVERY} checked."""')]
    if not n:
        return head + [f"    if next(CALLS) & {mask}:", "        return FN(*rest, **kw)",
                       "    return CHECKED_CALL(CHECKED, rest, kw)"]
    return head + [
        f"    if rest or kw or a{n - 1} is NO:  # not {n} positional arguments alone",
        f"        args = tuple([a for a in ({given}) if a is not NO]) + rest",
        f"        if next(CALLS) & {mask}:",
        "            return FN(*args, **kw)",
        "        return CHECKED_CALL(CHECKED, args, kw)",
        f"    if next(CALLS) & {mask}:",
        f"        return FN({given})",
        f"    return CHECKED_CALL(CHECKED, ({given}), kw)"]
