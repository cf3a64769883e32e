"""exp, expm1, log, log1p and pow as inlinable, vectorisable numba functions (one builder per float format).

Shape of every function: clamp the input with NaN-preserving selects, reduce the argument (Cody-Waite), evaluate a
short fitted polynomial, rebuild the result from exponent bits, and finally *select* the IEEE special values.
There are no branches on data and no libm calls, so LLVM vectorises loops that inline them.

Notes on the less obvious choices:

* exp rebuilds ``2**k`` in two halves (``scale_pow2``) so that results underflow to correctly rounded denormals and
  exact zeros; a single ``2**k`` from exponent bits would give ~1e-38 for exp(-100) in float32.
* ``ln2`` is split Cody-Waite style with ``hi`` carrying only as many bits as ``k * hi`` may use, so the first
  reduction step is exact without an FMA.
* expm1 avoids ``exp(x) - 1`` (catastrophic cancellation near 0): it combines ``expm1(r)`` of the reduced argument
  with ``2**k - 1``, which is exact while ``k <= p``.
* log uses the atanh series in ``s = f / (2 + f)`` (odd, rapidly converging) around a mantissa centred on 1, and
  log1p adds the exactly computable rounding error of ``1 + x`` as ``c / (1 + x)``.
* pow needs ``y * log|x|`` to ~p+10 bits (its absolute error becomes the relative error of the result), so it uses
  a double-word log (``log_dd``) and an exp that accepts a double-word argument (``exp_dd``).
"""

from __future__ import annotations

from fractions import Fraction

import numba
import numpy as np

from jitgraph.backends.cpu.mathlib_bits import (
    copysign,
    fabs,
    fdiv,
    fmuladd,
    frexp_sqrt2,
    polyval,
    pow2,
    rint,
    scale_pow2,
    select,
)
from jitgraph.backends.cpu.mathlib_consts import EXPM1_P, LN2, LOG_R, FloatSpec
from jitgraph.backends.cpu.mathlib_dd import fast_two_sum, two_prod, two_sum

_inline = numba.njit(inline="always")


