"""The disk cache: a new process compiles nothing, corrupt files are rebuilt, concurrent writers are safe, the
directory is private, and ``cache=False`` writes nothing."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import graphs
import numpy as np
from helpers_cpu import cpu_compile

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import json, sys
sys.path.insert(0, {tests!r})
import numpy as np, graphs
from helpers_cpu import cpu_compile
from jitgraph.backends.cpu import cache
g = graphs.softmax((4, 8))
(out,) = cpu_compile(g)([np.arange(32, dtype=np.float32).reshape(4, 8)])
print(json.dumps({{"stats": cache.STATS, "sum": float(out.sum())}}))
"""


def run_process(cache_dir: Path) -> subprocess.Popen:
    env = dict(os.environ, JITGRAPH_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT))
    code = SCRIPT.format(tests=str(Path(__file__).parent))
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def result(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    return json.loads(out.strip().splitlines()[-1])


def test_new_process_compiles_nothing_and_corruption_is_rebuilt(tmp_path):
    cold = result(run_process(tmp_path))
    assert cold["stats"]["compiled"] == 1 and cold["stats"]["modules_written"] == 1
    warm = result(run_process(tmp_path))
    assert warm["stats"]["compiled"] == 0 and warm["stats"]["modules_written"] == 0
    assert warm["stats"]["cache_hits"] == 1 and warm["sum"] == cold["sum"]
    assert stat.S_IMODE((tmp_path / "kernels").stat().st_mode) == 0o700

    # Truncated Numba files: detected while loading, deleted, recompiled.
    for f in (tmp_path / "kernels" / "__pycache__").iterdir():
        f.write_bytes(f.read_bytes()[:50])
    again = result(run_process(tmp_path))
    assert again["stats"]["compiled"] == 1 and again["sum"] == cold["sum"]
    # A truncated kernel module: its text no longer matches its hash, so it is rewritten.
    (module,) = (tmp_path / "kernels").glob("*.py")
    module.write_text(module.read_text()[:200])
    fixed = result(run_process(tmp_path))
    assert fixed["stats"]["modules_written"] == 1 and fixed["sum"] == cold["sum"]
    assert result(run_process(tmp_path))["stats"]["compiled"] == 0


def test_concurrent_writers(tmp_path):
    procs = [run_process(tmp_path) for _ in range(2)]
    sums = [result(p)["sum"] for p in procs]
    assert sums[0] == sums[1]
    assert not list((tmp_path / "kernels").glob("*.tmp"))
    assert result(run_process(tmp_path))["stats"]["compiled"] == 0


def test_cache_false_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("JITGRAPH_CACHE_DIR", str(tmp_path / "off"))
    compiled = cpu_compile(graphs.w1(16), cache=False)
    xs = [np.full(16, 0.5, np.float32)] * 3
    (out,) = compiled(xs)
    np.testing.assert_allclose(out, np.tanh(xs[0] * xs[1] + xs[2]) * 0.5 + xs[0], rtol=1e-6)
    assert not (tmp_path / "off").exists()
