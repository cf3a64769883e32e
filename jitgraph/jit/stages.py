"""The stages of one compile, as in ``jax.stages``: ``trace`` -> :class:`Traced` -> ``lower()`` -> :class:`Lowered`
-> ``compile()`` -> :class:`Compiled`.

Each stage is a plain object that prints itself, so a user can stop after any step and look::

    traced = jitgraph.compile(f).trace(x, y)   # graph, guards, break reason, side effects
    lowered = traced.lower()                   # the pass pipeline's output graph and its report
    compiled = lowered.compile()               # the backend's artifact; compiled(x, y) runs it

``CompiledFunction`` compiles a cache miss through exactly these objects (:func:`trace_stage`, then ``lower()``
and ``compile()``), and keeps them in its cache entry, so what ``explain`` shows is what runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jitgraph.backends.base import CompiledGraph, get_backend
from jitgraph.config import env_flag
from jitgraph.device_arrays import is_device_array
from jitgraph.ir.graph import Graph
from jitgraph.jit.backend_choice import check_device_backend, resolve_backend
from jitgraph.jit.breaks import BreakReason
from jitgraph.jit.device_outputs import device_outputs
from jitgraph.jit.resume import ResumableArtifact, build_result
from jitgraph.jit.resume_chain import complete, first_path
from jitgraph.jit.split_run import LoweredSegments, SplitArtifact, lower_segments
from jitgraph.passes import PassReport, run_pipeline
from jitgraph.tracer import dynamic_ints
from jitgraph.tracer.context import GraphBreak
from jitgraph.tracer.guards import GuardSet
from jitgraph.tracer.keys import alias_pattern, describe, diff, guard_texts, make_key
from jitgraph.tracer.outputs import build_output
from jitgraph.tracer.side_effects import replayer
from jitgraph.tracer.split import SplitPlan
from jitgraph.tracer.trace import TraceResult, parameter_names, trace

log = logging.getLogger("jitgraph")
log_graph = logging.getLogger("jitgraph.graph")

OVERLAP = ("array arguments overlap in memory (views of one array); running eagerly keeps NumPy's exact aliasing "
           "behaviour")


def strict() -> bool:
    """JITGRAPH_STRICT=1 (set by the test suite) turns internal tracer and backend errors into exceptions."""
    return env_flag("JITGRAPH_STRICT")


@dataclass
class Traced:
    """One call traced: the graph (None after a break), its guards, why it broke, what it writes in place.

    ``key`` and ``check`` are how a later call is recognised as the same (the flat argument key, the compiled
    guards); ``leaves`` are the traced call's flat arguments (the graph's inputs), ``alias`` their aliasing.
    A cache entry keeps its Traced after the call it was made for: :meth:`release` drops that call's arguments
    then, so the cache does not keep the caller's arrays alive.
    """

    name: str
    fn: Any
    args: tuple
    kwargs: dict[str, Any]
    result: TraceResult
    key: tuple
    check: Callable[[tuple, dict[str, Any]], list[Any] | None] | None
    leaves: list[Any]
    alias: tuple | None
    device: list[int]
    facts: dict[str, Any]
    n_arrays: int
    backend: str
    options: dict[str, Any]
    dynamic: frozenset[int | str] = frozenset()
    brk: GraphBreak | None = None
    n_key: int = 0  # leaves from the arguments (the rest are arrays read from globals and attributes)

    @property
    def graph(self) -> Graph | None:
        return None if self.brk is not None else self.result.graph

    @property
    def guards(self) -> GuardSet:
        return self.result.guards

    @property
    def break_reason(self) -> BreakReason | None:
        brk = self.brk
        return None if brk is None else BreakReason(brk.reason, brk.filename, brk.lineno)

    @property
    def break_reasons(self) -> list[BreakReason]:
        reason = self.break_reason
        return [] if reason is None else [reason]

    @property
    def side_effects(self) -> list[tuple[str, Any]]:
        """The graph's mutations: (argument name, value written into it) per array updated in place."""
        graph = self.graph
        if graph is None:
            return []
        return [(graph.input_names[i] if i < len(graph.input_names) else f"input {i}", value)
                for i, value in graph.mutations]

    @property
    def object_effects(self) -> list[tuple[str, str, str | None, Any]]:
        """Stores into Python objects, replayed after the graph (``tracer/side_effects.py``): ``(kind, target,
        name, value spec)`` in first-write order."""
        return list(self.result.extra.get("side_effects", [])) if self.brk is None else []

    @property
    def out_spec(self) -> Any:
        return self.result.out_spec

    @property
    def seconds(self) -> float:
        return self.result.seconds

    @property
    def leaf_names(self) -> list[str]:
        return list(self.result.extra.get("leaf_names", []))

    def release(self) -> None:
        """Forget the traced call's arguments (what it needs to recognise and run later calls stays)."""
        self.args, self.kwargs, self.leaves = (), {}, []

    @property
    def guard_texts(self) -> list[str]:
        """Every guard in words: argument structure, traced guards, aliasing (what ``explain`` lists)."""
        return (guard_texts(self.facts) + [g.text for g in self.guards.guards]
                + alias_texts(self.alias, self.leaf_names, self.n_arrays))

    def lower(self) -> Lowered:
        """Run the pass pipeline. A trace that broke has no graph: this raises GraphBreakError at its line."""
        reason = self.break_reason
        if reason is not None:
            raise reason.error(f"graph break in {self.name}: {reason.reason}",
                               hint="a graph break has no graph to lower; rewrite this line so the whole function "
                                    "is captured, or call the compiled function to run this call eagerly")
        graph = self.result.graph
        assert graph is not None
        log_graph.debug("jitgraph: traced graph of %s:\n%s", self.name, graph)
        plan = self.result.extra.get("split")
        if plan is not None:  # a graph per segment, the eager calls between them (split_run.py)
            segments = lower_segments(plan, self.options)
            return Lowered(self, segments.graphs[-1], segments.reports[-1], segments.seconds, segments)
        start = time.perf_counter()
        optimised, report = run_pipeline(graph, self.options)
        return Lowered(self, optimised, report, time.perf_counter() - start)

    @property
    def split(self) -> SplitPlan | None:
        """The segments and eager calls of a trace cut at print/logging/np.random calls (``tracer/split.py``); for
        one resumed after data-dependent breaks, those the traced call went through (``jit/resume.py``)."""
        if self.brk is not None:
            return None
        return first_path(self.result) if self.resumable else self.result.extra.get("split")

    @property
    def resumable(self) -> bool:
        """Whether the trace stopped at a data-dependent cut and was resumed after it (``jit/resume.py``)."""
        return self.brk is None and "resume_chain" in self.result.extra

    @property
    def split_reasons(self) -> list[BreakReason]:
        """Where and why the function is split (one per eager call between graphs)."""
        plan = self.split
        return [] if plan is None else [BreakReason(c.reason, c.filename, c.lineno) for c in plan.cuts]

    def __str__(self) -> str:
        lines = [f"Traced {self.name} ({self.seconds * 1e3:.2f} ms)"]
        reason = self.break_reason
        if reason is not None:
            lines.append(f"graph break: {reason}")
            if reason.source_line:
                lines.append(f"    {reason.source_line}")
        elif self.split is not None:
            for k, segment in enumerate(self.split.segments):
                lines.append(f"graph {k + 1} of {len(self.split.segments)}:")
                lines.extend("  " + line for line in str(segment.graph).splitlines())
                if k < len(self.split_reasons):
                    lines.append(f"split: {self.split_reasons[k]}")
        else:
            lines.append("graph:")
            lines.extend("  " + line for line in str(self.graph).splitlines())
        if self.side_effects:
            lines.append("side effects (arrays written in place): " + ", ".join(n for n, _ in self.side_effects))
        if self.object_effects:
            lines.append("side effects (replayed on objects after the graph): "
                         + ", ".join(effect_text(e) for e in self.object_effects))
        if self.guard_texts:
            lines.append("guards:")
            lines.extend(f"  {g}" for g in self.guard_texts)
        return "\n".join(lines)


