"""LLVM-level building blocks for the vectorisable math library (see ``mathlib.py``).

Why intrinsics instead of plain Python inside ``numba.njit``:

* numba's float division checks for a zero divisor and raises ``ZeroDivisionError`` (``error_model='python'``,
  the default of the kernels that inline us). That check is a branch with an exit, which stops LLVM's loop
  vectoriser. ``fdiv`` emits a bare IEEE ``fdiv`` instead (x/0 = ±inf, 0/0 = nan, as NumPy).
* numba widens int32 arithmetic to int64 and float32-with-literal arithmetic to float64. Doing the bit
  manipulation (building ``2**k``, splitting exponent and mantissa) inside one intrinsic keeps float32 code in
  32-bit lanes, and the typing of every intrinsic insists that all float operands share one type, so an
  accidental float64 leak in a float32 kernel is a compile error rather than a silent halving of vector width.
* ``select`` is a real LLVM ``select``: both arms are computed, nothing branches on data.
* ``fmuladd`` lets LLVM fuse ``a*b+c`` into one FMA instruction where the CPU has it, even with fastmath off.

Nothing here calls libm: every operation is an LLVM instruction or an intrinsic that x86/ARM lower to vector
instructions (``llvm.rint``/``llvm.floor`` need SSE4.1 or AVX to vectorise; every x86-64 CPU of the last decade has
them).
"""

from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic

from jitgraph import config

__all__ = [
    "biased_exponent",
    "copysign",
    "fabs",
    "fdiv",
    "floor",
    "fma",
    "fmuladd",
    "frexp_sqrt2",
    "polyval",
    "polyval_select",
    "pow2",
    "rint",
    "scale_pow2",
    "select",
    "sqrt",
    "target_has_fma",
]

# Bit layout per float width: (integer type, mantissa bits, exponent bias).
_LAYOUT = {32: (ir.IntType(32), 23, 127), 64: (ir.IntType(64), 52, 1023)}


def target_has_fma() -> bool:
    """Whether numba compiles for a CPU with a hardware FMA.

    ``llvm.fma`` is exact everywhere, but without the instruction LLVM calls the libm ``fma``, which is slow and
    blocks vectorisation; callers then switch to Dekker's FMA-free products. Numba's target is the host CPU unless
    ``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES`` override it (e.g. for portable caches), so look at those first.
    """
    features = config.env("NUMBA_CPU_FEATURES")
    if features:
        return "+fma" in features.split(",")
    if config.env("NUMBA_CPU_NAME") != "host":
        return False
    return bool(llvm.get_host_cpu_features().get("fma", False))


def float_operand_type(*tys: types.Type) -> types.Float:
    """The one float type shared by all operands, or a TypingError naming the mix (e.g. a float64 leak)."""
    first = tys[0]
    if not isinstance(first, types.Float) or any(t != first for t in tys):
        raise TypingError(f"mathlib intrinsics need operands of one float type, got {tys}")
    return first


def call_float_intrinsic(builder: ir.IRBuilder, name: str, args: list[ir.Value]) -> ir.Value:
    """Call an overloaded LLVM intrinsic such as ``llvm.rint`` on scalar float operands."""
    ty = args[0].type
    suffix = "f32" if isinstance(ty, ir.FloatType) else "f64"
    fnty = ir.FunctionType(ty, [ty] * len(args))
    fn = cgutils.get_or_insert_function(builder.module, fnty, f"{name}.{suffix}")
    return builder.call(fn, args)


def _unary(name: str):
    """Define an intrinsic ``f(x) -> x`` that maps to the overloaded LLVM intrinsic ``name``."""

    def typer(typingctx, x):
        ty = float_operand_type(x)

        def codegen(context, builder, sig, args):
            return call_float_intrinsic(builder, name, list(args))

        return ty(ty), codegen

    typer.__name__ = name.removeprefix("llvm.")
    return intrinsic(typer)


rint = _unary("llvm.rint")
rint.__doc__ = "Round to nearest, ties to even (the default rounding mode), as float; exact for every input."
floor = _unary("llvm.floor")
fabs = _unary("llvm.fabs")
sqrt = _unary("llvm.sqrt")
sqrt.__doc__ = "IEEE square root (correctly rounded, sqrt(-x) = nan); lowers to vsqrtps/vsqrtpd."


@intrinsic
def copysign(typingctx, mag, sgn):
    """``|mag|`` with the sign bit of ``sgn``; keeps -0.0 and nan signs exact, unlike a comparison."""
    ty = float_operand_type(mag, sgn)

    def codegen(context, builder, sig, args):
        return call_float_intrinsic(builder, "llvm.copysign", list(args))

    return ty(ty, ty), codegen


