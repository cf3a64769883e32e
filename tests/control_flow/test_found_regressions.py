"""Regressions found by fuzzing the tracer's control flow: each compiles a small function and compares it with plain
NumPy (value, type, dtype), and checks the graph-break record, so a bug that falls back to eager silently (a caught
tracer crash) fails too.

* a ``while`` whose body shares the ``while`` line ran its body zero times (the condition was found by line);
* a walrus in a ``while`` condition hung (the assigned name was not carried, so the loop never ended);
* a conditional expression on a traced Python float crashed the tracer (its value, left on the stack, was lost);
* a Python ``int`` accumulated with NumPy scalars in a loop region was widened to int64 instead of NEP 50's int8.
* an ``if``/``elif`` ending a ``for`` body traced the loop's FOR_ITER again from the ``if``'s path, without end.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import jitgraph
from tests.control_flow.helpers import copies


def compiled_equals_eager(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn`` compiled (no cache) gives what NumPy gives: same type, dtype and values (per item of a tuple). The call
    must also have been traced whole (no graph break, so no eager fallback hides a tracer bug)."""
    got = jitgraph.compile(fn, cache=False)(*copies(list(args)))
    want = fn(*copies(list(args)))
    assert type(got) is type(want), (type(got), type(want))
    pairs = zip(got, want, strict=True) if isinstance(want, tuple) else [(got, want)]
    for g, w in pairs:
        assert type(g) is type(w), (type(g), type(w))
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    e = jitgraph.explain(fn)(*copies(list(args)))
    assert e.graph_count == 1 and not e.break_reasons, e.break_reasons
    return got


