"""The pass manager: a registry of named ``Graph -> Graph`` passes and the one ordered pipeline that runs them.

Why a manager rather than a function that calls the passes in turn: every pass gets the same treatment for free,
and that treatment is what makes passes debuggable --

* ``JITGRAPH_VERIFY=1`` (set by the test suite) runs the IR verifier after every pass, so a pass that builds a bad
  graph is named at once instead of surfacing as a wrong number in a backend;
* ``JITGRAPH_DUMP=simplify,layout`` (or ``all``) prints the IR before and after the named passes to stderr;
* each pass is timed into the :class:`PassReport` that ``explain`` shows (and ``JITGRAPH_LOGS=perf`` logs);
* an exception inside a pass becomes a :class:`~jitgraph.errors.PassError` naming the pass and printing the
  nodes around the one it was working on.

Passes take ``(graph)`` or ``(graph, options)``. Options the built-in passes read: ``passes`` (a sequence of pass
names replacing :data:`DEFAULT_PIPELINE`) and ``reassociate`` (bool, default False: allow float reassociation).
"""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jitgraph import config
from jitgraph.errors import PassError, VerifyError
from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.printer import format_graph, node_names
from jitgraph.ir.verifier import verify
from jitgraph.logs import topic_logger

PassFn = Callable[..., Graph]
PASSES: dict[str, PassFn] = {}

# The pipeline, in order. Simplification first (so later passes see the smallest graph), then layout (which
# needs transposes next to their consumers), then fusion and memory planning: the last two *lower* the graph into
# what backends compile (``fused`` kernels, and the memory plan attached as ``Graph.memory``).
DEFAULT_PIPELINE: tuple[str, ...] = (
    "fold_constants", "simplify", "eliminate_common", "eliminate_dead", "layout", "fuse", "plan_memory",
)

_WANTS_OPTIONS: dict[str, bool] = {}
_perf_log = topic_logger("perf")  # JITGRAPH_LOGS=perf shows every pipeline's pass times


@dataclass(frozen=True)
class PassRecord:
    """One pass run: its name, wall time, and the graph size before and after."""

    name: str
    seconds: float
    nodes_before: int
    nodes_after: int


@dataclass
class PassReport:
    """What the pipeline did, in run order; ``explain`` renders :meth:`format`."""

    records: list[PassRecord] = field(default_factory=list)

    @property
    def times(self) -> dict[str, float]:
        """Seconds per pass name (a pass that ran twice is summed)."""
        out: dict[str, float] = {}
        for r in self.records:
            out[r.name] = out.get(r.name, 0.0) + r.seconds
        return out

    @property
    def total_seconds(self) -> float:
        return sum(r.seconds for r in self.records)

    def format(self) -> str:
        lines = [f"{'pass':<18} {'ms':>9} {'nodes':>13}"]
        for r in self.records:
            lines.append(f"{r.name:<18} {r.seconds * 1e3:>9.3f} {r.nodes_before:>6} -> {r.nodes_after:<5}")
        lines.append(f"{'total':<18} {self.total_seconds * 1e3:>9.3f}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


def register_pass(name: str) -> Callable[[PassFn], PassFn]:
    """Register ``fn(graph)`` or ``fn(graph, options)`` under ``name`` (re-registering replaces it)."""

    def deco(fn: PassFn) -> PassFn:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        PASSES[name] = fn
        _WANTS_OPTIONS[name] = len(params) >= 2
        return fn

    return deco


def resolve_pipeline(names: Sequence[str]) -> list[tuple[str, PassFn]]:
    """The passes to run for ``names``; an unknown name raises PassError."""
    run = []
    for name in names:
        fn = PASSES.get(name)
        if fn is None:
            raise PassError(f"unknown pass {name!r} in the pipeline",
                            hint=f"registered passes: {', '.join(sorted(PASSES))}")
        run.append((name, fn))
    return run


def _dump_names() -> set[str]:
    raw = config.env("JITGRAPH_DUMP")
    return {n.strip() for n in raw.split(",") if n.strip()}


def _dump(title: str, graph: Graph) -> None:
    print(f"--- {title} ---\n{format_graph(graph)}", file=sys.stderr)


def _context(graph: Graph, node: Node | None, radius: int = 3) -> str:
    """The printed lines around ``node`` (marked with ``-->``), or the head of the graph when unknown."""
    lines = format_graph(graph).splitlines()
    name = node_names(graph).get(node) if node is not None else None
    hit = next((k for k, line in enumerate(lines) if name and line.strip().startswith(f"{name} =")), None)
    if hit is None:
        return "\n".join("    " + line for line in lines[:2 * radius + 1])
    lo, hi = max(0, hit - radius), min(len(lines), hit + radius + 1)
    return "\n".join(("--> " if k == hit else "    ") + lines[k] for k in range(lo, hi))


def _run_one(name: str, fn: PassFn, graph: Graph, options: Mapping[str, Any]) -> Graph:
    try:
        result = fn(graph, options) if _WANTS_OPTIONS.get(name, False) else fn(graph)
    except PassError:
        raise
    except Exception as exc:
        where = getattr(exc, "jitgraph_graph", graph)
        context = _context(where, getattr(exc, "jitgraph_node", None))
        raise PassError(f"pass {name!r} failed: {type(exc).__name__}: {exc}\n{context}",
                        hint=f"run with JITGRAPH_DUMP={name} to see its input, or leave it out with "
                             f"options['passes']; this is a jitgraph bug worth reporting") from exc
    if not isinstance(result, Graph):
        raise PassError(f"pass {name!r} returned {type(result).__name__}, not a Graph")
    return result


def run_pipeline(graph: Graph, options: Mapping[str, Any] | None = None) -> tuple[Graph, PassReport]:
    """Run the pipeline (``options['passes']`` or :data:`DEFAULT_PIPELINE`) over ``graph``.

    With the default pipeline the result is lowered (fused, with its memory plan attached), which is what the
    compiling backends take; a custom ``passes`` list that leaves out ``plan_memory`` yields a graph they refuse."""
    options = dict(options or {})
    check = config.env_flag("JITGRAPH_VERIFY") or bool(config.option(options, "verify"))
    dump = _dump_names()
    names = config.option(options, "passes")
    if names is None:
        names = DEFAULT_PIPELINE
    elif isinstance(names, str):  # "simplify,layout", as in JITGRAPH_DUMP
        names = [n.strip() for n in names.split(",") if n.strip()]
    passes = resolve_pipeline(tuple(names))
    report = PassReport()
    if check:
        verify(graph)
    for name, fn in passes:
        wanted = name in dump or "all" in dump
        if wanted:
            _dump(f"IR before {name}", graph)
        start = time.perf_counter()
        result = _run_one(name, fn, graph, options)
        seconds = time.perf_counter() - start
        report.records.append(PassRecord(name, seconds, len(graph.nodes), len(result.nodes)))
        if wanted:
            _dump(f"IR after {name} ({seconds * 1e3:.3f} ms)", result)
        if check:
            try:
                verify(result)
            except VerifyError as exc:
                raise PassError(f"pass {name!r} produced an invalid graph: {exc.message}",
                                hint=exc.hint) from exc
        graph = result
    _perf_log.debug("jitgraph: pass times\n%s", report.format())
    return graph, report
