"""Issue 17, item 2 (backend part): with an empty cache, threads compiling the same kernel at once must never see
a half-executed kernel module (``AttributeError: module 'jitgraph_kernel_...' has no attribute 'fused_...'``).

Two different compiled functions that generate the same kernel, four threads each, released together by a
barrier, in a fresh process (a cold ``sys.modules``) with a cold ``JITGRAPH_CACHE_DIR``. Numba's ``njit``
decorator is slowed down so that executing a kernel module takes 0.3 s: every thread then arrives while the
first one is still executing it. Subprocess and thread joins have timeouts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 240

SCRIPT = """
import threading, time
import numba
import numpy as np
import jitgraph

njit = numba.njit
def slow_njit(*args, **kwargs):          # executing a kernel module now takes 0.3 s per kernel function
    inner = njit(*args, **kwargs)
    def decorate(fn):
        if fn.__module__.startswith("jitgraph_kernel"):  # not jitgraph's own helpers, loaded lazily meanwhile
            time.sleep(0.3)
        return inner(fn)
    return decorate
numba.njit = slow_njit

def f(x, y):
    return np.tanh(x * y) + 1.0

def g(a, b):                             # the same computation under other names: the same kernel source
    return np.tanh(a * b) + 1.0

fs = [jitgraph.compile(f), jitgraph.compile(g)]
x = np.linspace(0.0, 1.0, 256)
y = np.linspace(1.0, 2.0, 256)
expected = np.tanh(x * y) + 1.0
barrier = threading.Barrier(8)
errors, results = [], [None] * 8

def body(i):
    try:
        barrier.wait(timeout=60)
        results[i] = fs[i % 2](x, y)
    except BaseException as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join(timeout=180)
assert not any(t.is_alive() for t in threads), "a thread did not finish"
assert not errors, errors
for r in results:
    np.testing.assert_allclose(r, expected, rtol=1e-12)
print("ok")
"""


def test_cold_cache_thread_storm_on_one_kernel(tmp_path: Path) -> None:
    env = dict(os.environ, JITGRAPH_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    env["JITGRAPH_STRICT"] = "1"  # a backend error raises in its thread instead of falling back to eager
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=False,
                          timeout=TIMEOUT_S)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "has no attribute" not in proc.stderr and "eager" not in proc.stderr, proc.stderr[-3000:]
    assert len(list((tmp_path / "cache" / "kernels").glob("*.py"))) == 1
