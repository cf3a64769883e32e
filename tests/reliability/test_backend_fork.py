"""Issue 17, item 3: fork after a large call. The kernel thread pool's threads do not survive ``os.fork()``; the
child must get a fresh pool (``os.register_at_fork``) instead of waiting forever on the parent's. Each case runs in
a subprocess with a timeout, so a hang fails the test instead of hanging the suite."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 240  # a cold compile on a loaded two-core machine, twice over

PARENT = """
import os, sys
import numpy as np
import jitgraph
from jitgraph.backends.cpu import threads

def f(x):
    return x * 2.0 + 1.0

g = jitgraph.compile(f)
x = np.arange(4_000_000, dtype=np.float64)   # 4e6 elements, 2 threads: the parallel path
assert threads.workers() == 2
for _ in range(2):                           # the first call compiles serially; the second uses the pool
    assert np.array_equal(g(x), f(x))
assert threads._pool is not None, "the large call did not use the thread pool"
"""

FORK = PARENT + """
pid = os.fork()
if pid == 0:
    import signal
    signal.alarm(120)                        # a hung child dies on its own (the default SIGALRM action)
    ok = np.array_equal(g(x + 1.0), f(x + 1.0)) and np.array_equal(g(x), f(x))
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
print("ok")
"""

POOL = PARENT + """
import multiprocessing

def work(k):
    import signal
    signal.alarm(120)                        # a hung worker dies on its own
    y = np.full(4_000_000, float(k))
    return bool(np.array_equal(g(y), f(y)))

with multiprocessing.get_context("fork").Pool(2) as pool:
    assert pool.map(work, range(4), chunksize=1) == [True] * 4
assert np.array_equal(g(x), f(x))            # and the parent's pool still works
print("ok")
"""


def run(code: str, tmp_path: Path) -> None:
    env = dict(os.environ, JITGRAPH_NUM_THREADS="2", JITGRAPH_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          check=False, timeout=TIMEOUT_S)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]


def test_fork_after_a_large_call(tmp_path: Path) -> None:
    run(FORK, tmp_path)


def test_fork_pool_after_a_large_call(tmp_path: Path) -> None:
    run(POOL, tmp_path)
