"""Scalar helpers that generated CPU kernels call where NumPy's semantics differ from Python's or LLVM's.

The helpers themselves are defined once, as plain Python, in :mod:`jitgraph.backends.scalar_semantics` (the CUDA
backend compiles the same functions as device functions). Here each becomes ``jg_<name>``, an
``njit(inline="always")`` function, so it costs nothing after inlining. Generated modules ``import *`` from here.

The block sums are CPU-only: they exist to let LLVM reassociate (and so vectorise) float sums. ``jg_prefetch`` is
a cache hint (``llvm.prefetch``) that reduction kernels issue for the next row while they sweep the current
one (``jg_prefetch_write`` for the rows they will store); ``jg_stream_row`` writes a large output's row past
the caches (:mod:`streaming`). ``jg_max_step``/``jg_min_step`` are LLVM's NaN-propagating ``llvm.maximum``/``llvm.minimum``, which
the row kernels' max/min sweeps vectorise with (see ``_minmax_step_intrinsic`` for why their results are NumPy's).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import _empty_nd_impl, _parse_empty_args

from jitgraph.backends import scalar_semantics as semantics
from jitgraph.backends.cpu.streaming import jg_stream_fence, jg_stream_row

_inline = njit(inline="always", error_model="numpy", cache=False)
# Block sums may be reassociated (and so vectorised): they are *not* inlined at Numba's IR level, which would give
# their additions the calling kernel's strict flags; LLVM inlines them later and keeps the flags on these adds only.
_reassoc = njit(error_model="numpy", cache=False, fastmath={"reassoc"}, nogil=True)

# Every helper of scalar_semantics.HELPERS, under the name kernels call it by (tests/test_scalar_semantics.py checks
# that none is missing).
jg_floordiv_int = _inline(semantics.floordiv_int)
jg_mod_int = _inline(semantics.mod_int)
jg_fmod_int = _inline(semantics.fmod_int)
jg_floordiv_float = _inline(semantics.floordiv_float)
jg_mod_float = _inline(semantics.mod_float)
jg_maximum = _inline(semantics.maximum)
jg_minimum = _inline(semantics.minimum)
jg_fmax = _inline(semantics.fmax)
jg_fmin = _inline(semantics.fmin)
jg_max_acc = _inline(semantics.max_acc)
jg_min_acc = _inline(semantics.min_acc)
jg_sign = _inline(semantics.sign)
jg_logaddexp = _inline(semantics.logaddexp)
jg_power_int = _inline(semantics.power_int)


def exact_recip(c):
    """``RN64(1 / c)`` for a float32 divisor ``c`` whose quotients ``float32(float64(x) * recip)`` reproduces
    (:mod:`divisions`), else 0.0: ``c`` zero, infinite, NaN or an even integer. The one statement of the rule:
    kernels test it once per row or launch (``jg_exact_recip``), :func:`divisions.exact_reciprocal` once per
    constant when it generates the kernel."""
    a = abs(np.float64(c))
    if not (a > 0.0 and a < np.inf) or (a == np.floor(a) and np.fmod(a, 2.0) == 0.0):
        return 0.0
    return 1.0 / np.float64(c)


jg_exact_recip = _inline(exact_recip)

__all__ = [
    "jg_empty",
    "jg_exact_recip",
    "jg_floordiv_float",
    "jg_floordiv_int",
    "jg_fmax",
    "jg_fmin",
    "jg_fmod_int",
    "jg_imin",
    "jg_logaddexp",
    "jg_max_acc",
    "jg_max_lane",
    "jg_max_step",
    "jg_maximum",
    "jg_min_acc",
    "jg_min_lane",
    "jg_min_step",
    "jg_minimum",
    "jg_mod_float",
    "jg_mod_int",
    "jg_power_int",
    "jg_prefetch",
    "jg_prefetch_write",
    "jg_sign",
    "jg_stream_fence",
    "jg_stream_row",
    "jg_sum_block_f32",
    "jg_sum_block_f64",
]


@_reassoc
def jg_sum_block_f32(a):
    """Sum of a 1-D block of float32 in float32, in whatever order LLVM vectorises (32 lanes on AVX2).

    Kernels sum at most ``row_sweep.BLOCK`` elements per call and add the block sums in float64, so the error is
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


