"""Float32 division by a constant as a float64 product (backends/cpu/divisions.py, flat_body.py): the arithmetic
claim, which divisors take it, the kernels that use it (W6's Adam update) and their plain fallback, all against eager
NumPy."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import jitgraph
from jitgraph.backends.cpu import divisions, flat_body, streaming

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.workloads import w6_adam as adam

W6_DIVISORS = [1 - 0.9**10, 1 - 0.999**10]  # Adam's bias corrections at step 10 (benchmarks/workloads.py W6)
DIVISORS = W6_DIVISORS + [3.0, 0.1, 7.0, 1 / 3, 255.0, 0.999, 1e-30, 2 - 2**-23, -0.75, 5 * 2.0**-149, 12.5, 15_000_001.0]
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.17549435e-38, 1.1754942e-38, 3.4028235e38,
                    -3.4028235e38, 1.0, -1.0, 2.0, 3.0, 6.0, 1e-40, 5.877472e-39], np.float32)


def _product(x: np.ndarray, y: float) -> np.ndarray:
    """What the kernel computes: float64(x) * y (one IEEE product), rounded once to float32."""
    return (x.astype(np.float64) * np.float64(y)).astype(np.float32)


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    return np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got[~np.isnan(got)]),
                                                                        np.signbit(want[~np.isnan(want)]))


@pytest.mark.parametrize("c", DIVISORS)
def test_product_equals_numpy_division(c):
    """Every special value, and 300,000 random bit patterns (all exponents, subnormals and NaNs included)."""
    y = divisions.exact_reciprocal(c)
    assert y is not None
    rng = np.random.default_rng(abs(hash(c)) % 2**32)
    x = np.concatenate([SPECIAL, rng.integers(0, 2**32, 300_000, dtype=np.uint64).astype(np.uint32).view(np.float32)])
    with np.errstate(all="ignore"):
        want = x / np.float32(c)
    assert _same(_product(x, y), want)


def test_product_equals_numpy_division_over_a_binade():
    """Every float32 significand (scaling x by 2 scales the product and the quotient alike, so one binade of
    normal results stands for all of them) for the two W6 divisors."""
    x = (np.arange(2**23, dtype=np.uint32) | np.uint32(0x3F800000)).view(np.float32)
    for c in W6_DIVISORS:
        assert _same(_product(x, divisions.exact_reciprocal(c)), x / np.float32(c))


@pytest.mark.parametrize("c", [0.0, -0.0, np.inf, np.nan, 2.0, 0.5, 1.0, 1024.0, 2.0**-130, 6.0, 10.0, 100.0, -12.0,
                               1e30, 3.4e38])
def test_divisors_that_keep_the_division(c):
    """Zero, infinities, NaN and powers of two (LLVM already multiplies by those) keep ``/``; so do even integers
    (every float32 from 2**24 up is one), whose quotients can land exactly on a subnormal rounding midpoint
    (x = 3 * 2**-149, c = 6)."""
    assert divisions.exact_reciprocal(c) is None


def test_even_integer_divisor_would_round_a_subnormal_midpoint_wrongly():
    """Why even integers are excluded: 147 * 2**-149 / 98 is exactly 1.5 * 2**-149, a midpoint between two
    subnormals, which NumPy rounds to the even one (2 * 2**-149); the float64 product lands just below it."""
    x = np.array([147 * 2.0**-149], np.float32)
    assert (x / np.float32(98.0))[0] == np.float32(2 * 2.0**-149)
    assert _product(x, 1.0 / 98.0)[0] == np.float32(2.0**-149)


def _inputs(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(n)
    p, g, m, v = (rng.standard_normal(n).astype(np.float32) for _ in range(4))
    v = np.abs(v)
    for a in (g, m, v):  # every special dividend: zeros, subnormals, huge values, infinities, NaN
        a[rng.integers(0, n, SPECIAL.size)] = SPECIAL
    return [p, g, m, v]


def _check_adam(compiled, n: int) -> list[str]:
    args = _inputs(n)
    mine, eager = [a.copy() for a in args], [a.copy() for a in args]
    with np.errstate(all="ignore"):
        assert compiled(*mine) is None
        adam(*eager)
    for got, want in zip(mine, eager):
        assert _same(got, want)
    return [k.source for k in compiled.entries[-1].compiled.kernels.values()]


def test_adam_kernel_uses_products_in_cache_and_division_beyond():
    """The kernel has both loops, chosen by the domain's size; small inputs (in cache) take the products."""
    (source,) = _check_adam(jitgraph.compile(adam, cache=False), 5000)
    assert source.count("np.float64(") == 2 and source.count(" / np.float32(") == 2  # one loop each
    threshold = int(source.split("if n0 <= ")[1].split(":")[0])
    # 3/4 of the last-level cache over the 16 bytes of buffer each element has: p, g, m, v, the three outputs
    # written in place into p, m and v (counted as buffers of their own, 1e7 elements took the slower loop)
    assert threshold == int(streaming.CACHE_FRACTION * streaming.last_level_cache_bytes()) // 16


def test_adam_kernel_memory_path_matches_eager(monkeypatch):
    """With the threshold at zero every launch takes the ``vdivps`` loop (a launch streaming from memory)."""
    monkeypatch.setattr(flat_body, "cached_elements", lambda emit: 0)
    (source,) = _check_adam(jitgraph.compile(adam, cache=False), 3000)
    assert "if n0 <= 0:" in source


def test_kernels_without_constant_divisions_are_unchanged():
    """No division by a constant (or one by a power of two): one loop, as before."""

    def f(a, b):
        return (a * b) / 4.0 + a / b - a

    a, b = np.linspace(-2, 2, 300, dtype=np.float32), np.linspace(1, 3, 300, dtype=np.float32)
    compiled = jitgraph.compile(f, cache=False)
    np.testing.assert_array_equal(compiled(a, b), f(a, b))
    (source,) = [k.source for k in compiled.entries[-1].compiled.kernels.values()]
    assert "if n0 <=" not in source and "np.float64(" not in source
