"""Error-free transformations (double-word arithmetic) for the math library.

Some results need more precision than one float carries: pow's ``y * log(x)`` (an error of one ulp in a value near
700 is 2**-43 relative, far beyond 4 ulp after ``exp``), the cubic inside gelu's tanh, and Payne-Hanek reduction of
huge sin/cos arguments. A value is then kept as an unevaluated sum ``hi + lo``. These helpers never round away
information: ``two_sum(a, b)`` returns ``s, e`` with ``s + e == a + b`` exactly.

They are intrinsics emitting the few LLVM instructions directly, rather than ``inline='always'`` functions, because
numba's IR inliner costs ~0.1 s per call site and sin alone has a dozen. They rely on IEEE semantics, which is why
the kernels that use the library must not enable fastmath (reassociation would fold ``a - (s - b)`` away).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from jitgraph.backends.cpu.mathlib_bits import call_float_intrinsic, float_operand_type, target_has_fma

__all__ = ["fast_two_sum", "two_prod", "two_prod_dekker", "two_sum"]


def _pair(context, builder, sig, hi: ir.Value, lo: ir.Value) -> ir.Value:
    return context.make_tuple(builder, sig.return_type, [hi, lo])


@intrinsic
def two_sum(typingctx, a, b):
    """Knuth's TwoSum: ``(s, e)`` with ``s = fl(a + b)`` and ``s + e == a + b`` exactly, for any magnitudes."""
    ty = float_operand_type(a, b)

    def codegen(context, builder, sig, args):
        a_, b_ = args
        s = builder.fadd(a_, b_)
        b_virtual = builder.fsub(s, a_)
        a_err = builder.fsub(a_, builder.fsub(s, b_virtual))
        b_err = builder.fsub(b_, b_virtual)
        return _pair(context, builder, sig, s, builder.fadd(a_err, b_err))

    return types.UniTuple(ty, 2)(ty, ty), codegen


@intrinsic
def fast_two_sum(typingctx, a, b):
    """Dekker's FastTwoSum: like ``two_sum`` in three operations, exact when ``|a| >= |b|`` (or a == 0)."""
    ty = float_operand_type(a, b)

    def codegen(context, builder, sig, args):
        a_, b_ = args
        s = builder.fadd(a_, b_)
        return _pair(context, builder, sig, s, builder.fsub(b_, builder.fsub(s, a_)))

    return types.UniTuple(ty, 2)(ty, ty), codegen


def _veltkamp_split(builder: ir.IRBuilder, a: ir.Value) -> tuple[ir.Value, ir.Value]:
    """``a = hi + lo`` with both halves short enough that their pairwise products are exact."""
    splitter = ir.Constant(a.type, 2.0**12 + 1 if isinstance(a.type, ir.FloatType) else 2.0**27 + 1)
    c = builder.fmul(splitter, a)
    hi = builder.fsub(c, builder.fsub(c, a))
    return hi, builder.fsub(a, hi)


def _dekker_product_error(builder: ir.IRBuilder, a: ir.Value, b: ir.Value, p: ir.Value) -> ir.Value:
    a_hi, a_lo = _veltkamp_split(builder, a)
    b_hi, b_lo = _veltkamp_split(builder, b)
    err = builder.fadd(builder.fsub(builder.fmul(a_hi, b_hi), p), builder.fmul(a_hi, b_lo))
    return builder.fadd(builder.fadd(err, builder.fmul(a_lo, b_hi)), builder.fmul(a_lo, b_lo))


def _make_two_prod(use_fma: bool | None):
    def typer(typingctx, a, b):
        ty = float_operand_type(a, b)
        fused = target_has_fma() if use_fma is None else use_fma

        def codegen(context, builder, sig, args):
            a_, b_ = args
            p = builder.fmul(a_, b_)
            if fused:
                err = call_float_intrinsic(builder, "llvm.fma", [a_, b_, builder.fneg(p)])
            else:
                err = _dekker_product_error(builder, a_, b_, p)
            return _pair(context, builder, sig, p, err)

        return types.UniTuple(ty, 2)(ty, ty), codegen

    typer.__name__ = "two_prod" if use_fma is None else "two_prod_dekker"
    return intrinsic(typer)


two_prod = _make_two_prod(None)
two_prod.__doc__ = """``(p, e)`` with ``p = fl(a * b)`` and ``p + e == a * b`` exactly (barring over/underflow).

With a hardware FMA the error is one ``fma``. Without one, ``llvm.fma`` would become a libm call that does not
vectorise, so the codegen falls back to Veltkamp splitting and Dekker's product (17 flops, all vectorisable). The
splitting overflows for ``|a| > max_float / 2**(p/2)``, far outside the ranges the library uses it in.
"""
two_prod_dekker = _make_two_prod(False)  # the FMA-free variant, always; exposed so tests can check it here too
