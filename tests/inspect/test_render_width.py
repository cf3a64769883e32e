"""The rich explain view at terminal widths: 80 and 120 columns, snapshots, no line too long, no name broken.

In an 80-column terminal the graph table used to squeeze every column, so ``f32[1024]`` wrapped over two lines and
``elementwise`` over three. These tests render representative results (the Adam update, a graph break, a loop, a
fused softmax) at both widths, compare them with ``snapshots/<case>_<width>.txt`` and check what must hold at any
width: no line is wider than the console, and every type and op name of the graph is printed whole.

The snapshots leave out the kernel sources (they belong to the backends' own tests) and the compile-time tables
(timings vary); the header's compile time is fixed by patching the view's phase times, so its length is stable.
Locations are printed relative to the working directory, so the results are made from the repository root. After
an intended change of the view, run with ``JITGRAPH_UPDATE_SNAPSHOTS=1`` and review the diff of the snapshot files.
"""

from __future__ import annotations

import importlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import inspect_snippets as S
import pytest
from rich.console import Console

import jitgraph
from jitgraph.config import env_flag
from jitgraph.inspect.render import render

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = Path(__file__).parent / "snapshots"
WIDTHS = (80, 120)
CASES = {"adam": "adam_update", "graph_break": "breaks", "loop": "trisolve", "softmax": "softmax"}
# A long compile, as in the issue (``compile 1825.6 ms`` wrapped over two lines at 80 columns).
FIXED_TIMES = {"trace": 0.0123, "passes": 0.0111, "codegen": 0.3174, "numba": 1.4848}
TIMINGS_TITLE = "compile time by phase"
# The module, not the function of the same name that jitgraph.inspect exports.
render_module = importlib.import_module("jitgraph.inspect.render")


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    """One explain result per case, made with the public API from the repository root."""
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        out = {}
        for case, name in CASES.items():
            args, kwargs = getattr(S, f"example_{name}")()
            out[case] = jitgraph.explain(getattr(S, name))(*args, **kwargs)
        return out
    finally:
        os.chdir(here)


@pytest.fixture
def fixed_times(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render_module, "phase_times", lambda result: dict(FIXED_TIMES))


def rendered(result: Any, width: int, show_kernels: bool = True) -> str:
    console = Console(file=io.StringIO(), width=width, record=True, color_system=None)
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        console.print(render(result, show_kernels=show_kernels))
    finally:
        os.chdir(here)
    return console.export_text()


def snapshot_text(text: str) -> str:
    """The view up to its compile-time tables, trailing spaces stripped."""
    text = text.split(TIMINGS_TITLE)[0]
    return "\n".join(line.rstrip() for line in text.splitlines()).rstrip() + "\n"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", CASES)
def test_snapshot(results, fixed_times, case, width):
    text = snapshot_text(rendered(results[case], width, show_kernels=False))
    path = SNAPSHOTS / f"{case}_{width}.txt"
    if env_flag("JITGRAPH_UPDATE_SNAPSHOTS"):
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {path}; run with JITGRAPH_UPDATE_SNAPSHOTS=1 to create it"
    assert text == path.read_text(encoding="utf-8"), f"the {width}-column view of {case} differs from {path}"


@pytest.mark.parametrize("width", (60, *WIDTHS, 160))
@pytest.mark.parametrize("case", CASES)
def test_no_line_is_wider_than_the_console(results, case, width):
    lines = rendered(results[case], width).splitlines()
    too_wide = [line for line in lines if len(line) > width]
    assert not too_wide, f"{len(too_wide)} lines wider than {width}: {too_wide[:3]}"


def graph_tokens(result: Any, wide_text: str) -> set[str]:
    """The op names and types of the result's graphs (from its plain text), and the fused ops' names."""
    plain = str(result)
    ops = set(re.findall(r"= ([a-z_]+)[\[(]", plain))
    types = {t for typ in re.findall(r" : (\S.*)$", plain, flags=re.MULTILINE)
             for t in re.findall(r"[a-z]+\d*\[[\w,]*\]", typ)}
    fused = set(re.findall(r"fused\[[a-z_]+\]", wide_text))
    return ops | types | fused


def whole(token: str, text: str) -> int:
    """How often ``token`` occurs in ``text`` as a whole word (not inside a longer name)."""
    return len(re.findall(rf"(?<![\w\[]){re.escape(token)}(?![\w\[])", text))


@pytest.mark.parametrize("width", (60, *WIDTHS))
@pytest.mark.parametrize("case", CASES)
def test_no_type_or_op_name_is_broken_across_lines(results, fixed_times, case, width):
    result = results[case]
    wide = rendered(result, 400, show_kernels=False)
    narrow = rendered(result, width, show_kernels=False)
    tokens = graph_tokens(result, wide)
    if case != "graph_break":
        assert {"f32[1024]", "f64[4096,1024]", "fused[elementwise]", "fused[reduction]", "loop"} & tokens
    broken = {t: (whole(t, wide), whole(t, narrow)) for t in tokens if whole(t, narrow) != whole(t, wide)}
    assert not broken, f"printed whole at 400 columns but not at {width} (token: (wide, narrow) counts): {broken}"


def cut_at_line_end(lines: list[str], token: str) -> list[str]:
    """Lines ending in a proper prefix of ``token`` (at least 3 characters of it): the token wrapped there."""
    pattern = "|".join(re.escape(token[:j]) for j in range(len(token) - 1, 2, -1))
    return [line for line in lines if re.search(rf"(?<![\w\[])({pattern})$", line.rstrip(" │"))]


def test_header_is_one_line_at_80_columns(results, fixed_times):
    text = rendered(results["adam"], 80)
    header = text.splitlines()[1]
    assert "compile 1825.6 ms" in header and "18 ops" in header and text.splitlines()[2].startswith("╰")


def test_graph_table_keeps_types_and_op_names_whole_at_80_columns(results):
    lines = rendered(results["adam"], 80).splitlines()
    typed = [line for line in lines if "f32[1024]" in line]
    assert len(typed) >= 20  # every array node of the Adam graph, each on one line
    assert not cut_at_line_end(lines, "f32[1024]") and not cut_at_line_end(lines, "fused[elementwise]")
    assert any("fused[elementwise]" in line for line in lines)
    header = next(line for line in lines if line.startswith("node"))
    assert ("source" in header or "line" in header) and "fusion group" not in header  # the group goes first


def test_cli_explain_of_the_adam_example_in_80_columns(tmp_path):
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": str(ROOT), "JITGRAPH_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "jitgraph", "explain", "examples/adam.py:adam_update"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert re.search(r"compile \d+\.\d+ m?s", lines[1])  # the header's compile time, on the header's line
    assert sum("f32[1024]" in line for line in lines) >= 20
    for token in ("f32[1024]", "fused[elementwise]", "elementwise", "pyfloat[]"):
        assert not cut_at_line_end(lines, token), token
