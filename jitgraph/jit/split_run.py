"""Running a function split around eager calls (``tracer/split.py``): segment graphs compiled one by one, and an
artifact that runs them in order with the eager calls between them.

Every guard was checked at entry. Segment 0 runs (it may raise: nothing has happened yet, so the driver's eager
rerun is exact); then call 0 is made on values segment 0 produced; then segment 1 runs on the leaves, the carried
values and the call's result; and so on. The last segment writes the caller's arrays and produces the return value
and the replayed stores, exactly as a whole-function graph does (it cannot raise on its data: the tracer refuses a
split where a check follows an eager call, since a rerun would make that call twice).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from jitgraph.backends.base import CompiledGraph, KernelSource, get_backend
from jitgraph.errors import JitgraphError
from jitgraph.ir.graph import Graph
from jitgraph.passes import PassReport, run_pipeline
from jitgraph.tracer.outputs import build_output
from jitgraph.tracer.split import Cut, SplitPlan


@dataclass
class LoweredSegments:
    """Each segment's graph after the pass pipeline, with its report."""

    plan: SplitPlan
    graphs: list[Graph]
    reports: list[PassReport]
    seconds: float


def lower_segments(plan: SplitPlan, options: dict[str, Any]) -> LoweredSegments:
    start = time.perf_counter()
    graphs, reports = [], []
    for segment in plan.segments:
        graph, report = run_pipeline(segment.graph, options)
        graphs.append(graph)
        reports.append(report)
    return LoweredSegments(plan, graphs, reports, time.perf_counter() - start)


class SplitArtifact:
    """A :class:`~jitgraph.backends.base.CompiledGraph` over the segments and the eager calls between them."""

    def __init__(self, lowered: LoweredSegments, backend: str, options: dict[str, Any], constants: list[Any]) -> None:
        self.plan = lowered.plan
        self.parts: list[CompiledGraph] = [get_backend(backend)(g, options) for g in lowered.graphs]
        self.constants = constants
        self.calls = [_EagerCall(cut, constants) for cut in self.plan.cuts]

    def __call__(self, leaves: list[Any]) -> Any:
        env: dict[Any, Any] = {}
        segments, parts, calls = self.plan.segments, self.parts, self.calls
        for k, segment in enumerate(segments):
            outs = parts[k](leaves + [env[n] for n in segment.carried])
            if k == len(segments) - 1:
                return outs
            env.update(zip(segment.produced, outs))
            calls[k](env)
        raise AssertionError("unreachable")

    def kernel_sources(self) -> list[KernelSource]:
        found = []
        for k, part in enumerate(self.parts):
            for source in part.kernel_sources():
                found.append(KernelSource(f"segment {k}: {source.title}", source.source, source.note))
        return found

    def explain(self) -> str:
        lines = []
        for k, part in enumerate(self.parts):
            lines.append(f"segment {k}:" + (f" {part.explain()}" if part.explain() else ""))
            if k < len(self.calls):
                cut = self.plan.cuts[k]
                lines.append(f"eager call at {cut.filename}:{cut.lineno}: {cut.reason}")
        return "\n".join(lines)

    def regions(self) -> list:
        return [r for part in self.parts for r in part.regions()]

    def compile_times(self) -> dict[str, float]:
        total: dict[str, float] = {}
        for part in self.parts:
            for k, v in part.compile_times().items():
                total[k] = total.get(k, 0.0) + v
        return total

    def fallback_reason(self) -> str | None:
        reasons = [r for r in (p.fallback_reason() for p in self.parts) if r]
        return "; ".join(reasons) or None


class _EagerCall:
    """One cut's call: arguments built from the segment's outputs, the result checked and stored for the next."""

    def __init__(self, cut: Cut, constants: list[Any]) -> None:
        self.cut = cut
        self.constants = constants
        self.args = [build_output(s, constants) for s in cut.arg_specs]
        self.kwargs = {k: build_output(s, constants) for k, s in cut.kw_specs.items()}
        self.callee = cut.callee
        self.code = compile(cut.callee[1], "<jitgraph eager call>", "eval") if cut.callee[0] == "method" else None

    def __call__(self, env: dict[Any, Any]) -> None:
        cut = self.cut
        values = [env[n] for n in cut.arg_nodes]
        args = [a(values, [], (), {}) for a in self.args]
        kwargs = {k: a(values, [], (), {}) for k, a in self.kwargs.items()}
        if self.code is not None:  # a logger or generator read from a global: the object of this call
            fn = getattr(eval(self.code, {"K": self.constants}), self.callee[2])
        else:
            fn = self.callee[1]
        result = fn(*args, **kwargs)
        if cut.result_node is None:
            return
        parts = list(result) if cut.more_results else [result]  # a named tuple's parts (svd, qr, eigh)
        if len(parts) != len(cut.results):
            raise SplitCallError(f"{cut.reason}: the call returned {len(parts)} values, not {len(cut.results)}")
        for node, check, part in zip(cut.results, [cut.result_check, *cut.more_checks], parts):
            kind, shape, dtype = check or (None, None, None)
            if type(part) is not kind or getattr(part, "shape", ()) != shape or getattr(part, "dtype", None) != dtype:
                raise SplitCallError(f"{cut.reason}: the call returned {type(part).__name__} "
                                     f"{getattr(part, 'shape', '')}, not the {kind.__name__} {shape} it returned "
                                     "when traced")
            env[node] = part


class SplitCallError(JitgraphError):
    """An eager call between two segments returned another kind of value than when traced."""
