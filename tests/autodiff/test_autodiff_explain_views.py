"""The autodiff part of ``explain`` in every view: plain text, rich (any width) and HTML show what was
differentiated and which forward values the backward saves and which it recomputes."""

from __future__ import annotations

import io

import numpy as np
from rich.console import Console

import jitgraph
from jitgraph.inspect.render import autodiff, render

R = np.random.default_rng(5)


def _explained():
    params = {"W": R.normal(size=(4, 5)), "b": R.normal(size=5), "V": R.normal(size=(5, 2))}

    def loss(params, x):
        h = np.maximum(x @ params["W"] + params["b"], 0.0)
        return np.exp(h @ params["V"]).sum()

    g = jitgraph.grad(loss, backend="eager")
    g(params, R.normal(size=(6, 4)))
    return g.explain()


def _printed(renderable, width: int) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.file.getvalue()


def test_rich_view_has_the_autodiff_panel_with_saved_and_recomputed_values() -> None:
    result = _explained()
    roles = {role for role, _, _ in result.autodiff_values}
    assert roles == {"saved", "recomputed"}
    for width in (80, 140):
        text = _printed(autodiff(result), width)
        assert "autodiff" in text and "grad with respect to: params['W']" in text and "min-cut" in text
        assert "saved" in text and "recomputed" in text and "maximum" in text and "f64[6,5]" in text
        assert max(len(line) for line in text.splitlines()) <= width
    assert "recomputed" in _printed(render(result, show_kernels=False), 100)


def test_html_view_has_the_autodiff_panel() -> None:
    html = _explained()._repr_html_()
    assert "autodiff" in html and "recomputed" in html and "saved" in html


def test_a_plain_compiled_function_has_no_autodiff_panel() -> None:
    f = jitgraph.compile(lambda x: np.exp(x).sum(), backend="eager")
    f(np.ones(3))
    assert autodiff(f.explain()) is None
