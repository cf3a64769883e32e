"""The CPU emitters spell ``max``/``min`` of simple operands without ``jg_max_acc`` (so the row kernels' lanes
vectorise): the spelling must give ``jg_max_acc``'s result for every pair of special values, and row reductions
through ``jitgraph.compile`` must still equal NumPy's with NaN, infinities and signed zeros in the rows."""

from __future__ import annotations

import itertools

import numba
import numpy as np
import pytest

import jitgraph
from jitgraph.backends.cpu import emitters as E
from jitgraph.backends.cpu.helpers import jg_max_acc, jg_min_acc

SPECIAL = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 5e-324, 3.4e38, -2.5]


def _pair(op: str):
    spelled = E.reduction_combine(op, "accv1_0", "v").replace("accv1_0", "acc")
    assert "jg_" not in spelled  # the vectorisable spelling applies to simple operands
    ns: dict = {}
    exec(f"def f(acc, v):\n    return {spelled}\n", ns)  # noqa: S102 - the emitter's own text
    return numba.njit(ns["f"]), {"max": jg_max_acc, "min": jg_min_acc}[op]


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_spelling_equals_the_helper(op, dtype):
    f, helper = _pair(op)
    values = [0, 1, -1, 2**62, -(2**63)] if dtype == np.int64 else SPECIAL
    for a, b in itertools.product(values, repeat=2):
        a, b = dtype(a), dtype(b)
        got, want = f(a, b), helper(a, b)
        assert np.array_equal(got, want, equal_nan=True) and np.signbit(got) == np.signbit(want), (a, b)


def test_long_operands_and_other_accumulators_keep_the_helper():
    assert E.reduction_combine("max", "accv1_0", "(a + b)") == "jg_max_acc(accv1_0, (a + b))"
    assert E.reduction_combine("min", "r3", "a0[i0]") == "jg_min_acc(r3, a0[i0])"  # not a row kernel's lane


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_max_min_softmax_with_special_values(dtype):
    @jitgraph.compile
    def rows(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True), x.min(axis=1), x.max(axis=1)

    x = np.random.default_rng(0).standard_normal((7, 37)).astype(dtype)
    x[1, 3] = np.nan
    x[2, 36] = np.nan
    x[3, :] = -0.0
    x[3, 5] = 0.0
    x[4, 0] = np.inf
    x[5, 9] = -np.inf
    (soft, lo, hi), (soft_want, lo_want, hi_want) = rows(x), rows.fn(x)
    np.testing.assert_allclose(soft, soft_want, rtol=1e-5, atol=1e-7)  # exp and sums: vector math, other order
    np.testing.assert_array_equal(np.isnan(soft), np.isnan(soft_want))
    for got, want in ((lo, lo_want), (hi, hi_want)):  # max and min: exactly NumPy's, signed zeros included
        np.testing.assert_array_equal(got, want)
        rest = np.arange(7) != 3
        np.testing.assert_array_equal(np.signbit(got[rest]), np.signbit(want[rest]))
    # Row 3 holds both zeros: llvm.maximum orders -0.0 below +0.0 (NumPy's sign there depends on the row's length:
    # helpers._minmax_step_intrinsic, tests/cpu/test_max_lanes.py).
    assert hi[3] == 0 and not np.signbit(hi[3]) and lo[3] == 0 and np.signbit(lo[3])
