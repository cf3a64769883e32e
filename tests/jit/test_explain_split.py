"""``explain`` of a function split around an eager call (issue 18): two graphs, the split reason with the user's
line, no break and no fallback; the plain text, the summary and the rich view all say so."""

from __future__ import annotations

import io

import numpy as np
from rich.console import Console

import jitgraph
from jitgraph.inspect.render import render


def printing(x):
    y = np.tanh(x) * 2.0
    print("half way", y.shape)
    return y + 1.0


PRINT_LINE = printing.__code__.co_firstlineno + 2


def test_explain_shows_two_graphs_and_the_split_reason(capsys) -> None:
    x = np.linspace(-1.0, 1.0, 8)
    result = jitgraph.explain(printing, backend="cpu")(x)
    assert capsys.readouterr().out == "half way (8,)\n"  # the print ran once, eagerly
    np.testing.assert_allclose(result.output, np.tanh(x) * 2.0 + 1.0, rtol=1e-14)  # the kernels' tanh: <= 4 ulp
    assert result.graph_count == 2 and result.graph_break_count == 0 and result.fallbacks == 0
    assert [(s.lineno, "print" in s.reason) for s in result.split_reasons] == [(PRINT_LINE, True)]
    text = str(result)
    assert "Graph count: 2" in text and "Graph 1:" in text and "Split around eager calls:" in text
    assert f"{__file__}:{PRINT_LINE}" in text
    assert "Split around eager calls:" in result.summary()


def test_rich_view_shows_each_segment_and_the_split(capsys) -> None:
    result = jitgraph.explain(printing, backend="cpu")(np.ones(8))
    capsys.readouterr()
    out = io.StringIO()
    Console(file=out, width=120, record=True).print(render(result))
    view = out.getvalue()
    assert "2 graphs" in view and "0 breaks" in view
    assert "graph 0" in view and "graph 1" in view
    assert "split" in view and f"{PRINT_LINE}" in view
