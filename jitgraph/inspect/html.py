"""The explain view as HTML: the rich rendering recorded and exported, so the file shows exactly what a terminal
shows (colours included), for sharing in a bug report or opening next to the code."""

from __future__ import annotations

import html
import io
import os
from typing import Any

from rich.console import Console
from rich.terminal_theme import MONOKAI

from jitgraph.inspect.render import render

WIDTH = 140

_PAGE = """<!DOCTYPE html>
<html>
<head>
<meta charset="UTF-8">
<title>{title}</title>
<style>
{stylesheet}
body {{ color: {foreground}; background-color: {background}; }}
pre {{ font-family: Menlo, 'DejaVu Sans Mono', consolas, 'Courier New', monospace; font-size: 13px; }}
</style>
</head>
<body>
<pre><code>{code}</code></pre>
</body>
</html>
"""

_FRAGMENT = ('<pre style="font-family: Menlo, \'DejaVu Sans Mono\', consolas, \'Courier New\', monospace; '
             'line-height: 1.2; white-space: pre;">{code}</pre>')


def _console() -> Console:
    return Console(record=True, width=WIDTH, file=io.StringIO(), force_terminal=True, color_system="truecolor")


def to_html(result: Any, inline: bool = False) -> str:
    """The view as a standalone HTML page, or (``inline=True``, for Jupyter) as one ``<pre>`` fragment."""
    console = _console()
    console.print(render(result))
    if inline:
        return console.export_html(inline_styles=True, code_format=_FRAGMENT)
    name = getattr(result.function, "__qualname__", "function")
    page = _PAGE.replace("{title}", html.escape(f"jitgraph explain: {name}"))
    return console.export_html(theme=MONOKAI, code_format=page)


def save_html(result: Any, path: str | os.PathLike[str]) -> str:
    """Write the view to ``path`` (parents must exist); returns the path written."""
    text = to_html(result)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return os.fspath(path)