@intrinsic
def fmuladd(typingctx, a, b, c):
    """``a*b + c``, fused into one FMA where the target has it (LLVM's choice); for polynomial evaluation."""
    ty = float_operand_type(a, b, c)

    def codegen(context, builder, sig, args):
        return call_float_intrinsic(builder, "llvm.fmuladd", list(args))

    return ty(ty, ty, ty), codegen


@intrinsic
def polyval(typingctx, x, coeffs):
    """``c0 + c1*x + ... + cn*x**n`` with ``fmuladd``; ``coeffs`` is a tuple of x's float type.

    A frozen global tuple becomes an LLVM constant, so the ``extractvalue``s fold away and only the FMA chain is
    left. Requiring the coefficient dtype to equal x's catches float64 constants leaking into float32 kernels.
    """
    if not isinstance(coeffs, types.UniTuple) or coeffs.dtype != x:
        raise TypingError(f"polyval(x, coeffs) needs a tuple of {x} coefficients, got {coeffs}")
    float_operand_type(x)

    def codegen(context, builder, sig, args):
        xv, cv = args
        c = [builder.extract_value(cv, i) for i in range(coeffs.count)]
        if coeffs.count < 4:
            acc = c[-1]
            for i in range(coeffs.count - 2, -1, -1):
                acc = call_float_intrinsic(builder, "llvm.fmuladd", [acc, xv, c[i]])
            return acc
        # Second-order Horner: pairs c[2i] + c[2i+1] x, then Horner in x**2. The pairs are independent, so the
        # dependent chain is about half as long; the math kernels are bound by that chain, not by throughput.
        x2 = builder.fmul(xv, xv)
        pairs = [call_float_intrinsic(builder, "llvm.fmuladd", [c[i + 1], xv, c[i]]) if i + 1 < len(c) else c[i]
                 for i in range(0, len(c), 2)]
        acc = pairs[-1]
        for pair in reversed(pairs[:-1]):
            acc = call_float_intrinsic(builder, "llvm.fmuladd", [acc, x2, pair])
        return acc

    return x(x, coeffs), codegen


@intrinsic
def polyval_select(typingctx, x, cond, coeffs_true, coeffs_false):
    """``polyval(x, coeffs_true if cond else coeffs_false)`` with one blend per coefficient.

    Piecewise approximations stay branch-free at the cost of a select per coefficient instead of evaluating every
    piece in full.
    """
    if coeffs_true != coeffs_false or not isinstance(coeffs_true, types.UniTuple) or coeffs_true.dtype != x:
        raise TypingError(f"polyval_select needs two equal-length tuples of {x}, got {coeffs_true}, {coeffs_false}")

    def codegen(context, builder, sig, args):
        xv, cond, ct, cf = args

        def coeff(i: int) -> ir.Value:
            return builder.select(cond, builder.extract_value(ct, i), builder.extract_value(cf, i))

        acc = coeff(coeffs_true.count - 1)
        for i in range(coeffs_true.count - 2, -1, -1):
            acc = call_float_intrinsic(builder, "llvm.fmuladd", [acc, xv, coeff(i)])
        return acc

    return x(x, cond, coeffs_true, coeffs_false), codegen


@intrinsic
def fma(typingctx, a, b, c):
    """``a*b + c`` with a single rounding, always: error-free products rely on it (see ``target_has_fma``)."""
    ty = float_operand_type(a, b, c)

    def codegen(context, builder, sig, args):
        return call_float_intrinsic(builder, "llvm.fma", list(args))

    return ty(ty, ty, ty), codegen


@intrinsic
def fdiv(typingctx, a, b):
    """IEEE ``a / b`` without numba's zero-divisor check (which would raise and stop vectorisation)."""
    ty = float_operand_type(a, b)

    def codegen(context, builder, sig, args):
        return builder.fdiv(args[0], args[1])

    return ty(ty, ty), codegen


@intrinsic
def select(typingctx, cond, a, b):
    """``a if cond else b`` as one LLVM ``select``: both arms are evaluated, no branch on data."""
    if not isinstance(cond, types.Boolean) or a != b:
        raise TypingError(f"select(cond: bool, a, b) needs a and b of one type, got {cond}, {a}, {b}")

    def codegen(context, builder, sig, args):
        return builder.select(args[0], args[1], args[2])

    return a(cond, a, b), codegen


