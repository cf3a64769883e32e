"""``jitgraph.explain(fn)(*args, **kwargs)``: what the tracer captured for one call, as plain data.

Mirrors ``torch._dynamo.explain``: the call runs once (through a fresh compiled wrapper, so side effects happen
once, as usual) and the result lists the graphs, the break reasons with the user's ``file:line``, the guards and
per-phase compile times. The object is plain data with a plain-text ``__str__``; rich rendering is layered on top
elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jitgraph.ir.graph import Graph
from jitgraph.tracer.cache import BreakReason, CompiledFunction


@dataclass
class ExplainResult:
    """``graphs`` are the captured IR (as traced, with source locations); ``optimized_graphs`` what the pass
    pipeline made of them; ``compile_times`` has ``trace``, ``passes`` (and ``pass:<name>``) and ``backend``."""

    graph_count: int
    graphs: list[Graph]
    break_reasons: list[BreakReason]
    guards: list[str]
    compile_times: dict[str, float] = field(default_factory=dict)
    optimized_graphs: list[Graph] = field(default_factory=list)
    pass_reports: list[Any] = field(default_factory=list)
    compiled_graphs: list[Any] = field(default_factory=list)
    output: Any = None
    # For the rich/HTML views (jitgraph/inspect): the user's function, the compiled wrapper (all cache entries),
    # and the recompile reasons with call sites.
    function: Any = None
    compiled_function: Any = None
    recompile_reasons: list[str] = field(default_factory=list)

    @property
    def graph_break_count(self) -> int:
        return len(self.break_reasons)

    @property
    def regions(self) -> list[Any]:
        """Control-flow regions of the compiled graphs (loop/while/cond): trip count when known, prange or not."""
        return [r for c in self.compiled_graphs for r in getattr(c, "regions", [])]

    @property
    def backend_notes(self) -> list[str]:
        """Each compiled graph's own ``explain()`` text (kernels, launches, host fallbacks, in-place writes) where its
        backend has one; region drivers are left out, their regions are listed already."""
        return [c.explain() for c in self.compiled_graphs
                if callable(getattr(c, "explain", None)) and not getattr(c, "regions", None)]

    @property
    def op_count(self) -> int:
        return sum(sum(1 for n in g.nodes if n.op not in ("input", "const")) for g in self.graphs)

    def summary(self) -> str:
        """The counts and break reasons, without the graphs and guards."""
        lines = [f"Graph count: {self.graph_count}", f"Graph break count: {self.graph_break_count}",
                 f"Op count: {self.op_count}"]
        if self.break_reasons:
            lines.append("Break reasons:")
            lines.extend(f"  {i + 1}. {b}" for i, b in enumerate(self.break_reasons))
        if self.compile_times:
            lines.append("Compile times: " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in self.compile_times.items()
                                                       if ":" not in k))
        return "\n".join(lines)

    def __str__(self) -> str:
        lines = [f"Graph count: {self.graph_count}", f"Graph break count: {self.graph_break_count}",
                 f"Op count: {self.op_count}"]
        if self.break_reasons:
            lines.append("Break reasons:")
            for i, b in enumerate(self.break_reasons):
                lines.append(f"  {i + 1}. {b}")
                if b.source_line:
                    lines.append(f"       {b.source_line}")
        if self.recompile_reasons:
            lines.append("Recompile reasons:")
            lines.extend(f"  {i + 1}. {r}" for i, r in enumerate(self.recompile_reasons))
        for i, g in enumerate(self.graphs):
            lines.append(f"Graph {i}:")
            lines.extend("  " + line for line in str(g).splitlines())
        if self.regions:
            lines.append("Regions (as compiled; trips=? when known only at run time):")
            lines.extend(f"  {r}" for r in self.regions)
        for i, note in enumerate(self.backend_notes):
            lines.append(f"Backend (compiled graph {i}):")
            lines.extend("  " + line for line in note.splitlines())
        if self.guards:
            lines.append("Guards:")
            lines.extend(f"  {g}" for g in self.guards)
        if self.compile_times:
            lines.append("Compile times: " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in self.compile_times.items()))
        return "\n".join(lines)

    # Rich views live in jitgraph.inspect; these hooks make terminals (rich), Jupyter and files use them.
    def __rich__(self) -> Any:
        from jitgraph.inspect import render

        return render(self)

    def _repr_html_(self) -> str:
        from jitgraph.inspect import to_html

        return to_html(self, inline=True)

    def show(self) -> None:
        """Print the rich view (source with breaks marked, graph tables, guards, fusion, kernels, timings)."""
        from jitgraph.inspect import show

        show(self)

    def save_html(self, path: Any) -> None:
        """Write the rich view to ``path`` as a standalone HTML file."""
        from jitgraph.inspect import save_html

        save_html(self, path)


def explain(fn: Callable[..., Any], **compile_options: Any) -> Callable[..., ExplainResult]:
    """Return a function that calls ``fn`` once under a fresh compiled wrapper and reports what happened."""
    target = fn._fn if isinstance(fn, CompiledFunction) else fn
    # ``explain(fn, math="libm")`` takes backend options the way ``jitgraph.compile`` does.
    own = {k: compile_options.pop(k) for k in ("backend", "cache_limit", "options") if k in compile_options}
    compile_options.pop("fullgraph", None)
    if isinstance(fn, CompiledFunction):
        own = {"backend": fn.backend, **own, "options": {**fn.options, **own.get("options", {})}}
    compile_options = {**own, "options": {**own.get("options", {}), **compile_options}}

    def run(*args: Any, **kwargs: Any) -> ExplainResult:
        compiled = CompiledFunction(target, **compile_options)
        output = compiled(*args, **kwargs)
        entry = compiled.entries[-1]
        times = dict(entry.times)
        traced = [e.traced_graph for e in compiled.entries if e.traced_graph is not None and e.mode == "graph"]
        return ExplainResult(
            graph_count=len(traced), graphs=traced, break_reasons=compiled.break_reasons(),
            guards=entry.guard_texts, compile_times=times, optimized_graphs=compiled.graphs(),
            pass_reports=[e.pass_report for e in compiled.entries if e.pass_report is not None],
            compiled_graphs=[e.compiled for e in compiled.entries if e.compiled is not None], output=output,
            function=target, compiled_function=compiled, recompile_reasons=compiled.recompile_reasons())

    return run