def _prefetch_intrinsic(write: bool):
    """An intrinsic ``f(array, row, col)`` hinting the CPU to fetch ``array[row, col]``'s cache line, for reading
    or (``write``) with intent to write, which also takes the line's ownership. A no-op for correctness:
    prefetches never fault. Which rows reduction kernels prefetch, and why: :mod:`row_prefetch`.
    """

    @intrinsic
    def prefetch(typingctx, array, row, col):
        if not (isinstance(array, types.Array) and array.ndim == 2 and isinstance(row, types.Integer)
                and isinstance(col, types.Integer)):
            return None
        sig = types.void(array, row, col)

        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            idx = [context.cast(builder, v, t, types.intp) for v, t in zip(args[1:], signature.args[1:])]
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, idx, wraparound=False)
            i32 = ir.IntType(32)
            # One declaration serves every dtype: arrays of float32 and float64 prefetched in one kernel (a mixed
            # product's epilogue) otherwise met a declaration typed for the other ("Type of #1 arg mismatch").
            ptr = builder.bitcast(ptr, ir.IntType(8).as_pointer())
            fnty = ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
            # read (0) or write (1), keep in all cache levels (3), data cache (1)
            builder.call(fn, [ptr, ir.Constant(i32, int(write)), ir.Constant(i32, 3), ir.Constant(i32, 1)])
            return context.get_dummy_value()

        return sig, codegen

    return prefetch


jg_prefetch = _prefetch_intrinsic(write=False)
jg_prefetch_write = _prefetch_intrinsic(write=True)


def _minmax_step_intrinsic(op: str):
    """An intrinsic ``f(acc, v)`` for float ``acc`` and ``v``: LLVM's ``llvm.maximum`` (``op`` "max") or
    ``llvm.minimum``, which the row kernels' max/min sweeps fold with (:mod:`reduction_lanes`).

    Why: LLVM's loop vectoriser reorders a loop-carried ``llvm.maximum`` by itself (it is exact in any order), so a
    plain loop over a row runs 16 float32 lanes wide. The two selects of ``jg_max_acc`` it does not (the row max of
    a (64, 1024) float32 block: 39 us through eight scalar lanes, 8.5 us this way); and one call, typed once,
    compiles faster than a Python-level branch per step.

    Why the result may be NumPy's: NaN propagates (a row holding a NaN gives NaN, any NaN: compare with isnan) and
    every other value equals NumPy's under ``==``. Only the sign of a zero result can differ: ``llvm.maximum``
    orders -0.0 below +0.0, so the max of a row holding both zeros (and nothing larger) is +0.0 and the min -0.0,
    whatever their order. NumPy's own sign there is no stable result: its scalar loop keeps the *later* zero
    (``np.max([-0.0, 0.0] + [-1.0] * k)`` is 0.0 up to 16 elements), its SIMD path (17 float32 elements, 16
    float64, and longer) the *first* (-0.0), and which path a row takes depends on its length, dtype and axis
    (measured with NumPy 2.4 on an AVX-512 host; ``tests/cpu/test_max_lanes.py`` checks the values and this rule).
    Both operands are first converted to their unified type, as Numba's ``max`` does.
    """

    @intrinsic
    def step(typingctx, acc, v):
        if not (isinstance(acc, types.Float) and isinstance(v, types.Float)):
            return None
        ty = typingctx.unify_types(acc, v)
        if ty.bitwidth not in _LLVM_FLOAT:
            return None
        sig = ty(acc, v)

        def codegen(context, builder, signature, args):
            a = context.cast(builder, args[0], signature.args[0], ty)
            x = context.cast(builder, args[1], signature.args[1], ty)
            llty = context.get_value_type(ty)
            name = f"llvm.{op}imum.{_LLVM_FLOAT[ty.bitwidth]}"
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(llty, [llty, llty]), name)
            return builder.call(fn, [a, x])

        return sig, codegen

    return step


