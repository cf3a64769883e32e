"""Accuracy, special values and vectorisation of the kernel math library (jitgraph.backends.cpu.mathlib).

Every function is exercised the way generated code uses it: inlined into a small njit loop over arrays. The loop
kernels are compiled once per (op, dtype) and shared by all tests. References: NumPy in float64 rounded to float32
for the float32 functions, NumPy in long double rounded to float64 for the float64 ones (where long double is the
80-bit x87 format; otherwise NumPy's float64 with one ulp of slack), ``math.erf`` for erf.
"""

from __future__ import annotations

import math
import re
import zlib
from fractions import Fraction
from functools import cache

import numba
import numpy as np
import pytest

from jitgraph.backends.cpu import mathlib
from jitgraph.backends.cpu.mathlib import ULP_BOUNDS, VECTOR_MATH
from jitgraph.backends.cpu.mathlib_dd import two_prod, two_prod_dekker

DTYPES = ["float32", "float64"]
UNARY = [op for op in ULP_BOUNDS if op != "power"]
_EXTENDED = np.finfo(np.longdouble).nmant >= 63
_CONTRACT_ULP = 4  # the library's promise against NumPy's own result, whatever its accuracy


# --- references ----------------------------------------------------------------------------------------------------

def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x < 0, e / (1 + e), 1 / (1 + e))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    """x * sigmoid(2u): the same function as 0.5x(1 + tanh u), without the cancellation for negative x."""
    c, a = x.dtype.type(0.7978845608028654), x.dtype.type(0.044715)
    v = -2 * c * (x + a * x**3)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(v > 0, x * np.exp(-v) / (1 + np.exp(-v)), x / (1 + np.exp(v)))


_erf = np.frompyfunc(math.erf, 1, 1)
_REFERENCES = {
    "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "sqrt": np.sqrt, "tanh": np.tanh,
    "sin": np.sin, "cos": np.cos, "sigmoid": _sigmoid, "gelu_tanh": _gelu_tanh,
    "erf": lambda x: _erf(x.astype(np.float64)).astype(x.dtype),
}


def reference(op: str, dtype: str, *args: np.ndarray) -> np.ndarray:
    """The correctly rounded result to within a small fraction of an ulp of ``dtype``."""
    wide = np.float64 if dtype == "float32" or not _EXTENDED else np.longdouble
    if op == "erf" or (op == "sqrt" and dtype == "float64"):
        wide = np.float64  # math.erf is float64 only; sqrt is correctly rounded, long double would round twice
    with np.errstate(all="ignore"):
        fn = np.power if op == "power" else _REFERENCES[op]
        return np.asarray(fn(*(a.astype(wide) for a in args))).astype(dtype)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in units in the last place, counting representable values between a and b (denormals included).

    Zeros of either sign are one point; nan matches nan only, and a nan mismatch counts as infinitely far.
    """
    ity = np.int32 if a.dtype == np.float32 else np.int64

    def ordered(x: np.ndarray) -> np.ndarray:
        """Bit patterns as integers that increase monotonically with the float value."""
        bits = x.view(ity).astype(np.int64)
        return np.where(bits < 0, np.iinfo(ity).min - bits, bits)

    oa, ob = ordered(a), ordered(b)
    same_sign = (oa >= 0) == (ob >= 0)
    with np.errstate(over="ignore"):
        dist = np.where(same_sign, np.abs(oa - ob), 0).astype(np.float64)
    dist[~same_sign] = np.abs(oa[~same_sign].astype(np.float64)) + np.abs(ob[~same_sign].astype(np.float64))
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    dist[nan_a & nan_b] = 0
    dist[nan_a != nan_b] = np.inf
    return dist


# --- compiled loop kernels -------------------------------------------------------------------------------------------

@cache
def kernel(op: str, dtype: str):
    """A plain njit loop applying ``VECTOR_MATH[op, dtype]`` elementwise, compiled on first use."""
    fn = VECTOR_MATH[op, dtype]
    if op == "power":
        @numba.njit
        def binary_loop(x, y, out):
            for i in range(x.size):
                out[i] = fn(x[i], y[i])
        return binary_loop

    @numba.njit
    def unary_loop(x, out):
        for i in range(x.size):
            out[i] = fn(x[i])
    return unary_loop


def apply(op: str, dtype: str, *args: np.ndarray) -> np.ndarray:
    args = tuple(np.ascontiguousarray(a, dtype=dtype) for a in args)
    out = np.empty_like(args[0])
    kernel(op, dtype)(*args, out)
    return out


# --- samples ----------------------------------------------------------------------------------------------------------

# Interesting intervals per op: overflow/underflow thresholds, where the algorithm switches pieces, etc.
_WINDOWS = {
    "exp": [(-750, -700), (700, 720), (-110, -85), (80, 92)],
    "expm1": [(-40, -15), (-1, 1), (80, 92), (700, 720)],
    "log": [(0.5, 2.0), (0.99, 1.01)],
    "log1p": [(-1, -0.5), (-1e-3, 1e-3), (0.5, 3)],
    "tanh": [(-0.6, 0.6), (-25, 25)],
    "sigmoid": [(-760, -700), (-110, -80), (-40, 40)],
    "erf": [(-1.2, 1.2), (0.9, 6.5), (-6.5, -0.9)],
    "sin": [(-10, 10), (-1e5, 1e5), (1e6, 1e9)],
    "cos": [(-10, 10), (-1e5, 1e5), (1e6, 1e9)],
    "gelu_tanh": [(-30, 10), (-12, -3), (-2, 2)],
    "sqrt": [(0, 4)],
}


def samples(op: str, dtype: str, n_bits: int = 1_000_000, n_window: int = 100_000) -> np.ndarray:
    """Random bit patterns over the whole range, denormals, values near 0, and the op's critical windows."""
    rng = np.random.default_rng(zlib.crc32(f"{op}/{dtype}".encode()))
    ity = np.uint32 if dtype == "float32" else np.uint64
    info = np.finfo(dtype)
    parts = [
        rng.integers(0, np.iinfo(ity).max, n_bits, dtype=ity, endpoint=True).view(dtype),
        rng.uniform(-1, 1, n_window).astype(dtype) * info.tiny,  # denormals
        (rng.uniform(-1, 1, n_window) * 2.0 ** rng.uniform(-40, 0, n_window)).astype(dtype),
    ]
    parts += [rng.uniform(lo, hi, n_window).astype(dtype) for lo, hi in _WINDOWS[op]]
    return np.concatenate(parts)


SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5]


def specials(dtype: str) -> np.ndarray:
    info = np.finfo(dtype)
    extra = [info.smallest_subnormal, -info.smallest_subnormal, info.tiny, info.max, -info.max]
    return np.array(SPECIALS + extra, dtype=dtype)


# --- accuracy ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", UNARY)
def test_unary_accuracy(op: str, dtype: str) -> None:
    x = samples(op, dtype)
    got = apply(op, dtype, x)
    err = ulp_distance(got, reference(op, dtype, x))
    bound = ULP_BOUNDS[op] + (0 if dtype == "float32" or _EXTENDED or op == "erf" else 1)
    worst = int(np.argmax(err))
    assert err[worst] <= bound, f"{op}_{dtype}({x[worst]!r}) = {got[worst]!r}, {err[worst]} ulp"
    if dtype == "float64" and op in ("exp", "expm1", "log", "log1p", "sqrt", "tanh", "sin", "cos"):
        with np.errstate(all="ignore"):
            numpy_own = _REFERENCES[op](x)
        assert ulp_distance(got, numpy_own).max() <= _CONTRACT_ULP


@pytest.mark.parametrize("dtype", DTYPES)
def test_power_accuracy(dtype: str) -> None:
    rng = np.random.default_rng(7)
    n = 200_000
    bits = np.uint32 if dtype == "float32" else np.uint64
    xs = [rng.integers(0, np.iinfo(bits).max, n, dtype=bits).view(dtype), rng.uniform(0, 10, n),
          np.exp(rng.uniform(-1e-3, 1e-3, n)), -rng.integers(1, 20, n) * rng.uniform(0.5, 2, n),
          rng.uniform(0, 1e-30, n)]
    big_y = 5e4 if dtype == "float32" else 5e5  # x ~ 1 with |y log x| up to the overflow threshold
    ys = [rng.integers(0, np.iinfo(bits).max, n, dtype=bits).view(dtype), rng.uniform(-60, 60, n),
          rng.uniform(-big_y, big_y, n), rng.integers(-40, 40, n).astype(float), rng.uniform(-5, 5, n)]
    with np.errstate(invalid="ignore"):  # signalling nans among the random bit patterns
        x = np.concatenate(xs).astype(dtype)
        y = np.concatenate(ys).astype(dtype)
    got = apply("power", dtype, x, y)
    err = ulp_distance(got, reference("power", dtype, x, y))
    worst = int(np.argmax(err))
    assert err[worst] <= ULP_BOUNDS["power"] + (0 if dtype == "float32" or _EXTENDED else 1), (
        f"pow_{dtype}({x[worst]!r}, {y[worst]!r}) = {got[worst]!r}, {err[worst]} ulp")
    with np.errstate(all="ignore"):
        assert ulp_distance(got, np.power(x, y)).max() <= _CONTRACT_ULP


