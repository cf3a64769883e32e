"""tanh, sigmoid, gelu_tanh and erf built on the exp kernels, again branch-free and vectorisable.

* tanh: ``m / (m + 2)`` with ``m = expm1(2|x|)``, one division, and ``copysign`` so that tanh(-0.0) = -0.0. One
  formula for the whole range: near zero it is 3 ulp where an extra odd polynomial was 1, but that polynomial was
  evaluated (and blended) for every element, and dropping it makes the tanh-GELU kernel about 20% faster (it is
  bound by the length of this chain, not by memory). Near +-1 it stays within 1 ulp, as NumPy's: user formulas
  such as ``1 + tanh(u)`` cancel there and magnify every ulp. (``-m / (m + 2)`` with ``m = expm1(-2|x|)`` is 2 ulp
  near zero but also 2 ulp near +-1, which moved tanh-GELU's negative tail by 5e-4 relative.)
* sigmoid: ``e = exp(-|x|)`` never overflows; ``1/(1+e)`` for x >= 0 and ``e/(1+e)`` for x < 0 keep full relative
  accuracy in both tails (sigmoid(-100) in float32 is a correctly rounded denormal, not 0).
* gelu_tanh: 0.5 x (1 + tanh(u)) = x sigmoid(2u), evaluated like sigmoid. The naive form cancels catastrophically
  for x < -3, and in the far negative tail the result's relative error is ``|2u|`` times the relative error of
  ``2u`` itself, so ``-2u = x (a + b x**2)`` is evaluated in double-word arithmetic and fed to ``exp_dd``.
* erf: ``x + x (P(x**2) - 1)`` for |x| < 1; beyond, ``1 - exp(Q(|x|))`` where Q fits log(erfc). No exp(-x**2) is
  formed, so no extra-precise square is needed; the erfc term's error is damped by erfc/erf < 0.19.
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
    polyval,
    polyval_select,
    pow2,
    scale_pow2,
    select,
)
from jitgraph.backends.cpu.mathlib_consts import ERF_P, ERFC_Q, FloatSpec
from jitgraph.backends.cpu.mathlib_dd import two_prod, two_sum

_inline = numba.njit(inline="always")

# gelu_tanh's constants are the float64 literals users write (0.7978845608028654 ~ sqrt(2/pi), 0.044715), taken
# exactly: the float64 tail of gelu is sensitive to them at the 1e-14 level.
_GELU_C = Fraction(0.7978845608028654)
_GELU_A = Fraction(0.044715)


def build_special(s: FloatSpec, explog: dict) -> dict:
    """tanh, sigmoid, gelu_tanh and erf for one float format, reusing that format's exp kernels."""
    ft = s.ftype
    p = s.precision
    zero, one, two = ft(0.0), ft(1.0), ft(2.0)
    inf, nan = ft(np.inf), ft(np.nan)
    exp_reduce1, exp_dd_parts = explog["exp_reduce1"], explog["exp_dd_parts"]

    # tanh(x) rounds to 1 once 2/(e**2x + 1) < 2**-(p+1); clamping 2|x| there keeps 2**k exact in expm1.
    tanh_clamp = ft(np.ceil((p + 3) * np.log(2.0)))

    @_inline
    def tanh(x):
        x = ft(x)
        t = two * fabs(x)
        t = select(t > tanh_clamp, tanh_clamp, t)  # nan passes
        em1, k = exp_reduce1(t)
        scale = pow2(k)
        m = fmuladd(scale, em1, scale - one)  # expm1(2|x|)
        return copysign(fdiv(m, m + two), x)

    # 1 + e for e = (1 + em1) 2**k <= 1.5 (k <= 0), rounded once: 1 + 2**k is exact for k >= -p, and below that
    # e is under half an ulp of 1 anyway, so 2**max(k, -p-2) gives the same rounded sum.
    k_min = ft(-(p + 2))

    @_inline
    def _one_plus(em1, k):
        scale = pow2(select(k < k_min, k_min, k))
        return fmuladd(scale, em1, one + scale)

    sigmoid_clamp = -explog["exp_lo"]  # |x| beyond which 1/(1 + e**-x) is 0 or 1 after rounding

    @_inline
    def sigmoid(x):
        x = ft(x)
        t = select(-x > sigmoid_clamp, sigmoid_clamp, -x)  # nan passes
        t = select(t < -sigmoid_clamp, -sigmoid_clamp, t)
        em1, k = exp_reduce1(t)  # e**-x = (1 + em1) 2**k
        # x <= 0: 1 / (1 + e**-x) = 2**-k / ((1 + 2**-k) + em1), where the small result (down to the denormals)
        # comes from the exact scaling; x > 0: 1 / (1 + 2**k + 2**k em1). One rounding in each denominator.
        scale = pow2(select(-k < k_min, k_min, -k))
        negative = scale_pow2(fdiv(one, (one + scale) + em1), -k)
        positive = fdiv(one, _one_plus(em1, k))
        return select(k > zero, negative, positive)

    gelu_a_hi, gelu_a_lo = s.split(-2 * _GELU_C)
    gelu_b_hi, gelu_b_lo = s.split(-2 * _GELU_C * _GELU_A)

    @_inline
    def gelu_tanh(x):
        x = ft(x)
        # v = -2u = x (A + B x**2) in double-word arithmetic.
        x2_hi, x2_lo = two_prod(x, x)
        b_hi, b_lo = two_prod(gelu_b_hi, x2_hi)
        b_lo = b_lo + (gelu_b_hi * x2_lo + gelu_b_lo * x2_hi)
        i_hi, i_lo = two_sum(gelu_a_hi, b_hi)
        i_lo = i_lo + (b_lo + gelu_a_lo)
        v_hi, v_lo = two_prod(x, i_hi)
        v_lo = v_lo + x * i_lo
        # x / (1 + e**v) as in sigmoid: with e = exp(-|v|) <= 1 nothing overflows before the result does. Huge |x|
        # makes v_hi infinite and v_lo nan; exp_dd ignores v_lo then.
        positive = v_hi > zero
        em1, k = exp_dd_parts(select(positive, -v_hi, v_hi), select(positive, -v_lo, v_lo))
        numerator = select(positive, scale_pow2(fmuladd(x, em1, x), k), x)  # x e**-|v|, rounded once
        result = copysign(fdiv(numerator, _one_plus(em1, k)), x)  # -0.0 on underflow, as NumPy
        return select(x == -inf, nan, result)  # as NumPy's formula: -inf * (1 + tanh(-inf)) = -inf * 0

    # erf(x) = x + x (P(x**2) - 1): the rounding of 2/sqrt(pi) and of x * P only touch the small second term.
    erf_p = (ft(ERF_P[s.name][0] - 1.0),) + s.coeffs(ERF_P)[1:]
    erfc_pieces = tuple(tuple(ft(c) for c in piece) for piece in ERFC_Q[s.name])
    # erf rounds to 1 beyond ERF_SAT (erfc < 2**-(p+1)); the erfc fits cover [1, ERF_SAT].
    erf_sat = ft(4.0 if p == 24 else 6.0)
    centre_lo, centre_hi = one, ft(2.5)  # the fits' expansion points: the left ends of their intervals
    split_at = centre_hi
    erfc_q_lo = erfc_pieces[0]
    erfc_q_hi = erfc_pieces[-1]
    one_piece = len(erfc_pieces) == 1

    @_inline
    def erf(x):
        x = ft(x)
        a = fabs(x)
        small = fmuladd(a, polyval(a * a, erf_p), a)
        ac = select(a > erf_sat, erf_sat, a)  # nan passes
        low_piece = (ac < split_at) | one_piece
        q = polyval_select(ac - select(low_piece, centre_lo, centre_hi), low_piece, erfc_q_lo, erfc_q_hi)
        em1, k = exp_reduce1(q)  # q in [-40, -1.8]: 2**k stays normal
        large = one - pow2(k) * (em1 + one)
        return copysign(select(a < one, small, large), x)

    return {"tanh": tanh, "sigmoid": sigmoid, "gelu_tanh": gelu_tanh, "erf": erf}
