"""sin and cos over the whole float range, branch-free, with a vectorisable Payne-Hanek argument reduction.

The trade-off (documented in ``mathlib.py`` too): a Cody-Waite reduction with a three-piece pi/2 is cheap but only
accurate up to |x| ~ 1e5 (float32) / ~1e9 (float64); beyond that the reduced argument is garbage. Falling back to
``math.sin`` for large inputs would need a branch or a libm call in a select arm, and either stops vectorisation for
*every* input. So there is a single path for all inputs instead, Payne-Hanek in floating point:

* For the binary exponent E of |x| only the bits of 2/pi with weight below 2**(p+1-E) matter modulo 4 (the rest
  multiply the integer significand into multiples of 4). A per-exponent table holds those bits as four p-bit
  floats T0..T3, so ``|x| * (T0 + T1 + T2 + T3)`` equals ``|x| * 2/pi`` modulo 4 to ~4p bits.
* The products are split exactly (``two_prod``) and summed in three levels with ``two_sum``; the integer parts are
  removed with ``rint`` on the way. Massive cancellation (x very close to a multiple of pi/2) happens inside exact
  operations, so the fraction keeps full relative accuracy.
* Four chunks are what the worst inputs need: the float32 closest to a multiple of pi/2 (16367173 * 2**72) is
  2**-29.9 quarter turns away, the float64 one (6381956970095103 * 2**797) ~2**-61; the tests include both.
* The table row is picked by the exponent bits, a per-lane load (the loop still vectorises). For |x| < 2**(p+2)
  every lane reads row 0 (plain 2/pi), which stays in L1.

Cost: measured single-threaded on this repo's 2-core AMD EPYC: ~7 ns/element for float32 (the four table reads are
scalarised by LLVM, whose cost model for Zen 3 avoids gather instructions, and cost about half of it) against
~0.6 ns for a Cody-Waite-only sin; float64 ~8-10 ns against ~1.7 ns. Rows for huge exponents are stored
pre-multiplied by 2**SHIFT (and |x| divided by it) so that T3 stays a normal float.
"""

from __future__ import annotations

import numba
import numpy as np

from jitgraph.backends.cpu.mathlib_bits import biased_exponent, fabs, floor, polyval, rint, select
from jitgraph.backends.cpu.mathlib_consts import COS_C, PI, SIN_S, TWO_OVER_PI_BITS, TWO_OVER_PI_FIXED, FloatSpec
from jitgraph.backends.cpu.mathlib_dd import two_prod, two_sum

_inline = numba.njit(inline="always")

CHUNKS = 4  # pieces of 2/pi per exponent: 4p bits cover the worst cancellation of both formats with margin


def pio2_table(s: FloatSpec) -> tuple[np.ndarray, int, int, int]:
    """The Payne-Hanek table: ``(table, first_biased_exponent, shift_from_biased_exponent, shift)``.

    Row r (flattened, ``CHUNKS`` entries) serves biased exponent ``first + r``; every smaller exponent uses row 0,
    which is plain 2/pi split in four. Rows at or above ``shift_from`` are scaled by ``2**shift``.
    """
    p, bias = s.precision, s.max_exponent
    first = bias + p + 1  # E = p + 1: the first exponent whose integer significand makes 2/pi's 2**1 bit irrelevant
    last = 2 * bias + 1  # inf/nan exponent: give it a row too so no lane ever reads outside the table
    shift_from = bias + (bias + 1) // 2 - p  # keeps T0 below the overflow and T3 above the normal range
    shift = (bias + 1) // 2 + 2 * p
    rows = []
    for b in range(first, last + 1):
        drop = b - first  # bits of weight >= 2**-drop only contribute multiples of 4
        frac = TWO_OVER_PI_FIXED % (1 << (TWO_OVER_PI_BITS - drop))
        top = frac.bit_length()  # number of bits of frac, i.e. weight of its msb is 2**(top - 1 - BITS)
        scale = shift if b >= shift_from else 0
        row = []
        for j in range(CHUNKS):
            low_bit = top - (j + 1) * p
            chunk = (frac >> low_bit) & ((1 << p) - 1)
            row.append(float(chunk) * 2.0 ** (low_bit - TWO_OVER_PI_BITS + scale) if chunk else 0.0)
        rows.append(row)
    table = np.array(rows, dtype=s.ftype)
    finfo = np.finfo(s.ftype)
    nonzero = np.abs(table[table != 0])
    assert nonzero.min() >= finfo.tiny and nonzero.max() < finfo.max / 2**(p + 4), "table leaves the normal range"
    assert np.array_equal(table.astype(np.float64), np.array(rows)), "table entries must be exact"
    return table.ravel(), first, shift_from, shift


