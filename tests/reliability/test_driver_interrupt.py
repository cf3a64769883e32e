"""Issue 17, item 5: a KeyboardInterrupt during the first compile of an entry must leave no entry behind; the next
call compiles afresh and gives the right answer. The signal is replaced by a deterministic stand-in: a
KeyboardInterrupt raised once from inside the backend's compile, or from inside Numba's compile of a kernel during
the entry's first run (where the CPU backend's lazily built kernels compile)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba.core.dispatcher
import numpy as np
import pytest

import jitgraph
from jitgraph.jit import stages


def interrupt_once(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Replace ``owner.name`` by a wrapper whose first call raises KeyboardInterrupt; returns the call count."""
    original = getattr(owner, name)
    calls: list[int] = []

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)
    return calls


def step(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x += 1.0  # a mutation too: an interrupted first run must not keep a half-made entry for it
    return np.sqrt(x * y + 2.0)


def make_args() -> tuple[np.ndarray, np.ndarray]:
    return np.linspace(0.0, 1.0, 37), np.linspace(1.0, 2.0, 37)


def check_recovers(f: Callable[..., Any]) -> None:
    assert f.entries == [] and f.cache_info().entries == 0, "the interrupted compile left an entry behind"
    for _ in range(3):
        x, y = make_args()
        ex, ey = make_args()
        np.testing.assert_array_equal(f(x, y), step(ex, ey))
        np.testing.assert_array_equal(x, ex)
    assert [e.mode for e in f.entries] == ["graph"]
    assert f.cache_info().hits == 2


@pytest.mark.parametrize("backend", ["eager", "cpu"])
def test_interrupt_in_the_backend_compile(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JITGRAPH_STRICT", "1")
    original = stages.get_backend
    state = {"interrupted": False}

    def get_backend(name: str) -> Any:
        compile_graph = original(name)

        def compile_once(*args: Any, **kwargs: Any) -> Any:
            if not state["interrupted"]:
                state["interrupted"] = True
                raise KeyboardInterrupt
            return compile_graph(*args, **kwargs)

        return compile_once

    monkeypatch.setattr(stages, "get_backend", get_backend)
    f = jitgraph.compile(step, backend=backend)
    with pytest.raises(KeyboardInterrupt):
        f(*make_args())
    check_recovers(f)


def test_interrupt_in_a_kernel_compile_during_the_first_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU backend compiles a kernel on its first launch, inside the entry's first run: an interrupt there
    used to leave the entry (and its half-registered launch) in the cache."""
    monkeypatch.setenv("JITGRAPH_STRICT", "1")
    calls = interrupt_once(monkeypatch, numba.core.dispatcher.Dispatcher, "compile")
    f = jitgraph.compile(step, backend="cpu", cache=False)  # cache=False: a new kernel object, not one loaded before
    x, y = make_args()
    with pytest.raises(KeyboardInterrupt):
        f(x, y)
    assert calls, "the stand-in never ran: no kernel was compiled in the first run"
    check_recovers(f)


def stage_step(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``step`` with its own constant: a kernel no earlier test in this process compiled (kernels are shared between
    functions in one process, so ``step``'s would already be built and the stand-in never reached)."""
    x += 1.0
    return np.sqrt(x * y + 3.0)


def test_interrupted_first_call_of_a_compiled_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend's own artifact (``Lowered.compile()``, outside any cache) interrupted in its first call: calling
    it again must still work -- the kernel launch it registered before its compile finished is compiled again."""
    monkeypatch.setenv("JITGRAPH_STRICT", "1")
    compiled = jitgraph.compile(stage_step, backend="cpu", cache=False).trace(*make_args()).lower().compile()
    calls = interrupt_once(monkeypatch, numba.core.dispatcher.Dispatcher, "compile")
    x, y = make_args()
    with pytest.raises(KeyboardInterrupt):
        compiled(x, y)
    assert calls, "the stand-in never ran: no kernel was compiled in the first call"
    for _ in range(2):
        x, y = make_args()
        ex, ey = make_args()
        np.testing.assert_array_equal(compiled(x, y), stage_step(ex, ey))
        np.testing.assert_array_equal(x, ex)