@dataclass
class Lowered:
    """The pass pipeline's output for a traced graph (fused, memory-planned), with the pipeline's report."""

    traced: Traced
    graph: Graph
    report: PassReport
    seconds: float
    segments: LoweredSegments | None = None  # a split function: every segment (``graph`` is the last one)

    @property
    def times(self) -> dict[str, float]:
        """``passes`` (the whole pipeline) and ``pass:<name>`` for each pass."""
        return {"passes": self.seconds, **{f"pass:{name}": s for name, s in self.report.times.items()}}

    def compile(self) -> Compiled:
        """Hand the graph to the backend; the result runs like the user's function."""
        traced = self.traced
        start = time.perf_counter()
        if traced.resumable:
            assert self.segments is not None
            resumable = ResumableArtifact(traced.fn, traced.result, traced.backend, traced.options, traced.n_key,
                                          bool(traced.dynamic), result_builder(traced.backend))
            resumable.root.lowered.update(enumerate(self.segments.graphs))
            return Compiled(self, resumable, build_result, time.perf_counter() - start)
        if self.segments is not None:
            artifact: CompiledGraph = SplitArtifact(self.segments, traced.backend, traced.options,
                                                    traced.guards.constants)
        else:
            artifact = get_backend(traced.backend)(self.graph, traced.options)
        seconds = time.perf_counter() - start
        device = device_outputs(traced.backend, traced.device)
        build = build_output(traced.out_spec, traced.guards.constants, device)
        if traced.object_effects:
            build = with_side_effects(build, replayer(traced.object_effects, traced.guards.constants,
                                                      lambda spec, k: build_output(spec, k, device),
                                                      traced.result.extra.get("returned_effects")))
        return Compiled(self, artifact, build, seconds)

    def __str__(self) -> str:
        lines = [f"Lowered {self.traced.name} ({self.seconds * 1e3:.2f} ms in the pass pipeline)"]
        for k, graph in enumerate(self.segments.graphs if self.segments is not None else [self.graph]):
            lines.append("graph:" if self.segments is None else f"graph {k + 1} of {len(self.segments.graphs)}:")
            lines.extend("  " + line for line in str(graph).splitlines())
        lines.append("passes:")
        lines.extend("  " + line for line in str(self.report).splitlines())
        return "\n".join(lines)


