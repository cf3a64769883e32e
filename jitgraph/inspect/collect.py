"""What the explain views show, as plain data: rows of graph tables, fusion groups, kernel sources, phase times.

Kept apart from rendering so the same facts feed the rich terminal view, the HTML file and the tests. Everything
comes from an :class:`~jitgraph.inspect.result.ExplainResult`; compiled graphs are asked only through the backend
protocol (:class:`jitgraph.backends.base.CompiledGraph`), so a backend with nothing to show (the eager backend
has no kernels) only leaves a section empty.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from jitgraph.backends.base import CompiledGraph, KernelSource
from jitgraph.inspect.result import EntryView, ExplainResult
from jitgraph.ir.fusion_groups import unfused_reasons
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.printer import format_value, node_names

PHASES = ("trace", "passes", "codegen", "numba")


@dataclass
class Row:
    """One line of a graph table."""

    name: str
    op: str
    inputs: str
    type: str
    group: str
    source: str
    depth: int = 0  # 1 for nodes inside a fused group's body


@dataclass
class FusionGroup:
    name: str
    kind: str
    ops: list[str]
    cuts: list[str]
    source: str


@dataclass
class GraphView:
    """Everything shown for one cache entry that became a graph."""

    index: int
    rows: list[Row]
    groups: list[FusionGroup]
    numpy_nodes: list[tuple[str, str, str]]  # (name, op, why NumPy runs it)
    kernels: list[KernelSource]
    times: dict[str, float] = field(default_factory=dict)


def short_path(filename: str | None) -> str:
    if not filename:
        return ""
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    return rel if not rel.startswith("..") else os.path.basename(filename)


def _loc(node: Node) -> str:
    loc = node.loc
    if loc is None or not getattr(loc, "filename", None):
        return ""
    return f"{os.path.basename(loc.filename)}:{loc.lineno}"


def _attrs(node: Node) -> str:
    skip = {"name", "cuts", "kind"} if node.op == "fused" else {"value", "index"}
    parts = [f"{k}={format_value(v)}" for k, v in node.attrs.items() if k not in skip]
    return ", ".join(parts)


def numpy_reasons(graph: Graph) -> dict[Node, str]:
    """Why each computing node outside every kernel runs through NumPy (empty for a graph without kernels)."""
    if not any(n.op == "fused" for n in graph.nodes):
        return {}
    try:
        return unfused_reasons(graph)
    except Exception:  # noqa: BLE001 - an inspection view must not fail on a graph it half understands
        return {}


def graph_rows(graph: Graph) -> list[Row]:
    """The graph as table rows; a fused node is followed by its body's computing nodes, named by group."""
    names = node_names(graph)
    reasons = numpy_reasons(graph)
    rows: list[Row] = []
    for node in graph.nodes:
        op = node.op
        if op == "input":
            index = node.attrs.get("index")
            label = graph.input_names[index] if isinstance(index, int) and index < len(graph.input_names) else ""
            rows.append(Row(names[node], "input", label, str(node.type), "", ""))
            continue
        if op == "const":
            rows.append(Row(names[node], "const", format_value(node.attrs.get("value")), str(node.type), "",
                            _loc(node)))
            continue
        inputs = ", ".join(names.get(i, "?") for i in node.inputs)
        extra = _attrs(node)
        if op == "fused":
            group = str(node.attrs.get("name", "fused"))
            rows.append(Row(names[node], f"fused[{node.attrs.get('kind', '')}]", inputs, str(node.type), group,
                            _loc(node)))
            (body,) = node.regions
            outer = {b: names.get(o, "?") for b, o in zip(body.inputs, node.inputs)}
            rows.extend(_body_rows(body, outer, names, group))
            continue
        group = f"NumPy: {reasons[node]}" if node in reasons else ""
        rows.append(Row(names[node], op + (f"({extra})" if extra else ""), inputs, str(node.type), group,
                        _loc(node)))
        for region in node.regions:  # control flow (loop/while/cond): the bodies, indented
            rows.extend(_body_rows(region, {}, names, "", depth=1))
    rows.append(Row("", "return", ", ".join(names.get(o, "?") for o in graph.outputs), "", "", ""))
    for index, value in graph.mutations:  # in-place updates of the caller's arrays
        target = graph.input_names[index] if index < len(graph.input_names) else f"input {index}"
        rows.append(Row("", "mutate", f"{target} <- {names.get(value, '?')}", str(value.type), "", ""))
    return rows


def _body_rows(body: Graph, outer: dict[Node, str], names: dict[Node, str], group: str, depth: int = 1
               ) -> list[Row]:
    """Computing nodes of a region body; ``outer`` names body inputs by the operands they stand for."""
    rows = []
    for n in body.nodes:
        if n.op in ("input", "const"):
            continue
        inputs = ", ".join(outer.get(i) or (format_value(i.attrs["value"]) if i.op == "const" else names.get(i, "?"))
                           for i in n.inputs)
        extra = _attrs(n)
        rows.append(Row(names.get(n, "?"), n.op + (f"({extra})" if extra else ""), inputs, str(n.type), group,
                        _loc(n), depth=depth))
        for region in n.regions:
            rows.extend(_body_rows(region, {}, names, group, depth + 1))
    return rows


