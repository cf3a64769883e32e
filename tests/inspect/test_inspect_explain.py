"""The explain views: plain-text snapshots (a graph break, a recompile), the rich rendering, the HTML file.

Snapshots live in ``snapshots/``; paths and timings are normalised. After an intended change of the output, run
with ``JITGRAPH_UPDATE_SNAPSHOTS=1`` and review the diff of the snapshot files.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import inspect_snippets as S
import numpy as np
import pytest
from rich.console import Console

import jitgraph
from jitgraph import device_arrays
from jitgraph.inspect.collect import compact_guards, graph_views, phase_times
from jitgraph.inspect.hints import DEFAULT_HINT, hint_for
from jitgraph.inspect.html import to_html
from jitgraph.inspect.render import render

SNAPSHOTS = Path(__file__).parent / "snapshots"
HERE = os.path.basename(__file__)


def normalise(text: str) -> str:
    text = text.replace(os.path.dirname(S.__file__) + os.sep, "")
    text = re.sub(r"\d+\.\d+ ms", "<t> ms", text)
    text = re.sub(r", pass:\w+ <t> ms", "", text)  # the pipeline's pass list belongs to the passes' own tests
    return re.sub(rf"@ \S*{re.escape(HERE)}:\d+", f"@ {HERE}:<line>", text)


def check_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / f"{name}.txt"
    text = normalise(text) + "\n"
    if os.environ.get("JITGRAPH_UPDATE_SNAPSHOTS") == "1":
        path.write_text(text)
    assert path.exists(), f"no snapshot {path}; run with JITGRAPH_UPDATE_SNAPSHOTS=1 to create it"
    assert text == path.read_text(), f"explain output differs from {path}"


def rich_text(result: object, width: int = 120) -> str:
    console = Console(file=io.StringIO(), width=width, record=True, color_system=None)
    console.print(render(result))
    return console.export_text()


@pytest.fixture(scope="module")
def break_result():
    # Whether the all-eager function enters eager mode (and explain says so) depends on whether this process could
    # hold GPU arrays (numba.cuda imported by an earlier test, jit/eager_mode.py); the snapshot is of that state,
    # pinned here so the test gives the same text alone and in the whole suite.
    x, w = S.example_breaks()[0]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(device_arrays, "may_exist", lambda: True)
        return jitgraph.explain(S.breaks, backend="eager")(x, w)


@pytest.fixture(scope="module")
def recompiled():
    compiled = jitgraph.compile(S.step, backend="eager")
    x, w, lr = S.example_step()
    compiled(x, w, lr)
    compiled(np.ones((8, 3), np.float32), w, lr)  # RECOMPILE-SITE
    return compiled


@pytest.fixture(scope="module")
def cpu_result():
    """One explain with the CPU backend (one fused kernel): shared by the kernel, HTML and timing tests."""
    return jitgraph.explain(S.step, backend="cpu")(*S.example_step())


def test_plain_text_of_a_graph_break(break_result):
    text = str(break_result)
    check_snapshot("graph_break", text)
    np.testing.assert_allclose(break_result.output, S.breaks(*S.example_breaks()[0]))


def test_plain_text_of_a_recompile(recompiled):
    result = recompiled.explain()
    check_snapshot("recompile", str(result))
    line = next(k for k, text in enumerate(Path(__file__).read_text().splitlines(), 1) if "# RECOMPILE-SITE" in text)
    assert recompiled.recompile_reasons() == ["x.shape[0]: 4 -> 8 (x.shape[0] now dynamic)"]
    (reason,) = recompiled.recompile_reasons(with_site=True)
    assert reason.startswith("x.shape[0]: 4 -> 8 (x.shape[0] now dynamic) @ ") and reason.endswith(f"{HERE}:{line}")
    info = recompiled.cache_info()
    assert (info.misses, info.recompiles, info.entries) == (2, 1, 2)


def test_rich_view_marks_the_break_line_with_reason_and_hint(break_result):
    text = rich_text(break_result)
    lines = text.splitlines()
    (marked,) = [line for line in lines if "✗" in line and "print(\"sum of h:\", h.sum(), file=None)" in line]
    assert "12" in marked  # the break's line number, in the gutter
    assert "graph break: print() is a side effect" in text
    assert hint_for(break_result.break_reasons[0].reason).split(":")[0] in text
    assert "1 breaks" in text and "0 graphs" in text and "1 fallbacks" in text


def test_rich_view_of_a_recompile_lists_both_entries_and_the_change(recompiled):
    text = rich_text(recompiled.explain(), width=160)
    assert "x.shape[0]: 4 -> 8 (x.shape[0] now dynamic) @" in text and "1 recompiles" in text
    assert "entry 0: runs the compiled graph" in text and "entry 1: runs the compiled graph" in text
    assert "x: ndarray, shape (4, 3)" in text and "x: ndarray, shape (8, 3)" in text
    assert "graph 0" in text and "graph 1" in text


def test_rich_view_of_cpu_graph_shows_table_fusion_kernels_and_phases(cpu_result):
    text = rich_text(cpu_result, width=200)
    (view,) = graph_views(cpu_result)
    (group,) = view.groups
    assert group.kind == "matmul_epilogue" and group.ops[:3] == ["matmul", "tanh", "sum"]
    member_rows = [r for r in view.rows if r.depth == 1]
    assert [r.op for r in member_rows][:2] == ["matmul", "tanh"] and all(r.group == group.name for r in member_rows)
    assert any(r.source == "inspect_snippets.py:18" for r in member_rows)  # np.tanh(x @ w)
    for header in ("node", "op", "inputs", "shape/dtype", "fusion group", "source"):
        assert header in text
    assert f"kernel {group.name}" in text and f"def {group.name}(" in text  # the generated source
    assert "● " in text and "step(x, w, lr)" in text  # captured lines in the source panel
    assert "compile time by phase" in text and "numba" in text and "codegen" in text


def test_phase_times_split_backend_into_codegen_and_numba(cpu_result):
    times = phase_times(cpu_result)
    assert set(times) == {"trace", "passes", "codegen", "numba"}
    assert all(v >= 0 for v in times.values())
    assert times["trace"] > 0 and times["passes"] > 0 and times["codegen"] > 0
    (compiled,) = cpu_result.compiled_graphs  # the backend's own account, through the protocol
    assert times["numba"] == pytest.approx(compiled.compile_times()["numba"]) and times["numba"] > 0


def test_save_html_writes_the_graph_table(cpu_result, tmp_path):
    path = tmp_path / "explain.html"
    cpu_result.save_html(path)
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "jitgraph explain: step" in page
    for text in ("fusion group", "shape/dtype", "matmul", "f32[4,5]", "compile time by phase"):
        assert text in page, text
    (view,) = graph_views(cpu_result)
    assert view.groups[0].name in page


def test_jupyter_html_is_a_fragment(break_result):
    fragment = break_result._repr_html_()
    assert fragment.startswith("<pre") and "<html" not in fragment and "graph break" in fragment
    assert to_html(break_result).startswith("<!DOCTYPE html>")


def test_str_stays_plain_text(break_result):
    text = str(break_result)
    assert "\x1b[" not in text and "╭" not in text


def test_hints_come_from_the_table():
    assert "np.where" in hint_for("branch on a value computed from array data (data-dependent control flow)")
    assert "outside" in hint_for("print() is a side effect")
    assert hint_for("something nobody wrote a hint for") == DEFAULT_HINT


def test_source_view_survives_functions_without_source():
    namespace: dict = {}
    exec("import numpy as np\ndef f(x):\n    return np.exp(x)\n", namespace)  # noqa: S102 - no file behind it
    result = jitgraph.explain(namespace["f"], backend="eager")(np.ones(3))
    text = rich_text(result)
    assert "graph 0" in text and "exp" in text and "source:" not in text


def test_array_guards_are_compacted_to_one_line_per_array():
    texts = ["type(x) is ndarray", "x.shape == (4, 3)", "x.dtype == 'float32'", "x.layout == 'C'",
             "type(lr) is float", "type(p['w']) is ndarray", "p['w'].shape == (3,)", "np is module numpy"]
    assert compact_guards(texts) == ["x: ndarray, shape (4, 3), dtype 'float32', layout 'C'", "type(lr) is float",
                                     "p['w']: ndarray, shape (3,)", "np is module numpy"]
