"""Arguments that share memory are found by their memory, not by ``.base`` identity (issue 17, item 1).

``as_strided``, ``sliding_window_view`` and ``np.asarray(memoryview(a))`` make views whose ``.base`` is not the
array they view. The dispatch key's alias check once compared ``.base`` identity, missed them, and a compiled
``x += 1; return y * 2`` read ``y`` before the update that eager NumPy makes first: a silently wrong answer. Each
form is checked against eager NumPy (the return value and the caller's array after the call), on the eager
interpreter and the CPU backend, first call and after a call without aliasing compiled the function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided, sliding_window_view

import jitgraph
from jitgraph.tracer.keys import alias_pattern
from tests.tracer.helpers import assert_same, tracer_only

ALIASES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "as_strided": lambda a: as_strided(a),
    "as_strided_shifted": lambda a: as_strided(a[1:], shape=(a.size - 1,), strides=a.strides),
    "as_strided_then_sliced": lambda a: as_strided(a)[1:][::2],
    "sliding_window_view": lambda a: sliding_window_view(a, 2, writeable=True)[:, 0],
    "memoryview": lambda a: np.asarray(memoryview(a)),
    "frombuffer": lambda a: np.frombuffer(a, dtype=a.dtype),
    "ndarray_buffer": lambda a: np.ndarray(a.shape, a.dtype, buffer=a),
    "plain_view": lambda a: a[:],
}


def update_then_read(x: Any, y: Any) -> Any:
    x += 1
    return y * 2


def read_then_update(x: Any, y: Any) -> Any:
    z = y * 2
    x += 1
    return z


def update_through_view(x: Any, y: Any) -> Any:
    y *= 3
    return x + 1


FUNCTIONS = [update_then_read, read_then_update, update_through_view]


def _check(fn: Callable[..., Any], compiled: Callable[..., Any], alias: Callable[[np.ndarray], np.ndarray]) -> None:
    eager_base, comp_base = np.arange(6.0), np.arange(6.0)
    expected = fn(eager_base, alias(eager_base))
    actual = compiled(comp_base, alias(comp_base))
    assert_same(expected, actual)
    assert_same(eager_base, comp_base, path="the caller's array after the call")


@pytest.mark.parametrize("backend", ["eager", "cpu"])
@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", list(ALIASES))
def test_aliased_arguments_match_eager(name: str, fn: Callable[..., Any], backend: str) -> None:
    compiled = jitgraph.compile(fn, backend=backend, cache=False, **tracer_only(backend))
    _check(fn, compiled, ALIASES[name])


@pytest.mark.parametrize("name", list(ALIASES))
def test_aliased_call_after_an_unaliased_one_does_not_reuse_its_entry(name: str) -> None:
    """The entry compiled for separate arrays must not serve a call whose arrays share memory."""
    compiled = jitgraph.compile(update_then_read, backend="cpu", cache=False)
    assert_same(update_then_read(np.arange(6.0), np.arange(6.0)), compiled(np.arange(6.0), np.arange(6.0)))
    _check(update_then_read, compiled, ALIASES[name])
    _check(update_then_read, compiled, ALIASES[name])  # and the entry for the aliased call, from the cache


@pytest.mark.parametrize("name", list(ALIASES))
def test_alias_pattern_sees_the_shared_memory(name: str) -> None:
    a = np.arange(6.0)
    assert alias_pattern([a, ALIASES[name](a)]) == (("overlap", 0, 1),)
    assert alias_pattern([ALIASES[name](a), a]) == (("overlap", 0, 1),)


def test_alias_pattern_needs_no_shared_memory_for_disjoint_arrays() -> None:
    a, b = np.arange(6.0), np.arange(6.0)
    assert alias_pattern([a, b]) is None
    assert alias_pattern([a, 1.0, b, np.float32(2)]) is None
    assert alias_pattern([a[:3], a[3:]]) is None  # two views of one array that do not overlap
    assert alias_pattern([as_strided(a, shape=(3,)), a[3:]]) is None
    assert alias_pattern([a, a]) == (("same", 0, 1),)
    view = a[1:]
    assert alias_pattern([view, b, view]) == (("same", 0, 2),)