def _in_child(queue: Any, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    queue.put(jitgraph.compile(fn, cache=False)(*args))


def compiled_within(fn: Callable[..., Any], args: tuple[Any, ...], seconds: float) -> Any:
    """The compiled result, from a child process killed after ``seconds`` (a hang fails instead of blocking)."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_in_child, args=(queue, fn, args))
    child.start()
    child.join(seconds)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail(f"compiled {fn.__name__} did not return within {seconds} s")
    return queue.get(timeout=5)


# ---- 1. one-line while: the body is on the while line ----------------------------------------------------------
def one_line_while(x, s):
    while s > 1: s = s / 2; x = x + 1
    return x


def one_line_while_inplace(x, s):
    while s > 1: s = s / 2; x += 1
    return x


def while_condition_over_two_lines(x, s):
    while (s >
           1):
        s = s / 2
        x = x + 1
    return x


@pytest.mark.parametrize("fn", [one_line_while, one_line_while_inplace, while_condition_over_two_lines])
@pytest.mark.parametrize("s", [3.0, 0.5, 100.0])
def test_one_line_while_runs_its_body(fn: Callable[..., Any], s: float) -> None:
    """The bottom condition was taken as every instruction on the ``while`` line, so a same-line body became the
    condition and the loop did nothing; a condition split over two lines made the tracer pop an empty stack."""
    compiled_equals_eager(fn, np.zeros(2), s)


def while_with_data_test_after_same_statement(x, s):
    x = x + 1
    while s > 1:
        s = s / 2
        x = x + 1
    return x, s


def test_while_condition_is_not_confused_with_an_identical_statement_before_the_loop() -> None:
    """The condition is the shortest one-value run before the back-jump, not the longest match with the head."""
    compiled_equals_eager(while_with_data_test_after_same_statement, np.zeros(3), 5.0)


# ---- 2. walrus in a while condition ----------------------------------------------------------------------------
def walrus_while(x, s):
    while (t := s * 2) > 3:
        s = t / 3
        x = x + 1
    return x


def walrus_while_returns_target(x, s):
    while (t := s * 2) > 3:
        s = t / 3
        x = x + t
    return x, t, s


def test_walrus_in_while_condition_terminates() -> None:
    """The name the condition assigns was not carried, so the body read its first value forever: a hang."""
    x = np.arange(1.0, 4.0)
    got = compiled_within(walrus_while, (x.copy(), 3.0), 120)
    np.testing.assert_array_equal(np.asarray(got), walrus_while(x.copy(), 3.0))
    compiled_equals_eager(walrus_while, x, 3.0)


@pytest.mark.parametrize("s", [3.0, 1.0, 40.0])
def test_walrus_target_after_the_loop_is_the_last_test_value(s: float) -> None:
    """After the loop the walrus target holds the value of the test that failed, as in Python."""
    x = np.arange(1.0, 4.0)
    assert compiled_within(walrus_while_returns_target, (x.copy(), s), 120) is not None
    compiled_equals_eager(walrus_while_returns_target, x, s)


# ---- 3. conditional expressions on a traced Python float -------------------------------------------------------
def pick_element(x, s):
    return x[0] if s == 0 else x[1]


def add_int_choice(x, s):
    return x + (1 if s else 2)


def add_float_choice(x, s):
    return x + (1.0 if s > 1 else 2.0)


@pytest.mark.parametrize("fn", [pick_element, add_int_choice, add_float_choice])
@pytest.mark.parametrize("s", [0.0, 1.0, 3.0])
def test_conditional_expression_on_python_float(fn: Callable[..., Any], s: float) -> None:
    """The value a conditional expression leaves on the stack was dropped by the cond, and the tracer crashed."""
    compiled_equals_eager(fn, np.arange(1.0, 4.0), s)


def pick_array_then_write(x, y, s):
    z = x if s > 1 else y
    z[0] = 5.0
    return x, y


def if_array_then_write(x, y, s):
    if s > 1:
        z = x
    else:
        z = y
    z[0] = 5.0
    return x, y


@pytest.mark.parametrize("fn", [pick_array_then_write, if_array_then_write])
@pytest.mark.parametrize("s", [0.0, 3.0])
def test_choosing_between_existing_arrays_keeps_aliasing(fn: Callable[..., Any], s: float) -> None:
    """A cond result is a new array: choosing an argument through it would lose the write. It must not become a
    cond: the branch is read at run time and the path taken traced (issue 18, jit/resume.py)."""
    got = jitgraph.compile(fn, cache=False)(np.zeros(3), np.ones(3), s)
    want = fn(np.zeros(3), np.ones(3), s)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    e = jitgraph.explain(fn)(np.zeros(3), np.ones(3), s)
    assert not e.break_reasons and any("data-dependent branch" in r.reason for r in e.split_reasons)


# ---- 4. NEP 50 weak Python int carried by a loop ---------------------------------------------------------------
def accumulate_from_python_int(y):
    t = 0
    for i in range(3):
        t = t + y[i]
    return t


def accumulate_from_python_float(y):
    t = 0.0
    for i in range(y.shape[0]):
        t += y[i]
    return t


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.float32, np.float64])
def test_python_int_accumulator_keeps_nep50_dtype(dtype: type) -> None:
    """``0 + int8`` is int8 under NEP 50; the loop widened the carried Python int with promote_types (int64)."""
    y = np.arange(3, dtype=dtype)
    got = compiled_equals_eager(accumulate_from_python_int, y)
    assert np.asarray(got).dtype == dtype


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8])
def test_python_float_accumulator_keeps_nep50_dtype(dtype: type) -> None:
    """A weak Python float meets float32 as float32, and int8 as float64 (NumPy decides, as at run time)."""
    compiled_equals_eager(accumulate_from_python_float, (np.arange(40) % 7).astype(dtype))


def early_return(x, s):
    if s > 1:
        return x * 2
    return x - 1


@pytest.mark.parametrize("s", [0.0, 3.0])
def test_if_whose_paths_both_return(s: float) -> None:
    """3.12+ copies a short ``return`` tail into both arms of a conditional expression; the same machinery (both
    paths end in a return, the returned value is the cond's result) traces an early return."""
    compiled_equals_eager(early_return, np.arange(1.0, 4.0), s)


def _histogram_loop(x: np.ndarray, nb: int, lo: float, hi: float) -> np.ndarray:
    h = np.zeros(nb, np.int64)
    w = (hi - lo) / nb
    for v in x:
        b = int((v - lo) / w)
        if 0 <= b < nb:
            h[b] += 1
        elif v == hi:
            h[nb - 1] += 1
    return h


def test_if_elif_ending_a_for_body_is_not_an_internal_error() -> None:
    """Found by a probe corpus: the ``elif``'s paths meet at the loop head, before the outer ``if``; the outer path
    stepped on into the loop's FOR_ITER, traced it as a new loop, and so on until a RecursionError (an internal
    tracer error, run eagerly). Now the path ends there and the ``if`` gets an ordinary break reason."""
    compiled = jitgraph.compile(_histogram_loop, cache=False)
    x = np.linspace(-1, 2, 31)
    np.testing.assert_array_equal(compiled(x, 5, 0.0, 1.0), _histogram_loop(x, 5, 0.0, 1.0))
    reasons = [str(r) for r in compiled.break_reasons()]
    assert not any("internal" in r or "Recursion" in r for r in reasons), reasons
