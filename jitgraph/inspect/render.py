"""The rich view of an explain result: summary, annotated source, graph tables, guards, fusion, kernels, timings.

Each section is a function returning a renderable (or None when it has nothing to say), and :func:`render` stacks
them. The facts come from :mod:`jitgraph.inspect.collect`; this module only decides how they look.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.measure import Measurement
from rich.padding import Padding
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from jitgraph.inspect import columns as cols
from jitgraph.inspect.collect import PHASES, GraphView, counts, graph_views, guard_sets, phase_times, short_path
from jitgraph.inspect.source_view import SourceView, source_report

THEME = "ansi_dark"
MAX_ROWS = 300  # per graph table
MAX_SOURCE_LINES = 400  # per kernel
SIDE_BY_SIDE = 100  # narrower than this, the pass times go below the phase times instead of beside them


class Sized:
    """A section built for the width it is given: rich asks at print time, so one result prints well in an
    80-column terminal, a 200-column one and the HTML file alike."""

    def __init__(self, build: Callable[[int], RenderableType]) -> None:
        self.build = build

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[RenderableType]:
        yield self.build(options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.build(options.max_width))


def _name(result: Any) -> str:
    fn = result.function
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__ if fn else "?"


def _milliseconds(seconds: float, short: bool) -> str:
    return f"{seconds:.1f} s" if short and seconds >= 1 else f"{seconds * 1e3:.1f} ms"


def summary(result: Any) -> RenderableType:
    c = counts(result)
    total = sum(phase_times(result).values())
    parts = [("graphs", c["graphs"], "green" if c["graphs"] else "red"),
             ("breaks", c["breaks"], "red" if c["breaks"] else "green"),
             ("recompiles", c["recompiles"], "yellow" if c["recompiles"] else "green"),
             ("fallbacks", c["fallbacks"], "red" if c["fallbacks"] else "green"),
             ("ops", c["ops"], "cyan")]
    if c["interpreted"]:  # graphs the backend could not compile: they run in the reference interpreter
        parts.insert(4, ("graphs interpreted", c["interpreted"], "red"))
    counted = [Text.assemble((f"{value} ", f"bold {style}"), label) for label, value, style in parts]

    def line(width: int) -> Text:
        # One line if it fits at all: narrower separators first, then the compile time in seconds; only a very
        # narrow terminal gets several lines, and then never inside "compile 1825.6 ms".
        inner = width - 4  # the panel's border and padding
        for short in (False, True):
            pieces = [*counted, Text(f"compile {_milliseconds(total, short)}", style="dim")]
            if sum(len(p) for p in pieces) + 2 * (len(pieces) - 1) <= inner:
                return cols.pack(pieces, inner)
        return cols.pack(pieces, inner, separators=("  ",))

    title = Text(f"jitgraph explain: {_name(result)}", style="bold")
    return Sized(lambda width: Panel(line(width), title=title, title_align="left", box=box.ROUNDED))


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
                table.add_row("", "", Padding(Text(f"hint: {hint}", style="yellow"), (0, 0, 0, 2)))
        else:
            mark = Text("●", style="green") if line.captured else Text(" ")
            table.add_row(mark, str(line.lineno), text)
    return table


def source(result: Any) -> RenderableType | None:
    report = source_report(result)
    if report is None and not result.break_reasons and not result.split_reasons:
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
    for split in result.split_reasons:  # the function runs as several graphs with these eager calls between them
        parts.append(Text.assemble(("⇥ ", "bold yellow"), (str(split), "yellow"),
                                   (" (split: the graphs before and after it are compiled)", "dim")))
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


GRAPH_COLUMNS = [
    cols.Column("node", "bold"),
    cols.Column("op", "cyan", wrap="words", comfort=1),  # only attributes wrap, e.g. sum(axis=1, keepdims=False)
    cols.Column("inputs", wrap="fold", comfort=20),  # folds only a constant longer than columns.FOLD_MIN
    cols.Column("shape/dtype", "green", wrap="words", comfort=1),  # a tuple type wraps between its elements
    cols.Column("fusion group", "magenta", drop=1, cut_to=16),  # members are indented under their fused node
    cols.Column("source", "dim", drop=2),
]


def _graph_rows(view: GraphView) -> list[list[Text]]:
    rows = view.rows
    hidden = len(rows) - MAX_ROWS
    if hidden > 0:  # an unrolled loop can make thousands of nodes; print(result) still has them all
        rows = rows[:MAX_ROWS - 20] + [None] + rows[-20:]
    out = []
    for row in rows:
        if row is None:
            out.append([Text("..."), Text(""), Text(f"{hidden} more nodes (print(result) lists every node)",
                                                     style="dim")])
            continue
        indent = "  " * row.depth
        if row.group.startswith("NumPy:"):  # why: in the fusion table below
            group = Text("NumPy", style="dim yellow")
        else:  # members repeat their group's name, dimmed, so the column still reads per node
            group = Text(row.group, style="dim" if row.depth else "bold")
        # Text, not str: rich would read ``fused[reduction]`` or ``f32[4]`` as markup.
        out.append([Text(indent + row.name), Text(indent + row.op), Text(row.inputs), Text(row.type), group,
                    Text(row.source)])
    return out


LINE_COLUMN = cols.Column("line", "dim", drop=2)
SOURCE = 5  # index of the source column in GRAPH_COLUMNS and in a row


def _line_only(rows: list[list[Text]]) -> list[list[Text]] | None:
    """The rows with ``file.py:12`` shortened to ``12``, when every location is in one file (the source panel names
    it); None when the graph spans several files."""
    files = {row[SOURCE].plain.rpartition(":")[0] for row in rows if len(row) > SOURCE and row[SOURCE].plain}
    if len(files) != 1:
        return None
    return [[*row[:SOURCE], Text(row[SOURCE].plain.rpartition(":")[2])] if len(row) > SOURCE else row
            for row in rows]


def graph_table(view: GraphView) -> RenderableType:
    rows = _graph_rows(view)
    short = _line_only(rows)
    title = {"title": f"graph {view.index}", "title_justify": "left", "title_style": "bold"}

    def build(width: int) -> RenderableType:
        table = cols.table(GRAPH_COLUMNS, rows, width, **title)
        if short is not None:
            # Short of room, the file name goes first (the source panel above names the one file): file:line is
            # kept only where it costs the other columns nothing.
            full = cols.fit(GRAPH_COLUMNS, [[t.plain for t in r] for r in rows], width)
            line = cols.fit([*GRAPH_COLUMNS[:SOURCE], LINE_COLUMN], [[t.plain for t in r] for r in short], width)
            if [c for c in full if c[0] != SOURCE] != [c for c in line if c[0] != SOURCE]:
                table = cols.table([*GRAPH_COLUMNS[:SOURCE], LINE_COLUMN], short, width, **title)
        return Group(table, Text(""))

    return Sized(build)


FUSION_COLUMNS = [
    cols.Column("node", "bold"),
    cols.Column("group", "magenta", cut_to=16),
    cols.Column("kind"),
    cols.Column("ops", wrap="words", comfort=30),
    cols.Column("not fused because ...", wrap="fold", comfort=24),
]
FUSION_OPS_MIN = 24  # narrower than this the groups are listed one below the other instead of as a table


def op_counts(ops: list[str]) -> str:
    """``multiply×6 add×3 sqrt``: each op once, in order of first use, with how often the group runs it."""
    return " ".join(op if n == 1 else f"{op}×{n}" for op, n in Counter(ops).items())


def _fusion_rows(view: GraphView) -> list[list[Text]]:
    nodes = {row.group: row.name for row in view.rows if row.op.startswith("fused[")}
    rows = []
    for g in view.groups:
        cuts = Text("\n".join(g.cuts) if g.cuts else "-", style="yellow" if g.cuts else "dim")
        rows.append([Text(nodes.get(g.name, "")), Text(g.name), Text(g.kind), Text(op_counts(g.ops)), cuts])
    for name, op, why in view.numpy_nodes:
        rows.append([Text(name), Text("NumPy", style="dim"), Text("-"), Text(op), Text(why, style="yellow")])
    return rows


def _fusion_list(rows: list[list[Text]]) -> RenderableType:
    """The narrow layout: per group a heading line (node, group, kind), then its ops and why nothing more fused."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    for node, group, kind, ops, cuts in rows:
        group.stylize("magenta")
        grid.add_row(node, Text.assemble(group, "  ", kind))
        grid.add_row("", Text.assemble(("ops: ", "dim"), ops))
        grid.add_row("", Text.assemble(("not fused because: ", "dim"), cuts))
    return grid


