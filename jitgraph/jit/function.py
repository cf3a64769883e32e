"""The compiled function: dispatch on the argument key, guard checks, (re)compiles, fallback and statistics.

Every entry of the cache is one of two modes: ``graph`` (run the compiled graph on the leaves and rebuild the
return value) or ``eager`` (a recorded break: call the original function). Both are found by the same key and
guards, so a function that cannot be captured is traced once per guard set, not once per call. A miss compiles
through the public stages (``trace_stage`` -> ``Traced.lower()`` -> ``Lowered.compile()``, see stages.py); the
entry keeps them.
"""

from __future__ import annotations

import collections
import functools
import logging
import types
from typing import Any

import numpy as np

from jitgraph.errors import BackendError
from jitgraph.inspect.result import ExplainResult
from jitgraph.ir.graph import Graph
from jitgraph.jit.backend_choice import resolve_backend
from jitgraph.jit.breaks import BreakReason
from jitgraph.jit.call_site import call_site
from jitgraph.jit.entries import CacheInfo, Entry
from jitgraph.jit.explain_builder import build_explain
from jitgraph.jit.refusals import RECOMPILE_HINT, raise_fullgraph, refuse_break_on_device, refuse_eager_on_device
from jitgraph.jit.stages import Compiled, Traced, strict, trace_stage
from jitgraph.progress import compiling
from jitgraph.tracer import dynamic_ints
from jitgraph.tracer.keys import alias_pattern, describe, diff, make_key
from jitgraph.tracer.trace import TraceResult, parameter_names, trace

log = logging.getLogger("jitgraph")
log_recompiles = logging.getLogger("jitgraph.recompiles")
log_breaks = logging.getLogger("jitgraph.breaks")
log_guards = logging.getLogger("jitgraph.guards")
log_perf = logging.getLogger("jitgraph.perf")


