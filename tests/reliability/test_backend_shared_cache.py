"""Issue 23, item 2: a kernel cache shared by concurrent processes compiles each kernel once between them.

A kernel's first call (Numba's compile and its index save) holds an exclusive ``flock`` on
``kernels/<module>.lock``; a process whose first call overlaps waits, then finds Numba's index and loads. The
cases: two processes started together (a file barrier just before their first calls) on a fresh cache directory,
with a kernel constant no earlier run compiled: one compiles, the other loads; a symlink planted where the lock
file goes is not followed (nothing created at its target, the kernel still compiles); two compiled functions
sharing one kernel in one process count one compile, not two; a lock held too long is waited for only
``LOCK_TIMEOUT_S``, and a filesystem without ``flock`` means no lock (logged once), never a hang. Every process
runs with a timeout."""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import random
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import numpy as np

import jitgraph
from jitgraph.backends.cpu import cache

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 240

SCRIPT = """
import json, os, sys, time
import numpy as np
import jitgraph
from jitgraph.backends.cpu import cache

k, barrier, count = float(sys.argv[1]), sys.argv[2], int(sys.argv[3])

def make(k):
    @jitgraph.compile
    def shared_probe(x):
        return np.sqrt(np.abs(x * k - 0.3141)) + x * 0.2718
    return shared_probe

f = make(k)
x = np.linspace(-2.0, 2.0, 64)
if barrier:  # every process reaches its first call at the same moment
    open(os.path.join(barrier, str(os.getpid())), "w").close()
    deadline = time.monotonic() + 60
    while len(os.listdir(barrier)) < count and time.monotonic() < deadline:
        time.sleep(0.002)
y = f(x)
assert np.allclose(y, np.sqrt(np.abs(x * k - 0.3141)) + x * 0.2718)
print(json.dumps({"stats": cache.STATS}))
"""


def start(cache_dir: Path, k: float, barrier: Path | None = None, count: int = 1) -> subprocess.Popen:
    env = dict(os.environ, JITGRAPH_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT), JITGRAPH_STRICT="1")
    return subprocess.Popen([sys.executable, "-c", SCRIPT, repr(k), str(barrier or ""), str(count)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen) -> dict[str, Any]:
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"timed out after {TIMEOUT_S} s: {err[-3000:]}") from None
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])["stats"]


def test_concurrent_first_calls_compile_once(tmp_path):
    k = 1.0 + random.random()  # a kernel no earlier run compiled
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    procs = [start(tmp_path / "cache", k, barrier, 2) for _ in range(2)]
    stats = [finish(p) for p in procs]
    assert sum(s["compiled"] for s in stats) == 1, stats
    loader = next(s for s in stats if s["compiled"] == 0)
    assert loader["cache_hits"] == 1, stats  # the one that waited loaded what the other compiled
    assert not list((tmp_path / "cache" / "kernels").glob("*.tmp"))
    (lock,) = (tmp_path / "cache" / "kernels").glob("*.lock")
    assert (lock.stat().st_mode & 0o777) == 0o600
    assert finish(start(tmp_path / "cache", k))["compiled"] == 0  # and a worker started later compiles nothing


def test_planted_lock_symlink_is_not_followed(tmp_path):
    k = 1.0 + random.random()
    first = tmp_path / "first"
    assert finish(start(first, k))["compiled"] == 1
    (module,) = (first / "kernels").glob("*.py")  # the module's name depends on the kernel only, not the directory
    kernels = tmp_path / "second" / "kernels"
    kernels.mkdir(parents=True)
    for level in (kernels.parent, kernels):
        level.chmod(0o700)
    victim = tmp_path / "victim"
    (kernels / f"{module.stem}.lock").symlink_to(victim)
    stats = finish(start(tmp_path / "second", k))
    assert stats["compiled"] == 1  # compiled without the lock
    assert not victim.exists()  # nothing was created (or locked) through the link
    assert (kernels / f"{module.stem}.lock").is_symlink()


def test_kernel_shared_by_two_functions_counts_one_compile(tmp_path, monkeypatch):
    monkeypatch.setenv("JITGRAPH_CACHE_DIR", str(tmp_path))
    k = 1.0 + random.random()

    def make() -> Any:
        def twin(x: np.ndarray) -> np.ndarray:
            return np.tanh(x * k) + x * 0.1234
        return jitgraph.compile(twin)

    before = dict(cache.STATS)
    x = np.linspace(-1.0, 1.0, 32)
    for f in (make(), make()):  # two compiled functions; the second reuses the first's dispatcher
        np.testing.assert_allclose(f(x), np.tanh(x * k) + x * 0.1234)
    delta = {name: cache.STATS[name] - before[name] for name in before}
    assert delta["compiled"] == 1 and delta["cache_hits"] == 0, delta


def test_lock_wait_is_bounded_and_missing_flock_is_logged_once(tmp_path, monkeypatch):
    monkeypatch.setenv("JITGRAPH_CACHE_DIR", str(tmp_path))
    module = cache.load_module("lock_probe", f"def lock_probe(x):\n    return x * {random.random()!r}\n", True)
    kernel = types.SimpleNamespace(py_func=module.lock_probe)
    lock = tmp_path / "kernels" / f"{Path(module.__file__).stem}.lock"
    held = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)  # another process compiling, for longer than the wait allows
        monkeypatch.setattr(cache, "LOCK_TIMEOUT_S", 0.3)
        began = time.monotonic()
        with cache.compile_lock(kernel):
            waited = time.monotonic() - began
        assert 0.3 <= waited < 10
    finally:
        os.close(held)

    class NoFlock:  # an NFS mount without lock support
        LOCK_EX, LOCK_NB, LOCK_UN = fcntl.LOCK_EX, fcntl.LOCK_NB, fcntl.LOCK_UN

        @staticmethod
        def flock(fd: int, op: int) -> None:
            raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(cache, "fcntl", NoFlock)
    monkeypatch.setattr(cache, "_no_flock_logged", [])
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = records.append  # type: ignore[method-assign]
    logger, level, disabled = cache._log, cache._log.level, cache._log.disabled
    logger.setLevel(logging.DEBUG)
    logger.disabled = False
    logger.addHandler(handler)
    try:
        for _ in range(2):
            with cache.compile_lock(kernel):
                pass
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.disabled = disabled
    assert sum("flock unavailable" in r.getMessage() for r in records) == 1