def fusion(view: GraphView) -> RenderableType | None:
    if not view.groups and not view.numpy_nodes:
        return None
    rows = _fusion_rows(view)
    title = Text(f"fusion groups of graph {view.index}", style="bold")

    def build(width: int) -> RenderableType:
        chosen = dict(cols.fit(FUSION_COLUMNS, [[t.plain for t in row] for row in rows], width))
        natural_ops = max(len(row[3]) for row in rows)
        if len(chosen) == len(FUSION_COLUMNS) and chosen[3] >= min(natural_ops, FUSION_OPS_MIN):
            return Group(cols.table(FUSION_COLUMNS, rows, width, title=title, title_justify="left"), Text(""))
        return Group(title, Text(""), _fusion_list(rows), Text(""))  # spaced like a table with its title

    return Sized(build)


def guards(result: Any) -> RenderableType | None:
    sets = guard_sets(result)
    if not sets:
        return None
    parts: list[RenderableType] = []
    for title, texts in sets:
        parts.append(Text(title, style="bold"))
        if texts:
            parts.append(Syntax("\n".join(texts), "python", theme=THEME, background_color="default", word_wrap=True))
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
            # Wrapped, not cropped: a narrow terminal still shows every line whole (long lines continue below).
            body = Syntax(text, "python", theme=THEME, line_numbers=True, word_wrap=True)
        else:
            body = Text(k.note, style="dim")
        out.append(Panel(body, title=Text(f"graph {view.index}: {k.title}"), title_align="left", box=box.ROUNDED))
    return out


