"""A spinner for slow compiles, shown only on a terminal and only once a compile has taken about half a second.

Fast compiles stay silent, and logs or CI output never receive spinner frames, because the spinner is started by a
timer only when stderr is a TTY.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

DELAY_S = 0.5


@contextmanager
def compiling(what: str, delay: float = DELAY_S) -> Iterator[None]:
    if not sys.stderr.isatty():
        yield
        return
    from rich.console import Console

    console = Console(stderr=True)
    state: dict[str, object] = {}
    lock = threading.Lock()

    def start() -> None:
        with lock:
            if state.get("done"):
                return
            status = console.status(f"jitgraph: compiling {what} ...", spinner="dots")
            status.start()
            state["status"] = status

    timer = threading.Timer(delay, start)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            state["done"] = True
            status = state.get("status")
        if status is not None:
            status.stop()  # type: ignore[attr-defined]
