"""Scalar helpers that generated kernels call where NumPy's semantics differ from Python's or LLVM's.

Each one is the NumPy C loop's definition rewritten as a tiny ``njit(inline="always")`` function, so it costs
nothing after inlining: integer floor division and remainder (floor semantics, 0 for division by zero, no trap on
``INT_MIN // -1``), float ``divmod`` (``npy_divmod``), NaN-propagating ``maximum``/``minimum`` and the NaN-ignoring
``fmax``/``fmin``, ``sign``, ``logaddexp`` and integer ``power``. Generated modules ``import *`` from here.
"""

# ruff: noqa: PLR0124  (x != x is the NaN test that compiles to one vector compare)
from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = [
    "jg_floordiv_float",
    "jg_floordiv_int",
    "jg_fmax",
    "jg_fmin",
    "jg_fmod_int",
    "jg_logaddexp",
    "jg_max_acc",
    "jg_maximum",
    "jg_min_acc",
    "jg_minimum",
    "jg_mod_float",
    "jg_mod_int",
    "jg_power_int",
    "jg_sign",
    "jg_sum_block_f32",
    "jg_sum_block_f64",
]

_inline = njit(inline="always", error_model="numpy", cache=False)
# Block sums may be reassociated (and so vectorised): they are *not* inlined at Numba's IR level, which would give
# their additions the calling kernel's strict flags; LLVM inlines them later and keeps the flags on these adds only.
_reassoc = njit(error_model="numpy", cache=False, fastmath={"reassoc"}, nogil=True)


@_reassoc
def jg_sum_block_f32(a):
    """Sum of a 1-D block of float32 in float32, in whatever order LLVM vectorises (32 lanes on AVX2).

    Kernels sum at most ``kernel_source.BLOCK`` elements per call and add the block sums in float64, so the error is
    that of a few float32 additions per lane, no worse than NumPy's pairwise summation (8 lanes, blocks of 128).
    """
    s = np.float32(0.0)
    for k in range(a.shape[0]):
        s += a[k]
    return s


@_reassoc
def jg_sum_block_f64(a):
    """The float64 block sum (see ``jg_sum_block_f32``)."""
    s = np.float64(0.0)
    for k in range(a.shape[0]):
        s += a[k]
    return s


@_inline
def jg_floordiv_int(a, b):
    if b == 0:
        return a - a
    if b == -1:
        return -a
    return a // b


@_inline
def jg_mod_int(a, b):
    if b == 0 or b == -1:
        return a - a
    return a % b


@_inline
def jg_fmod_int(a, b):
    if b == 0 or b == -1:
        return a - a
    r = a % b
    if r != 0 and (r < 0) != (a < 0):
        r -= b
    return r


@_inline
def jg_floordiv_float(a, b):
    if b == 0:
        return a / b
    mod = np.fmod(a, b)
    div = (a - mod) / b
    if mod != 0 and (b < 0) != (mod < 0):
        div -= 1.0
    if div != 0:
        floordiv = np.floor(div)
        if div - floordiv > 0.5:
            floordiv += 1.0
    else:
        floordiv = math.copysign(0.0, a / b)
    return floordiv


@_inline
def jg_mod_float(a, b):
    if b == 0:
        return np.fmod(a, b)
    mod = np.fmod(a, b)
    if mod == 0:
        return math.copysign(0.0, b)
    if (b < 0) != (mod < 0):
        mod += b
    return mod


@_inline
def jg_maximum(a, b):
    return a if (a >= b or a != a) else b


@_inline
def jg_minimum(a, b):
    return a if (a <= b or a != a) else b


@_inline
def jg_fmax(a, b):
    return a if (a >= b or b != b) else b


@_inline
def jg_fmin(a, b):
    return a if (a <= b or b != b) else b


@_inline
def jg_max_acc(acc, v):
    """Running max that sticks at the first NaN, as np.max does."""
    return v if (v > acc or v != v) else acc


@_inline
def jg_min_acc(acc, v):
    return v if (v < acc or v != v) else acc


@_inline
def jg_sign(a):
    if a > 0:
        return 1
    if a < 0:
        return -1
    if a == 0:
        return 0
    return a  # NaN


@_inline
def jg_logaddexp(x, y):
    if x == y:
        return x + math.log(2.0)
    d = x - y
    if d > 0:
        return x + math.log1p(math.exp(-d))
    if d <= 0:
        return y + math.log1p(math.exp(d))
    return d


@_inline
def jg_power_int(a, b):
    if b < 0:
        raise ValueError("Integers to negative integer powers are not allowed.")
    result = a - a + 1
    base = a
    while b:
        if b & 1:
            result = result * base
        base = base * base
        b >>= 1
    return result
