"""The one place an :class:`~jitgraph.inspect.result.ExplainResult` is built: from the cache entries of a compiled
function, each holding the stages it was compiled through (``Traced`` -> ``Lowered`` -> ``Compiled``).

``CompiledFunction.explain()`` and ``jitgraph.explain(fn)(*args)`` both come here, so they agree on graph count,
break reasons and guards by construction, and nothing is traced or compiled a second time.
"""

from __future__ import annotations

from typing import Any

from jitgraph.inspect.result import EntryView, ExplainResult
from jitgraph.ir.graph import Graph
from jitgraph.jit.breaks import BreakReason
from jitgraph.jit.entries import Entry
from jitgraph.jit.resume import ResumableArtifact, describe_key


def entry_view(entry: Entry) -> EntryView:
    """One cache entry as plain data for the views."""
    return EntryView(mode=entry.mode, guards=list(entry.guard_texts), traced_graph=entry.traced_graph,
                     graph=entry.graph, compiled=entry.compiled, pass_report=entry.pass_report,
                     times=dict(entry.times), break_reason=entry.break_reason,
                     split_reasons=split_reasons(entry),
                     segment_graphs=lowered_graphs(entry) if entry.traced.split is not None else [],
                     measured=entry.measured, symbolic=symbolic_text(entry))


def symbolic_text(entry: Entry) -> str | None:
    """What symbolic sizes did for this entry (jit/symbolic_sizes.py), in words."""
    if entry.symbolic is not None:
        return f"traced with {entry.symbolic.describe()}; later sizes are instances of this trace"
    parent = entry.instance_of
    if parent is not None and parent.symbolic is not None:
        sizes = parent.symbolic.sizes_of(entry.facts) or {}
        return "instance of the symbolic trace (" + ", ".join(f"{k} = {v}" for k, v in sizes.items()) + "), not traced"
    return None


def split_reasons(entry: Entry) -> list[BreakReason]:
    """Where and why the entry's function is split: each eager call between graphs; for a function resumed after
    data-dependent breaks (jit/resume.py), the cut of every resumed trace too, with the value it was traced for."""
    resumed = _resumed(entry)
    if resumed is None:
        return list(entry.traced.split_reasons)
    reasons = []
    for node in resumed.variants():
        seen = "" if node.key is None else f" [in the part resumed for {describe_key(node.key)}]"
        for cut in node.plan.cuts[node.start:]:
            reasons.append(BreakReason(cut.reason + seen, cut.filename, cut.lineno))
    return reasons


def _resumed(entry: Entry) -> ResumableArtifact | None:
    compiled = entry.compiled
    return compiled if entry.mode == "graph" and isinstance(compiled, ResumableArtifact) else None


def traced_graphs(entry: Entry) -> list[Graph]:
    """The graphs an entry runs, as traced: one, or one per segment of a function split around eager calls (for a
    resumed one, every segment of every resumed trace, as :func:`jitgraph.jit.resume.explain_lines` lists them)."""
    if entry.mode != "graph" or entry.traced_graph is None:
        return []
    resumed = _resumed(entry)
    if resumed is not None:
        return [node.plan.segments[s].graph for _, node, s in resumed.segments()]
    plan = entry.traced.split
    return [segment.graph for segment in plan.segments] if plan is not None else [entry.traced_graph]


def lowered_graphs(entry: Entry) -> list[Graph]:
    """The pipeline's output graphs of an entry (one per segment of a split function; for a resumed one, those
    compiled so far)."""
    lowered = entry.lowered
    if entry.graph is None or lowered is None:
        return []
    resumed = _resumed(entry)
    if resumed is not None:
        return [node.lowered[s] for _, node, s in resumed.segments() if s in node.lowered]
    return list(lowered.segments.graphs) if lowered.segments is not None else [entry.graph]


def build_explain(entries: list[Entry], *, function: Any, recompile_reasons: list[str], fallbacks: int,
                  output: Any = None, eager_mode: str | None = None) -> ExplainResult:
    """The explain data over ``entries`` (in cache order); compile times are summed over them, the guards shown
    at the top are the last entry's; ``eager_mode`` says how calls run where the function is in eager mode."""
    views = [entry_view(e) for e in entries]
    traced = [g for e in entries for g in traced_graphs(e)]
    times: dict[str, float] = {}
    for view in views:
        for k, v in view.times.items():
            times[k] = times.get(k, 0.0) + v
    return ExplainResult(
        graph_count=len(traced), graphs=traced,
        break_reasons=[v.break_reason for v in views if v.mode == "eager" and v.break_reason is not None],
        guards=views[-1].guards if views else [], compile_times=times,
        optimized_graphs=[g for e in entries for g in lowered_graphs(e)],
        split_reasons=[r for v in views for r in v.split_reasons],
        pass_reports=[v.pass_report for v in views if v.pass_report is not None],
        compiled_graphs=[v.compiled for v in views if v.compiled is not None], output=output, function=function,
        recompile_reasons=list(recompile_reasons), entries=views, fallbacks=fallbacks, eager_mode=eager_mode)
