"""The user's source, annotated: which lines the graphs captured and where (and why) each graph break happened.

Lines come from the IR's source locations (every node carries the ``file:line`` it was traced at), so a line the
tracer inlined from a helper is marked in the helper, and a line that produced no node (a comment, a pure-Python
computation folded at trace time) is left unmarked.
"""

from __future__ import annotations

import inspect
import linecache
from dataclasses import dataclass, field
from typing import Any

from jitgraph.inspect.collect import captured_lines
from jitgraph.inspect.hints import hint_for


@dataclass
class SourceLine:
    lineno: int
    text: str
    captured: bool
    breaks: list[tuple[str, str]] = field(default_factory=list)  # (reason, hint)


@dataclass
class BreakSite:
    """A break outside the function's own source (in a helper it called), or without a location."""

    where: str
    line: str
    reason: str
    hint: str


@dataclass
class SourceView:
    filename: str
    first_line: int
    lines: list[SourceLine]
    elsewhere: list[BreakSite]


def _code_object_owner(fn: Any) -> Any:
    """The plain function behind a bound method, a functools.wraps wrapper or a callable object."""
    fn = inspect.unwrap(fn) if callable(fn) else fn
    fn = getattr(fn, "__func__", fn)
    if not inspect.isfunction(fn) and callable(fn):
        fn = getattr(type(fn).__call__, "__func__", type(fn).__call__)
    return fn


def source_view(result: Any) -> SourceView | None:
    """The annotated source of ``result.function``; None when its source cannot be read (REPL, exec)."""
    fn = result.function
    if fn is None:
        return None
    fn = _code_object_owner(fn)
    try:
        filename = inspect.getsourcefile(fn) or inspect.getfile(fn)
        texts, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    captured = captured_lines(result).get(filename, set())
    last = first + len(texts) - 1
    by_line: dict[int, list[tuple[str, str]]] = {}
    elsewhere = []
    for brk in result.break_reasons:
        if brk.filename == filename and brk.lineno is not None and first <= brk.lineno <= last:
            by_line.setdefault(brk.lineno, []).append((brk.reason, hint_for(brk.reason)))
        else:
            where = f"{brk.filename}:{brk.lineno}" if brk.filename else "<no source location>"
            line = linecache.getline(brk.filename, brk.lineno).strip() if brk.filename and brk.lineno else ""
            elsewhere.append(BreakSite(where, line, brk.reason, hint_for(brk.reason)))
    lines = [SourceLine(first + k, text.rstrip("\n"), (first + k) in captured, by_line.get(first + k, []))
             for k, text in enumerate(texts)]
    return SourceView(filename, first, lines, elsewhere)
