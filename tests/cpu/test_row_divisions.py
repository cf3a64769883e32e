"""Float32 divisions by a value of the row (row kernels) or a scalar of the call (elementwise kernels) as float64
products (backends/cpu/divisions.py): which divisors the run-time check lets through, and the kernels that use it
(softmax, layer norm, a broadcast column, ``x / s``), bit for bit against NumPy or against the same kernel
dividing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numba import njit

import jitgraph
from jitgraph.backends.cpu import divisions
from jitgraph.backends.cpu.helpers import jg_exact_recip

ROW_DIVISORS = [0.0, -0.0, np.inf, -np.inf, np.nan, 2.0, 4.0, 6.0, -12.0, 98.0, 1e30, 3.0, 0.5, -0.75, 1e-40, 0.1, 1.0, 7.0,
                12.5, 2 - 2**-23]


@njit
def _recip(c):
    return jg_exact_recip(c)


@pytest.mark.parametrize("c", ROW_DIVISORS)
def test_run_time_check_agrees_with_the_generation_time_one(c):
    """``jg_exact_recip`` (compiled, in kernels) refuses (0.0) zero, infinities, NaN and even integers and gives
    RN64(1/c) otherwise, as stated here independently of helpers.exact_recip; ``exact_reciprocal`` (for constants,
    in Python) refuses the same and powers of two besides (LLVM already multiplies by those)."""
    c32 = float(np.float32(c))
    refused = not np.isfinite(c32) or c32 == 0 or (c32 == int(c32) and int(c32) % 2 == 0)
    want = 0.0 if refused else 1.0 / c32
    assert _recip(np.float32(c)) == want
    power_of_two = np.isfinite(c32) and c32 != 0 and np.frexp(abs(c32))[0] == 0.5
    assert divisions.exact_reciprocal(c) == (None if refused or power_of_two else want)


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _layernorm(x):
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5)


def _scaled_centre(x, s):
    # times 1 (0 for a row holding NaN): a reduction puts the division in a row kernel's final sweep, and the
    # quotient's last bit stays visible
    return x / s * (np.abs(x).max(axis=1, keepdims=True) >= 0)


def _dividing(monkeypatch, fn, *args):
    """The same function compiled with no row products (every final sweep divides)."""
    with monkeypatch.context() as m:
        m.setattr(divisions, "row_divisions", lambda emit, members: ({}, {}))
        return jitgraph.compile(fn, cache=False)(*args)


def _sources(compiled) -> str:
    return "\n".join(k.source for k in compiled.entries[-1].compiled.kernels.values())


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    return np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(want))


def _rows(rng: np.random.Generator) -> np.ndarray:
    x = rng.standard_normal((40, 37)).astype(np.float32)
    x[1] = 0.0  # softmax row sum 37: odd integer, products
    x[2, :2] = 0.0
    x[2, 2:] = -np.inf  # row sum exactly 2.0: an even integer, the dividing sweep
    x[3] *= 60  # exps down to subnormals
    x[4, 5] = np.nan
    x[5, 0] = np.inf
    x[6] = -np.inf
    return x


@pytest.mark.parametrize("fn", [_softmax, _layernorm])
def test_final_sweep_products_match_the_dividing_kernel(fn, monkeypatch):
    x = _rows(np.random.default_rng(0))
    compiled = jitgraph.compile(fn, cache=False)
    with np.errstate(all="ignore"):
        got = compiled(x)
        want = _dividing(monkeypatch, fn, x)
        eager = fn(x)
    assert "jg_exact_recip(" in _sources(compiled)
    assert got.dtype == want.dtype == np.float32
    assert _same(got, want)
    np.testing.assert_allclose(got, eager, rtol=2e-6, atol=1e-7)


def test_broadcast_column_divisor_matches_numpy_bit_for_bit():
    """``x / s`` with ``s`` of shape (rows, 1) is exact in NumPy, so the kernel must reproduce it bit for bit, for
    divisors that take the products and for those that keep the division (even integers, zeros, inf, NaN)."""
    rng = np.random.default_rng(1)
    s = np.array(ROW_DIVISORS * 2, np.float32)[:, None]
    x = np.concatenate([rng.standard_normal((len(s), 20)).astype(np.float32),
                        np.tile(np.array([3 * 2.0**-149, 147 * 2.0**-149, 0.0, np.inf], np.float32), (len(s), 1))], 1)
    compiled = jitgraph.compile(_scaled_centre, cache=False)
    with np.errstate(all="ignore"):
        got = compiled(x, s)
        want = _scaled_centre(x, s)
    assert "jg_exact_recip(" in _sources(compiled)
    assert _same(got, want)


_FLOATS = st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True)


@given(st.lists(_FLOATS, min_size=1, max_size=6), st.lists(_FLOATS, min_size=3, max_size=3))
def test_broadcast_column_divisor_random(divisors, row):
    s = np.array(divisors, np.float32)[:, None]
    x = np.tile(np.array(row, np.float32), (len(s), 1))
    with np.errstate(all="ignore"):
        got = _COMPILED(x, s)
        want = _scaled_centre(x, s)
    assert _same(got, want)


_COMPILED = jitgraph.compile(_scaled_centre, cache=False)


def _scaled(x, s):
    return x / s * 2 + x


@pytest.mark.parametrize("s", ROW_DIVISORS)
def test_flat_kernel_scalar_divisor_matches_numpy_bit_for_bit(s):
    """An elementwise kernel dividing by a scalar of the call takes the products when ``jg_exact_recip`` lets the
    divisor through and divides otherwise; either way NumPy's values (x / s * 2 + x is exact in NumPy's order)."""
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.standard_normal(4096).astype(np.float32),
                        np.array([3 * 2.0**-149, 147 * 2.0**-149, 0.0, -0.0, np.inf, np.nan, 1e-40], np.float32)])
    compiled = jitgraph.compile(_scaled, cache=False)
    with np.errstate(all="ignore"):
        got = compiled(x, np.float32(s))
        want = _scaled(x, np.float32(s))
    assert "jg_exact_recip(" in _sources(compiled)
    assert _same(got, want)
