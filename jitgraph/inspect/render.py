"""The rich view of an explain result: summary, annotated source, graph tables, guards, fusion, kernels, timings.

Each section is a function returning a renderable (or None when it has nothing to say), and :func:`render` stacks
them. The facts come from :mod:`jitgraph.inspect.collect`; this module only decides how they look.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from jitgraph.inspect.collect import PHASES, GraphView, counts, graph_views, guard_sets, phase_times, short_path
from jitgraph.inspect.source_view import SourceView, source_report

THEME = "ansi_dark"
MAX_ROWS = 300  # per graph table
MAX_SOURCE_LINES = 400  # per kernel


def _name(result: Any) -> str:
    fn = result.function
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__ if fn else "?"


def summary(result: Any) -> RenderableType:
    c = counts(result)
    total = sum(phase_times(result).values())
    text = Text()
    parts = [("graphs", c["graphs"], "green" if c["graphs"] else "red"),
             ("breaks", c["breaks"], "red" if c["breaks"] else "green"),
             ("recompiles", c["recompiles"], "yellow" if c["recompiles"] else "green"),
             ("fallbacks", c["fallbacks"], "red" if c["fallbacks"] else "green"),
             ("ops", c["ops"], "cyan")]
    if c["interpreted"]:  # graphs the backend could not compile: they run in the reference interpreter
        parts.insert(4, ("graphs interpreted", c["interpreted"], "red"))
    for k, (label, value, style) in enumerate(parts):
        if k:
            text.append("   ")
        text.append(f"{value} ", style=f"bold {style}")
        text.append(label)
    text.append(f"   compile {total * 1e3:.1f} ms", style="dim")
    return Panel(text, title=Text(f"jitgraph explain: {_name(result)}", style="bold"), title_align="left",
                 box=box.ROUNDED)


def _source_table(view: SourceView) -> Table:
    code = "\n".join(line.text for line in view.lines)
    highlighted = Syntax(code, "python", theme=THEME).highlight(code).split("\n", allow_blank=True)
    table = Table(box=None, show_header=False, padding=(0, 1), pad_edge=False)
    table.add_column(width=1)
    table.add_column(justify="right", style="dim")
    table.add_column(overflow="fold")
    for line, text in zip(view.lines, highlighted):
        text.rstrip()
        if line.breaks:
            table.add_row(Text("✗", style="bold red"), str(line.lineno), text, style="on #3a0000")
            for reason, hint in line.breaks:
                table.add_row("", "", Text(f"↑ graph break: {reason}", style="bold red"))
                table.add_row("", "", Text(f"  hint: {hint}", style="yellow"))
        else:
            mark = Text("●", style="green") if line.captured else Text(" ")
            table.add_row(mark, str(line.lineno), text)
    return table


def source(result: Any) -> RenderableType | None:
    report = source_report(result)
    if report is None and not result.break_reasons:
        return None
    parts: list[RenderableType] = []
    title = "graph breaks"
    if report is not None:
        main = report.views[0]
        title = f"source: {short_path(main.filename)}:{main.first_line}"
        for k, view in enumerate(report.views):
            if k:
                parts.append(Text(f"\n{view.title} ({short_path(view.filename)}:{view.first_line})", style="bold"))
            parts.append(_source_table(view))
        parts.append(Text("● produced graph nodes   ✗ graph break (the call runs eagerly)", style="dim"))
    for site in (report.elsewhere if report is not None else []):
        parts.append(Text.assemble(("✗ ", "bold red"), (site.where, "bold"), f"  {site.line}"))
        parts.append(Text(f"  graph break: {site.reason}", style="red"))
        parts.append(Text(f"  hint: {site.hint}", style="yellow"))
    if report is None:
        for brk in result.break_reasons:
            parts.append(Text.assemble(("✗ ", "bold red"), (str(brk), "red")))
    return Panel(Group(*parts), title=Text(title), title_align="left", box=box.ROUNDED)


def recompiles(result: Any) -> RenderableType | None:
    if not result.recompile_reasons:
        return None
    table = Table(box=box.SIMPLE_HEAD, title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("what changed (guard: old -> new @ call site)")
    for k, reason in enumerate(result.recompile_reasons):
        table.add_row(str(k + 1), Text(reason, style="yellow"))
    return Panel(table, title="recompiles", title_align="left", box=box.ROUNDED)


def graph_table(view: GraphView) -> RenderableType:
    table = Table(box=box.SIMPLE_HEAD, expand=False, title=f"graph {view.index}", title_justify="left",
                  title_style="bold")
    for column, style in (("node", "bold"), ("op", "cyan"), ("inputs", ""), ("shape/dtype", "green"),
                          ("fusion group", "magenta"), ("source", "dim")):
        if column == "fusion group":
            table.add_column(column, style=style, no_wrap=True, overflow="ellipsis", max_width=36)
        else:
            table.add_column(column, style=style, overflow="fold", no_wrap=column in ("node", "source"))
    rows = view.rows
    if len(rows) > MAX_ROWS:  # an unrolled loop can make thousands of nodes; print(result) still has them all
        hidden = len(rows) - MAX_ROWS
        rows = rows[:MAX_ROWS - 20] + [None] + rows[-20:]
    for row in rows:
        if row is None:
            table.add_row(Text("..."), Text(f"{hidden} more nodes (print(result) lists every node)", style="dim"))
            continue
        indent = "  " * row.depth
        if row.group.startswith("NumPy:"):  # why: in the fusion table below
            group = Text("NumPy", style="dim yellow")
        else:  # members repeat their group's name, dimmed, so the column still reads per node
            group = Text(row.group, style="dim" if row.depth else "bold")
        # Text, not str: rich would read ``fused[reduction]`` or ``f32[4]`` as markup.
        table.add_row(Text(indent + row.name), Text(indent + row.op), Text(row.inputs), Text(row.type), group,
                      Text(row.source))
    return table


def fusion(view: GraphView) -> RenderableType | None:
    if not view.groups and not view.numpy_nodes:
        return None
    table = Table(box=box.SIMPLE_HEAD, title=f"fusion groups of graph {view.index}", title_justify="left",
                  title_style="bold")
    table.add_column("group", style="magenta", overflow="fold")
    table.add_column("kind")
    table.add_column("ops", overflow="fold")
    table.add_column("not fused because ...", overflow="fold")
    for g in view.groups:
        cuts = Text("\n".join(g.cuts) if g.cuts else "-", style="yellow" if g.cuts else "dim")
        table.add_row(Text(g.name), Text(g.kind), Text(" ".join(g.ops)), cuts)
    for name, op, why in view.numpy_nodes:
        table.add_row(Text(f"{name} (NumPy)", style="dim"), "-", Text(op), Text(why, style="yellow"))
    return table


def guards(result: Any) -> RenderableType | None:
    sets = guard_sets(result)
    if not sets:
        return None
    parts: list[RenderableType] = []
    for title, texts in sets:
        parts.append(Text(title, style="bold"))
        if texts:
            parts.append(Syntax("\n".join(texts), "python", theme=THEME, background_color="default"))
        else:
            parts.append(Text("  (none beyond the argument types)", style="dim"))
    return Panel(Group(*parts), title="guards (checked on every call; a miss recompiles)", title_align="left",
                 box=box.ROUNDED)


def kernels(view: GraphView) -> list[RenderableType]:
    out: list[RenderableType] = []
    for k in view.kernels:
        body: RenderableType
        if k.source:
            lines = k.source.rstrip("\n").splitlines()
            text = "\n".join(lines[:MAX_SOURCE_LINES])
            if len(lines) > MAX_SOURCE_LINES:
                text += f"\n# ... {len(lines) - MAX_SOURCE_LINES} more lines (the compiled graph's kernels hold it all)"
            body = Syntax(text, "python", theme=THEME, line_numbers=True, word_wrap=False)
        else:
            body = Text(k.note, style="dim")
        out.append(Panel(body, title=Text(f"graph {view.index}: {k.title}"), title_align="left", box=box.ROUNDED))
    return out


def timings(result: Any, views: list[GraphView]) -> RenderableType:
    phases = phase_times(result)
    total = sum(phases.values()) or 1e-12
    table = Table(box=box.SIMPLE_HEAD, title="compile time by phase", title_justify="left", title_style="bold")
    table.add_column("phase")
    table.add_column("ms", justify="right")
    table.add_column("share", justify="right")
    table.add_column("")
    notes = {"trace": "bytecode -> IR", "passes": "simplify, layout, fuse, plan memory",
             "codegen": "kernel and driver source", "numba": "LLVM compile, or load from the disk cache"}
    for phase in PHASES:
        seconds = phases.get(phase, 0.0)
        table.add_row(phase, f"{seconds * 1e3:.1f}", f"{seconds / total:.0%}", Text(notes[phase], style="dim"))
    table.add_row(Text("total", style="bold"), Text(f"{sum(phases.values()) * 1e3:.1f}", style="bold"), "", "")
    reports = result.pass_reports
    if not reports:
        return table
    passes: dict[str, float] = {}
    for report in reports:
        for name, seconds in report.times.items():
            passes[name] = passes.get(name, 0.0) + seconds
    detail = Table(box=box.SIMPLE_HEAD, title="passes", title_justify="left", title_style="bold")
    detail.add_column("pass")
    detail.add_column("ms", justify="right")
    for name, seconds in passes.items():
        detail.add_row(name, f"{seconds * 1e3:.2f}")
    grid = Table.grid(padding=(0, 4))
    grid.add_row(table, detail)
    return grid


def render(result: Any, show_kernels: bool = True) -> Group:
    """The whole view, top to bottom, as one rich renderable (``console.print(render(result))``)."""
    views = graph_views(result)
    parts: list[RenderableType | None] = [summary(result), source(result), recompiles(result)]
    for view in views:
        parts.append(graph_table(view))
        parts.append(fusion(view))
    parts.append(guards(result))
    if show_kernels:
        for view in views:
            parts.extend(kernels(view))
    parts.append(timings(result, views))
    return Group(*[p for p in parts if p is not None])
