"""Shared timing and reporting for the example scripts: eager vs compiled, checked for agreement first.

Every example prints one ``compiled results agree with eager NumPy`` line after its checks passed (the CI test looks
for it), a rich table of eager time, compiled time, speedup and compile time, and what jitgraph captured (graphs,
breaks, fallbacks), so a slow example says whether it fell back to eager.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

try:  # running from a checkout without `pip install -e .`: the package is one directory up
    import jitgraph  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

AGREE = "compiled results agree with eager NumPy"


def parse_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--small", action="store_true", help="tiny sizes, for CI: checks agreement quickly")
    parser.add_argument("--backend", default="cpu", help="jitgraph backend (cpu, eager, cuda)")
    return parser.parse_args()


class FirstCall:
    """Wraps a compiled function and records how long its first call took: tracing, passes, code generation and
    the Numba compile (or the disk-cache load) all happen there."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.seconds: float | None = None
        from jitgraph.backends.cpu import cache

        self._stats_before = dict(cache.STATS)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.seconds is not None:
            return self.fn(*args, **kwargs)
        start = time.perf_counter()
        result = self.fn(*args, **kwargs)
        self.seconds = time.perf_counter() - start
        return result

    def kernel_note(self) -> str:
        from jitgraph.backends.cpu import cache

        compiled = cache.STATS["compiled"] - self._stats_before["compiled"]
        loaded = cache.STATS["cache_hits"] - self._stats_before["cache_hits"]
        if not compiled and not loaded:
            return ""
        return f"kernels: {compiled} compiled by Numba, {loaded} loaded from the disk cache"


def median_time(fn: Callable[[], Any], repeat: int = 7, min_time: float = 0.05) -> float:
    """Median wall time of ``fn()`` in seconds; small functions are batched so the clock resolution is no issue,
    slow ones (over 0.2 s) are timed 3 times, which keeps every example under a minute."""
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    if once > 0.2:
        repeat = min(repeat, 3)
    inner = max(1, int(min_time / once)) if once < min_time else 1
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def assert_same(eager: Any, compiled: Any, rtol: float = 1e-4, atol: float = 1e-5, what: str = "result") -> None:
    """Structure, dtype and shape must be identical; values within floating tolerance."""
    if isinstance(eager, dict):
        assert isinstance(compiled, dict) and eager.keys() == compiled.keys(), f"{what}: keys differ"
        for k in eager:
            assert_same(eager[k], compiled[k], rtol, atol, f"{what}[{k!r}]")
        return
    if isinstance(eager, list | tuple):
        assert type(eager) is type(compiled) and len(eager) == len(compiled), f"{what}: structure differs"
        for k, (e, c) in enumerate(zip(eager, compiled)):
            assert_same(e, c, rtol, atol, f"{what}[{k}]")
        return
    e, c = np.asarray(eager), np.asarray(compiled)
    assert e.shape == c.shape, f"{what}: shape {c.shape} != eager {e.shape}"
    assert e.dtype == c.dtype, f"{what}: dtype {c.dtype} != eager {e.dtype}"
    np.testing.assert_allclose(c, e, rtol=rtol, atol=atol, err_msg=what)


def agreed(what: str) -> None:
    print(f"OK: {AGREE} ({what})")


def clone(value: Any) -> Any:
    return copy.deepcopy(value)


def capture_report(compiled: Any) -> str:
    """One line: what jitgraph captured for this function, and whether any call fell back to eager."""
    info = compiled.cache_info()
    graphs = len(compiled.graphs())
    breaks = compiled.break_reasons()
    text = (f"jitgraph captured {graphs} graph{'s' if graphs != 1 else ''}, {len(breaks)} graph "
            f"break{'s' if len(breaks) != 1 else ''}, {info.recompiles} recompiles, {info.fallbacks} eager calls")
    for b in breaks:
        text += f"\n  FALLBACK (runs eagerly, correct but not faster): {b}"
    return text


def print_table(title: str, rows: list[dict[str, Any]], compiled: Any = None, first: FirstCall | None = None) -> None:
    """A rich table of eager time, compiled time, speedup and compile time (the first call's time)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in ("workload", "eager", "jitgraph", "speedup", "compile (1st call)"):
        table.add_column(column, justify="left" if column == "workload" else "right")
    for row in rows:
        table.add_row(row["name"], f"{row['eager'] * 1e3:.3f} ms", f"{row['compiled'] * 1e3:.3f} ms",
                      f"{row['eager'] / row['compiled']:.2f}x", f"{row['compile']:.2f} s")
    console = Console()
    console.print(table)
    if first is not None and first.kernel_note():
        console.print(first.kernel_note(), style="dim")
    if compiled is not None:
        console.print(capture_report(compiled), highlight=False)