class CompiledFunction:
    """What ``@jitgraph.compile`` returns. Call it like the original function; ``trace(*args)`` gives the first
    stage of a compile without touching the cache."""

    def __init__(self, fn: Any, backend: str | None = None, fullgraph: bool = False, cache_limit: int = 8,
                 options: dict[str, Any] | None = None) -> None:
        functools.update_wrapper(self, fn, updated=())
        self._fn = fn
        self.name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
        self.backend = backend
        self.fullgraph = fullgraph
        self.cache_limit = cache_limit
        self.options = dict(options or {})
        self._table: dict[tuple, list[Entry]] = {}
        self.entries: list[Entry] = []
        self._info = CacheInfo()
        self._reasons: list[str] = []
        self._sites: list[str] = []  # the user's call site of each recompile (``train.py:14``)
        self._failing: collections.Counter[str] = collections.Counter()
        self._disabled = False
        # Int arguments traced as runtime values, those that must stay specialised, and the ints of the last miss
        # (dynamic_ints.py).
        self._dynamic: frozenset[int | str] = frozenset()
        self._static: set[int | str] = set()
        self._last_ints: dict[int | str, int] = {}

    @property
    def fn(self) -> Any:
        """The user's function."""
        return self._fn

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else types.MethodType(self, obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # The key and the graph see dynamic ints wrapped (dynamic_ints.py); eager calls get the caller's own values.
        user_args, user_kwargs = args, kwargs
        if self._dynamic:
            args, kwargs = dynamic_ints.view(args, kwargs, self._dynamic)
        leaves: list[Any] = []
        entries = self._table.get(make_key(args, kwargs, leaves))
        if entries is not None:
            for entry in entries:
                check = entry.check
                if check is None:
                    all_leaves = leaves
                else:
                    extra = check(args, kwargs)
                    if extra is None:
                        continue
                    all_leaves = leaves + extra if extra else leaves
                if alias_pattern(all_leaves) != entry.alias:
                    continue
                self._info.hits += 1
                if entry.mode == "graph":
                    return entry.build(entry.compiled(all_leaves), all_leaves, args, kwargs)
                self._info.fallbacks += 1
                return self._fn(*user_args, **user_kwargs)
        return self._miss(args, kwargs, make_key(args, kwargs, []), leaves, user_args, user_kwargs)

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

    # ---- running an entry the first time -------------------------------------------------------------------
    def _run(self, entry: Entry, args: tuple, kwargs: dict[str, Any], user_args: tuple,
             user_kwargs: dict[str, Any]) -> Any:
        if entry.mode == "eager":
            self._info.fallbacks += 1
            return self._fn(*user_args, **user_kwargs)
        leaves = entry.traced.leaves if entry.traced.args is args else self._leaves_of(entry, args, kwargs)
        # The first run of a new entry is where lazily built kernels compile; a backend bug found here must not
        # reach the user. Inputs the graph mutates are snapshotted so a half-run graph can be undone before the
        # eager rerun (side effects happen once).
        mutations = entry.graph.mutations if entry.graph is not None else []
        saved = [(leaves[i], np.array(leaves[i], copy=True)) for i, _ in mutations if isinstance(leaves[i], np.ndarray)]
        try:
            outs = entry.compiled(leaves)
        except Exception as exc:
            if entry.device or strict():
                raise
            for target, before in saved:
                np.copyto(target, before)
            self._info.fallbacks += 1
            try:
                result = self._fn(*user_args, **user_kwargs)
            except Exception as eager_exc:
                # NumPy raising the same on this data (an index out of range) makes it the caller's error, and the
                # compiled entry, which behaved as NumPy does, stays.
                if not isinstance(eager_exc, type(exc)):
                    self._demote(entry, exc)
                raise
            self._demote(entry, exc)
            return result
        return entry.build(outs, leaves, args, kwargs)

    def _demote(self, entry: Entry, exc: BaseException) -> None:
        log.warning("jitgraph: the %s backend failed on the first run of %s (%s: %s); this entry now runs "
                    "eagerly", resolve_backend(self.backend), self.name, type(exc).__name__, exc)
        entry.mode = "eager"
        entry.break_reason = BreakReason(f"backend failed on first run: {type(exc).__name__}: {exc}", None, None)

    # ---- slow path ------------------------------------------------------------------------------------------
    def _miss(self, args: tuple, kwargs: dict[str, Any], key: tuple, leaves: list[Any], user_args: tuple,
              user_kwargs: dict[str, Any]) -> Any:
        self._info.misses += 1
        if self._disabled:
            return self._run_disabled(leaves, "it hit its recompile limit and now runs eagerly", user_args,
                                      user_kwargs)
        names = parameter_names(self._fn, len(args))
        if self.entries:
            reason = self._why_missed(key, describe(args, kwargs, names), args, kwargs)
            if len(self.entries) >= self.cache_limit:
                self._disabled = True
                worst = self._failing.most_common(1)[0][0] if self._failing else reason
                log_recompiles.warning(
                    "jitgraph: %s hit the recompile limit (%d cache entries); it now runs eagerly. "
                    "The guard that kept failing: %s. Raise cache_limit=, or make that value an argument "
                    "that does not change.", self.name, self.cache_limit, worst)
                return self._run_disabled(leaves, f"it hit its recompile limit ({worst})", user_args, user_kwargs)
            self._info.recompiles += 1
            self._reasons.append(reason)
            self._sites.append(call_site())
            log_recompiles.info("jitgraph: recompiling %s (cache entry %d): %s @ %s", self.name,
                                len(self.entries) + 1, reason, self._sites[-1])
        with compiling(self.name):
            entry = self._compile_dynamic(user_args, user_kwargs)
            if entry is not None:
                self._reasons[-1] += " (now traced as a runtime value)"
                args, kwargs = entry.traced.args, entry.traced.kwargs
            else:
                entry = self._compile(self._trace(args, kwargs))
        log_guards.debug("jitgraph: guards of %s entry %d (%s):\n  %s", self.name, len(self.entries) + 1,
                         entry.mode, "\n  ".join(entry.guard_texts))
        self._table.setdefault(entry.key, []).append(entry)
        self.entries.append(entry)
        self._info.entries = len(self.entries)
        try:
            return self._run(entry, args, kwargs, user_args, user_kwargs)
        finally:
            entry.traced.release()

    def _run_disabled(self, leaves: list[Any], why: str, user_args: tuple, user_kwargs: dict[str, Any]) -> Any:
        refuse_eager_on_device(self.name, leaves, why, None, RECOMPILE_HINT)
        self._info.fallbacks += 1
        return self._fn(*user_args, **user_kwargs)

    def _compile_dynamic(self, user_args: tuple, user_kwargs: dict[str, Any]) -> Entry | None:
        """On a recompile: int arguments whose value changed since the last miss are retraced as runtime values
        (dynamic_ints.py). Returns the entry of that trace, or None when there is no such argument or the trace
        needs their values (they then stay specialised)."""
        ints = dynamic_ints.int_arguments(user_args, user_kwargs)
        new = dynamic_ints.changed(self._last_ints, ints) - self._static - self._dynamic
        self._last_ints = ints
        if not new:
            return None
        dynamic = self._dynamic | new
        args, kwargs = dynamic_ints.view(user_args, user_kwargs, dynamic)
        try:  # a trace that needs the int's value may fail in any way: the int then stays specialised, silently
            result = trace(self._fn, args, kwargs)
        except Exception:  # noqa: BLE001
            result = None
        if result is None or result.breaks is not None or result.graph is None or \
                not dynamic_ints.uses_are_float(result.graph):
            self._static |= new
            return None
        entry = self._compile(self._trace(args, kwargs, result, dynamic))
        if entry.mode != "graph":  # the backend failed: the static trace will fail or fall back the same way
            self._static |= new
            return None
        self._dynamic = dynamic
        return entry

    def _why_missed(self, key: tuple, facts: dict[str, Any], args: tuple, kwargs: dict[str, Any]) -> str:
        same_key = self._table.get(key)
        if same_key:
            entry = same_key[-1]
            failed = entry.guards.first_failure(args, kwargs)
            if failed is not None:
                label = failed.text.split(" ")[0].rstrip(":")
                self._failing[label] += 1
                return f"guard failed: {failed.text} (now {entry.guards.describe_now(failed, args, kwargs)})"
            self._failing["aliasing"] += 1
            now = entry.alias_texts_for(alias_pattern(self._leaves_of(entry, args, kwargs)))
            return f"aliasing: {', '.join(entry.alias_texts_for(entry.alias))} -> {', '.join(now)}"
        changes = diff(self.entries[-1].facts, facts)
        for change in changes:
            self._failing[change.split(":")[0].split("[")[0] if ".shape[" in change else change.split(":")[0]] += 1
        return "; ".join(changes) if changes else "argument structure changed"

    @staticmethod
    def _leaves_of(entry: Entry, args: tuple, kwargs: dict[str, Any]) -> list[Any]:
        leaves: list[Any] = []
        make_key(args, kwargs, leaves)
        extra = entry.check(args, kwargs) if entry.check is not None else []
        return leaves + (extra or [])

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
        if lowered is not None:
            entry.use(lowered, stage)

    # ---- inspection -----------------------------------------------------------------------------------------
    def cache_info(self) -> CacheInfo:
        self._info.entries = len(self.entries)
        return CacheInfo(**vars(self._info))

    def recompile_reasons(self, with_site: bool = False) -> list[str]:
        """Why each recompile happened (``x.shape[0]: 256 -> 128``); ``with_site`` appends `` @ file:line``."""
        if with_site:
            return [f"{r} @ {s}" for r, s in zip(self._reasons, self._sites)]
        return list(self._reasons)

    def explain(self, output: Any = None) -> ExplainResult:
        """An ExplainResult over every cache entry so far (recompiles and their reasons included); ``.show()``
        renders it."""
        return build_explain(self.entries, function=self._fn, recompile_reasons=self.recompile_reasons(True),
                             fallbacks=self._info.fallbacks, output=output)

    def break_reasons(self) -> list[BreakReason]:
        return [e.break_reason for e in self.entries if e.mode == "eager" and e.break_reason is not None]

    def graphs(self) -> list[Graph]:
        return [e.graph for e in self.entries if e.graph is not None]

    def stages(self) -> list[Compiled]:
        """The Compiled stage of every entry that runs a graph, in cache order."""
        return [e.stage for e in self.entries if e.stage is not None and e.mode == "graph"]

    def reset(self) -> None:
        self._table.clear()
        self.entries.clear()
        self._info = CacheInfo()
        self._reasons.clear()
        self._sites.clear()
        self._failing.clear()
        self._disabled = False
        self._dynamic = frozenset()
        self._static.clear()
        self._last_ints = {}