def fusion_groups(graph: Graph) -> list[FusionGroup]:
    groups = []
    for node in graph.nodes:
        if node.op != "fused":
            continue
        (body,) = node.regions
        ops = [n.op for n in body.nodes if n.op not in ("input", "const")]
        groups.append(FusionGroup(str(node.attrs.get("name", "fused")), str(node.attrs.get("kind", "")), ops,
                                  list(node.attrs.get("cuts", ())), _loc(node)))
    return groups


def kernel_sources(compiled: CompiledGraph | None) -> list[KernelSource]:
    """Generated source of a compiled graph (kernels, driver, loop driver), and a note when it is interpreted."""
    if compiled is None:
        return []
    out = list(compiled.kernel_sources())
    reason = compiled.fallback_reason()
    if reason:
        out.append(KernelSource("reference interpreter", "", f"the backend could not compile this graph: {reason}"))
    return out


def backend_times(compiled: CompiledGraph | None, backend_seconds: float) -> dict[str, float]:
    """Split the backend's time into code generation and Numba. Kernels are built lazily on their first call, so
    the artifact itself reports the seconds so far; the backend's own time beyond what it reports is code
    generation (building the driver, planning launches)."""
    times = compiled.compile_times() if compiled is not None else {}
    codegen, numba = times.get("codegen", 0.0), times.get("numba", 0.0)
    return {"codegen": codegen + max(backend_seconds - codegen - numba, 0.0), "numba": numba}


def entry_times(entry: EntryView) -> dict[str, float]:
    times = {"trace": entry.times.get("trace", 0.0), "passes": entry.times.get("passes", 0.0)}
    times.update(backend_times(entry.compiled, entry.times.get("backend", 0.0)))
    return times


def phase_times(result: ExplainResult) -> dict[str, float]:
    """Compile time by phase, summed over the result's cache entries."""
    totals = dict.fromkeys(PHASES, 0.0)
    for entry in result.entries:
        for k, v in entry_times(entry).items():
            totals[k] += v
    return totals


def graph_views(result: ExplainResult) -> list[GraphView]:
    """One view per cache entry that compiled a graph."""
    views = []
    for entry in (e for e in result.entries if e.graph is not None):
        sources, times = kernel_sources(entry.compiled), entry_times(entry)
        graphs = entry.segment_graphs or [entry.graph]
        for k, graph in enumerate(graphs):
            # A split function's artifact titles each source "segment k: ..."; each segment's view gets its own.
            mine = sources if len(graphs) == 1 else [s for s in sources if s.title.startswith(f"segment {k}:")]
            names = node_names(graph)
            numpy_nodes = [(names[n], n.op, why) for n, why in numpy_reasons(graph).items() if n.op != "tuple_get"]
            views.append(GraphView(len(views), graph_rows(graph), fusion_groups(graph), numpy_nodes, mine,
                                   times if k == 0 else {}))
    return views


def compact_guards(texts: list[str]) -> list[str]:
    """One line per array argument: ``type(x) is ndarray``, ``x.shape == ...``, ``x.dtype == ...`` and
    ``x.layout == ...`` become ``x: ndarray, shape (256, 784), dtype 'float32', layout 'C'``."""
    out: list[str] = []
    k = 0
    while k < len(texts):
        text = texts[k]
        if text.startswith("type(") and text.endswith(") is ndarray"):
            subject = text[5:-len(") is ndarray")]
            parts = [f"{subject}: ndarray"]
            j = k + 1
            for attr in ("shape", "dtype", "layout"):
                prefix = f"{subject}.{attr} == "
                if j < len(texts) and texts[j].startswith(prefix):
                    parts.append(f"{attr} {texts[j][len(prefix):]}")
                    j += 1
            out.append(", ".join(parts))
            k = j
            continue
        out.append(text)
        k += 1
    return out


def guard_sets(result: ExplainResult) -> list[tuple[str, list[str]]]:
    """(title, guard texts) per cache entry; the entry's mode says whether it runs a graph or eagerly."""
    out = []
    for k, entry in enumerate(result.entries):
        title = f"entry {k}: " + ("runs the compiled graph" if entry.mode == "graph" else "runs eagerly")
        out.append((title, compact_guards(list(entry.guards))))
    return out


def captured_lines(result: ExplainResult) -> dict[str, set[int]]:
    """filename -> line numbers that produced at least one node of a captured graph (region bodies included)."""
    lines: dict[str, set[int]] = {}

    def visit(graph: Graph) -> None:
        for n in graph.nodes:
            loc = n.loc
            if loc is not None and getattr(loc, "filename", None) and loc.lineno:
                lines.setdefault(loc.filename, set()).add(loc.lineno)
            for region in n.regions:
                visit(region)

    for g in result.graphs:
        visit(g)
    return lines


def counts(result: ExplainResult) -> dict[str, int]:
    interpreted = sum(1 for c in result.compiled_graphs if c.fallback_reason())
    return {"graphs": result.graph_count, "breaks": len(result.break_reasons),
            "recompiles": len(result.recompile_reasons), "fallbacks": result.fallbacks, "ops": result.op_count,
            "interpreted": interpreted}
