"""The compiled function: dispatch on the argument key, guard checks, (re)tracing, fallback and statistics.

Every entry of the cache is one of two modes: ``graph`` (run the compiled graph on the leaves and rebuild the
return value) or ``eager`` (a recorded break: call the original function). Both are found by the same key and
guards, so a function that cannot be captured is traced once per guard set, not once per call.
"""

from __future__ import annotations

import collections
import functools
import importlib
import linecache
import logging
import os
import sys
import time
import types
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jitgraph.backends.cuda import is_device_array
from jitgraph.errors import BackendError, GraphBreakError
from jitgraph.ir.graph import Graph
from jitgraph.tracer import dynamic_ints
from jitgraph.tracer.context import GraphBreak
from jitgraph.tracer.guards import GuardSet
from jitgraph.tracer.keys import alias_pattern, describe, diff, guard_texts, make_key
from jitgraph.tracer.outputs import build_output
from jitgraph.tracer.trace import TraceResult, parameter_names, trace

log = logging.getLogger("jitgraph")
log_recompiles = logging.getLogger("jitgraph.recompiles")
log_breaks = logging.getLogger("jitgraph.breaks")
log_guards = logging.getLogger("jitgraph.guards")
log_graph = logging.getLogger("jitgraph.graph")
log_perf = logging.getLogger("jitgraph.perf")


@dataclass
class BreakReason:
    """Why a call runs eagerly, and where in the user's code."""

    reason: str
    filename: str | None
    lineno: int | None

    def __str__(self) -> str:
        where = f"{self.filename}:{self.lineno}" if self.filename else "<unknown>"
        return f"{where}: {self.reason}"

    @property
    def source_line(self) -> str:
        """The user's line of code, for messages (empty when the file cannot be read)."""
        if not self.filename or not self.lineno:
            return ""
        return linecache.getline(self.filename, self.lineno).strip()


@dataclass
class Entry:
    key: tuple
    check: Any
    alias: tuple | None
    mode: str  # "graph" or "eager"
    guards: GuardSet
    arg_guards: list[str]
    facts: dict[str, Any]
    graph: Graph | None = None
    traced_graph: Graph | None = None
    compiled: Any = None
    build: Any = None
    break_reason: BreakReason | None = None
    times: dict[str, float] = field(default_factory=dict)
    leaf_names: list[str] = field(default_factory=list)
    n_arrays: int = 0
    pass_report: Any = None
    device: bool = False  # some leaf is a GPU array: no eager fallback (NumPy cannot run on device memory)

    @property
    def guard_texts(self) -> list[str]:
        return self.arg_guards + [g.text for g in self.guards.guards] + self.alias_texts

    @property
    def alias_texts(self) -> list[str]:
        """The aliasing guard in words: ``x is y``, ``a overlaps b``, or that no two arrays share memory."""
        if not self.alias:
            return ["no two array arguments share memory"] if self.n_arrays > 1 else []

        def name(i: int) -> str:
            return self.leaf_names[i] if i < len(self.leaf_names) else f"leaf {i}"

        return [f"{name(i)} {'is' if kind == 'same' else 'overlaps'} {name(j)}" for kind, i, j in self.alias]


@dataclass
class CacheInfo:
    hits: int = 0
    misses: int = 0
    recompiles: int = 0
    fallbacks: int = 0
    entries: int = 0


def strict() -> bool:
    """JITGRAPH_STRICT=1 (set by the tracer's tests) turns internal tracer errors into exceptions."""
    return os.environ.get("JITGRAPH_STRICT") == "1"


