"""The compiled function: dispatch on the argument key, guard checks, (re)compiles, fallback and statistics.

Every cache entry is ``graph`` (run the compiled graph on the leaves, rebuild the return value) or ``eager`` (call
the original function: a recorded break, a graph measured slower, a key whose guards fail on every call, see
hot_recompiles.py), both found by key and guards: a function that cannot be captured is traced once per guard set,
not per call. A miss compiles through the public stages (stages.py); the entry keeps them.

Threads: a warm call takes no lock (it reads the table, whose per-key tuples are replaced, never edited, and bumps
C counters). A miss takes the compile lock, looks again (another thread may have compiled that entry meanwhile),
traces, compiles, runs the entry once, then publishes it: no thread runs an entry whose first run (where kernels
compile) has not finished; a KeyboardInterrupt leaves nothing. Counters, reasons and limits change under it.
"""

from __future__ import annotations

import collections
import functools
import itertools
import logging
import sys
import types
from typing import Any, NamedTuple, Self

from jitgraph.errors import BackendError, RerunEagerly
from jitgraph.jit import effects, hot_recompiles, tiering
from jitgraph.jit.backend_choice import resolve_backend
from jitgraph.jit.breaks import BreakReason
from jitgraph.jit.call_path import CallPath
from jitgraph.jit.call_site import call_site
from jitgraph.jit.dispatch import build_call, build_runner, covers, runners
from jitgraph.jit.dynamic_policy import DynamicPolicy
from jitgraph.jit.entries import Entry, sizes_aside
from jitgraph.jit.hot_recompiles import holders
from jitgraph.jit.inspection import Inspection
from jitgraph.jit.refusals import RECOMPILE_HINT, raise_fullgraph, refuse_break_on_device, refuse_eager_on_device
from jitgraph.jit.resume import ResumableArtifact
from jitgraph.jit.stages import Compiled, Traced, strict, trace_stage
from jitgraph.jit.threads import compile_lock
from jitgraph.progress import compiling
from jitgraph.tracer import dynamic_ints
from jitgraph.tracer.context import GraphBreak
from jitgraph.tracer.keys import describe, make_key
from jitgraph.tracer.trace import TraceResult, parameter_names

log = logging.getLogger("jitgraph")
log_recompiles = logging.getLogger("jitgraph.recompiles")
log_breaks = logging.getLogger("jitgraph.breaks")
log_guards = logging.getLogger("jitgraph.guards")
log_perf = logging.getLogger("jitgraph.perf")


class _Outcome(NamedTuple):
    """What a miss did under the lock (``CompiledFunction._compile_miss``)."""

    entry: Entry | None
    args: tuple
    kwargs: dict[str, Any]
    ran: bool  # a new graph entry ran its first call: ``result`` is the call's value
    result: Any  # or, with no entry, why the call runs eagerly


