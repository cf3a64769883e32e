"""JITGRAPH_LOGS topics: each one logs what it promises, at the place it happens; the compile spinner nests."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import inspect_snippets as S
import numpy as np
import pytest

import jitgraph
from jitgraph import logs, progress

ROOT = Path(__file__).resolve().parents[2]


def records(caplog: pytest.LogCaptureFixture, topic: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == f"jitgraph.{topic}"]


@pytest.fixture
def topics(caplog):
    for topic in logs.TOPICS:
        caplog.set_level(logging.DEBUG, logger=f"jitgraph.{topic}")
    return caplog


def test_graph_guards_perf_and_kernel_topics_on_a_cpu_compile(topics):
    f = jitgraph.compile(S.step, backend="cpu")
    x, w, lr = S.example_step()
    np.testing.assert_allclose(f(x, w, lr), S.step(x, w, lr), rtol=1e-5)
    (graph,) = records(topics, "graph")
    assert "matmul(%0, %1) : f32[4,5]" in graph  # the captured IR, printed
    (guards,) = records(topics, "guards")
    assert "x.shape == (4, 3)" in guards and "type(lr) is float" in guards
    perf = "\n".join(records(topics, "perf"))
    assert "pass times" in perf and "fuse" in perf  # the pipeline's per-pass times
    assert "compiled step in trace" in perf  # the entry's phases
    # The kernel's source is logged where it is generated: once per process (an earlier test that compiled
    # S.step already built it; the next test makes a kernel of its own to check the topic).
    kernels = records(topics, "kernels")
    assert all("@njit" in k and "def fused_matmul_tanh_sum" in k for k in kernels) and len(kernels) <= 1
    assert records(topics, "recompiles") == [] and records(topics, "breaks") == []


def test_kernel_topic_logs_generated_source_when_a_kernel_is_built(topics):
    # A fresh kernel source (new constant) so the source is generated in this process.
    def kernel_fn(a):
        return np.exp(a) * 3.0 + 0.125

    f = jitgraph.compile(kernel_fn, backend="cpu")
    np.testing.assert_allclose(f(np.ones(5)), kernel_fn(np.ones(5)))
    (kernel,) = [k for k in records(topics, "kernels") if "0.125" in k]
    assert "@njit" in kernel and "def fused_" in kernel
    assert any("numba" in p and "codegen" in p for p in records(topics, "perf"))


def test_breaks_and_recompiles_topics(topics):
    f = jitgraph.compile(S.breaks, backend="eager")
    f(*S.example_breaks()[0])
    (brk,) = records(topics, "breaks")
    assert "graph break in breaks at" in brk and "inspect_snippets.py:12" in brk
    g = jitgraph.compile(S.step, backend="eager")
    x, w, lr = S.example_step()
    g(x, w, lr)
    g(x[:2], w, lr)
    site = sys._getframe().f_lineno - 1
    (recompile,) = [r for r in records(topics, "recompiles") if "recompiling" in r]
    (symbolic,) = [r for r in records(topics, "recompiles") if "symbolic" in r]
    assert "traced with symbolic sizes (x.shape[0] = s0)" in symbolic
    assert "recompiling step" in recompile and "x.shape[0]: 4 -> 2 (x.shape[0] now dynamic) @ " in recompile
    assert recompile.endswith(f"{os.path.basename(__file__)}:{site}")


def test_enable_disable_and_unknown_topics(caplog):
    try:
        assert logs.enable("graph, perf") == ["graph", "perf"]
        assert {"graph", "perf"} <= set(logs.enabled_topics())
        assert logging.getLogger("jitgraph.graph").level == logging.DEBUG
        with caplog.at_level(logging.WARNING, logger="jitgraph"):
            assert logs.enable("graph,nonsense") == ["graph"]
        assert any("unknown topic(s) nonsense" in r.getMessage() for r in caplog.records)
        assert logs.parse("all")[0] == list(logs.TOPICS)
    finally:
        logs.disable()
    assert logging.getLogger("jitgraph.graph").level == logging.NOTSET


def test_jitgraph_logs_environment_variable_in_a_fresh_process(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("import numpy as np, jitgraph\n"
                      "f = jitgraph.compile(lambda x: np.exp(x) + 1, backend='eager')\n"
                      "f(np.ones(3)); f(np.ones(4))\n")
    env = {**os.environ, "JITGRAPH_LOGS": "graph,recompiles", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert "[jitgraph.graph] jitgraph: traced graph of" in proc.stderr and "exp(%0)" in proc.stderr
    assert "[jitgraph.recompiles] jitgraph: recompiling" in proc.stderr and "x.shape[0]: 3 -> 4" in proc.stderr
    assert "[jitgraph.guards]" not in proc.stderr  # topics not asked for stay quiet
    assert "\x1b[" not in proc.stderr  # not a terminal: plain text, no rich markup


def test_spinner_is_off_without_a_terminal(monkeypatch):
    monkeypatch.delenv("JITGRAPH_PROGRESS", raising=False)
    assert not progress.enabled()  # pytest captures stderr: not a TTY
    with progress.compiling("kernel k", delay=0.0):
        assert progress._state["timer"] is None


def test_spinner_nests_and_cleans_up(monkeypatch):
    monkeypatch.setenv("JITGRAPH_PROGRESS", "1")
    started = threading.Event()
    monkeypatch.setattr(progress, "_start", started.set)
    with progress.compiling("train_step", delay=0.0):
        assert started.wait(5)
        with progress.compiling("kernel fused_add_0"):
            assert [what for _, what in progress._labels] == ["train_step", "kernel fused_add_0"]
            assert progress._message() == "jitgraph: compiling kernel fused_add_0 ..."
        assert progress._message() == "jitgraph: compiling train_step ..."
    assert progress._labels == [] and progress._state == {"status": None, "timer": None}


def test_spinner_shows_status_when_forced(monkeypatch):
    monkeypatch.setenv("JITGRAPH_PROGRESS", "1")
    with progress.compiling("outer", delay=0.0):
        for _ in range(200):
            if progress._state["status"] is not None:
                break
            threading.Event().wait(0.01)
        assert progress._state["status"] is not None
        with progress.compiling("inner"):
            pass
    assert progress._state["status"] is None