_LLVM_FLOAT = {16: "f16", 32: "f32", 64: "f64"}  # LLVM's names of the float types, by width


def _minmax_select_intrinsic(op: str):
    """An intrinsic ``f(acc, v)`` for float ``acc`` and ``v``: ``jg_max_acc`` (``op`` "max") or ``jg_min_acc``, i.e.
    ``v if (v > acc or v != v) else acc``, emitted as ``select(v == v, select(v > acc, v, acc), v)``.

    For the sweeps that keep ``LANES`` scalar accumulators (a max next to a product or an argmax,
    :mod:`reduction_lanes`): as a scalar, this is a ``maxss`` and a compare where ``llvm.maximum`` is a longer
    sequence (such a sweep ran 1.7x slower through it). NaN sticks; ties and signed zeros keep ``acc``, so the sign
    of a zero result may differ from ``jg_max_step``'s; both are NumPy's values under ``==`` (see above). One call,
    typed once, instead of a Python-level branch per step (about 0.3 s less compile for the MLP step's kernel).
    """

    @intrinsic
    def step(typingctx, acc, v):
        if not (isinstance(acc, types.Float) and isinstance(v, types.Float)):
            return None
        ty = typingctx.unify_types(acc, v)
        sig = ty(acc, v)

        def codegen(context, builder, signature, args):
            a = context.cast(builder, args[0], signature.args[0], ty)
            x = context.cast(builder, args[1], signature.args[1], ty)
            # The selects of ``(max(acc, v) if v == v else v)`` once LLVM has if-converted it, in that order.
            best = builder.select(builder.fcmp_ordered(">" if op == "max" else "<", x, a), x, a)
            return builder.select(builder.fcmp_ordered("==", x, x), best, x)

        return sig, codegen

    return step


jg_max_lane = _minmax_select_intrinsic("max")
jg_min_lane = _minmax_select_intrinsic("min")


jg_max_step = _minmax_step_intrinsic("max")
jg_min_step = _minmax_step_intrinsic("min")


# -- cheap primitives for the kernels' own bookkeeping -------------------------------------------------------------
# Numba compiles ``np.empty`` (an overload whose implementation is a function of its own), ``np.full`` and the
# builtin ``min`` the first time a process uses them: about 0.15, 0.25 and 0.1 s of CPU, paid by the first kernel
# of every process that compiles (the MLP step's cold compile among them). These intrinsics emit the same code
# inline, typed once per call site.


@intrinsic
def jg_empty(typingctx, shape, dtype):
    """``np.empty(shape, dtype)``, a C-ordered array, for an integer or a tuple of integers ``shape`` and a NumPy
    scalar type ``dtype`` (``np.float32``): Numba's own allocation (``_empty_nd_impl``: NRT memory, a negative
    size raises ValueError), without compiling ``np.empty``'s overload."""
    elt = getattr(dtype, "instance_type", None)
    if isinstance(shape, types.Integer):
        ndim = 1
    elif isinstance(shape, types.BaseTuple) and all(isinstance(t, types.Integer) for t in shape):
        ndim = len(shape)
    else:
        return None
    if not isinstance(elt, (types.Number, types.Boolean)):
        return None
    sig = types.Array(elt, ndim, "C")(shape, dtype)

    def codegen(context, builder, signature, args):
        arrtype, shapes = _parse_empty_args(context, builder, signature, args)
        return _empty_nd_impl(context, builder, arrtype, shapes)._getvalue()

    return sig, codegen


@intrinsic
def jg_imin(typingctx, a, b):
    """``min(a, b)`` of two integers of one signedness, as a compare and a select."""
    if not (isinstance(a, types.Integer) and isinstance(b, types.Integer)):
        return None
    ty = typingctx.unify_types(a, b)
    if not isinstance(ty, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        x = context.cast(builder, args[0], signature.args[0], ty)
        y = context.cast(builder, args[1], signature.args[1], ty)
        less = builder.icmp_signed("<", x, y) if ty.signed else builder.icmp_unsigned("<", x, y)
        return builder.select(less, x, y)

    return ty(a, b), codegen
