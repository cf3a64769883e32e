"""What ``explain`` returns: :class:`ExplainResult`, plain data with a plain-text ``__str__``.

It is built in one place, the driver's ``jitgraph.jit.explain_builder``, from the stages a compiled function kept
for each cache entry; this module only holds the data and says it in words. The rich terminal view, the HTML file
and Jupyter's display hook render it through :mod:`jitgraph.inspect.render` and :mod:`jitgraph.inspect.html`.
Compiled graphs are asked only through the backend protocol (:class:`jitgraph.backends.base.CompiledGraph`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Protocol

from jitgraph.backends.base import CompiledGraph
from jitgraph.ir.graph import Graph


class BreakInfo(Protocol):
    """A break reason as the views read it (the driver's ``jitgraph.jit.BreakReason``)."""

    reason: str
    filename: str | None
    lineno: int | None

    @property
    def source_line(self) -> str: ...


@dataclass
class EntryView:
    """One cache entry of the compiled function: ``mode`` is "graph" or "eager"; ``graph`` is the pipeline's
    output and ``compiled`` the backend's artifact (both None for an eager entry); ``times`` has ``trace``,
    ``passes``, ``pass:<name>`` and ``backend`` seconds."""

    mode: str
    guards: list[str]
    traced_graph: Graph | None = None
    graph: Graph | None = None
    compiled: CompiledGraph | None = None
    pass_report: Any = None
    times: dict[str, float] = field(default_factory=dict)
    break_reason: BreakInfo | None = None
    split_reasons: list[BreakInfo] = field(default_factory=list)  # eager calls between the entry's graphs
    segment_graphs: list[Graph] = field(default_factory=list)  # a split entry's lowered graphs, one per segment
    measured: str | None = None  # the measured tier-down's decision, with both times (jit/tiering.py)
    symbolic: str | None = None  # symbolic sizes: the dimensions traced as symbols, or the sizes of an instance


@dataclass
class ExplainResult:
    """``graphs`` are the captured IR (as traced, with source locations); ``optimized_graphs`` what the pass
    pipeline made of them; ``compile_times`` has ``trace``, ``passes`` (and ``pass:<name>``) and ``backend``,
    summed over ``entries`` (one per cache entry, in cache order)."""

    graph_count: int
    graphs: list[Graph]
    break_reasons: list[BreakInfo]
    guards: list[str]
    compile_times: dict[str, float] = field(default_factory=dict)
    optimized_graphs: list[Graph] = field(default_factory=list)
    pass_reports: list[Any] = field(default_factory=list)
    compiled_graphs: list[CompiledGraph] = field(default_factory=list)
    output: Any = None
    function: Any = None
    recompile_reasons: list[str] = field(default_factory=list)
    entries: list[EntryView] = field(default_factory=list)
    fallbacks: int = 0
    eager_mode: str | None = None  # how calls run while every one runs eagerly (jit/eager_mode.py)
    # Where a function was split into several graphs around eager calls (print, logging, np.random): each reason
    # is one eager call between two graphs, not a fallback of the whole call.
    split_reasons: list[BreakInfo] = field(default_factory=list)

    @property
    def graph_break_count(self) -> int:
        return len(self.break_reasons)

    @property
    def regions(self) -> list[Any]:
        """Control-flow regions of the compiled graphs (loop/while/cond): trip count when known, prange or not."""
        return [r for c in self.compiled_graphs for r in c.regions()]

    @property
    def backend_notes(self) -> list[str]:
        """Each compiled graph's own ``explain()`` text (kernels, launches, host fallbacks, in-place writes);
        graphs with regions are left out, their regions are listed already."""
        return [note for c in self.compiled_graphs if not c.regions() and (note := c.explain())]

    @property
    def op_count(self) -> int:
        return sum(sum(1 for n in g.nodes if n.op not in ("input", "const")) for g in self.graphs)

    def _header(self) -> list[str]:
        lines = [f"Graph count: {self.graph_count}", f"Graph break count: {self.graph_break_count}",
                 f"Op count: {self.op_count}"]
        if self.split_reasons:
            lines.append("Split around eager calls:")
            lines.extend(f"  {i + 1}. {b}" for i, b in enumerate(self.split_reasons))
        if any(v.measured for v in self.entries):
            lines.append("Measured against eager NumPy (per cache entry):")
            lines.extend(f"  entry {i + 1}: {v.measured}" for i, v in enumerate(self.entries) if v.measured)
        if self.eager_mode:
            lines.append(f"Eager mode: {self.eager_mode}")
        if any(v.symbolic for v in self.entries):
            lines.append("Symbolic sizes (one trace for every size of these dimensions):")
            lines.extend(f"  entry {i + 1}: {v.symbolic}" for i, v in enumerate(self.entries) if v.symbolic)
        return lines

    def summary(self) -> str:
        """The counts and break reasons, without the graphs and guards."""
        lines = self._header()
        if self.break_reasons:
            lines.append("Break reasons:")
            lines.extend(f"  {i + 1}. {b}" for i, b in enumerate(self.break_reasons))
        if self.compile_times:
            lines.append("Compile times: " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in self.compile_times.items()
                                                       if ":" not in k))
        return "\n".join(lines)

    def __str__(self) -> str:
        lines = self._header()
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

    # Terminals (rich), Jupyter and files render through jitgraph.inspect's views.
    def __rich__(self) -> Any:
        return view("render")(self)

    def _repr_html_(self) -> str:
        return view("to_html")(self, inline=True)

    def show(self, console: Any = None) -> None:
        """Print the rich view (source with breaks marked, graph tables, guards, fusion, kernels, timings)."""
        if console is None:
            console = importlib.import_module("rich.console").Console()
        console.print(view("render")(self))

    def save_html(self, path: Any) -> None:
        """Write the rich view to ``path`` as a standalone HTML file."""
        view("save_html")(self, path)


# The views sit above this module (they read ExplainResult) and load rich and pygments (~75 ms): the hooks above
# find them by name on first use, so ``import jitgraph`` does not pay for rendering it never does.
VIEWS = {"render": "jitgraph.inspect.render", "to_html": "jitgraph.inspect.html",
         "save_html": "jitgraph.inspect.html"}


def view(name: str) -> Any:
    """The view function ``name`` (see :data:`VIEWS`), its module imported on first use."""
    return getattr(importlib.import_module(VIEWS[name]), name)