def _closest_to_quarter_turns(dtype: str) -> np.ndarray:
    """Floats nearest to multiples of pi/2, from the continued fraction of 2**(E-p+1) * 2/pi mod 4 per exponent E.

    These make the reduced argument cancel by ~30 (float32) / ~60 (float64) bits: the hardest inputs of sin/cos.
    """
    from jitgraph.backends.cpu.mathlib_consts import TWO_OVER_PI_BITS, TWO_OVER_PI_FIXED

    p = np.finfo(dtype).nmant + 1
    found = []
    for exp2 in range(-p, np.finfo(dtype).maxexp - p, 1 if dtype == "float32" else 8):
        # x = M 2**exp2 is near a multiple of pi/2 when M * alpha is near an integer, alpha = frac(2**exp2 * 2/pi).
        num = TWO_OVER_PI_FIXED << max(exp2, 0)
        den = 1 << (TWO_OVER_PI_BITS - min(exp2, 0))
        rest = Fraction(num % den, den)
        h0, h1, k0, k1 = 0, 1, 1, 0
        while rest.numerator and k1 < 2**p:  # continued fraction convergents h/k: |k alpha - h| locally minimal
            rest = 1 / rest
            a = rest.numerator // rest.denominator
            rest -= a
            h0, h1, k0, k1 = h1, a * h1 + h0, k1, a * k1 + k0
            if 0 < k1 < 2**p:
                significand = k1 * -(-(2 ** (p - 1)) // k1)  # smallest multiple of k1 with p bits
                found.append(float(significand) * 2.0**exp2)
    found = np.array(found)
    return found[np.isfinite(found.astype(dtype))].astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["sin", "cos"])
def test_trig_hard_cases(op: str, dtype: str) -> None:
    x = _closest_to_quarter_turns(dtype)
    if dtype == "float32":  # the three closest, from a search over every significand of every exponent
        x = np.concatenate([x, [16367173.0 * 2.0**72, 10741887.0 * 2.0**11, 16573937.0 * 2.0**-16]])
    else:  # the float64 argument closest to a multiple of pi/2 (Muller, Elementary Functions)
        x = np.concatenate([x, [6381956970095103.0 * 2.0**797]])
    x = np.concatenate([x, -x])
    err = ulp_distance(apply(op, dtype, x), reference(op, dtype, x))
    assert err.max() <= ULP_BOUNDS[op] + (0 if dtype == "float32" or _EXTENDED else 1)


# --- special values ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", UNARY)
def test_unary_special_values(op: str, dtype: str) -> None:
    """nan, +-inf, +-0, denormals, max: same nan-ness, infinities and zero signs as NumPy, values within bound."""
    x = specials(dtype)
    got = apply(op, dtype, x)
    want = reference(op, dtype, x)
    if op == "gelu_tanh":  # NumPy's formula at -inf: -inf * (1 + tanh(-inf)) = -inf * 0 = nan
        want[x == -np.inf] = np.nan
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"nan-ness of {op}_{dtype}({x})")
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
    zeros = want == 0
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]), err_msg=f"{op}({x[zeros]})")
    assert ulp_distance(got, want).max() <= ULP_BOUNDS[op] + 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_power_special_values(dtype: str) -> None:
    """Every pair of specials (C99 pow rules: pow(x, 0) = 1 even for nan, pow(-8, 1/3) = nan, signed zeros...)."""
    s = specials(dtype)
    x, y = np.repeat(s, s.size), np.tile(s, s.size)
    got = apply("power", dtype, x, y)
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
    np.testing.assert_array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))
    assert ulp_distance(got, want).max() <= _CONTRACT_ULP


