"""``python -m jitgraph``: explain a function in a file, the disk cache, the log topics (run as users run it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SNIPPETS = Path(__file__).with_name("inspect_snippets.py")


def run(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "160", **(env or {})}
    return subprocess.run([sys.executable, "-m", "jitgraph", *args], capture_output=True, text=True, env=full_env,
                          cwd=cwd, timeout=300, check=False)


def test_explain_plain_with_example_factory(tmp_path):
    proc = run("explain", f"{SNIPPETS}:breaks", "--example", "example_breaks", "--backend", "eager", "--plain",
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("sum of h: ")  # the call ran (eagerly, because of the break) before the report
    assert "\nGraph count: 0\nGraph break count: 1\n" in proc.stdout
    assert "inspect_snippets.py:12: print() is a side effect" in proc.stdout


def test_explain_rich_view_and_html_with_default_factory(tmp_path):
    html = tmp_path / "view.html"
    proc = run("explain", f"{SNIPPETS}:step", "--backend", "eager", "--width", "150", "--html", str(html))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "jitgraph explain: step" in out and "1 graphs" in out and "0 breaks" in out  # example_step was used
    assert "fusion group" in out and "shape/dtype" in out and "compile time by phase" in out
    assert "x: ndarray, shape (4, 3), dtype 'float32', layout 'C'" in out  # guards, one line per array
    assert html.exists() and "fusion group" in html.read_text(encoding="utf-8") and f"wrote {html}" in out


def test_explain_errors_are_one_line_with_exit_status_2(tmp_path):
    missing = run("explain", f"{SNIPPETS}:no_such_function")
    assert missing.returncode == 2 and "has no 'no_such_function'" in missing.stderr
    no_args = run("explain", f"{SNIPPETS}:scale")
    assert no_args.returncode == 2 and "scale needs arguments (v)" in no_args.stderr
    assert "example_scale()" in no_args.stderr
    bad_spec = run("explain", str(SNIPPETS))
    assert bad_spec.returncode == 2 and "expected path/to/file.py:function" in bad_spec.stderr
    assert "Traceback" not in missing.stderr + no_args.stderr + bad_spec.stderr


def test_cache_info_and_clear(tmp_path):
    kernels = tmp_path / "kernels"
    (kernels / "__pycache__").mkdir(parents=True)
    (kernels / "fused_add_0_abc.py").write_text("x = 1\n")
    (kernels / "__pycache__" / "fused_add_0_abc.fused_add_0-1.py311.nbi").write_bytes(b"\0" * 1000)
    (tmp_path / "unrelated.txt").write_text("kept")
    env = {"JITGRAPH_CACHE_DIR": str(tmp_path)}
    info = run("cache", "info", env=env)
    assert info.returncode == 0, info.stderr
    assert f"cache directory: {tmp_path}" in info.stdout and "kernel modules:  1" in info.stdout
    assert "files:           2" in info.stdout
    cleared = run("cache", "clear", env=env)
    assert cleared.returncode == 0 and "removed 1 kernel modules (2 files" in cleared.stdout
    assert not kernels.exists() and (tmp_path / "unrelated.txt").read_text() == "kept"
    assert "kernel modules:  0" in run("cache", env=env).stdout  # info is the default action


def test_logs_lists_topics():
    proc = run("logs")
    assert proc.returncode == 0
    for topic in ("graph", "guards", "recompiles", "breaks", "kernels", "perf"):
        assert f"  {topic} " in proc.stdout