def _to_int(builder: ir.IRBuilder, k: ir.Value, bits: int) -> ir.Value:
    """Integer value of the integral float ``k`` (|k| < 2**(p-2)) via the magic-number trick.

    ``fptosi`` would be the obvious choice, but it yields poison for nan and out-of-range inputs, and poison may
    spread to lanes we later select away. Adding 1.5 * 2**(p-1) puts the integer into the low mantissa bits, and a
    bitcast is always defined: a nan gives some integer, the caller's result is nan anyway.
    """
    ity, mbits, _ = _LAYOUT[bits]
    magic = ir.Constant(k.type, 1.5 * 2.0**mbits)
    shifted = builder.bitcast(builder.fadd(k, magic), ity)
    return builder.sub(shifted, builder.bitcast(magic, ity))


def _pow2_bits(builder: ir.IRBuilder, ki: ir.Value, bits: int) -> ir.Value:
    """The float ``2**ki`` for an integer ``ki`` inside the normal exponent range."""
    ity, mbits, bias = _LAYOUT[bits]
    biased = builder.add(ki, ir.Constant(ity, bias))
    return builder.bitcast(builder.shl(biased, ir.Constant(ity, mbits)), _float_ir(bits))


def _float_ir(bits: int) -> ir.Type:
    return ir.FloatType() if bits == 32 else ir.DoubleType()


@intrinsic
def pow2(typingctx, k):
    """``2**k`` for an integral float ``k`` in the normal exponent range (float32: -126..127)."""
    ty = float_operand_type(k)

    def codegen(context, builder, sig, args):
        return _pow2_bits(builder, _to_int(builder, args[0], ty.bitwidth), ty.bitwidth)

    return ty(ty), codegen


@intrinsic
def scale_pow2(typingctx, x, k):
    """``x * 2**k`` rounded once, for integral float ``k`` in ±(2 * max exponent) (float32: -252..254).

    Splitting ``2**k`` into two normal factors lets results overflow to inf and underflow to correctly rounded
    denormals or exact zeros (exp(-inf) must be 0, not ~1e-38, for attention masks), with no branch: the first
    product is exact, only the second rounds.
    """
    ty = float_operand_type(x, k)
    bits = ty.bitwidth

    def codegen(context, builder, sig, args):
        xv, kv = args
        ki = _to_int(builder, kv, bits)
        half = builder.ashr(ki, ir.Constant(ki.type, 1))
        rest = builder.sub(ki, half)
        first = builder.fmul(xv, _pow2_bits(builder, half, bits))
        return builder.fmul(first, _pow2_bits(builder, rest, bits))

    return ty(ty, ty), codegen


@intrinsic
def frexp_sqrt2(typingctx, x):
    """Split a positive normal ``x`` into ``(m, e)`` with ``x = m * 2**e`` and ``m`` in [sqrt(1/2), sqrt(2)).

    Centring the mantissa on 1 keeps ``log1p(m - 1)`` small and symmetric. Done on the integer bits: subtracting
    the bits of sqrt(1/2) makes the exponent field carry exactly when the mantissa passes sqrt(2).
    Zero, negative, denormal, inf and nan inputs give meaningless (but defined) values; callers select those away.
    """
    ty = float_operand_type(x)
    bits = ty.bitwidth

    def codegen(context, builder, sig, args):
        ity, mbits, _ = _LAYOUT[bits]
        fty = _float_ir(bits)
        xi = builder.bitcast(args[0], ity)
        offset = builder.bitcast(ir.Constant(fty, 0.70710678118654752440), ity)
        shifted = builder.sub(xi, offset)
        exponent = builder.ashr(shifted, ir.Constant(ity, mbits))
        mantissa_mask = ir.Constant(ity, (1 << mbits) - 1)
        m_bits = builder.add(builder.and_(shifted, mantissa_mask), offset)
        m = builder.bitcast(m_bits, fty)
        e = builder.sitofp(exponent, fty)
        return context.make_tuple(builder, sig.return_type, [m, e])

    return types.UniTuple(ty, 2)(ty), codegen


@intrinsic
def biased_exponent(typingctx, x):
    """The raw exponent field of ``x`` as an intp (0 for zero/denormals), for indexing per-exponent tables."""
    ty = float_operand_type(x)
    bits = ty.bitwidth

    def codegen(context, builder, sig, args):
        ity, mbits, _ = _LAYOUT[bits]
        xi = builder.bitcast(args[0], ity)
        exponent_mask = ir.Constant(ity, (1 << (bits - 1 - mbits)) - 1)
        field = builder.and_(builder.lshr(xi, ir.Constant(ity, mbits)), exponent_mask)
        intp = context.get_value_type(types.intp)
        return builder.zext(field, intp) if bits < intp.width else field

    return types.intp(ty), codegen