class CompiledFunction:
    """What ``@jitgraph.compile`` returns. Call it like the original function."""

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

    def _run(self, entry: Entry, args: tuple, kwargs: dict[str, Any], leaves: list[Any], user_args: tuple,
             user_kwargs: dict[str, Any]) -> Any:
        if entry.mode == "eager":
            self._info.fallbacks += 1
            return self._fn(*user_args, **user_kwargs)
        # The first run of a new entry is where lazily built kernels compile; a backend bug found here must not
        # reach the user. Inputs the graph mutates are snapshotted so a half-run graph can be undone before the
        # eager rerun (side effects happen once).
        saved = [(leaves[i], np.array(leaves[i], copy=True)) for i, _ in getattr(entry.graph, "mutations", ())
                 if isinstance(leaves[i], np.ndarray)]
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
            self._refuse_eager_on_device(leaves, "it hit its recompile limit and now runs eagerly", None,
                                         "raise cache_limit=, or keep the guards that changed stable")
            self._info.fallbacks += 1
            return self._fn(*user_args, **user_kwargs)
        names = parameter_names(self._fn, len(args))
        facts = describe(args, kwargs, names)
        if self.entries:
            reason = self._why_missed(key, facts, args, kwargs)
            if len(self.entries) >= self.cache_limit:
                self._disabled = True
                worst = self._failing.most_common(1)[0][0] if self._failing else reason
                log_recompiles.warning(
                    "jitgraph: %s hit the recompile limit (%d cache entries); it now runs eagerly. "
                    "The guard that kept failing: %s. Raise cache_limit=, or make that value an argument "
                    "that does not change.", self.name, self.cache_limit, worst)
                self._refuse_eager_on_device(leaves, f"it hit its recompile limit ({worst})", None,
                                             "raise cache_limit=, or keep the guards that changed stable")
                self._info.fallbacks += 1
                return self._fn(*user_args, **user_kwargs)
            self._info.recompiles += 1
            self._reasons.append(reason)
            self._sites.append(call_site())
            log_recompiles.info("jitgraph: recompiling %s (cache entry %d): %s @ %s", self.name,
                                len(self.entries) + 1, reason, self._sites[-1])
        from jitgraph.progress import compiling

        with compiling(self.name):
            dynamic = self._compile_dynamic(user_args, user_kwargs, names)
            if dynamic is not None:
                entry, args, kwargs, key, leaves = dynamic
                self._reasons[-1] += " (now traced as a runtime value)"
            else:
                entry = self._compile(args, kwargs, key, leaves, facts)
        log_guards.debug("jitgraph: guards of %s entry %d (%s):\n  %s", self.name, len(self.entries) + 1,
                         entry.mode, "\n  ".join(entry.guard_texts))
        self._table.setdefault(key, []).append(entry)
        self.entries.append(entry)
        self._info.entries = len(self.entries)
        extra = entry.check(args, kwargs) if entry.check is not None else []
        return self._run(entry, args, kwargs, leaves + (extra or []), user_args, user_kwargs)

    def _compile_dynamic(self, user_args: tuple, user_kwargs: dict[str, Any], names: list[str]) -> tuple | None:
        """On a recompile: int arguments whose value changed since the last miss are retraced as runtime values
        (dynamic_ints.py). Returns (entry, args, kwargs, key, leaves) of that trace, or None when there is no such
        argument or the trace needs their values (they then stay specialised)."""
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
        leaves: list[Any] = []
        key = make_key(args, kwargs, leaves)
        entry = self._compile(args, kwargs, key, leaves, describe(args, kwargs, names), result)
        if entry.mode != "graph":  # the backend failed: the static trace will fail or fall back the same way
            self._static |= new
            return None
        self._dynamic = dynamic
        return entry, args, kwargs, key, leaves

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
            now = Entry(key, None, alias_pattern(self._leaves_of(entry, args, kwargs)), "eager", entry.guards, [], {},
                        leaf_names=entry.leaf_names, n_arrays=entry.n_arrays)
            return f"aliasing: {', '.join(entry.alias_texts)} -> {', '.join(now.alias_texts)}"
        last = self.entries[-1]
        changes = diff(last.facts, facts)
        for change in changes:
            self._failing[change.split(":")[0].split("[")[0] if ".shape[" in change else change.split(":")[0]] += 1
        return "; ".join(changes) if changes else "argument structure changed"

    @staticmethod
    def _leaves_of(entry: Entry, args: tuple, kwargs: dict[str, Any]) -> list[Any]:
        leaves: list[Any] = []
        make_key(args, kwargs, leaves)
        extra = entry.check(args, kwargs) if entry.check is not None else []
        return leaves + (extra or [])

    def _compile(self, args: tuple, kwargs: dict[str, Any], key: tuple, leaves: list[Any],
                 facts: dict[str, Any], result: TraceResult | None = None) -> Entry:
        try:
            result = result or trace(self._fn, args, kwargs)
        except Exception as exc:
            if strict():
                raise
            log.warning("jitgraph: internal tracer error in %s (%s: %s); running eagerly",
                        self.name, type(exc).__name__, exc)
            result = TraceResult(None, None, GuardSet(), GraphBreak(f"internal tracer error: {exc!r}", None, None),
                                 0)
        check = result.guards.compile()
        extra = check(args, kwargs)
        if extra is None:  # a guard that fails on the very call it was made for: a tracer bug
            if strict():
                raise AssertionError("guards fail on the traced call: " + str(result.guards.first_failure(args,
                                                                                                          kwargs)))
            result = TraceResult(None, None, result.guards, GraphBreak("guards could not be checked", None, None),
                                 0, result.seconds)
            extra = []
        alias = alias_pattern(leaves + extra)
        device = [i for i, v in enumerate(leaves + extra) if type(v) is not np.ndarray and is_device_array(v)]
        if device:
            self._check_device_backend(device, result.extra.get("leaf_names", []))
        if not result.guards.guards and not result.guards.extra_inputs:
            check = None  # nothing beyond the key to check: the dispatch loop skips the call
        entry = Entry(key, check, alias, "eager", result.guards, guard_texts(facts), facts,
                      leaf_names=result.extra.get("leaf_names", []),
                      n_arrays=sum(type(v) is np.ndarray for v in leaves + extra) + len(device), device=bool(device))
        entry.times["trace"] = result.seconds
        brk = result.breaks
        if brk is None and alias and any(kind == "overlap" for kind, _, _ in alias):
            brk = GraphBreak("array arguments overlap in memory (views of one array); running eagerly keeps "
                             "NumPy's exact aliasing behaviour", None, None)
        if brk is not None:
            entry.break_reason = BreakReason(brk.reason, brk.filename, brk.lineno)
            log_breaks.info("jitgraph: graph break in %s at %s", self.name, entry.break_reason)
            if device:
                fix = "rewrite this line so the whole function is captured" if brk.filename else \
                    "pass device arrays that do not overlap"
                self._refuse_eager_on_device(leaves + extra, f"graph break: {brk.reason}", brk,
                                             f"{fix}, or call it with host NumPy arrays (.copy_to_host()) to run "
                                             "it eagerly")
            if self.fullgraph:
                self._raise_fullgraph(brk, args, kwargs)
            return entry
        entry.traced_graph = result.graph
        self._lower(entry, result)
        log_perf.debug("jitgraph: compiled %s in %s", self.name,
                       ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in entry.times.items()))
        return entry

    def _check_device_backend(self, device: list[int], names: list[str]) -> None:
        """Device arrays compile only with backend="cuda": the other backends compute on the host with NumPy."""
        backend = resolve_backend(self.backend)
        if backend == "cuda":
            return
        which = ", ".join(names[i] if i < len(names) else f"leaf {i}" for i in device)
        default = " (the default)" if self.backend is None else ""
        raise BackendError(f"{self.name} got GPU device arrays ({which}), but backend={backend!r}{default} computes "
                           "on the host with NumPy, which cannot read device memory",
                           hint="compile with @jitgraph.compile(backend='cuda') to keep the data on the GPU, or copy "
                                "the arrays to the host first (.copy_to_host())")

    def _refuse_eager_on_device(self, leaves: list[Any], why: str, brk: GraphBreak | None, hint: str) -> None:
        """Where a host call would run eagerly, a call with device arrays raises: NumPy cannot run on them, and a
        silent copy to the host and back would hide the transfers the user chose to avoid."""
        if not any(type(v) is not np.ndarray and is_device_array(v) for v in leaves):
            return
        if brk is not None and brk.user_error is not None:
            raise brk.user_error  # what NumPy would raise on host copies of the arguments
        line = BreakReason(brk.reason, brk.filename, brk.lineno).source_line if brk is not None else ""
        raise GraphBreakError(f"{self.name} cannot run eagerly on GPU device arrays: {why}"
                              + (f"\n    {line}" if line else ""),
                              filename=brk.filename if brk else None, lineno=brk.lineno if brk else None, hint=hint)

    def _raise_fullgraph(self, brk: GraphBreak, args: tuple, kwargs: dict[str, Any]) -> None:
        if brk.user_error is not None:
            self._fn(*args, **kwargs)  # NumPy/Python raises its own exception here, as it would eagerly
        line = BreakReason(brk.reason, brk.filename, brk.lineno).source_line
        raise GraphBreakError(f"graph break: {brk.reason}" + (f"\n    {line}" if line else ""),
                              filename=brk.filename, lineno=brk.lineno,
                              hint="fullgraph=True forbids falling back to eager; rewrite this line, or drop "
                                   "fullgraph=True to let the call run eagerly")

    def _lower(self, entry: Entry, result: TraceResult) -> None:
        from jitgraph.backends.base import get_backend
        from jitgraph.passes import run_pipeline

        graph = result.graph
        assert graph is not None
        log_graph.debug("jitgraph: traced graph of %s:\n%s", self.name, graph)
        backend = resolve_backend(self.backend)
        try:
            start = time.perf_counter()
            optimised, report = run_pipeline(graph, self.options)
            entry.times["passes"] = time.perf_counter() - start
            entry.pass_report = report
            entry.times.update({f"pass:{name}": seconds for name, seconds in report.times.items()})
            start = time.perf_counter()
            compiled = get_backend(backend)(optimised, self.options)
            entry.times["backend"] = time.perf_counter() - start
        except Exception as exc:
            if isinstance(exc, BackendError) or (strict() and backend == "eager"):
                raise  # no GPU, no numba-cuda, ...: a configuration problem the user must see, not a graph break
            if entry.device:
                raise BackendError(f"{backend} backend failed on {self.name} ({type(exc).__name__}: {exc}); with "
                                   "device arrays there is no eager fallback",
                                   hint="call it with host NumPy arrays to run eagerly") from exc
            log.warning("jitgraph: %s backend failed on %s (%s: %s); running eagerly",
                        backend, self.name, type(exc).__name__, exc)
            entry.break_reason = BreakReason(f"{backend} backend failed: {exc}", None, None)
            return
        entry.graph = optimised
        entry.compiled = compiled
        entry.build = build_output(result.out_spec, result.guards.constants)
        entry.mode = "graph"

    # ---- inspection -----------------------------------------------------------------------------------------
    def cache_info(self) -> CacheInfo:
        self._info.entries = len(self.entries)
        return CacheInfo(**vars(self._info))

    def recompile_reasons(self, with_site: bool = False) -> list[str]:
        """Why each recompile happened (``x.shape[0]: 256 -> 128``); ``with_site`` appends `` @ file:line``."""
        if with_site:
            return [f"{r} @ {s}" for r, s in zip(self._reasons, self._sites)]
        return list(self._reasons)

    def explain(self) -> Any:
        """An ExplainResult over every cache entry so far (recompiles and their reasons included); ``.show()``
        renders it."""
        from jitgraph.inspect import explain_compiled

        return explain_compiled(self)

    def break_reasons(self) -> list[BreakReason]:
        return [e.break_reason for e in self.entries if e.mode == "eager" and e.break_reason is not None]

    def graphs(self) -> list[Graph]:
        return [e.graph for e in self.entries if e.graph is not None]

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


def call_site() -> str:
    """``file:line`` of the innermost frame outside jitgraph: where the user called the compiled function."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    filename = frame.f_code.co_filename
    try:
        rel = os.path.relpath(filename)
        filename = rel if not rel.startswith("..") else filename
    except ValueError:  # another drive on Windows
        pass
    return f"{filename}:{frame.f_lineno}"


def resolve_backend(name: str | None) -> str:
    """The backend to use: the named one (its module imported on first use, so it can register itself), else
    "cpu" once the CPU backend is available, else "eager"."""
    from jitgraph.backends import base

    wanted = name or "cpu"
    if wanted not in base._BACKENDS:
        try:
            importlib.import_module(f"jitgraph.backends.{wanted}")
        except ImportError:
            if name is not None:
                return name  # get_backend names the known backends in its error
    if name is None and "cpu" not in base._BACKENDS:
        return "eager"
    return wanted
