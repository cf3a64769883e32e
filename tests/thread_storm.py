"""Threads for tests: run one piece of work on several threads released together, with a deadline, and re-raise
what a thread raised (a failed assertion in a thread would otherwise only print)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

JOIN_S = 240.0  # generous: the first cpu compile of a kernel takes seconds on a loaded two-core machine


def storm(n: int, work: Callable[[int], Any]) -> list[Any]:
    """Run ``work(i)`` for i in range(n) on n threads released together; return the results in order, re-raise
    the first exception a thread raised, and fail if a thread is still running after JOIN_S seconds."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n
    errors: list[BaseException] = []

    def body(i: int) -> None:
        try:
            barrier.wait(timeout=JOIN_S)
            results[i] = work(i)
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread below
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + JOIN_S
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "a thread did not finish (deadlock?)"
    if errors:
        raise errors[0]
    return results
