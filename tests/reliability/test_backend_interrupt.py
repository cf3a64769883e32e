"""Issue 17, item 5 (backend part): a KeyboardInterrupt during a kernel's first compile must leave nothing behind.

Stand-ins for the signal, deterministic: Numba's compile step raises KeyboardInterrupt once and leaves that
dispatcher broken, as an interrupted compile can (every later compile on it raises ``TypingError``); the next call
must build a fresh kernel and equal eager. And a real SIGINT sent while Numba compiles is delivered after the
compile finished, so Numba's own state is never cut in half (the script installs Python's default SIGINT handler
itself: a run started in the background inherits an ignored SIGINT, which Python keeps). A process that ignores
SIGINT or has its own handler keeps it through a first compile. ``JITGRAPH_STRICT=1`` makes a backend error raise
instead of falling back to eager, so a pass means the compiled kernel ran."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numba.core import dispatcher, errors

import jitgraph
from jitgraph.backends.cpu import interrupts

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 240


def test_interrupted_first_compile_leaves_no_launch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JITGRAPH_STRICT", "1")
    monkeypatch.setenv("JITGRAPH_CACHE_DIR", str(tmp_path / "cache"))
    original = dispatcher.Dispatcher.compile
    broken: list[Any] = []

    def compile_step(self: Any, sig: Any) -> Any:
        if any(d is self for d in broken):
            raise errors.TypingError("No implementation of function Function(<built-in function empty>)")
        if not broken:
            broken.append(self)
            raise KeyboardInterrupt
        return original(self, sig)

    monkeypatch.setattr(dispatcher.Dispatcher, "compile", compile_step)

    def f(x: np.ndarray) -> np.ndarray:
        return np.sin(x) * 3.25 - 0.125  # constants of its own: a kernel no other test compiled

    compiled = jitgraph.compile(f)
    x = np.linspace(-2.0, 2.0, 97)
    with pytest.raises(KeyboardInterrupt):
        compiled(x)
    assert broken, "the stand-in never ran: the kernel did not reach Numba"
    for _ in range(2):
        np.testing.assert_allclose(compiled(x), f(x), rtol=1e-12)
    np.testing.assert_allclose(compiled(x + 1.0), f(x + 1.0), rtol=1e-12)


SIGINT_SCRIPT = """
import os, signal
# Ctrl-C raises KeyboardInterrupt here whatever this process inherited: a test run started in the background by a
# shell (`pytest &`, nohup) ignores SIGINT, its children inherit that, and Python then leaves SIGINT ignored.
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
import numpy as np
from numba.core import dispatcher
import jitgraph

original = dispatcher.Dispatcher.compile
events = []

def compile_step(self, sig):
    if not events:
        events.append("signal")
        os.kill(os.getpid(), signal.SIGINT)   # Ctrl-C arrives while Numba compiles
    result = original(self, sig)
    events.append("compiled")
    return result

dispatcher.Dispatcher.compile = compile_step

def f(x):
    return np.cos(x) * 1.75 + 0.5

g = jitgraph.compile(f)
x = np.linspace(0.0, 1.0, 64)
try:
    g(x)
except KeyboardInterrupt:
    events.append("interrupt")
assert events[:3] == ["signal", "compiled", "interrupt"], events
assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
np.testing.assert_allclose(g(x), f(x), rtol=1e-12)
h = jitgraph.compile(lambda y: np.empty_like(y) * 0 + np.exp(y))   # Numba still compiles other kernels
np.testing.assert_allclose(h(x), np.exp(x), rtol=1e-12)
print("ok")
"""


def test_sigint_during_first_compile_is_delivered_after_it(tmp_path: Path) -> None:
    env = dict(os.environ, JITGRAPH_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT), JITGRAPH_STRICT="1")
    proc = subprocess.run([sys.executable, "-c", SIGINT_SCRIPT], env=env, capture_output=True, text=True, check=False,
                          timeout=TIMEOUT_S)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stdout[-2000:] + proc.stderr[-3000:]


@pytest.mark.parametrize("handler", [signal.SIG_IGN, lambda signum, frame: None], ids=["ignored", "own handler"])
def test_deferred_leaves_other_sigint_handlers_alone(handler: Any) -> None:
    previous = signal.signal(signal.SIGINT, handler)
    try:
        with interrupts.deferred():
            assert signal.getsignal(signal.SIGINT) is handler
        assert signal.getsignal(signal.SIGINT) is handler  # not replaced by the default (Ctrl-C turned back on)
    finally:
        signal.signal(signal.SIGINT, previous)
