"""A spinner for slow compiles, shown only on a terminal and only once a compile has taken about half a second.

Fast compiles stay silent, and logs or CI output never receive spinner frames, because the spinner is started by a
timer only when stderr is a TTY (``JITGRAPH_PROGRESS=0`` turns it off, ``=1`` forces it, for demos).

Compiles nest (a function's compile builds kernels, each compiled by Numba) and may run on several threads, while
rich allows one live display per console. So there is one spinner per process: the outermost ``compiling`` owns
it, inner ones only change its text to name what is being compiled now, and restore it when they finish.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from jitgraph.config import env_flag, env_set

DELAY_S = 0.5

_lock = threading.RLock()
_labels: list[tuple[object, str]] = []  # (token, what) being compiled, outermost first
_state: dict[str, Any] = {"status": None, "timer": None}


def enabled() -> bool:
    """Whether a slow compile may show the spinner: ``JITGRAPH_PROGRESS`` when set, else whether stderr is a TTY."""
    if env_set("JITGRAPH_PROGRESS"):
        return env_flag("JITGRAPH_PROGRESS")
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # stderr replaced or closed
        return False


def _message() -> str:
    return f"jitgraph: compiling {_labels[-1][1]} ..." if _labels else "jitgraph: compiling ..."


def _start() -> None:
    with _lock:
        if not _labels or _state["status"] is not None:
            return
        try:
            from rich.console import Console  # rich loads only once a compile is slow, so `import jitgraph` stays fast

            status = Console(stderr=True).status(_message(), spinner="dots")
            status.start()
        except Exception:  # noqa: BLE001 - a progress display must never be what breaks a compile
            return
        _state["status"] = status


def _update() -> None:
    status = _state["status"]
    if status is not None:
        with contextlib.suppress(Exception):
            status.update(_message())


@contextmanager
def compiling(what: str, delay: float = DELAY_S) -> Iterator[None]:
    """Show ``jitgraph: compiling <what> ...`` on stderr if the block is still running after ``delay`` seconds."""
    if not enabled():
        yield
        return
    with _lock:
        token = object()  # threads may finish out of order: each removes its own label
        outermost = not _labels
        _labels.append((token, what))
        if outermost:
            timer = threading.Timer(delay, _start)
            timer.daemon = True
            _state["timer"] = timer
            timer.start()
        else:
            _update()
    try:
        yield
    finally:
        with _lock:
            _labels[:] = [entry for entry in _labels if entry[0] is not token]
            if outermost:
                _state["timer"].cancel()
                status, _state["status"], _state["timer"] = _state["status"], None, None
                if status is not None:
                    with contextlib.suppress(Exception):
                        status.stop()
            else:
                _update()
