"""Loop bodies with ``argmax``/``argmin`` along an axis and reductions over leading axes compile into the loop driver
(no reference-interpreter fallback) and agree with eager NumPy: values, dtypes, first-NaN and first-extreme rules,
``keepdims``, integers and booleans."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import jitgraph


def _driver_of(compiled: Any) -> Any:
    (entry,) = compiled.explain().entries
    assert entry.mode == "graph", entry.break_reason
    return entry.compiled


def _check(fn: Any, *args: Any) -> Any:
    """Compiled and eager agree on copies of ``args`` (results and mutated inputs); the loop driver compiled."""
    def fresh() -> list[Any]:
        return [a.copy() if isinstance(a, np.ndarray) else a for a in args]

    want_args, got_args = fresh(), fresh()
    want = fn(*want_args)
    compiled = jitgraph.compile(fn)
    got = compiled(*got_args)
    driver = _driver_of(compiled)
    assert driver.fallback_reason() is None, driver.fallback_reason()
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        # float32: the sums accumulate in float64 and exp may differ from NumPy's in the last ulp
        rtol = 1e-5 if np.asarray(w).dtype == np.float32 else 1e-12
        np.testing.assert_allclose(g, w, rtol=rtol, equal_nan=True)
    for g, w in zip(got_args, want_args):
        if isinstance(w, np.ndarray):
            np.testing.assert_allclose(g, w, rtol=1e-12, equal_nan=True)
    return driver


def viterbi_like(trans, score, steps):
    back = np.zeros((steps, trans.shape[1]), dtype=np.int64)
    for t in range(steps):
        cand = score[:, None] + trans
        back[t] = cand.argmax(axis=0)
        score = cand.max(axis=0) - 1.0
    return score, back


def test_viterbi_recursion_compiles_and_sweeps_columns() -> None:
    rng = np.random.default_rng(0)
    driver = _check(viterbi_like, rng.standard_normal((6, 6)), rng.standard_normal(6), 7)
    assert "r" in driver.source and "jg_max_step(r" in driver.source  # one accumulator per column


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_arg_reduce_along_an_axis_with_nans_and_ties(op: str, axis: int) -> None:
    def body(x, out):
        for t in range(out.shape[0]):
            out[t] = getattr(x + t, op)(axis=axis)
        return out

    x = np.array([[1.0, 3.0, 3.0, np.nan], [2.0, np.nan, 0.0, 5.0], [2.0, 1.0, 3.0, np.nan]])
    out = np.zeros((2, 3 if axis != 0 else 4), dtype=np.int64)
    _check(body, x, out)


@pytest.mark.parametrize("dtype", [np.int32, np.bool_])
def test_arg_reduce_of_integers_and_booleans(dtype: Any) -> None:
    def body(x, n):
        total = np.zeros(x.shape[1], dtype=np.int64)
        for _ in range(n):
            total += x.argmax(axis=0) + x.argmin(axis=0)
        return total

    x = np.array([[1, 0, 3], [1, 5, 3], [0, 5, 4]]).astype(dtype)
    _check(body, x, 3)


def test_arg_reduce_keepdims_and_three_dims() -> None:
    def body(x, n):
        acc = np.zeros((2, 1, 4), dtype=np.int64)
        flat = 0
        for t in range(n):
            acc += np.argmax(x * t, axis=1, keepdims=True)
            flat += int(np.argmin(x - t, keepdims=True)[0, 0, 0])
        return acc, flat

    rng = np.random.default_rng(1)
    _check(body, rng.standard_normal((2, 3, 4)), 3)


def test_two_level_reduction_over_the_leading_axis() -> None:
    """A column softmax in a loop body: a max sweep and a sum sweep, each walking rows with per-column partials."""
    def body(x, n):
        for _ in range(n):
            e = np.exp(x - x.max(axis=0))
            x = e / e.sum(axis=0) + x
        return x

    rng = np.random.default_rng(2)
    _check(body, rng.standard_normal((5, 7)).astype(np.float32), 3)
