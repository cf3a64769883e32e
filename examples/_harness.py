"""Shared timing and reporting for the example scripts: eager vs compiled, checked for agreement first."""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def parse_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--small", action="store_true", help="tiny sizes, for CI: checks agreement quickly")
    parser.add_argument("--backend", default="cpu", help="jitgraph backend (cpu, eager, cuda)")
    return parser.parse_args()


def median_time(fn: Callable[[], Any], repeat: int = 7, min_time: float = 0.05) -> float:
    """Median wall time of ``fn()`` in seconds; small functions are batched so the clock resolution is no issue."""
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    inner = max(1, int(min_time / once)) if once < min_time else 1
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def first_call_time(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


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


def clone(value: Any) -> Any:
    return copy.deepcopy(value)


def print_table(title: str, rows: list[dict[str, Any]]) -> None:
    """A rich table of eager time, compiled time, speedup and compile time."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in ("workload", "eager", "jitgraph", "speedup", "compile"):
        table.add_column(column, justify="left" if column == "workload" else "right")
    for row in rows:
        table.add_row(row["name"], f"{row['eager'] * 1e3:.3f} ms", f"{row['compiled'] * 1e3:.3f} ms",
                      f"{row['eager'] / row['compiled']:.2f}x", f"{row['compile']:.2f} s")
    Console().print(table)
