"""Float max/min in the CPU row kernels go through ``llvm.maximum``/``llvm.minimum`` (helpers.jg_max_step), so
that LLVM vectorises the sweeps: the results must equal NumPy's under ``==`` and ``isnan`` for rows holding NaN at
every position, infinities, equal values and signed zeros. The one documented difference: a row whose extreme is
zero and that holds both zeros gives +0.0 for max and -0.0 for min (NumPy's own sign there depends on its length)."""

from __future__ import annotations

import itertools

import numba
import numpy as np
import pytest

import jitgraph
from jitgraph.backends.cpu.helpers import jg_max_step, jg_min_step

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 5e-324, 3.4e38, -2.5]
LENGTHS = [*range(1, 71), 1024]
SOME = [1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65, 1024]  # the other paths: each side of the lane counts


@numba.njit
def _steps(a, b):
    return jg_max_step(a, b), jg_min_step(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_step_is_nan_propagating_max_min(dtype):
    for a, b in itertools.product(SPECIAL, repeat=2):
        a, b = dtype(a), dtype(b)
        hi, lo = _steps(a, b)
        if np.isnan(a) or np.isnan(b):
            assert np.isnan(hi) and np.isnan(lo), (a, b)
            continue
        assert hi == max(a, b) and lo == min(a, b), (a, b)
        if a == b == 0:  # -0.0 orders below +0.0, whatever the operands' order
            assert np.signbit(hi) == (np.signbit(a) and np.signbit(b)), (a, b)
            assert np.signbit(lo) == (np.signbit(a) or np.signbit(b)), (a, b)


def _rows(n: int, dtype) -> np.ndarray:
    """Rows of length ``n``: a NaN at every position, infinities, all equal, all -0.0, and mixed zeros."""
    rng = np.random.default_rng(n)
    base = rng.standard_normal((n + 8, n)).astype(dtype)
    for k in range(n):
        base[k, k] = np.nan
    base[n, :] = 1.5  # all equal
    base[n + 1, :] = -0.0  # all -0.0: both results -0.0, as NumPy's
    base[n + 2, :] = -np.inf
    base[n + 2, n // 2] = np.inf
    base[n + 3, :] = np.inf
    base[n + 4, :] = -np.abs(base[n + 4, :]) - 1  # negative row with both zeros: max is a zero
    base[n + 4, 0] = -0.0
    base[n + 4, n - 1] = 0.0
    base[n + 5, :] = np.abs(base[n + 5, :]) + 1  # positive row with both zeros: min is a zero
    base[n + 5, 0] = 0.0
    base[n + 5, n - 1] = -0.0
    base[n + 6, :] = np.nan
    return base


def _check(got, want, x, op: str, rule: bool = True) -> None:
    """Values under == and isnan; signs as NumPy's except on rows holding both zeros, where (``rule``: the
    one-accumulator llvm.maximum sweeps) max is +0.0 and min -0.0, or (eight select lanes) either zero."""
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])
    both = (np.signbit(x) & (x == 0)).any(axis=1) & (~np.signbit(x) & (x == 0)).any(axis=1) & (want == 0)
    signs = np.where(both, op == "min", np.signbit(want))  # mixed zeros: +0.0 for max, -0.0 for min
    check = ok if rule else ok & ~both
    np.testing.assert_array_equal(np.signbit(got[check]), signs[check])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_max_min_equal_numpy(dtype):
    @jitgraph.compile(cache_limit=len(LENGTHS))  # each length traces once: the guards check shapes
    def direct(x):  # operands as loaded: one plain loop per row
        return x.max(axis=1), x.min(axis=1)

    @jitgraph.compile(cache_limit=len(LENGTHS))  # each length traces once: the guards check shapes
    def buffered(x):  # computed operands, buffered per block, next to a block sum
        return (-x).max(axis=1), (-x).min(axis=1), x.sum(axis=1)

    @jitgraph.compile(cache_limit=len(LENGTHS))  # each length traces once: the guards check shapes
    def with_lanes(x):  # a product in the same sweep: eight scalar lanes (two selects) for all
        return x.max(axis=1), x.min(axis=1), x.prod(axis=1)

    for n in LENGTHS:
        x = _rows(n, dtype)
        for f in (direct, buffered, with_lanes) if n in SOME else (direct,):
            got, want = f(x), f.fn(x)
            _check(got[0], want[0], x if f is not buffered else -x, "max", f is not with_lanes)
            _check(got[1], want[1], x if f is not buffered else -x, "min", f is not with_lanes)
