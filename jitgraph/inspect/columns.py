"""Fitting a table's columns to the terminal: which columns to show and how wide each one is.

Left to itself, rich squeezes every column of a table that is too wide, so in an 80-column terminal ``f32[1024]``
wraps over two lines and ``elementwise`` over three. Here each column says how it may give way -- never (types,
node names, op names), between words only (lists such as ``%2, %1, %3``), anywhere (free text) -- and when it may
be dropped; :func:`fit` then keeps the important columns whole and drops the less important ones first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rich import box
from rich.table import Table
from rich.text import Text

Wrap = Literal["never", "words", "fold"]

FOLD_MIN = 24  # a free-text column is not squeezed below this (a longer word folds; a float's repr fits)
FOLD_SQUEEZED = 8  # ... unless nothing else fits: then it folds every word longer than this


@dataclass(frozen=True)
class Column:
    """How one column behaves when space is short.

    ``wrap``: "never" keeps every cell on one line (cut with an ellipsis only if ``cut_to`` allows); "words" breaks
    only between words, so the column is never narrower than its longest word; "fold" is free text that may fold
    inside a word. ``drop``: 0 keeps the column at any width, otherwise columns go in increasing ``drop`` order.
    ``comfort``: the width a wrapping column shrinks to before any column is dropped.
    """

    header: str
    style: str = ""
    wrap: Wrap = "never"
    drop: int = 0
    comfort: int = 0
    cut_to: int = 0
    justify: Literal["left", "right"] = "left"


_OPEN, _CLOSE = "([{", ")]}"


def words(text: str) -> list[str]:
    """The pieces a "words" column may put on separate lines: split at spaces outside nested brackets, so
    ``getitem(spec=(#0, #1))`` may break after ``getitem(spec=(#0, #1)),`` but never inside ``(#0, #1)``, and a
    tuple type ``(f32[4], f32[4])`` between its elements. Each piece after the first gets the text's indentation."""
    indent = text[:len(text) - len(text.lstrip(" "))]
    pieces, depth, start = [], 0, len(indent)
    for k, ch in enumerate(text):
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(depth - 1, 0)
        elif ch == " " and k >= len(indent) and depth <= 1 and k > start:
            pieces.append(text[start:k])
            start = k + 1
    pieces.append(text[start:])
    pieces = [p for p in pieces if p]
    return [indent + p for p in pieces] or [text]


def wrap_words(text: Text, width: int) -> Text:
    """``text`` with line breaks between :func:`words` so that no line exceeds ``width`` (a piece longer than that
    stays whole: the column's width is never below its longest piece). Styles of the pieces are kept."""
    plain = text.plain
    if len(plain) <= width or "\n" in plain:
        return text
    indent = plain[:len(plain) - len(plain.lstrip(" "))]
    lines: list[Text] = []
    used = 0
    offset = 0
    for k, piece in enumerate(words(plain)):
        bare = piece[len(indent):] if k else piece
        start = plain.index(bare, offset)
        offset = start + len(bare)
        part = text[start:offset]
        if lines and used + 1 + len(bare) <= width:
            lines[-1].append(" ")
            lines[-1].append_text(part)
            used += 1 + len(bare)
        else:
            lead = Text(indent if lines else "")
            lines.append(lead + part if lines else part)
            used = len(lines[-1])
    return Text("\n").join(lines)


def overhead(count: int) -> int:
    """Characters a table made by :func:`table` spends outside its cells: padding and column separators."""
    return max(3 * count - 3, 0)


def _longest_line(text: str) -> int:
    return max((len(line) for line in text.split("\n")), default=0)


def _natural(column: Column, cells: list[str]) -> int:
    return max([len(column.header)] + [_longest_line(c) for c in cells])


def _head(column: Column) -> int:
    return max(len(w) for w in column.header.split())


def _minimum(column: Column, cells: list[str]) -> int:
    head = _head(column)
    if column.wrap == "never":
        return max(head, min(column.cut_to, _natural(column, cells))) if column.cut_to else _natural(column, cells)
    longest = max((len(w) for c in cells for line in c.split("\n") for w in words(line)), default=0)
    if column.wrap == "words":
        return max(head, longest)
    return max(head, min(longest, FOLD_MIN))


def fit(columns: list[Column], rows: list[list[str]], width: int) -> list[tuple[int, int]]:
    """(column index, width) of the columns to show in ``width`` characters, in their order.

    A column with no text in any row is left out. Wrapping columns first shrink to their comfortable width, then
    columns are dropped in ``drop`` order, then
    everything shrinks to its minimum (wrapping columns to their longest word, cuttable ones to ``cut_to``), and at
    last free text folds its long words. If even that does not fit, the narrowest widths are returned and the
    terminal wraps what it must.
    """
    cells = [[row[k] if k < len(row) else "" for row in rows] for k in range(len(columns))]
    natural = [_natural(c, cells[k]) for k, c in enumerate(columns)]
    minimum = [min(_minimum(c, cells[k]), natural[k]) for k, c in enumerate(columns)]
    comfort = [max(minimum[k], min(natural[k], c.comfort or natural[k])) for k, c in enumerate(columns)]
    empty = {k for k in range(len(columns)) if not any(cells[k])}  # nothing to say: not worth its header
    levels = sorted({c.drop for c in columns if c.drop})
    stages = [[k for k in shown if k not in empty] for shown in _drop_plans(columns, levels)]
    squeezed = [max(FOLD_SQUEEZED, _head(c)) if c.wrap == "fold" else minimum[k] for k, c in enumerate(columns)]
    plans = [(shown, comfort) for shown in stages] + [(stages[-1], minimum), (stages[-1], squeezed)]
    for shown, floor in plans:
        widths = _shrink(shown, natural, floor, width - overhead(len(shown)))
        if widths is not None:
            return [(k, widths[k]) for k in shown]
    shown, floor = plans[-1]
    return [(k, floor[k]) for k in shown]


def _drop_plans(columns: list[Column], levels: list[int]) -> list[list[int]]:
    """The columns shown with nothing dropped, then with each drop level gone in turn."""
    return [[k for k, c in enumerate(columns) if not c.drop or c.drop > level] for level in [0, *levels]]


def _shrink(shown: list[int], natural: list[int], floor: list[int], room: int) -> dict[int, int] | None:
    """Widths within ``room``: the widest shrinkable column gives one character at a time; None if impossible."""
    widths = {k: natural[k] for k in shown}
    excess = sum(widths.values()) - room
    if excess > sum(widths[k] - floor[k] for k in shown):
        return None
    while excess > 0:
        k = max((k for k in shown if widths[k] > floor[k]), key=lambda k: widths[k] - floor[k])
        widths[k] -= 1
        excess -= 1
    return widths


def table(columns: list[Column], rows: list[list[Text]], width: int, **table_args: object) -> Table:
    """A rich table of ``rows`` (one Text per column) showing the columns :func:`fit` chooses for ``width``."""
    chosen = fit(columns, [[t.plain for t in row] for row in rows], width)
    out = Table(box=box.SIMPLE_HEAD, expand=False, show_edge=False, pad_edge=False,
                **table_args)  # type: ignore[arg-type]
    for k, w in chosen:
        c = columns[k]
        out.add_column(c.header, style=c.style, justify=c.justify, width=w, no_wrap=c.wrap == "never",
                       overflow="ellipsis" if c.wrap == "never" else "fold")
    for row in rows:
        cells = [row[k] if k < len(row) else Text("") for k, _ in chosen]
        out.add_row(*[wrap_words(cell, w) if columns[k].wrap == "words" else cell
                      for cell, (k, w) in zip(cells, chosen)])
    return out


def pack(parts: list[Text], width: int, separators: tuple[str, ...] = ("   ", "  ")) -> Text:
    """``parts`` on one line with the widest separator that fits, else over several lines, never splitting a part
    (a header such as ``compile 1825.6 ms`` must not wrap inside itself)."""
    for sep in separators:
        if sum(len(p) for p in parts) + len(sep) * (len(parts) - 1) <= width:
            return Text(sep).join(parts)
    sep = separators[-1]
    lines: list[list[Text]] = [[]]
    used = 0
    for part in parts:
        if lines[-1] and used + len(sep) + len(part) > width:
            lines.append([])
            used = 0
        used += (len(sep) if lines[-1] else 0) + len(part)
        lines[-1].append(part)
    return Text("\n").join(Text(sep).join(line) for line in lines)
