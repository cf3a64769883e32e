"""``while`` conditions that are ``and``/``or`` chains whose later operands read arrays: Python evaluates them only
when the chain needs them, and so must the compiled ``while`` region (a read past the end would raise). Also the
bounds the loop driver takes from such tests: a read the test does not protect still raises NumPy's IndexError."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import jitgraph


def _run_both(fn: Any, *args: Any) -> tuple[Any, Any, Any]:
    def fresh() -> list[Any]:
        return [a.copy() if isinstance(a, np.ndarray) else a for a in args]

    compiled = jitgraph.compile(fn)
    want_args, got_args = fresh(), fresh()
    want, got = fn(*want_args), compiled(*got_args)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    for g, w in zip(got_args, want_args):
        if isinstance(w, np.ndarray):
            np.testing.assert_array_equal(g, w)
    return compiled, got, want


def _one_graph(compiled: Any) -> None:
    info = compiled.cache_info()
    assert info.fallbacks == 0, compiled.explain().break_reasons
    (entry,) = [e for e in compiled.explain().entries if e.mode == "graph"]
    assert entry.compiled.fallback_reason() is None, entry.compiled.fallback_reason()


def insertion_sort(a):
    for i in range(1, a.shape[0]):
        key = a[i]
        j = i - 1
        while j >= 0 and a[j] > key:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = key
    return a


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_insertion_sort_is_one_graph(dtype: Any) -> None:
    a = np.random.default_rng(0).integers(-50, 50, 25).astype(dtype)
    compiled, got, _ = _run_both(insertion_sort, a)
    _one_graph(compiled)
    assert np.all(np.diff(got) >= 0)


def positive_runs(x):
    total = 0
    for s in range(x.shape[0]):
        i = s
        while i < x.shape[0] and x[i] > 0:  # x[x.shape[0]] is past the end: Python never reads it
            i += 1
        total += i - s
    return total


def ahead_past_three(x, limit):
    total = 0
    for s in range(x.shape[0]):
        i = s
        while i < 3 or x[i] > limit:  # an or-chain: x[i] is read only from i == 3 on
            i += 1
        total += i
    return total


def test_and_chain_never_reads_past_the_end() -> None:
    x = np.ones(6)
    compiled, got, _ = _run_both(positive_runs, x)
    _one_graph(compiled)
    assert got == 21
    x[3] = -1.0
    assert compiled(x) == positive_runs(x)


def test_or_chain_matches_python() -> None:
    x = np.array([5.0, 4.0, 3.0, 2.0, 1.0, -1.0])
    compiled, _, _ = _run_both(ahead_past_three, x, 0.0)
    _one_graph(compiled)
    assert compiled(x, 2.5) == ahead_past_three(x, 2.5)


def walk_down(a, j):
    while a[j] > 0:  # j goes negative: NumPy wraps once, then raises
        j -= 1
    return j


def test_unprotected_read_still_raises_index_error() -> None:
    a = np.ones(3)
    with pytest.raises(IndexError):
        walk_down(a, 2)
    compiled = jitgraph.compile(walk_down)
    with pytest.raises(IndexError):
        compiled(a, 2)
    a[0] = -1.0
    assert compiled(a.copy(), 2) == walk_down(a.copy(), 2) == 0


def shift_back(a):
    for s in range(a.shape[0]):
        j = s - 3  # may start below zero: a[j + 1] then wraps around, as in NumPy
        while j >= 0 and a[j] > 0:
            j -= 1
        a[j + 1] += 1.0
    return a


def test_a_slot_below_zero_after_the_loop_still_wraps() -> None:
    a = np.array([1.0, -1.0, 2.0, 3.0, -2.0, 4.0])
    compiled, _, _ = _run_both(shift_back, a)
    _one_graph(compiled)
