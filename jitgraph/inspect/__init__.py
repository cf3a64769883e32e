"""Inspection of what jitgraph did: the explain data and its views.

Layers inside the package, bottom up: ``result.py`` (:class:`ExplainResult`, plain data with a plain-text
``__str__``, built by the driver's ``jitgraph.jit.explain_builder``), ``collect.py`` (the facts the views show:
table rows, fusion groups, kernel sources, phase times), then the views: ``render.py`` (rich), ``html.py``,
``source_view.py``. Import a view from its module (``from jitgraph.inspect.render import render``).

The views load rich and pygments (~75 ms), so this package imports only the data: ``import jitgraph`` needs
:class:`ExplainResult`, not its rendering. ``result.show()``, rich's ``print`` and Jupyter load the views on use.
"""

from __future__ import annotations

from typing import Any

from jitgraph.inspect.result import EntryView, ExplainResult

__all__ = ["EntryView", "ExplainResult", "show"]


def show(result: ExplainResult, console: Any = None) -> None:
    """Print the rich view to ``console`` (stdout by default)."""
    result.show(console)
