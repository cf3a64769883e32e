"""Constants for the vectorisable math library: exact splits of pi and ln2, per-dtype limits, fitted polynomials.

Why the constants are computed here instead of typed in as decimals: Cody-Waite and Payne-Hanek argument reduction
need pi/2, 2/pi and ln2 split into float pieces with a prescribed number of trailing zero bits, and the pieces must
add up to the real constant to ~3x the working precision. Deriving them from exact rationals (``Fraction``) at import
makes every split checkable and removes hand-copied hex digits. pi and ln2 come from integer series (a few ms).

The polynomial coefficients were fitted offline with a weighted Remez exchange (relative error, mpmath at 60
digits) on exactly the intervals the kernels use; each table notes the function, the interval and the variable.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

_BITS = 1600  # fixed-point precision of pi and ln2: enough for 2/pi at weight 2**-(1023 + 4*53)


def _arctan_inv(n: int, bits: int) -> int:
    """``atan(1/n) * 2**bits`` (truncated) from the alternating Taylor series, in integers."""
    scale = 1 << (bits + 16)
    power, total, k, sign = scale // n, 0, 1, 1
    while power:
        total += sign * (power // k)
        power //= n * n
        k += 2
        sign = -sign
    return total >> 16


def _pi_fixed(bits: int) -> int:
    """``pi * 2**bits`` via Machin's formula pi = 16 atan(1/5) - 4 atan(1/239)."""
    return 16 * _arctan_inv(5, bits + 8) - 4 * _arctan_inv(239, bits + 8) >> 8


def _ln2_fixed(bits: int) -> int:
    """``ln(2) * 2**bits`` via ln 2 = 2 atanh(1/3) = 2 sum 1 / ((2k+1) 3**(2k+1))."""
    scale = 1 << (bits + 16)
    power, total, k = scale // 3, 0, 1
    while power:
        total += power // k
        power //= 9
        k += 2
    return 2 * total >> 16


PI = Fraction(_pi_fixed(_BITS), 1 << _BITS)
LN2 = Fraction(_ln2_fixed(_BITS), 1 << _BITS)
TWO_OVER_PI_FIXED = (1 << (2 * _BITS)) * 2 // _pi_fixed(_BITS)  # 2/pi * 2**_BITS, truncated
TWO_OVER_PI_BITS = _BITS


def round_sig(value: Fraction, bits: int) -> Fraction:
    """``value`` rounded to ``bits`` significant bits, ties to even: exact, no double rounding via float64."""
    if value == 0:
        return Fraction(0)
    sign = -1 if value < 0 else 1
    mag = abs(value)
    shift = bits - (mag.numerator.bit_length() - mag.denominator.bit_length())
    scaled = mag * Fraction(2) ** shift
    while scaled >= 1 << bits:  # the bit_length estimate can be one too high
        shift -= 1
        scaled /= 2
    while scaled < 1 << (bits - 1):
        shift += 1
        scaled *= 2
    q, r = divmod(scaled.numerator, scaled.denominator)
    if 2 * r > scaled.denominator or (2 * r == scaled.denominator and q & 1):
        q += 1
    return sign * Fraction(q) / Fraction(2) ** shift


@dataclass(frozen=True)
class FloatSpec:
    """What the kernels need to know about one float format."""

    name: str  # NumPy dtype name, the key of the coefficient tables and of VECTOR_MATH
    ftype: type  # np.float32 / np.float64: casts inside kernels and typed constants
    precision: int  # significand bits including the implicit one
    max_exponent: int  # largest unbiased exponent of a finite value

    def const(self, value: Fraction | float):
        """``value`` correctly rounded to this format, as a NumPy scalar (numba types it exactly)."""
        return self.ftype(float(round_sig(Fraction(value), self.precision)))

    def split(self, value: Fraction, hi_bits: int | None = None) -> tuple:
        """``(hi, lo)`` with hi + lo = value to ~2p bits; ``hi_bits`` < p leaves zero bits so ``k*hi`` is exact."""
        hi = round_sig(value, hi_bits or self.precision)
        return self.const(hi), self.const(value - hi)

    def coeffs(self, table: dict[str, tuple[float, ...]]) -> tuple:
        return tuple(self.ftype(c) for c in table[self.name])


F32 = FloatSpec("float32", np.float32, 24, 127)
F64 = FloatSpec("float64", np.float64, 53, 1023)


# --- fitted polynomials (ascending powers) ------------------------------------------------------------------------

