"""An entry that falls back to eager keys only on what decided the fallback (issue 20): a loop counter passed to a
function that always breaks at the same place must not retrace it on every step."""

from __future__ import annotations

import numpy as np

import jitgraph


def _opaque(y: np.ndarray) -> np.ndarray:
    return np.frompyfunc(lambda a: a, 1, 1)(y).astype(np.float64)  # a call the tracer does not know: a break


def test_break_independent_of_counter_keys_on_its_type() -> None:
    @jitgraph.compile
    def step(x: np.ndarray, t: int) -> np.ndarray:
        return _opaque(x * 2.0) + t

    x = np.arange(4.0)
    for t in range(20):
        np.testing.assert_array_equal(step(x, t), x * 2.0 + t)
    info = step.cache_info()
    assert info.entries == 2, step.recompile_reasons()
    assert info.misses == 2
    assert "does not depend on its value" in step.recompile_reasons()[0]
    assert len(step.break_reasons()) == 2


def test_break_that_depends_on_the_counter_stays_keyed_by_value() -> None:
    @jitgraph.compile
    def step(x: np.ndarray, t: int) -> np.ndarray:
        if t > 2:
            return _opaque(x) + t
        return x[:t] * 2.0

    x = np.arange(6.0)
    for t in range(6):
        expected = x + t if t > 2 else x[:t] * 2.0
        np.testing.assert_array_equal(step(x, t), expected)
    # Slicing by t needs its value: every call with a new t is its own entry, and the answers stay NumPy's.
    assert step.cache_info().entries == 6
    assert all("does not depend" not in r for r in step.recompile_reasons())


def test_graph_entry_after_a_dynamic_fallback_stays_correct() -> None:
    @jitgraph.compile
    def step(x: np.ndarray, t: int) -> np.ndarray:
        if x.shape[0] > 3:
            return _opaque(x) + t
        return x * 0.5 ** t

    big, small = np.arange(5.0), np.arange(3.0)
    for t in range(5):
        np.testing.assert_array_equal(step(big, t), big + t)
        np.testing.assert_allclose(step(small, t), small * 0.5 ** t)
    assert step.cache_info().entries <= 4, step.recompile_reasons()
