"""How a call of a compiled function reaches its cache entry (a mixin of
:class:`~jitgraph.jit.function.CompiledFunction`): the generated call function first (``_call``, the partial's
target), then the other entries' runners, then the generic path -- the key, one dict lookup, each entry's guards
and aliasing -- and a miss when none takes the call.

Threads: the tuple of runners is replaced under the compile lock, never edited, and the call function with it; a
warm call takes no lock (see function.py).
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

from jitgraph import device_arrays
from jitgraph.jit import eager_mode
from jitgraph.jit.dispatch import MISS, define
from jitgraph.jit.entries import Entry
from jitgraph.jit.hot_recompiles import ANY_ALIAS
from jitgraph.jit.threads import tally
from jitgraph.tracer import dynamic_ints
from jitgraph.tracer.keys import alias_pattern, make_key


class CallPath:
    """Mixin: the call path of a compiled function (module docstring). The compiled function keeps the state it
    reads (``_table``, ``_dynamic``, the counters) and the slow paths it ends in (``_miss``, ``_run_slow``,
    ``_run_disabled``)."""

    _table: dict[tuple, tuple[Entry, ...]]
    _dynamic: frozenset[int | str]
    _hits: itertools.count
    _disabled: bool
    _covered: bool
    _runner_tuple: tuple
    _lock: Any
    _fn: Any
    _fallbacks: itertools.count
    _eager_calls: itertools.count  # one number per call in eager mode (eager_mode.skipped)
    _eager_last: tuple[int, int] | None  # the hit and fallback counts at the last look (eager_mode.all_eager)
    skips_to_eager = True  # whether a function whose calls all run eagerly enters eager mode (eager_mode.py)

    @property
    def _call(self) -> Any:
        """What a call runs: the generated call function of the first runner's entry (dispatch.build_call: its
        checks on the parameters, without packing ``*args``/``**kwargs`` and a second frame), or ``_generic``. It
        is the partial's target, replaced in place (one C call; a call in another thread reads the old or the
        new function, both valid)."""
        return self.func

    @_call.setter
    def _call(self, call: Any) -> None:
        functools.partial.__setstate__(self, (call, (), {}, self.__dict__))

    @property
    def _runners(self) -> tuple:
        """The runners tried before the generic path (dispatch.runners()); setting them sets the call function."""
        return self._runner_tuple

    @_runners.setter
    def _runners(self, value: tuple) -> None:
        self._runner_tuple = value
        call = getattr(value[0], "call", None) if value else None
        self._call = call if call is not None else self._generic  # out of eager mode
        if value and all(e.mode != "graph" or e.retired for e in self.entries):
            self._enter_eager_mode()  # every entry runs the function (a break, a demotion): at once

    def _fell_back(self) -> None:
        """Count a call that ran the user's function; every ``eager_mode.TICK``-th, look whether eager mode is due.
        (The call function's eager hit does the same inline: dispatch._eager_lines.)"""
        if not next(self._fallbacks) % eager_mode.TICK:
            self._eager_tick()

    def _eager_tick(self) -> None:
        """A look, every ``eager_mode.TICK`` eager runs: where every call since the last look ran eagerly (graph
        entries there are, but no call takes them), the function enters eager mode (eager_mode.py). Under the
        lock: a publication meanwhile sets the call function, which this must not wrap."""
        with self._lock:
            now = (tally(self._hits), tally(self._fallbacks))
            last, self._eager_last = self._eager_last, now
            if last is not None and eager_mode.all_eager(*now, last):
                self._enter_eager_mode()

    def _enter_eager_mode(self) -> None:
        """Replace the call function by eager mode's (eager_mode.source): the user's function, every
        ``CHECK_EVERY``-th call through the call function it replaces. Under the lock (or from the runners'
        setter, which runs under it)."""
        checked = self.func
        if not self.skips_to_eager or hasattr(checked, "checked") or device_arrays.may_exist():
            return  # (device arguments must meet the checks that refuse to run them eagerly)
        ns = {"FN": self._fn, "CALLS": self._eager_calls, "CHECKED": checked, "NO": eager_mode.NO,
              "CHECKED_CALL": self._checked_call, "BIND": eager_mode.bind}
        call = define("eager_mode_call", eager_mode.source(self._fn), ns, f"{self.name} eager mode", in_package=True)
        eager_mode.name_like(call, self._fn)
        call.checked = checked  # what eager mode replaced
        self._call = call

    def _checked_call(self, checked: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
        """An eager-mode call that goes through the checks (``checked``, the call function eager mode replaced):
        where it ran no eager fallback (a graph ran), or device arrays may now exist, the function leaves eager
        mode."""
        fallbacks = tally(self._fallbacks)
        result = checked(*args, **kwargs)
        if tally(self._fallbacks) == fallbacks or device_arrays.may_exist():
            with self._lock:
                if getattr(self.func, "checked", None) is checked:
                    self._call = checked
        return result

    def _generic(self, *args: Any, **kwargs: Any) -> Any:
        """A call with no call function: the runners (straight-line checks of the leading entries), then the
        generic path."""
        for run in self._runners:
            result = run(args, kwargs)
            if result is not MISS:
                return result
        return self._dispatch(args, kwargs)

    def _after(self, args: tuple, kwargs: dict[str, Any], tried: Any) -> Any:
        """A call the call function did not take: the runners but ``tried`` (that entry's, which refused it), then
        the generic path."""
        for run in self._runners:
            if run is not tried:
                result = run(args, kwargs)
                if result is not MISS:
                    return result
        return self._dispatch(args, kwargs)

    def _dispatch(self, user_args: tuple, user_kwargs: dict[str, Any]) -> Any:
        """The generic path: the key, one dict lookup, each entry's guards and aliasing; else a miss."""
        args, kwargs = user_args, user_kwargs
        dynamic = self._dynamic  # the key and the graph see dynamic ints wrapped (dynamic_ints.py)
        if dynamic:
            args, kwargs = dynamic_ints.view(args, kwargs, dynamic)
        key = make_key(args, kwargs, leaves := [])
        if self._disabled and self._covered:  # the runners tried every entry: no guard here can succeed
            return self._run_disabled(leaves, None, user_args, user_kwargs)
        found = self._find(key, leaves, args, kwargs)
        if found is None:
            return self._miss(user_args, user_kwargs)
        entry, all_leaves = found
        next(self._hits)
        if entry.fast:
            return self._run_fast(entry, all_leaves, args, kwargs, user_args, user_kwargs)
        return self._run_slow(entry, all_leaves, args, kwargs, user_args, user_kwargs)

    def _find(self, key: tuple, leaves: list[Any], args: tuple, kwargs: dict[str, Any]
              ) -> tuple[Entry, list[Any]] | None:
        """The entry for this call and its leaves (the dispatch loop of ``__call__``, for the miss path)."""
        for entry in self._table.get(key, ()):
            all_leaves = leaves
            if entry.check is not None:
                extra = entry.check(args, kwargs)
                if extra is None:
                    continue
                all_leaves = leaves + extra
            if entry.alias is ANY_ALIAS or alias_pattern(all_leaves) == entry.alias:
                return entry, all_leaves
        return None