def _unready(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("a CompiledFunction called before its __init__ ran")


class CompiledFunction(CallPath, DynamicPolicy, Inspection, functools.partial):
    """What ``@jitgraph.compile`` returns. Call it like the original function; ``trace(*args)`` gives the first
    stage of a compile without touching the cache.

    Why a ``functools.partial``: a call of an instance of a Python class goes through the type's ``__call__`` (the
    arguments packed into a tuple, the method looked up and bound: ~0.1 us, a tenth of a small call). A partial
    is called in C, straight to its target, and its target can be replaced in place (``__setstate__``). The target
    is the generated call function of the first runner's entry (``_call``); nothing else of the partial is used:
    no bound arguments, our own ``__reduce__``, ``__get__`` and ``repr``."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        return functools.partial.__new__(cls, _unready)

    __repr__ = object.__repr__

    def __init__(self, fn: Any, backend: str | None = None, fullgraph: bool = False, cache_limit: int = 8,
                 options: dict[str, Any] | None = None) -> None:
        functools.update_wrapper(self, fn, updated=())
        self._fn = fn
        self.name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
        self.backend = backend
        self.fullgraph = fullgraph
        self.cache_limit = cache_limit
        self.options = dict(options or {})
        self.dynamic: bool | None = self.options.pop("dynamic", None)  # dynamic_policy.py
        self._lock = compile_lock(self)
        self._table: dict[tuple, tuple[Entry, ...]] = {}
        self.entries: list[Entry] = []
        self._clear()

    def _clear(self) -> None:
        self._runners = ()  # dispatch.runners(): replaced under the lock, read without it
        self._table = {}
        self.entries.clear()
        self._hits = itertools.count()  # bumped on the lock-free warm path (next() is one C call)
        self._fallbacks = itertools.count()
        self._eager_calls = itertools.count()  # eager_mode.py
        self._eager_last: tuple[int, int] | None = None  # none yet: the first look only counts
        self._misses = 0  # these change under the lock only
        self._recompiles = 0
        self._reasons: list[str] = []
        self._sites: list[str] = []  # the user's call site of each recompile (``train.py:14``)
        self._failing: collections.Counter[str] = collections.Counter()
        self._disabled = False
        self._covered = False  # the runners decide every entry exactly (dispatch.covers)
        self._streak = hot_recompiles.Streak()
        self._variants = 0  # size variants published (dynamic_policy.py)
        self._clear_dynamic()
        # Backend failures on a first run, by the graph with sizes aside (entries.sizes_aside): not compiled again.
        self._failed: dict[str, str] = {}

    @property
    def fn(self) -> Any:
        """The user's function."""
        return self._fn

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else types.MethodType(self, obj)

    def __reduce__(self) -> str | tuple[Any, ...]:
        """Pickle by reference, as functions are: a module-level compiled function is saved as ``module.qualname``
        and unpickles to that module's object (a spawned worker gets its own, with its own cache). One that is not
        reachable under its name is rebuilt from the function it wraps and its options."""
        module = sys.modules.get(getattr(self, "__module__", None) or "")
        target: Any = module
        for part in getattr(self, "__qualname__", "<locals>").split("."):
            target = getattr(target, part, None)
        if target is self:
            return self.__qualname__
        return (CompiledFunction, (self._fn, self.backend, self.fullgraph, self.cache_limit,
                                   {**self.options, "dynamic": self.dynamic}))

    # ---- the stages, public --------------------------------------------------------------------------------
    def trace(self, *args: Any, **kwargs: Any) -> Traced:
        """Trace a call with these arguments: the first stage (``.lower().compile()`` gives the rest). The cache
        is neither read nor filled; the stages are the same objects a cache miss makes."""
        if self._dynamic:
            args, kwargs = dynamic_ints.view(args, kwargs, self._dynamic)
        return self._trace(args, kwargs)

    def _trace(self, args: tuple, kwargs: dict[str, Any], result: TraceResult | None = None,
               dynamic: frozenset[int | str] | None = None) -> Traced:
        return trace_stage(self._fn, args, kwargs, name=self.name, backend=self.backend, options=self.options,
                           dynamic=self._dynamic if dynamic is None else dynamic, result=result)

    # ---- running an entry -----------------------------------------------------------------------------------
    def _run_slow(self, entry: Entry, leaves: list[Any], args: tuple, kwargs: dict[str, Any], user_args: tuple,
                  user_kwargs: dict[str, Any]) -> Any:
        """An entry that is not ``fast``: eager, or a graph that mutates arguments and may raise on its data
        (effects.py): a raise is undone (SNAPSHOT) or was harmless (RERUN), and the call reruns eagerly, so
        NumPy performs its own effects in its own order and raises its own exception. An entry being measured
        (tiering.py) runs the graph or the function, alternately."""
        if entry.mode != "graph":
            self._fell_back()
            return self._fn(*user_args, **user_kwargs)
        probe = entry.probe
        if probe is not None:
            return probe.run(entry, lambda: self._run_graph(entry, leaves, args, kwargs, user_args, user_kwargs),
                             lambda: self._fn(*user_args, **user_kwargs), user_args, user_kwargs)
        return self._run_graph(entry, leaves, args, kwargs, user_args, user_kwargs)

    def _run_fast(self, entry: Entry, leaves: list[Any], args: tuple, kwargs: dict[str, Any], user_args: tuple,
                  user_kwargs: dict[str, Any]) -> Any:
        """A ``fast`` entry's run, as the dispatch runners write it out (dispatch.py), for the generic path."""
        try:
            outs = entry.compiled(leaves)
        except Exception as exc:  # noqa: BLE001 - _raised decides: the caller's error, or an eager rerun
            return self._raised(entry, exc, user_args, user_kwargs)
        return entry.build(outs, leaves, args, kwargs)

    def _raised(self, entry: Entry, exc: Exception, user_args: tuple, user_kwargs: dict[str, Any]) -> Any:
        """A ``fast`` entry's graph raised. FAST: the graph mutates nothing and replays nothing, so its error is the
        caller's as it is (or it cannot raise on its data, and this is a backend bug to report as it is). RERUN:
        nothing was written before the raise, so the call reruns eagerly (effects.py): NumPy's own error, or
        Python's answer for a value the graph cannot hold (a RerunEagerly check)."""
        if entry.device or entry.on_raise != effects.RERUN:
            raise exc
        return self._rerun_eagerly(entry, exc, user_args, user_kwargs)

    def _run_graph(self, entry: Entry, leaves: list[Any], args: tuple, kwargs: dict[str, Any], user_args: tuple,
                   user_kwargs: dict[str, Any]) -> Any:
        saved = effects.snapshot(leaves, entry.mutated) if entry.on_raise == effects.SNAPSHOT else []
        try:
            outs = entry.compiled(leaves)
        except Exception as exc:
            if entry.device:
                raise
            effects.restore(saved)
            return self._rerun_eagerly(entry, exc, user_args, user_kwargs)
        return entry.build(outs, leaves, args, kwargs)

    def _rerun_eagerly(self, entry: Entry, exc: Exception, user_args: tuple, user_kwargs: dict[str, Any]) -> Any:
        """After the graph raised (arguments as before the call): the eager call decides. NumPy raising the same
        (a math domain error, an index out of range) makes it the caller's error and the entry stays; NumPy
        succeeding, or raising something else, is a backend bug: the entry runs eagerly from now on (under
        JITGRAPH_STRICT=1 the graph's error is raised instead). A :class:`RerunEagerly` check (a Python int beyond
        int64) is no bug: that call runs eagerly and the entry stays."""
        next(self._fallbacks)
        if isinstance(exc, RerunEagerly):  # a value only Python represents: this call's answer is eager's
            log.info("jitgraph: %s: %s; this call ran eagerly", self.name, exc.message)
            return self._fn(*user_args, **user_kwargs)
        try:
            result = self._fn(*user_args, **user_kwargs)
        except Exception as eager_exc:
            if not isinstance(eager_exc, type(exc)):
                self._demote(entry, exc)
            raise
        if strict():
            raise exc
        self._demote(entry, exc)
        return result

    def _first_run(self, entry: Entry, args: tuple, kwargs: dict[str, Any], user_args: tuple,
                   user_kwargs: dict[str, Any], reason: str | None, site: str) -> Any:
        """Run a new graph entry once (under the compile lock), then publish it. The first run is where lazily
        built kernels compile; a backend bug found here must not reach the user, so every input the graph mutates
        is snapshotted and restored before the eager rerun (side effects happen once). Anything but an Exception
        (KeyboardInterrupt) leaves the entry unpublished: the next call compiles afresh."""
        leaves = entry.traced.leaves if entry.traced.args is args else self._leaves_of(entry, args, kwargs)
        saved = effects.snapshot(leaves, entry.mutated)
        try:
            outs = entry.compiled(leaves)
        except Exception as exc:
            if entry.device or (strict() and entry.on_raise == effects.FAST):
                self._publish(entry, reason, site)
                raise
            effects.restore(saved)
            self._publish(entry, reason, site)
            try:
                return self._rerun_eagerly(entry, exc, user_args, user_kwargs)
            finally:
                self._remember_failure(entry, exc)
        self._publish(entry, reason, site)
        return entry.build(outs, leaves, args, kwargs)

    def _demote(self, entry: Entry, exc: BaseException) -> None:
        log.warning("jitgraph: the %s backend failed on %s (%s: %s); this entry now runs eagerly",
                    resolve_backend(self.backend), self.name, type(exc).__name__, exc)
        with self._lock:
            entry.demote(BreakReason(f"backend failed on a run: {type(exc).__name__}: {exc}", None, None))

    def _remember_failure(self, entry: Entry, exc: Exception) -> None:
        """A graph the backend failed on (compiling it, or at its first run where NumPy did not): later traces of
        the same graph with other sizes run eagerly without compiling it again."""
        if entry.mode == "eager" and entry.traced_graph is not None:
            self._failed[sizes_aside(entry.traced_graph) or ""] = f"{type(exc).__name__}: {exc}"

    def _publish(self, entry: Entry, reason: str | None, site: str) -> None:
        """Make ``entry`` visible to the dispatch loop (under the lock); a recompile records why and where."""
        if entry.variant:
            self._variants += entry.instance_of is None  # an instance is no trace (symbolic_sizes.py)
        elif self.entries:
            self._recompiles += 1
            self._reasons.append(reason or "argument structure changed")
            self._sites.append(site)
        index = len(self.entries) + 1
        tiering.start(self, entry, index)  # before anyone can run it: a measured entry is not ``fast``
        entry.runner, entry.plain_ints = self._build_runner(entry, index)
        self._table[entry.key] = tuple(e for e in self._table.get(entry.key, ()) if not e.retired) + (entry,)
        self.entries.append(entry)
        if entry.traced.dynamic != self._dynamic and (entry.mode == "graph" or entry.traced.brk is not None):
            self._dynamic = entry.traced.dynamic
        self._runners = runners(self.entries, self._dynamic)
        self._covered = covers(self.entries, self._runners)
        self._streak.published(self._counts()[0])

    def _build_runner(self, entry: Entry, index: int, every_call: bool = False) -> tuple[Any, tuple]:
        """The runner (with its call function) and plain-int positions of ``entry``, from its traced call
        (``every_call``: the runner it will have once demoted, dispatch.build_runner)."""
        runner, plain = build_runner(entry, self.name, index, self._hits, self._run_slow, every_call)
        if runner is not None:
            runner.call = build_call(entry, runner, self, self.name, index, self._hits, self._run_slow, every_call)
        return runner, plain

    def _measured_eager(self, entry: Entry, demoted: tuple[Any, tuple] | None) -> None:
        """``entry`` was measured slower than the function (tiering.py): it takes every call of its key from now on
        (hot_recompiles.take_every_call), through ``demoted``, its runner checking the layout alone."""
        with self._lock:
            if demoted is None or entry.retired or entry not in self.entries:
                return
            hot_recompiles.take_every_call(entry)
            entry.runner, entry.plain_ints = demoted
            self._runners = runners(self.entries, self._dynamic)
            self._covered = covers(self.entries, self._runners)

    # ---- slow path ------------------------------------------------------------------------------------------
    def _miss(self, user_args: tuple, user_kwargs: dict[str, Any]) -> Any:
        with self._lock:
            # Under the lock: the dynamic ints may have changed, and another thread may have compiled this entry.
            args, kwargs = user_args, user_kwargs
            if self._dynamic:
                args, kwargs = dynamic_ints.view(args, kwargs, self._dynamic)
            leaves: list[Any] = []
            key = make_key(args, kwargs, leaves)
            found = self._find(key, leaves, args, kwargs)
            if found is not None:
                next(self._hits)
                entry, leaves = found
            else:
                self._misses += 1
                outcome = self._compile_miss(key, args, kwargs, user_args, user_kwargs)
                if outcome.ran or outcome.entry is None:
                    entry = None
                else:
                    entry, args, kwargs = outcome.entry, outcome.args, outcome.kwargs
        # Outside the lock: an eager run (the recompile limit, a new eager entry) or a hit found under the lock.
        if entry is None:
            if outcome.ran:
                return outcome.result
            return self._run_disabled(leaves, outcome.result, user_args, user_kwargs)
        if entry.fast:
            return self._run_fast(entry, leaves, args, kwargs, user_args, user_kwargs)
        return self._run_slow(entry, leaves, args, kwargs, user_args, user_kwargs)

    def _compile_miss(self, key: tuple, args: tuple, kwargs: dict[str, Any], user_args: tuple,
                      user_kwargs: dict[str, Any]) -> _Outcome:
        """A missed call, under the lock: the recompile limit (no entry; ``result`` says why), or a new entry. A
        graph entry runs once here and is published (``ran``, with its ``result``); an eager entry is published,
        for the caller to run outside the lock."""
        if self._disabled:
            return _Outcome(None, args, kwargs, False, "it hit its recompile limit and now runs eagerly")
        reason, site = None, ""
        facts = describe(args, kwargs, parameter_names(self._fn, len(args)))
        plan = self._size_plan(facts, args, kwargs)  # new sizes of dimensions that may be dynamic
        same_key = self._table.get(key)
        hot = self._streak.is_hot(bool(same_key) and not self._settled(plan), self._counts()[0],
                                  (key, holders(user_args, user_kwargs))) and not self.fullgraph
        if self.entries:
            reason = self._why_missed(key, facts, args, kwargs)
            if entry := hot_recompiles.eager_entry(same_key, hot, args, kwargs, reason):  # hot_recompiles.py
                log_recompiles.info("jitgraph: %s: %s", self.name, entry.break_reason.reason)
                self._publish(entry, reason, call_site())
                entry.traced.release()
                return _Outcome(entry, args, kwargs, False, None)
            if not self._settled(plan) and sum(not e.variant for e in self.entries) >= self.cache_limit:
                self._disabled = True
                worst = self._failing.most_common(1)[0][0] if self._failing else reason
                log_recompiles.warning(
                    "jitgraph: %s hit the recompile limit (%d cache entries); it now runs eagerly. "
                    "The guard that kept failing: %s. Raise cache_limit=, or make that value an argument "
                    "that does not change.", self.name, self.cache_limit, worst)
                return _Outcome(None, args, kwargs, False, f"it hit its recompile limit ({worst})")
            site = call_site()
        with compiling(self.name):
            entry = self._compile_dynamic(user_args, user_kwargs)
            if entry is not None:
                reason = (reason or "an int argument changed") + (
                    " (now traced as a runtime value)" if entry.mode == "graph" else
                    " (the graph break does not depend on its value: the eager entry is keyed on its type)")
                args, kwargs = entry.traced.args, entry.traced.kwargs
            else:
                entry = self._instance(plan, facts, args, kwargs) or self._compile(self._trace(args, kwargs))
        if self.entries:
            reason = self._settle_sizes(entry, plan, reason)
        reason = self._symbolize(entry, plan, facts, args, kwargs, reason)
        if self.entries and not entry.variant:
            log_recompiles.info("jitgraph: recompiling %s (cache entry %d): %s @ %s", self.name,
                                len(self.entries) + 1, reason, site)
        log_guards.debug("jitgraph: guards of %s entry %d (%s):\n  %s", self.name, len(self.entries) + 1,
                         entry.mode, "\n  ".join(entry.guard_texts))
        try:
            if entry.mode == "graph":
                return _Outcome(entry, args, kwargs, True,
                                self._first_run(entry, args, kwargs, user_args, user_kwargs, reason, site))
            self._publish(entry, reason, site)
            return _Outcome(entry, args, kwargs, False, None)
        finally:
            entry.traced.release()

    def _run_disabled(self, leaves: list[Any], why: str | None, user_args: tuple, user_kwargs: dict[str, Any]) -> Any:
        if why is None:  # a miss ``_dispatch`` decided without the lock: counted here
            with self._lock:
                self._misses += 1
        refuse_eager_on_device(self.name, leaves, why or "it hit its recompile limit", None, RECOMPILE_HINT)
        self._fell_back()
        return self._fn(*user_args, **user_kwargs)

    def _compile(self, traced: Traced) -> Entry:
        """A cache entry from a traced call: lowered and compiled, or eager with the reason why."""
        entry = Entry(traced)
        brk = traced.brk
        if brk is not None:
            log_breaks.info("jitgraph: graph break in %s at %s", self.name, entry.break_reason)
            if traced.device:
                refuse_break_on_device(self.name, traced.leaves, brk)
            if self.fullgraph:
                raise_fullgraph(self._fn, brk, traced.args, traced.kwargs)
            return entry
        if traced.split is not None:
            log_breaks.info("jitgraph: %s split around eager calls: %s", self.name,
                            "; ".join(str(r) for r in traced.split_reasons))
            if self.fullgraph:
                cut = traced.split.cuts[0]
                raise_fullgraph(self._fn, GraphBreak(cut.reason, cut.filename, cut.lineno), traced.args,
                                traced.kwargs)
            if traced.device:
                cut = traced.split.cuts[0]
                refuse_break_on_device(self.name, traced.leaves, GraphBreak(cut.reason, cut.filename, cut.lineno))
        failed = self._failed.get(sizes_aside(traced.graph) or "") if self._failed else None
        if failed is not None:
            log.info("jitgraph: %s: the backend failed on this graph at other sizes (%s); running eagerly",
                     self.name, failed)
            entry.break_reason = BreakReason(f"backend failed on this graph at other sizes: {failed}", None, None)
            return entry
        self._lower(entry, traced)
        log_perf.debug("jitgraph: compiled %s in %s", self.name,
                       ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in entry.times.items()))
        return entry

    def _lower(self, entry: Entry, traced: Traced) -> None:
        """``traced.lower().compile()``; a pass or backend failure makes the entry eager (with the reason), except
        where eager is no answer: a configuration error, device arrays, or JITGRAPH_STRICT=1 with the eager
        backend."""
        lowered, stage = None, None
        try:
            lowered = traced.lower()
            stage = lowered.compile()
            if isinstance(stage.artifact, ResumableArtifact):
                stage.artifact.cache_limit = self.cache_limit  # the recompile limit, counted per segment
            elif self._runs_eagerly_instead(entry, lowered, stage):
                return
        except Exception as exc:
            backend = traced.backend
            if isinstance(exc, BackendError) or (strict() and backend == "eager"):
                raise  # no GPU, no numba-cuda, ...: a configuration problem the user must see, not a graph break
            if entry.device:
                raise BackendError(f"{backend} backend failed on {self.name} ({type(exc).__name__}: {exc}); with "
                                   "device arrays there is no eager fallback",
                                   hint="call it with host NumPy arrays to run eagerly") from exc
            log.warning("jitgraph: %s backend failed on %s (%s: %s); running eagerly",
                        backend, self.name, type(exc).__name__, exc)
            entry.break_reason = BreakReason(f"{backend} backend failed: {exc}", None, None)
            self._remember_failure(entry, exc)
        if lowered is not None:
            entry.use(lowered, stage)

    # A graph the CPU backend can only interpret op by op (a loop region whose body has an op without a loop-body
    # emitter) runs slower than the user's own function, which NumPy runs with the same ops and no interpreter:
    # such an entry runs the function eagerly. GradFunction turns this off (its graph has no eager twin).
    interpreted_graphs_run_eagerly = True
    # Graph entries are timed against the function over their first calls and run it where it is faster
    # (tiering.py); GradFunction turns this off too.
    tiers_down = True

    def _runs_eagerly_instead(self, entry: Entry, lowered: Any, stage: Compiled) -> bool:
        reason = stage.artifact.fallback_reason()
        if (not reason or not self.interpreted_graphs_run_eagerly or entry.device or lowered.segments is not None
                or stage.traced.backend != "cpu"):
            return False
        entry.break_reason = BreakReason(f"the cpu backend cannot compile this graph ({reason}); the function runs "
                                         "eagerly, which is faster than interpreting the graph", None, None)
        log_breaks.info("jitgraph: %s: %s", self.name, entry.break_reason.reason)
        return True

    def reset(self) -> None:
        """Forget every entry and counter (a thread in the middle of a call finishes it with what it found)."""
        with self._lock:
            self._clear()