def build_explog(s: FloatSpec) -> dict:
    """The exp/log family for one float format, plus the internal helpers other families reuse.

    Returns a dict with the public functions (``exp``, ``expm1``, ``log``, ``log1p``, ``power``) and the helpers
    ``exp_reduce1``, ``exp_dd``, ``exp_dd_parts``, ``log_dd``.
    """
    ft = s.ftype
    p = s.precision
    zero, one, two, half = ft(0.0), ft(1.0), ft(2.0), ft(0.5)
    inf, nan = ft(np.inf), ft(np.nan)
    # |k| <= 2 * max_exponent needs 12 bits for float64, 9 for float32 (including the denormal range).
    k_bits = (2 * s.max_exponent + p).bit_length()
    ln2_hi, ln2_lo = s.split(LN2, p - k_bits)
    log2e = s.const(1 / LN2)
    expm1_p = s.coeffs(EXPM1_P)
    # Inputs beyond these saturate: exp(EXP_HI) overflows, exp(EXP_LO) rounds to +0 (k stays within scale_pow2's
    # range of +-2*max_exponent).
    exp_hi = ft(np.ceil((s.max_exponent + 1) * np.log(2.0)) + 1)
    exp_lo = -ft(np.ceil((s.max_exponent + p + 2) * np.log(2.0)) + 2)
    # expm1(x) rounds to -1 below EXPM1_LO; 2**k - 1 is exact for k <= p.
    expm1_lo = -ft(np.ceil((p + 3) * np.log(2.0)))
    k_exact = ft(p)
    tiny = ft(2.0 ** (-p))  # below this, expm1(x), log1p(x) round to x: also keeps -0.0 and denormals exact
    min_normal = ft(np.finfo(ft).tiny)
    denormal_scale, denormal_shift = ft(2.0**p), ft(-p)
    two_thirds_hi, two_thirds_lo = s.split(Fraction(2, 3))
    log_r = s.coeffs(LOG_R)
    log_t = (two_thirds_hi,) + log_r  # T(z)/z = 2/3 + z R(z): the plain log folds 2/3 into the polynomial

    @_inline
    def _expm1_reduced(r_hi, r_lo):
        """expm1(r) for r = r_hi + r_lo: r + r**2 P(r), summed so that r's own rounding never enters (0.6 ulp, not 1)."""
        r = r_hi + r_lo
        return r_hi + fmuladd(r * r, polyval(r, expm1_p), r_lo)

    @_inline
    def exp_reduce(hi, lo):
        """``(expm1(r), k)`` with ``hi + lo = k ln2 + r``, |r| <= ln2/2: callers rebuild exp(hi + lo) as they need."""
        k = rint(hi * log2e)
        r_hi = hi - k * ln2_hi  # exact: k * ln2_hi has spare bits, and the difference is a Sterbenz subtraction
        return _expm1_reduced(r_hi, lo - k * ln2_lo), k

    neg_ln2_lo = -ln2_lo

    @_inline
    def exp_reduce1(hi):
        """``exp_reduce(hi, 0)`` without the ``0 - k ln2_lo`` (strict IEEE keeps that add, on the dependent chain).

        Only the sign of a zero ``r_lo`` differs, which reaches ``em1`` only for ``hi = -0.0``; every caller maps
        that to its exact result (exp 1, expm1 and tanh return the input's zero, sigmoid 1/2)."""
        k = rint(hi * log2e)
        return _expm1_reduced(hi - k * ln2_hi, k * neg_ln2_lo), k

    @_inline
    def exp(x):
        x = ft(x)
        xc = select(x > exp_hi, exp_hi, x)  # nan fails both comparisons and passes through
        xc = select(xc < exp_lo, exp_lo, xc)
        em1, k = exp_reduce1(xc)
        return scale_pow2(em1 + one, k)

    @_inline
    def exp_dd_parts(hi, lo):
        """``(em1, k)`` with exp(hi + lo) = (1 + em1) * 2**k: lets callers fold a factor f into the mantissa as
        ``fmuladd(f, em1, f)`` before the one rounding of ``scale_pow2`` (a denormal exp times a factor would be
        rounded twice). ``lo`` is ignored when ``hi`` saturates, so it may be nan then."""
        in_range = (hi < exp_hi) & (hi > exp_lo)
        lo = select(in_range, lo, zero)
        hc = select(hi > exp_hi, exp_hi, hi)
        hc = select(hc < exp_lo, exp_lo, hc)
        em1, k = exp_reduce(hc, lo)
        return select(hi < exp_lo, -one, em1), k  # exp = 0 exactly, also after scaling by a huge factor

    @_inline
    def exp_dd(hi, lo):
        """exp(hi + lo) for a double-word argument."""
        em1, k = exp_dd_parts(hi, lo)
        return scale_pow2(em1 + one, k)

    @_inline
    def expm1(x):
        x = ft(x)
        xc = select(x > exp_hi, exp_hi, x)
        xc = select(xc < expm1_lo, expm1_lo, xc)
        em1, k = exp_reduce1(xc)
        # k <= p: 2**k * expm1(r) + (2**k - 1) with an exact 2**k - 1. Larger k: 1 is below the rounding of exp.
        scale = pow2(select(k > k_exact, k_exact, k))
        moderate = fmuladd(scale, em1, scale - one)
        large = scale_pow2(em1 + one, k) - one
        result = select(k > k_exact, large, moderate)
        return select(fabs(x) < tiny, x, result)

    @_inline
    def _log_parts(x):
        """``(f, e)`` with x = (1 + f) 2**e, f in [sqrt(1/2) - 1, sqrt(2) - 1), for finite x > 0 (also denormal)."""
        is_denormal = x < min_normal
        m, e = frexp_sqrt2(select(is_denormal, x * denormal_scale, x))
        return m - one, e + select(is_denormal, denormal_shift, zero)

    @_inline
    def _log1p_reduced(f):
        """log(1 + f) for |f| < 0.42: log1p(f) = 2 atanh(s) = f - s (f - T(s**2)), s = f / (2 + f)."""
        sf = fdiv(f, f + two)
        z = sf * sf
        t = z * polyval(z, log_t)
        return f - sf * (f - t)

    @_inline
    def _log_special(x, result):
        """NumPy's values outside (0, inf): log(0) = -inf, log(x<0) = nan, log(inf) = inf, nan stays nan."""
        special = select(x == zero, -inf, select(x < zero, nan, x))
        return select((x > zero) & (x < inf), result, special)

    @_inline
    def log(x):
        x = ft(x)
        f, e = _log_parts(x)
        result = e * ln2_hi + (_log1p_reduced(f) + e * ln2_lo)
        return _log_special(x, result)

    @_inline
    def log1p(x):
        x = ft(x)
        u = x + one
        # c = (1 + x) - u exactly (Sterbenz); log(1 + x) = log(u) + log(1 + c/u) ~ log(u) + c/u.
        c = x - (u - one)
        f, e = _log_parts(u)
        result = e * ln2_hi + (_log1p_reduced(f) + (e * ln2_lo + fdiv(c, u)))
        result = _log_special(u, result)
        return select(fabs(x) < tiny, x, result)

    @_inline
    def log_dd(a):
        """log(a) as a double-word ``(hi, lo)``, relative error ~2**-(p+12), for finite a > 0."""
        f, e = _log_parts(a)
        # s = f / (2 + f) to double-word precision: the quotient's residual is exact with an FMA / two_prod.
        d_hi, d_lo = two_sum(two, f)
        inv = fdiv(one, d_hi)
        s_hi = f * inv
        q_hi, q_lo = two_prod(s_hi, d_hi)
        s_lo = (((f - q_hi) - q_lo) - s_hi * d_lo) * inv
        z = s_hi * s_hi
        # s**3 (2/3 + z R(z)) in double-word: this term is ~1% of the result, its rounding would cost 2**-(p+6).
        s2_hi, s2_lo = two_prod(s_hi, s_hi)
        s2_lo = s2_lo + two * s_hi * s_lo
        s3_hi, s3_lo = two_prod(s2_hi, s_hi)
        s3_lo = s3_lo + (s2_hi * s_lo + s2_lo * s_hi)
        w_hi, w_lo = fast_two_sum(two_thirds_hi, z * polyval(z, log_r))
        w_lo = w_lo + two_thirds_lo
        c_hi, c_lo = two_prod(s3_hi, w_hi)
        c_lo = c_lo + (s3_hi * w_lo + s3_lo * w_hi)
        # e ln2 + 2s + c, summed exactly in the high parts.
        h1, e1 = two_sum(e * ln2_hi, two * s_hi)
        h2, e2 = two_sum(h1, c_hi)
        lo = e1 + e2 + (e * ln2_lo + two * s_lo + c_lo)
        return fast_two_sum(h2, lo)

    @_inline
    def power(x, y):
        x = ft(x)
        y = ft(y)
        a = fabs(x)
        finite_pos = (a > zero) & (a < inf)
        l_hi, l_lo = log_dd(select(finite_pos, a, one))
        l_hi = select(finite_pos, l_hi, select(a == zero, -inf, a))  # log 0 = -inf, log inf = inf, log nan = nan
        t_hi, t_lo = two_prod(y, l_hi)
        # An exact zero product has no error; the guard matters for pow(-1, huge) without FMA, where Dekker's
        # splitting of a huge y overflows into nan.
        t_lo = select(t_hi == zero, zero, t_lo + y * l_lo)
        magnitude = exp_dd(t_hi, t_lo)  # over/underflow, the zero and infinite bases all follow from exp
        # Sign and domain: an odd integral y keeps the sign of x (including -0.0 and -inf); a finite negative x with
        # a non-integral y has no real power. +-inf count as even integers, as in C99 (pow(-2, inf) = inf).
        y_odd = (rint(y) == y) & (rint(y * half) != y * half)
        result = select((copysign(one, x) < zero) & y_odd, -magnitude, magnitude)
        result = select((x < zero) & (x > -inf) & (rint(y) != y), nan, result)
        unit = (y == zero) | (x == one) | ((a == one) & (fabs(y) == inf))
        return select(unit, one, result)

    return {"exp": exp, "expm1": expm1, "log": log, "log1p": log1p, "power": power,
            "exp_reduce1": exp_reduce1, "exp_dd": exp_dd, "exp_dd_parts": exp_dd_parts, "log_dd": log_dd,
            "exp_lo": exp_lo}