def build_trig(s: FloatSpec) -> dict:
    """sin and cos for one float format; also ``reduce_pio2`` for tests of the reduction itself."""
    ft = s.ftype
    p = s.precision
    zero, one, half, quarter, four = ft(0.0), ft(1.0), ft(0.5), ft(0.25), ft(4.0)
    inf = ft(np.inf)
    table, first, shift_from, shift = pio2_table(s)
    unshift = ft(2.0**-shift)
    pio2_hi, pio2_lo = s.split(PI / 2)
    sin_s, cos_c = s.coeffs(SIN_S), s.coeffs(COS_C)
    tiny = ft(2.0 ** -(p // 2 + 1))  # sin(x) rounds to x below this; also keeps -0.0 and denormals exact

    @_inline
    def reduce_pio2(a):
        """``(r_hi, r_lo, q)``: a = (4n + q) pi/2 + r_hi + r_lo, |r| <= ~pi/4, q in {0,1,2,3}, for finite a >= 0."""
        b = biased_exponent(a)
        row = CHUNKS * select(b > first, b - first, 0)
        a = a * select(b >= shift_from, unshift, one)
        p0_hi, p0_lo = two_prod(a, table[row])
        p1_hi, p1_lo = two_prod(a, table[row + 1])
        p2_hi, p2_lo = two_prod(a, table[row + 2])
        p3 = a * table[row + 3]
        # Level 0: the integer part of p0_hi only matters modulo 4 (it is a multiple of 8 once p0_hi >= 2**(p+2)).
        n0 = rint(p0_hi)
        f0 = p0_hi - n0
        q0 = n0 - four * floor(n0 * quarter)
        # Level 1 (terms ~1): exact sums, then drop the integer part.
        s1, e1 = two_sum(f0, p0_lo)
        s1, e2 = two_sum(s1, p1_hi)
        n1 = rint(s1)
        s1 = s1 - n1
        # Level 2 (terms ~2**-p) exactly, level 3 (terms ~2**-2p) rounded.
        t, e3 = two_sum(e1, e2)
        t, e4 = two_sum(t, p1_lo)
        t, e5 = two_sum(t, p2_hi)
        u = (e3 + e4) + (e5 + p2_lo) + p3
        h, l = two_sum(s1, t)
        l = l + u
        # Fraction of a quarter turn times pi/2, double-word.
        r_hi, r_lo = two_prod(h, pio2_hi)
        r_lo = r_lo + (h * pio2_lo + l * pio2_hi)
        q = q0 + n1
        return r_hi, r_lo, q - four * floor(q * quarter)

    @_inline
    def _sin_cos_reduced(r_hi, r_lo):
        """sin and cos of r_hi + r_lo for |r| <= ~pi/4 (r_lo a correction below an ulp of r_hi)."""
        z = r_hi * r_hi
        sin_r = r_hi + (r_hi * z * polyval(z, sin_s) + r_lo)
        hz = half * z
        w = one - hz
        cos_r = w + (((one - w) - hz) + (z * z * polyval(z, cos_c) - r_hi * r_lo))
        return sin_r, cos_r

    @_inline
    def sin(x):
        x = ft(x)
        a = fabs(x)
        finite = a < inf
        r_hi, r_lo, q = reduce_pio2(select(finite, a, zero))
        sin_r, cos_r = _sin_cos_reduced(r_hi, r_lo)
        odd = (q == one) | (q == ft(3.0))
        res = select(odd, cos_r, sin_r)
        res = select((q >= ft(2.0)) != (x < zero), -res, res)
        res = select(a < tiny, x, res)
        return select(finite, res, x - x)  # sin(+-inf) = nan, nan stays nan

    @_inline
    def cos(x):
        x = ft(x)
        a = fabs(x)
        finite = a < inf
        r_hi, r_lo, q = reduce_pio2(select(finite, a, zero))
        sin_r, cos_r = _sin_cos_reduced(r_hi, r_lo)
        odd = (q == one) | (q == ft(3.0))
        res = select(odd, sin_r, cos_r)
        res = select((q == one) | (q == ft(2.0)), -res, res)
        return select(finite, res, x - x)

    return {"sin": sin, "cos": cos, "reduce_pio2": reduce_pio2}
