"""Inspection views of what jitgraph did: the rich explain view, its HTML export and annotated source.

``jitgraph.explain(fn)(*args)`` returns an :class:`~jitgraph.explain.ExplainResult`; ``print`` gives plain text,
``result.show()`` (or rich's ``print``, or Jupyter) gives :func:`render`'s view, ``result.save_html(path)`` writes
it to a file. :func:`explain_compiled` builds the same result from a compiled function that has already run, which
is how recompiles become visible.
"""

from __future__ import annotations

from typing import Any

from jitgraph.inspect.collect import explain_compiled, phase_times
from jitgraph.inspect.html import save_html, to_html
from jitgraph.inspect.render import render

__all__ = ["explain_compiled", "phase_times", "render", "save_html", "show", "to_html"]


def show(result: Any, console: Any = None) -> None:
    """Print the rich view to ``console`` (stdout by default)."""
    if console is None:
        from rich.console import Console

        console = Console()
    console.print(render(result))
