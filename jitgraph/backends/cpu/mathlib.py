"""Vectorisable math functions for generated Numba kernels: ``<fn>_f32`` / ``<fn>_f64``.

Why this exists: inside an ``njit`` loop, ``math.tanh``/``np.exp`` are scalar libm calls, so LLVM cannot vectorise
the loop. ``tanh(a*b+c)*0.5+a`` over 1e7 float32 is several times slower as a prange loop with libm than in NumPy,
but close to the memory-bandwidth floor once tanh is an inlined polynomial (benchmarks/mathlib_bench.py). Every
function here is ``numba.njit(inline='always')`` and built from range reduction, a fitted polynomial and selects:
no libm calls, no data-dependent branches, no division checks, and float32 functions compute in float32 only (full
8-lane AVX2 vectors). They vectorise with fastmath *off*, which the calling kernels must keep off anyway for NaN
semantics and for the error-free transformations used inside.

Usage from generated code::

    from jitgraph.backends.cpu.mathlib import tanh_f32

    @numba.njit(parallel=True, fastmath=False)
    def kernel(a, b, c, out):
        for i in numba.prange(a.size):
            out[i] = tanh_f32(a[i] * b[i] + c[i]) * np.float32(0.5) + a[i]

``VECTOR_MATH[(op, dtype_name)]`` maps NumPy ufunc-style op names to these functions; its values' ``__name__`` is
the attribute to import. Arguments are cast to the function's float type first.

Special values follow NumPy: nan -> nan, +-inf and signed zeros as the C99 functions (tanh(-0.0) = -0.0,
expm1(-0.0) = -0.0, log(0) = -inf, log(-1) = nan, log1p(-1) = -inf, pow as C99 pow including pow(-8, 1/3) = nan),
overflow to inf, and underflow to correctly rounded denormals and exact zeros (exp(-inf) = 0, exp(-104.0) = 0 in
float32; sigmoid and gelu_tanh keep their denormal tails). Floating-point warnings are not raised.

Accuracy, max error in ulp against NumPy's result: for float32 against the float64 NumPy result rounded to float32,
for float64 against NumPy in long double (80-bit) rounded to float64, i.e. against the correctly rounded value up to
a tiny fraction of an ulp (erf: ``math.erf``; sqrt float64: NumPy's float64, already correctly rounded). Measured
with the loop kernels of tests/test_mathlib.py: float32 on every 8th bit pattern of all 2**32 (537M inputs per
function, every exponent including denormals, nan and inf) plus dense grids near 0 and the overflow/underflow
thresholds; float64 on ~50M inputs per function (random bit patterns over the whole range plus the same kind of
windows); pow on 60M (x, y) pairs of each format. ``ULP_BOUNDS`` is the documented bound the tests enforce: the
measured maximum plus one ulp of margin. All stay within the 4 ulp contract, also against NumPy's own float64.

=========  =======  =======  =====  ===========================================================================
function   float32  float64  bound  notes
=========  =======  =======  =====  ===========================================================================
exp        1        1        2      underflows to correctly rounded denormals, exp(-inf) = 0
expm1      2        2        3      |x| < 2**-p returns x (keeps -0.0); 2-ulp cases are 1 in 1e7
log        1        1        2      NumPy's own float32 log is 4 ulp off; this one is 1
log1p      1        1        2
power      1        1        2      double-word log and exp inside: the error does not grow with |y log x|
sqrt       0        0        0      IEEE ``llvm.sqrt``, correctly rounded (vsqrtps/vsqrtpd)
tanh       3        2        4      expm1(2|x|) / (expm1(2|x|) + 2) on the whole range; within 1 ulp
                                    for |x| >= 0.5 (where 1 + tanh(x) cancels), 3 ulp only near 0
sigmoid    2        2        3      1/(1+exp(-x)), no overflow in either tail, denormal results exact
erf        1        1        2
sin        1        1        2      whole range: branch-free Payne-Hanek reduction (see trade-offs)
cos        1        1        2      whole range, as sin
gelu_tanh  2        3        4      0.5 x (1 + tanh(0.7978845608028654 (x + 0.044715 x**3))), accurate in the
                                    negative tail too (NumPy's own formula cancels there and returns 0 below
                                    x ~ -5.5 in float64); gelu_tanh(-inf) = nan as that formula gives
=========  =======  =======  =====  ===========================================================================

Trade-offs worth knowing:

* sin/cos are correct on the whole range with one branch-free path: a Payne-Hanek reduction with a per-exponent
  table of 2/pi bits. That is expensive: ~7 ns/element single-threaded for float32 against ~0.6 ns for a
  Cody-Waite-only sin (which is wrong beyond ~1e5), and float32 sin/cos are slower than NumPy's own SIMD sin/cos
  (which branch to scalar code for large arguments, something an auto-vectorised loop body cannot do). They still
  beat the libm loop, and float64 sin/cos beat NumPy ~3x. Why there is no cheap fallback: a ``math.sin`` call in a
  select arm, or any call on a rare branch, stops LLVM from vectorising the loop for *all* inputs, and both arms
  of a select are always computed. A faster option for later: the code generator checks max|x| on the inputs and
  picks a Cody-Waite variant below the limit. See ``mathlib_trig``.
* Needs a target with SSE4.1 (``vroundps``) to vectorise ``rint``/``floor``; with ``NUMBA_CPU_NAME=generic`` they
  become libm calls (results stay correct, vectorisation is lost). Without a hardware FMA the error-free products
  switch to Dekker's FMA-free form at compile time (also tested, same accuracy).
* Compile time: what one call site adds to a kernel's compile, measured as CPU time on the 2-core development
  machine (Numba 0.68, float32, a one-loop kernel): exp 0.05 s, tanh 0.03 s, expm1 0.07 s, log 0.09 s, gelu_tanh
  0.14 s, sin 0.2 s, pow 0.34 s. In the MLP step's softmax-cross-entropy kernel (exp and log) the math is ~0.1 s of
  ~1.1 s; the rest is the kernel's own loops.
"""