@dataclass
class Compiled:
    """The backend's artifact (a :class:`~jitgraph.backends.base.CompiledGraph`) for one lowered graph. Call it
    with the same arguments as the user's function: it checks they match the trace and returns the same value."""

    lowered: Lowered
    artifact: CompiledGraph
    build: Callable[..., Any]
    seconds: float
    times: dict[str, float] = field(init=False)

    def __post_init__(self) -> None:
        traced = self.lowered.traced
        self.times = {"trace": traced.seconds, **self.lowered.times, "backend": self.seconds}

    @property
    def traced(self) -> Traced:
        return self.lowered.traced

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        traced = self.traced
        if traced.dynamic:
            args, kwargs = dynamic_ints.view(args, kwargs, traced.dynamic)
        leaves: list[Any] = []
        key = make_key(args, kwargs, leaves)
        extra = traced.check(args, kwargs) if traced.check is not None else []
        if key != traced.key or extra is None:
            changes = diff(traced.facts, describe(args, kwargs, parameter_names(traced.fn, len(args))))
            raise TypeError(f"{traced.name}: these arguments do not match the traced call"
                            + (f" ({'; '.join(changes)})" if changes else " (a guard fails)")
                            + "; trace again for them, or call the compiled function")
        leaves += extra or []
        if alias_pattern(leaves) != traced.alias:
            raise TypeError(f"{traced.name}: the arguments share memory differently from the traced call")
        return self.build(self.artifact(leaves), leaves, args, kwargs)

    def __str__(self) -> str:
        lines = [f"Compiled {self.traced.name} (backend {self.traced.backend}, {self.seconds * 1e3:.2f} ms)"]
        reason = self.artifact.fallback_reason()
        if reason:
            lines.append(f"interpreted with NumPy: {reason}")
        for source in self.artifact.kernel_sources():
            lines.append(f"{source.title}:" + (f" ({source.note})" if source.note else ""))
            lines.extend("  " + line for line in source.source.splitlines())
        note = self.artifact.explain()
        if note:
            lines.append("backend:")
            lines.extend("  " + line for line in note.splitlines())
        return "\n".join(lines)


def effect_text(effect: tuple[str, str, str | None, Any]) -> str:
    """One replayed store in words: ``K[0].__self__.cache = ...`` reads as the target's code and the name."""
    kind, code, name, _ = effect
    if kind == "attr":
        return f"{code}.{name} ="
    if kind == "global":
        return f"global {name} ="
    return f"{code} (contents)"


