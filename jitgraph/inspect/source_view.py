"""The user's source, annotated: which lines the graphs captured and where (and why) each graph break happened.

Lines come from the IR's source locations (every node carries the ``file:line`` it was traced at). A node the tracer
inlined from a helper carries the helper's line, so the helpers that contributed nodes are shown too, after the
function itself; a line that produced no node (a comment, Python arithmetic folded at trace time, a call whose
nodes belong to the helper) stays unmarked.
"""

from __future__ import annotations

import ast
import inspect
import linecache
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from jitgraph.inspect.collect import captured_lines
from jitgraph.inspect.hints import hint_for

MAX_HELPERS = 8


@dataclass
class SourceLine:
    lineno: int
    text: str
    captured: bool
    breaks: list[tuple[str, str]] = field(default_factory=list)  # (reason, hint)


@dataclass
class BreakSite:
    """A break outside every function shown (or without a location)."""

    where: str
    line: str
    reason: str
    hint: str


@dataclass
class SourceView:
    title: str
    filename: str
    first_line: int
    lines: list[SourceLine]


@dataclass
class SourceReport:
    views: list[SourceView]  # the function first, then the helpers it inlined
    elsewhere: list[BreakSite]


def _code_object_owner(fn: Any) -> Any:
    """The plain function behind a bound method, a functools.wraps wrapper or a callable object."""
    fn = inspect.unwrap(fn) if callable(fn) else fn
    fn = getattr(fn, "__func__", fn)
    if not inspect.isfunction(fn) and callable(fn):
        fn = getattr(type(fn).__call__, "__func__", type(fn).__call__)
    return fn


@lru_cache(maxsize=64)
def _functions(filename: str, size: int) -> tuple[tuple[int, int, str], ...]:
    """(first line, last line, name) of every def in the file; ``size`` keys the cache to the file's text."""
    text = "".join(linecache.getlines(filename))
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ()
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            out.append((first, node.end_lineno or node.lineno, node.name))
    return tuple(out)


def _enclosing(filename: str, lineno: int) -> tuple[int, int, str] | None:
    lines = linecache.getlines(filename)
    inside = [f for f in _functions(filename, len(lines)) if f[0] <= lineno <= f[1]]
    return min(inside, key=lambda f: f[1] - f[0]) if inside else None


def _view(title: str, filename: str, first: int, texts: list[str], captured: set[int],
          breaks: dict[int, list[tuple[str, str]]]) -> SourceView:
    lines = [SourceLine(first + k, text.rstrip("\n"), (first + k) in captured, breaks.get(first + k, []))
             for k, text in enumerate(texts)]
    return SourceView(title, filename, first, lines)


def source_report(result: Any) -> SourceReport | None:
    """The annotated source of ``result.function`` and of the helpers it inlined; None when its source cannot be
    read (defined in a REPL or by exec)."""
    fn = result.function
    if fn is None:
        return None
    fn = _code_object_owner(fn)
    try:
        filename = inspect.getsourcefile(fn) or inspect.getfile(fn)
        texts, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    captured = captured_lines(result)
    ranges: list[tuple[str, int, int, str]] = [(filename, first, first + len(texts) - 1,
                                                getattr(fn, "__qualname__", "function"))]
    for other_file, lines in captured.items():
        for lineno in sorted(lines):
            if any(f == other_file and a <= lineno <= b for f, a, b, _ in ranges) or len(ranges) > MAX_HELPERS:
                continue
            found = _enclosing(other_file, lineno)
            if found is not None:
                ranges.append((other_file, found[0], found[1], found[2]))
    breaks: dict[tuple[str, int], list[tuple[str, str]]] = {}
    elsewhere = []
    for brk in result.break_reasons:
        shown = brk.filename and brk.lineno and any(f == brk.filename and a <= brk.lineno <= b
                                                    for f, a, b, _ in ranges)
        if shown:
            breaks.setdefault((brk.filename, brk.lineno), []).append((brk.reason, hint_for(brk.reason)))
        else:
            where = f"{brk.filename}:{brk.lineno}" if brk.filename else "<no source location>"
            line = linecache.getline(brk.filename, brk.lineno).strip() if brk.filename and brk.lineno else ""
            elsewhere.append(BreakSite(where, line, brk.reason, hint_for(brk.reason)))
    views = []
    for k, (path, a, b, name) in enumerate(ranges):
        body = texts if k == 0 else linecache.getlines(path)[a - 1:b]
        per_line = {line: v for (f, line), v in breaks.items() if f == path}
        views.append(_view(name if k == 0 else f"inlined helper {name}", path, a, body, captured.get(path, set()),
                           per_line))
    return SourceReport(views, elsewhere)
