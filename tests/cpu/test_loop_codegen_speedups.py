"""The loop driver's ``while``, rotated (issue 21): the test's code runs before the loop and again at the end of
each iteration (``while <flag>:``), as CPython compiles a ``while``. The same statements run in the same order as
in the ``while True: <test>; if not flag: break`` form, so results, mutations and NumPy's IndexError for a bad
index (or the wraparound of a negative one) are unchanged; a test longer than ``ROTATE_TEST_LINES`` keeps the
break form. Behaviour against eager NumPy only; the speed is benchmarks/loops.py's business."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import jitgraph
from jitgraph.backends.cpu.scalar import regions


def _source(compiled: Any) -> str:
    compiled = compiled.entries[-1].compiled
    return getattr(compiled, "driver_source", None) or compiled.source


def _same(fn: Any, *args: Any) -> Any:
    compiled = jitgraph.compile(fn)
    got_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got, want = compiled(*got_args), fn(*want_args)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert np.asarray(got).dtype == np.asarray(want).dtype
    for g, w in zip(got_args, want_args):
        if isinstance(w, np.ndarray):
            np.testing.assert_array_equal(g, w)
    return compiled


def insertion_sort(a):
    for i in range(1, a.shape[0]):
        key = a[i]
        j = i - 1
        while j >= 0 and a[j] > key:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = key
    return a


def walk_back(a, start):
    """No ``j >= 0`` guard: a negative ``j`` wraps around (reads from the end), and past ``-len`` it raises."""
    j = start
    while a[j] > 0:
        j -= 1
    return j


def never_runs(a):
    total = a[0]
    k = int(a[1])
    while k < 0:
        total += a[k]
        k += 1
    return total + k


def test_the_while_is_rotated_and_sorts_as_numpy_does() -> None:
    compiled = _same(insertion_sort, np.random.default_rng(0).standard_normal(40))
    source = _source(compiled)
    assert "while True" not in source and "while v" in source, source


@pytest.mark.parametrize(("values", "start"), [([-1.0, 2.0, 3.0, 4.0], 3), ([1.0, 2.0, -3.0, 4.0], 1)],
                         ids=["stops-in-range", "wraps-negative"])
def test_a_test_reading_a_negative_index_wraps_as_numpy_does(values: list[float], start: int) -> None:
    _same(walk_back, np.array(values), start)


def test_a_test_reading_past_the_start_raises_numpys_index_error() -> None:
    a = np.array([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(IndexError):
        walk_back(a.copy(), 2)
    with pytest.raises(IndexError):
        jitgraph.compile(walk_back)(a.copy(), 2)


def test_a_while_whose_test_fails_at_once_runs_no_iteration() -> None:
    assert "while v" in _source(_same(never_runs, np.arange(5.0)))


def test_a_long_test_keeps_the_break_form(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(regions, "ROTATE_TEST_LINES", 0)
    compiled = _same(insertion_sort, np.random.default_rng(1).integers(-9, 9, 30))
    source = _source(compiled)
    assert "while True" in source and "break" in source, source


def trisolve(L, b):
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        x[i] = (b[i] - np.dot(L[i, :i], x[:i])) / L[i, i]
    return x


@pytest.mark.parametrize("order", ["C", "F"])
def test_a_long_row_dot_calls_np_dot_inline_only_for_contiguous_rows(order: str) -> None:
    """``np.dot(L[i, :i], x[:i])`` of 256 elements or more: the driver calls np.dot itself on C-ordered rows (no
    helper call per row); the rows of a Fortran-ordered L are strided and keep the ``dot_range`` helper."""
    n = 300
    rng = np.random.default_rng(2)
    L = np.asarray(np.tril(rng.uniform(-1, 1, (n, n))) + n * np.eye(n), order=order)
    b = rng.standard_normal(n)
    compiled = jitgraph.compile(trisolve)
    got, want = compiled(L, b), trisolve(L, b)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12)
    source = _source(compiled)
    assert ("np.dot(" in source) == (order == "C"), source
    assert "dot_range(" in source, source  # short rows (and strided ones) still take the helper


def shifted_reads(a, b):
    """``range(1, n)``: ``i - 1`` is in range (no check), ``i - 2`` is -1 at i = 1 and wraps to the last element."""
    out = np.zeros(a.shape[0])
    for i in range(1, a.shape[0]):
        for j in range(1, b.shape[0]):
            out[i] += a[i - 1] * b[j - 1] + a[i - 2]
    return out


def past_the_end(a, n):
    total = 0.0
    for i in range(1, n):
        total += a[i - 1]
    return total


def test_an_index_below_a_loop_start_is_proven_and_a_negative_one_still_wraps() -> None:
    compiled = _same(shifted_reads, np.arange(1.0, 7.0), np.arange(2.0, 6.0))
    source = _source(compiled)
    assert source.count("raise IndexError") == 1, source  # only ``a[i - 2]`` is checked (and wraps)


def test_an_index_below_a_loop_start_past_the_end_still_raises() -> None:
    a = np.arange(4.0)
    _same(past_the_end, a, 5)
    with pytest.raises(IndexError):
        past_the_end(a, 6)
    with pytest.raises(IndexError):
        jitgraph.compile(past_the_end)(a, 6)
