"""Issue 17, item 2: threads. A compiled function called from many threads at once must compile each guard set
once (a per-function compile lock), keep exact statistics and recompile reasons, and never hand a thread a
half-built kernel. Every thread is joined with a timeout, so a deadlock fails the test instead of hanging it."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
import pytest

import jitgraph
import jitgraph.jit.function as driver_function
from tests.thread_storm import JOIN_S, storm


@pytest.fixture
def slow_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every trace take 50 ms, so that eight threads released together are all inside a first compile at
    once (without the compile lock each of them compiles its own entry)."""
    original = driver_function.trace_stage

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.05)
        return original(*args, **kwargs)

    monkeypatch.setattr(driver_function, "trace_stage", slow)


def axpy(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return a * b + c


@pytest.mark.parametrize("backend", ["eager", "cpu"])
def test_eight_first_calls_of_one_shape_make_one_entry(backend: str, slow_trace: None) -> None:
    f = jitgraph.compile(axpy, backend=backend, cache_limit=4)
    a, b, c = (np.arange(16.0) + k for k in range(3))
    results = storm(8, lambda i: f(a, b, c))
    for r in results:
        np.testing.assert_array_equal(r, axpy(a, b, c))
    info = f.cache_info()
    assert info.entries == 1 and len(f.entries) == 1, info
    assert info.misses == 1 and info.hits == 7 and info.recompiles == 0, info
    assert f.recompile_reasons() == []
    assert all(e.mode == "graph" for e in f.entries)


def decay(x: np.ndarray, t: int) -> np.ndarray:
    return x * (1.0 - 0.9 ** t)


def test_threads_with_different_ints_keep_consistent_reasons(slow_trace: None) -> None:
    """Threads calling f(x, t) with different t: the first recompile makes t a runtime value. Before the lock, a
    thread could find the int changed while no recompile reason had been recorded (IndexError from
    ``self._reasons[-1]``)."""
    f = jitgraph.compile(decay, backend="eager")
    x = np.linspace(0.0, 1.0, 8)
    results = storm(8, lambda i: [f(x, t) for t in (i + 1, i + 9, i + 17)])
    for i, rs in enumerate(results):
        for t, r in zip((i + 1, i + 9, i + 17), rs):
            np.testing.assert_allclose(r, decay(x, t), rtol=1e-12)
    info = f.cache_info()
    reasons = f.recompile_reasons(with_site=True)
    assert info.recompiles == len(reasons) == len(f.entries) - 1, (info, reasons)
    assert info.hits + info.misses == 24, info
    assert len(f.entries) <= 2, [e.mode for e in f.entries]  # the static t=... entry and the dynamic one


def test_counters_are_exact_under_a_warm_storm() -> None:
    f = jitgraph.compile(axpy, backend="eager")
    a = np.ones(4)
    f(a, a, a)
    storm(8, lambda i: [f(a, a, a) for _ in range(2000)])
    info = f.cache_info()
    assert info.hits == 8 * 2000 and info.misses == 1 and info.entries == 1, info


def make_kernel_fn(salt: float) -> Callable[..., Any]:
    """A function whose kernels are new to this process (the constant is in the kernel source), so a storm
    really loads kernel modules for the first time."""
    namespace: dict[str, Any] = {"np": np}
    exec(  # noqa: S102 - a test-local function with a fresh constant
        f"def step(x, y, t):\n"
        f"    z = x * {salt!r} + y\n"
        f"    return np.sqrt(z * z + 1.0) * (1.0 - 0.5 ** t)\n", namespace)
    return namespace["step"]


SHAPES = [(7,), (3, 5), (64,), (2, 3, 4)]


def mixed_work(fs: list[Callable[..., Any]], fn: Callable[..., Any]) -> Callable[[int], list[tuple[Any, Any]]]:
    """Thread i calls the compiled functions in turn with mixed shapes and ints; returns (compiled, eager) pairs."""
    rng = np.random.default_rng(0)
    data = {s: (rng.standard_normal(s), rng.standard_normal(s)) for s in SHAPES}

    def work(i: int) -> list[tuple[Any, Any]]:
        out = []
        for k in range(6):
            x, y = data[SHAPES[(i + k) % len(SHAPES)]]
            t = 1 + (i * 7 + k) % 5
            out.append((fs[(i + k) % len(fs)](x, y, t), fn(x, y, t)))
        return out

    return work


def check_storm(fs: list[Any], pairs_per_thread: list[list[tuple[Any, Any]]]) -> None:
    for pairs in pairs_per_thread:
        for got, want in pairs:
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    for f in fs:
        assert all(e.mode == "graph" for e in f.entries), [str(e.break_reason) for e in f.entries]
        info = f.cache_info()
        assert info.fallbacks == 0 and info.recompiles == len(f.recompile_reasons()), info
        keys = [(e.key, e.traced.guard_texts) for e in f.entries]
        assert len(keys) == len({repr(k) for k in keys}), "two entries for one guard set"


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_storm_one_function_mixed_shapes_and_ints(warm: bool, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight threads share one compiled function: mixed shapes and ints (t becomes a runtime value on its first
    change), a cache directory that starts empty, kernels new to this process. Cold: the storm makes every
    compile; warm: one thread compiled them all first. Every result equals NumPy's, nothing is demoted to eager,
    no guard set is compiled twice, and no thread sees a half-loaded kernel module."""
    monkeypatch.setenv("JITGRAPH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("JITGRAPH_STRICT", "1")  # a backend error raises instead of falling back to eager
    fn = make_kernel_fn(1.0 + random.random())
    fs = [jitgraph.compile(fn, backend="cpu")]
    work = mixed_work(fs, fn)
    if warm:
        work(0)
    check_storm(fs, storm(8, work))


@pytest.fixture
def slow_kernel_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every kernel module take 0.5 s more to execute (its ``@njit`` decorator sleeps first), so that a second
    thread asking for the same module arrives while the first is still executing it. A backend that puts the module
    in ``sys.modules`` before it finished hands that thread a module without its kernel (``AttributeError: module
    'jitgraph_kernel_...' has no attribute 'fused_...'``)."""
    original = numba.njit

    def njit(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.5)
        return original(*args, **kwargs)

    monkeypatch.setattr(numba, "njit", njit)


def test_storm_functions_sharing_kernels(tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                         slow_kernel_module: None) -> None:
    """Eight threads, eight compiled functions of one source (so the same kernels: each function's compile lock
    orders nothing between them), a cold cache directory, kernels new to this process. The kernel cache must hand
    out a module only once it is complete (backends/cpu/cache.py)."""
    monkeypatch.setenv("JITGRAPH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("JITGRAPH_STRICT", "1")
    fn = make_kernel_fn(1.0 + random.random())
    fs = [jitgraph.compile(fn, backend="cpu") for _ in range(8)]
    check_storm(fs, storm(8, mixed_work(fs, fn)))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_while_another_thread_compiles() -> None:
    """A process forked while another thread holds a function's compile lock: the child has no such thread, so
    the lock must be new there, or the child's first miss waits forever. The child is bounded by a timeout."""
    f = jitgraph.compile(axpy, backend="eager")
    a = np.ones(4)
    f(a, a, a)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with f._lock:
            held.set()
            release.wait(JOIN_S)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert held.wait(JOIN_S)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork() of a multi-threaded process
            pid = os.fork()
        if pid == 0:  # the child: a miss (new shape), then exit without running pytest's teardown
            code = 1
            try:
                b = np.ones(6)
                code = 0 if np.array_equal(f(b, b, b), axpy(b, b, b)) else 2
            finally:
                os._exit(code)
        deadline = time.monotonic() + 60.0
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail("the forked child hung on the compile lock")
            time.sleep(0.05)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    finally:
        release.set()
        holder.join(JOIN_S)
