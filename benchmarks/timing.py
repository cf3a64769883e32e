"""The one timing loop every benchmark script uses: median and best of repeated calls, within a time budget."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np


def timings(fn: Callable[[], object], repeat: int, budget: float = 3.0) -> tuple[float, float]:
    """(median, best) seconds of up to ``repeat`` calls, stopping once ``budget`` seconds are spent (after three).

    The median is what the tables report; the best is what a busy machine cannot inflate."""
    times = []
    start = time.perf_counter()
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
        if time.perf_counter() - start > budget and len(times) >= 3:
            break
    return float(np.median(times)), float(min(times))


def median(fn: Callable[[], object], repeat: int, budget: float = 3.0, warmup: bool = False) -> float:
    """Median seconds; ``warmup`` makes one untimed call first (a first call that compiles)."""
    if warmup:
        fn()
    return timings(fn, repeat, budget)[0]
