"""Ctrl-C during a kernel's first compile: delivered once the compile is over, not in the middle of Numba.

A KeyboardInterrupt raised inside Numba's first compile in a process can land while Numba loads its typing and
lowering registries (generators that install templates one by one): the registrations not installed yet are lost
for good, and every later compile in the process fails (``TypingError`` on ``numpy.empty``, ``RuntimeError:
generator raised StopIteration``). No cleanup on jitgraph's side can repair that, so the first call of a kernel
holds a SIGINT back until it finishes (a second Ctrl-C interrupts at once, for a compile that seems stuck) and then
raises the KeyboardInterrupt as usual. Only the main thread receives signals, so only there is anything done.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


@contextmanager
def deferred() -> Iterator[None]:
    """Hold back SIGINT (the default KeyboardInterrupt handler only) for the duration of the block.

    Any other disposition is the program's choice and is left as it is: its own handler, or SIGINT ignored (a
    process started in the background by a shell, ``cmd &`` or nohup, inherits that, and Python keeps it), where
    Ctrl-C never raises KeyboardInterrupt at all, compiling or not."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    pending: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        if pending:  # the second Ctrl-C: the user insists
            signal.signal(signal.SIGINT, signal.default_int_handler)
            raise KeyboardInterrupt
        pending.append(signum)

    signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is hold:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    if pending:
        raise KeyboardInterrupt
