"""The one timing loop every benchmark script uses: median and best of repeated calls, within a time budget."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np


def geomean(ratios: list[float]) -> float:
    """The geometric mean of speed ratios (the summaries of floor.py and realworld.py)."""
    return float(np.exp(np.mean(np.log(ratios))))


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


def settle(compiled: Any, call: Callable[[], object], limit: int = 80) -> int:
    """Call ``call`` until every cache entry of the jitgraph function ``compiled`` is past the measured tier-down's
    probe (jit/tiering.py: a new entry's first calls alternate the graph and the plain function), so what is timed
    next is the steady state a loop calling it sees, as the first call is past the compile. Returns the calls made
    (0 when nothing was probing; a graph that clearly wins is decided within a few calls)."""
    for k in range(limit):
        if not any(getattr(e, "probe", None) is not None for e in getattr(compiled, "entries", ())):
            return k
        call()
    return limit


def median(fn: Callable[[], object], repeat: int, budget: float = 3.0, warmup: bool = False) -> float:
    """Median seconds; ``warmup`` makes one untimed call first (a first call that compiles)."""
    if warmup:
        fn()
    return timings(fn, repeat, budget)[0]


def paired_timings(first: Callable[[], object], second: Callable[[], object], repeat: int, block: int = 10,
                   budget: float = 6.0, discard: int = 3) -> tuple[tuple[float, float], tuple[float, float]]:
    """(median, best) of ``first`` and of ``second``, timed in alternating blocks of ``block`` calls each.

    On a shared machine the speed drifts within seconds; timing all of one function, then all of the other, puts
    each on its own side of a drift and moves their ratio by tens of percent between runs. Alternating short
    blocks exposes both to the same conditions, while each block still runs its function back to back, as a loop
    calling it would (warm caches, reused buffers). The first ``discard`` calls of each block are not recorded:
    they pay for the switch -- worker threads the other side left spinning (OpenBLAS's after a GEMM, libgomp's
    after a torch.compile kernel) compete with the next parallel kernel for ~ms, and the last-level cache holds
    the other side's data: after a block of eager layernorm calls, compiled calls 1..10 took 2.46, 2.16, 2.09,
    1.97, 1.96, 1.88, 1.81, 1.81, 1.68, 1.68 ms. Stops after ``repeat`` recorded calls of each, or once
    ``budget`` seconds are spent (after one block of each)."""
    times: tuple[list[float], list[float]] = ([], [])
    start = time.perf_counter()
    while len(times[0]) < repeat:
        for fn, out in ((first, times[0]), (second, times[1])):
            for k in range(block):
                t = time.perf_counter()
                fn()
                if k >= discard:
                    out.append(time.perf_counter() - t)
        if time.perf_counter() - start > budget:
            break
    return ((float(np.median(times[0])), float(min(times[0]))),
            (float(np.median(times[1])), float(min(times[1]))))