from __future__ import annotations

import types

import numba
from numba.core.dispatcher import Dispatcher

from jitgraph.backends.cpu.mathlib_bits import sqrt
from jitgraph.backends.cpu.mathlib_consts import F32, F64, FloatSpec
from jitgraph.backends.cpu.mathlib_explog import build_explog
from jitgraph.backends.cpu.mathlib_special import build_special
from jitgraph.backends.cpu.mathlib_trig import build_trig

__all__ = [
    "ULP_BOUNDS", "VECTOR_MATH",
    "cos_f32", "cos_f64", "erf_f32", "erf_f64", "exp_f32", "exp_f64", "expm1_f32", "expm1_f64",
    "gelu_tanh_f32", "gelu_tanh_f64", "log1p_f32", "log1p_f64", "log_f32", "log_f64", "pow_f32", "pow_f64",
    "sigmoid_f32", "sigmoid_f64", "sin_f32", "sin_f64", "sqrt_f32", "sqrt_f64", "tanh_f32", "tanh_f64",
]

# Documented (and tested) bounds: the measured maximum plus one ulp of margin for inputs no test has seen and for
# CPUs without FMA, where some roundings differ.
ULP_BOUNDS: dict[str, int] = {
    "exp": 2, "expm1": 3, "log": 2, "log1p": 2, "power": 2, "sqrt": 0,
    "tanh": 4, "sigmoid": 3, "erf": 2, "sin": 2, "cos": 2, "gelu_tanh": 4,
}

# op name -> exported stem ("power" is exported as pow_f32 / pow_f64).
_STEMS = {op: ("pow" if op == "power" else op) for op in ULP_BOUNDS}


def _make_sqrt(spec: FloatSpec) -> Dispatcher:
    ft = spec.ftype

    @numba.njit(inline="always")
    def sqrt_(x):
        return sqrt(ft(x))

    return sqrt_


def _export(fn: Dispatcher, name: str) -> Dispatcher:
    """A fresh ``inline='always'`` dispatcher named ``name``: error messages and generated imports use that name."""
    py = fn.py_func
    clone = types.FunctionType(py.__code__, py.__globals__, name, py.__defaults__, py.__closure__)
    clone.__qualname__ = name
    clone.__doc__ = f"Vectorisable ``{name.rsplit('_', 1)[0]}`` (see jitgraph.backends.cpu.mathlib)."
    return numba.njit(inline="always")(clone)


def _build(spec: FloatSpec) -> dict[str, Dispatcher]:
    explog = build_explog(spec)
    kernels = {**explog, **build_special(spec, explog), **build_trig(spec), "sqrt": _make_sqrt(spec)}
    suffix = "_f32" if spec is F32 else "_f64"
    return {op: _export(kernels[op], _STEMS[op] + suffix) for op in ULP_BOUNDS}


_F32, _F64 = _build(F32), _build(F64)

VECTOR_MATH: dict[tuple[str, str], Dispatcher] = {
    **{(op, F32.name): fn for op, fn in _F32.items()},
    **{(op, F64.name): fn for op, fn in _F64.items()},
}

exp_f32, exp_f64 = _F32["exp"], _F64["exp"]
expm1_f32, expm1_f64 = _F32["expm1"], _F64["expm1"]
log_f32, log_f64 = _F32["log"], _F64["log"]
log1p_f32, log1p_f64 = _F32["log1p"], _F64["log1p"]
pow_f32, pow_f64 = _F32["power"], _F64["power"]
sqrt_f32, sqrt_f64 = _F32["sqrt"], _F64["sqrt"]
tanh_f32, tanh_f64 = _F32["tanh"], _F64["tanh"]
sigmoid_f32, sigmoid_f64 = _F32["sigmoid"], _F64["sigmoid"]
erf_f32, erf_f64 = _F32["erf"], _F64["erf"]
sin_f32, sin_f64 = _F32["sin"], _F64["sin"]
cos_f32, cos_f64 = _F32["cos"], _F64["cos"]
gelu_tanh_f32, gelu_tanh_f64 = _F32["gelu_tanh"], _F64["gelu_tanh"]
