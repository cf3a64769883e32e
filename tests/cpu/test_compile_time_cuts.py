"""Cold-compile cuts: the garbage collector waits while a kernel compiles, and reduction sweep helpers are compiled
without the Python and C entry points that only a caller outside the kernel would need (results stay eager's)."""

from __future__ import annotations

import gc
import threading

import graphs
import numpy as np
import pytest
from helpers_cpu import check_against_eager, cpu_compile

from jitgraph.backends.cpu import launch
from jitgraph.backends.cpu.compile_gc import collector_paused


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_collector_paused_nests_and_restores(collector_on):
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer compile is still running
    assert gc.isenabled()


def test_collector_paused_restores_after_an_error(collector_on):
    with pytest.raises(ValueError), collector_paused():
        raise ValueError("compile failed")
    assert gc.isenabled()


def test_collector_left_disabled_when_the_program_disabled_it(collector_on):
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_collector_paused_across_threads(collector_on):
    """Two overlapping compiles on two threads: the collector comes back only when the last one ends."""
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with collector_paused():
            inside.set()
            release.wait(10)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(10)
    with collector_paused():
        pass
    assert not gc.isenabled()  # the other thread's compile is still running
    release.set()
    t.join(10)
    assert gc.isenabled()


def test_first_call_compiles_with_the_collector_paused(collector_on, monkeypatch):
    seen: list[bool] = []
    plan = launch.GroupKernel._plan

    def spy(self, *args):
        seen.append(gc.isenabled())
        return plan(self, *args)

    monkeypatch.setattr(launch.GroupKernel, "_plan", spy)
    g = graphs.softmax((3, 7))
    check_against_eager(g, [np.random.default_rng(0).standard_normal((3, 7)).astype(np.float32)])
    assert seen and not any(seen)
    assert gc.isenabled()


def test_sweep_helper_has_no_entry_points_and_matches_eager():
    """A row softmax's sum sweep is a helper the kernel calls: compiled without wrappers, same values."""
    g = graphs.softmax((5, 300))
    compiled = cpu_compile(g)
    x = np.random.default_rng(1).standard_normal((5, 300)).astype(np.float32)
    check_against_eager(g, [x], compiled=compiled)
    (kernel,) = compiled.kernels.values()
    helpers = [line for line in kernel.source.splitlines() if "fastmath={'reassoc'}" in line]
    assert helpers and all("no_cpython_wrapper=True" in h and "no_cfunc_wrapper=True" in h for h in helpers)