def result_builder(backend: str) -> Callable[[TraceResult], Callable[..., Any]]:
    """How a finished trace's return value is built (and its stores replayed): for the resumed traces of
    ``jit/resume.py``, each of which may be the one a call finishes in."""
    device = device_outputs(backend, [])

    def make(result: TraceResult) -> Callable[..., Any]:
        build = build_output(result.out_spec, result.guards.constants, device)
        effects = result.extra.get("side_effects")
        if effects:
            build = with_side_effects(build, replayer(effects, result.guards.constants,
                                                      lambda spec, k: build_output(spec, k, device),
                                                      result.extra.get("returned_effects")))
        return build

    return make


def with_side_effects(build: Callable[..., Any], apply: Callable[..., None]) -> Callable[..., Any]:
    """A result builder that also replays the trace's stores into objects, after the graph has run: the return
    value is built first (from the state before the stores, as the trace read it), then the stores are made."""

    def build_and_apply(o: Any, leaves: list[Any], a: tuple, kw: dict[str, Any]) -> Any:
        result = build(o, leaves, a, kw)
        apply(o, leaves, a, kw, result)
        return result

    return build_and_apply


def alias_texts(alias: tuple | None, leaf_names: list[str], n_arrays: int) -> list[str]:
    """An aliasing pattern (:func:`jitgraph.tracer.keys.alias_pattern`) in words: ``x is y``, ``a overlaps b``,
    or that no two arrays share memory."""
    if not alias:
        return ["no two array arguments share memory"] if n_arrays > 1 else []

    def name(i: int) -> str:
        return leaf_names[i] if i < len(leaf_names) else f"leaf {i}"

    return [f"{name(i)} {'is' if kind == 'same' else 'overlaps'} {name(j)}" for kind, i, j in alias]


def trace_stage(fn: Any, args: tuple, kwargs: dict[str, Any], *, name: str, backend: str | None,
                options: dict[str, Any], dynamic: frozenset[int | str] = frozenset(),
                result: TraceResult | None = None) -> Traced:
    """Trace one call (``args`` as the graph sees them: dynamic ints already wrapped) into a :class:`Traced`.

    An internal tracer error becomes a break (it raises under JITGRAPH_STRICT=1), as does a call whose array
    arguments overlap in memory. Device arrays with a host backend raise BackendError here, before anything runs.
    """
    leaves: list[Any] = []
    key = make_key(args, kwargs, leaves)
    n_key = len(leaves)
    try:
        result = result or trace(fn, args, kwargs, ())
        if result.breaks is None and "pending" in result.extra:  # a data-dependent cut: trace the rest too
            result = complete(fn, args, kwargs, result)
    except Exception as exc:
        if strict():
            raise
        log.warning("jitgraph: internal tracer error in %s (%s: %s); running eagerly", name, type(exc).__name__, exc)
        result = TraceResult(None, None, GuardSet(), GraphBreak(f"internal tracer error: {exc!r}", None, None), 0)
    check = result.guards.compile()
    extra = check(args, kwargs)
    if extra is None:  # a guard that fails on the very call it was made for: a tracer bug
        if strict():
            raise AssertionError("guards fail on the traced call: " + str(result.guards.first_failure(args, kwargs)))
        result = TraceResult(None, None, result.guards, GraphBreak("guards could not be checked", None, None), 0,
                             result.seconds)
        extra = []
    leaves += extra
    alias = alias_pattern(leaves)
    device = [i for i, v in enumerate(leaves) if type(v) is not np.ndarray and is_device_array(v)]
    check_device_backend(name, backend, device, result.extra.get("leaf_names", []))
    if not result.guards.guards and not result.guards.extra_inputs:
        check = None  # nothing beyond the key to check: the dispatch loop skips the call
    brk = result.breaks
    if brk is None and alias and any(kind == "overlap" for kind, _, _ in alias):
        brk = GraphBreak(OVERLAP, None, None)
    facts = describe(args, kwargs, parameter_names(fn, len(args)))
    n_arrays = sum(type(v) is np.ndarray for v in leaves) + len(device)
    return Traced(name, fn, args, kwargs, result, key, check, leaves, alias, device, facts, n_arrays,
                  resolve_backend(backend), dict(options), dynamic, brk, n_key)