def timings(result: Any, views: list[GraphView]) -> RenderableType:
    phases = phase_times(result)
    total = sum(phases.values()) or 1e-12
    table = Table(box=box.SIMPLE_HEAD, title="compile time by phase", title_justify="left", title_style="bold")
    table.add_column("phase", no_wrap=True)
    table.add_column("ms", justify="right", no_wrap=True)
    table.add_column("share", justify="right", no_wrap=True)
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
    detail.add_column("pass", no_wrap=True)
    detail.add_column("ms", justify="right", no_wrap=True)
    for name, seconds in passes.items():
        detail.add_row(name, f"{seconds * 1e3:.2f}")

    def build(width: int) -> RenderableType:
        if width < SIDE_BY_SIDE:
            return Group(table, detail)
        grid = Table.grid(padding=(0, 4))
        grid.add_row(table, detail)
        return grid

    return Sized(build)


AUTODIFF_COLUMNS = [
    cols.Column("role", "bold"),
    cols.Column("value", "green", wrap="words", comfort=1),
    cols.Column("source", "dim", drop=1),
]
AUTODIFF_STYLES = {"saved": "bold yellow", "recomputed": "bold cyan", "read": "bold"}


def autodiff(result: Any) -> RenderableType | None:
    """A gradient function's autodiff part (``GradExplainResult``, built in ``jitgraph/jit/grad.py``): what was
    differentiated, the min-cut's summary, and a table of the forward values the backward saves or recomputes."""
    lines = getattr(result, "autodiff", None)
    if not lines:
        return None
    values = getattr(result, "autodiff_values", None) or []
    summary = [line for line in lines if not line.startswith(" ") and not line.startswith("forward values")]
    rows = [[Text(role, style=AUTODIFF_STYLES.get(role, "bold")), Text(value), Text(short_path(source))]
            for role, value, source in values]
    saved = sum(1 for role, _, _ in values if role == "saved")
    title = Text(f"autodiff: joint forward+backward graph, {saved} value(s) saved, "
                 f"{len(values) - saved} recomputed", style="bold") if values else Text("autodiff", style="bold")

    def build(width: int) -> RenderableType:
        parts: list[RenderableType] = [Text(line) for line in summary]
        if rows:
            parts.append(Text(""))
            parts.append(cols.table(AUTODIFF_COLUMNS, rows, width - 4))
        return Panel(Group(*parts), title=title, title_align="left", box=box.ROUNDED)

    return Sized(build)


def render(result: Any, show_kernels: bool = True) -> Group:
    """The whole view, top to bottom, as one rich renderable (``console.print(render(result))``)."""
    views = graph_views(result)
    parts: list[RenderableType | None] = [summary(result), source(result), recompiles(result)]
    for view in views:
        parts.append(graph_table(view))
        parts.append(fusion(view))
    parts.append(autodiff(result))
    parts.append(guards(result))
    if show_kernels:
        for view in views:
            parts.extend(kernels(view))
    parts.append(timings(result, views))
    return Group(*[p for p in parts if p is not None])