@pytest.mark.parametrize("dtype", DTYPES)
def test_exp_underflows_to_exact_zero_and_denormals(dtype: str) -> None:
    """Attention masks rely on exp(-inf) == 0 and exp(very negative) being 0 or the correct denormal, not ~1e-38."""
    info = np.finfo(dtype)
    assert apply("exp", dtype, np.array([-np.inf]))[0] == 0
    lowest = float(np.log(info.smallest_subnormal.astype(np.float64)))  # -103.3 (float32), -744.4 (float64)
    x = np.concatenate([np.linspace(lowest - 3, np.log(float(info.tiny)) + 1, 200_001), [lowest - 0.7, -1e4]])
    got = apply("exp", dtype, x.astype(dtype))
    want = reference("exp", dtype, x.astype(dtype))
    assert ulp_distance(got, want).max() <= 1  # denormal ulps: the rounding of the result is the only error
    assert np.all(got[want == 0] == 0) and np.any(want == 0) and np.any((want > 0) & (want < info.tiny))
    if dtype == "float32":
        assert apply("exp", dtype, np.array([-104.0, -110.0, -103.0]))[:2].tolist() == [0.0, 0.0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_overflow_thresholds(dtype: str) -> None:
    """Around the largest finite results of exp/expm1: finite exactly where NumPy is, inf beyond."""
    edge = np.log(float(np.finfo(dtype).max))
    x = (edge * (1 + np.linspace(-1e-6, 1e-6, 2001))).astype(dtype)
    for op in ("exp", "expm1"):
        got, want = apply(op, dtype, x), reference(op, dtype, x)
        assert np.any(np.isinf(want)) and np.any(np.isfinite(want))
        assert ulp_distance(got, want).max() <= ULP_BOUNDS[op]  # inf is one ulp past max: no early overflow


# --- vectorisation, typing, API ---------------------------------------------------------------------------------

_LIBM = re.compile(r"@(llvm\.(exp|exp2|log|sin|cos|pow|tanh)\.|(exp|expm1|log|log1p|sin|cos|tan|tanh|pow|erf|fma)f?\b)")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", list(ULP_BOUNDS))
def test_kernel_vectorises_without_libm(op: str, dtype: str) -> None:
    """The loop kernels above, compiled with fastmath off, contain SIMD float math and no libm call."""
    k = kernel(op, dtype)
    if not k.signatures:
        apply(op, dtype, *([np.ones(4)] * (2 if op == "power" else 1)))
    llvm_ir = k.inspect_llvm(k.signatures[0])
    lane = "float" if dtype == "float32" else "double"
    assert re.search(rf"<\d+ x {lane}>", llvm_ir), f"{op}_{dtype} did not vectorise"
    assert not _LIBM.search(llvm_ir), f"{op}_{dtype} calls libm: {_LIBM.search(llvm_ir).group(0)}"
    if dtype == "float32":
        assert "double" not in llvm_ir and "fpext" not in llvm_ir, f"{op}_f32 computes in float64"


def test_inside_prange_kernel() -> None:
    """tanh(a*b+c)*0.5+a, the motivating expression, in a parallel kernel as the code generator emits it."""
    tanh_f32 = mathlib.tanh_f32
    half = np.float32(0.5)

    @numba.njit(parallel=True, fastmath=False)
    def fused(a, b, c, out):
        for i in numba.prange(a.size):
            out[i] = tanh_f32(a[i] * b[i] + c[i]) * half + a[i]

    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal(10_001).astype(np.float32) * 3 for _ in range(3))
    out = np.empty_like(a)
    fused(a, b, c, out)
    np.testing.assert_allclose(out, np.tanh(a * b + c) * half + a, rtol=2e-7, atol=1e-7)
    assert re.search(r"<\d+ x float>", fused.inspect_llvm(fused.signatures[0]))


def test_two_prod_is_exact_with_and_without_fma() -> None:
    @numba.njit
    def products(a, b, hi, lo, hi2, lo2):
        for i in range(a.size):
            hi[i], lo[i] = two_prod(a[i], b[i])
            hi2[i], lo2[i] = two_prod_dekker(a[i], b[i])

    rng = np.random.default_rng(11)
    for dtype in DTYPES:
        a = (rng.standard_normal(500) * 2.0 ** rng.integers(-20, 20, 500)).astype(dtype)
        b = (rng.standard_normal(500) * 2.0 ** rng.integers(-20, 20, 500)).astype(dtype)
        outs = [np.empty_like(a) for _ in range(4)]
        products(a, b, *outs)
        for i in range(a.size):
            exact = Fraction(float(a[i])) * Fraction(float(b[i]))
            assert Fraction(float(outs[0][i])) + Fraction(float(outs[1][i])) == exact
            assert Fraction(float(outs[2][i])) + Fraction(float(outs[3][i])) == exact


def test_float32_functions_cast_float64_arguments() -> None:
    """Called with float64 values (Python float literals), the float32 functions still compute in float32."""
    @numba.njit
    def call_with_literals(out):
        out[0] = mathlib.exp_f32(1.0)
        out[1] = mathlib.pow_f32(2.0, 0.5)

    out = np.empty(2, np.float32)
    call_with_literals(out)
    assert out[0] == apply("exp", "float32", np.ones(1))[0]
    assert out[1] == apply("power", "float32", np.full(1, 2.0), np.full(1, 0.5))[0]


def test_lookup_table_is_complete() -> None:
    ops = {"exp", "expm1", "log", "log1p", "tanh", "sigmoid", "erf", "sin", "cos", "power", "sqrt", "gelu_tanh"}
    assert set(ULP_BOUNDS) == ops and all(b <= _CONTRACT_ULP for b in ULP_BOUNDS.values())
    assert set(VECTOR_MATH) == {(op, dt) for op in ops for dt in DTYPES}
    for (op, dtype), fn in VECTOR_MATH.items():
        assert getattr(mathlib, fn.__name__) is fn and fn.__name__.endswith("_f32" if dtype == "float32" else "_f64")