# expm1(r) = r + r**2 * P(r) on |r| <= ln2/2 (+0.2%); exp(r) = 1 + expm1(r) shares it. Max rel. error 2**-26 / 2**-56.
EXPM1_P = {
    "float32": (0.499999981329, 0.166665426846, 0.0416672039212, 8.3666467843e-3, 1.38824972836e-3),
    "float64": (0.500000000000000555112, 0.166666666666665880259, 0.0416666666665753832044,
                8.33333333339041429366e-3, 1.38888889320518149097e-3, 1.98412697176009818114e-4,
                2.48015046503472150869e-5, 2.75574082220928764922e-6, 2.76262987895982977387e-7,
                2.50537790309482276604e-8),
}
# 2 atanh(s) = 2s + s**3 (2/3 + z R(z)), z = s**2 <= ((sqrt2-1)/(sqrt2+1))**2; rel. error 2**-37 / 2**-66 (pow needs
# log to ~p+10 bits, hence the extra terms over a plain log).
LOG_R = {
    "float32": (0.400001531093, 0.285470338625, 0.234210609815),
    "float64": (0.400000000000022892799, 0.285714285700837011817, 0.222222225228854208812, 0.18181784097466521799,
                0.153867701976738352476, 0.132565085179633390666, 0.131992820747235506396),
}
# sin(r) = r + r**3 S(r**2), cos(r) = 1 - r**2/2 + r**4 C(r**2) on |r| <= 1.001 pi/4; rel. error 2**-28 / 2**-58
# (sin), 2**-33 / 2**-64 (cos).
SIN_S = {
    "float32": (-0.166666545366, 8.33215605397e-3, -1.95146319155e-4),
    "float64": (-0.166666666666666296592, 8.33333333332200547339e-3, -1.98412698294954842641e-4,
                2.75573135876176443979e-6, -2.50507423077665139432e-8, 1.58959047371131033725e-10),
}
COS_C = {
    "float32": (0.0416666455545, -1.38873098671e-3, 2.44324130198e-5),
    "float64": (0.0416666666666665949648, -1.38888888888728952685e-3, 2.4801587288748172663e-5,
                -2.75573141486194831179e-7, 2.08756965720691567466e-9, -1.13583104646635072098e-11),
}
# erf(x) = x P(x**2) on |x| <= 1; rel. error 2**-30 / 2**-57.
ERF_P = {
    "float32": (1.12837916573, -0.376126258242, 0.112835851481, -0.0268538119176, 5.18832765616e-3,
                -8.01019339366e-4, 7.8538606616e-5),
    "float64": (1.12837916709551255856, -0.376126389031835206556, 0.112837916709441848928,
                -0.0268661706431114755134, 5.22397760611854368451e-3, -8.54832592931754290527e-4,
                1.20552935769830581398e-4, -1.49247123034408686495e-5, 1.64471315872304276481e-6,
                -1.62063138687679035183e-7, 1.37109808281070512642e-8, -7.77946921178931327689e-10),
}
# log(erfc(a)) = Q(a - centre) for 1 <= a <= 4 (float32) and, float64, 1 <= a <= 2.5 and 2.5 <= a <= 6; the centre is
# each interval's left end, where erfc is largest (|Q| small there, so Horner's rounding is too). Weighted by
# erfc/erf, i.e. the error it causes in erf = 1 - erfc: 2**-36 / 2**-55.
ERFC_Q = {
    "float32": ((-1.84960550984, -2.6389675292, -0.843106875894, -0.0415646250207, 0.0100495588753,
                 -2.01645083207e-3, 2.93016107631e-4, -2.30573516442e-5, 2.12053232673e-7),),
    "float64": ((-1.84960550993324837427, -2.63896751423474290285, -0.843107256361479825853,
                 -0.0415610979752790166717, 0.0100338245673870072471, -1.97789679888301997767e-3,
                 2.37296072908501975959e-4, 2.63594195874972671885e-5, -2.73346671815105519729e-5,
                 9.8777463881221264143e-6, -2.35560323088993304446e-6, 3.77188752055971439633e-7,
                 -3.53043431478493297378e-8, 1.26672662473044150742e-9),
                (-7.80681527272726435174, -5.35268075098639386173, -0.94389373352396322469,
                 -0.0108580727426770711616, 2.16547694760774270246e-3, -4.20932889878683475382e-4,
                 7.70321929720347507207e-5, -1.27596998671399701961e-5, 1.77628469994486651079e-6,
                 -1.65540167106893283873e-7, -3.84535623985211854746e-9, 5.32819287134760851612e-9,
                 -1.02376488309114191758e-9, 7.76824381120809133445e-11)),
}
