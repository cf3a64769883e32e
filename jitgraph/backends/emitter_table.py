"""The emitters both code generators share: one entry per op, turning operand expressions into a scalar expression.

Types are decided here and never by Numba's own promotion rules: operands are first cast to NumPy's *loop* dtype
(``ufunc.resolve_dtypes``, which applies NEP 50 to weak Python scalars), the op runs in that dtype, and the caller
casts the result to the node's dtype. Casting to a narrower integer type truncates, which gives NumPy's wrap-around.

What an op means is the same on every backend, so the table is written once. The one thing a backend decides is
how to spell a scalar function (``np.isnan`` or ``math.isnan``, libm's ``math.exp`` or the vector library's), and
it says so through its :class:`EmitContext` subclass (:meth:`EmitContext.function`,
:meth:`EmitContext.float_power`). Each backend's ``emitters`` module copies :data:`EMITTERS` and adds or replaces
only the entries where it differs. Ops with NumPy's semantics but no operator (floor division, NaN-propagating
maximum, ...) call the ``jg_*`` helpers of :mod:`jitgraph.backends.scalar_semantics`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from jitgraph.errors import UnsupportedError
from jitgraph.ir.graph import Node
from jitgraph.ir.types import TensorType


def np_name(dtype: np.dtype) -> str:
    return "np.bool_" if dtype == np.dtype(bool) else f"np.{np.dtype(dtype).name}"


def cast(expr: str, to: np.dtype, src: np.dtype | None = None) -> str:
    """``expr`` converted to ``to``; booleans go through a comparison, since kernels have no ``np.bool_(x)``."""
    to = np.dtype(to)
    if src is not None and np.dtype(src) == to:
        return expr
    if to == np.dtype(bool):
        return f"({expr} != 0)"
    return f"{np_name(to)}({expr})"


def truth(value: bool, dtype: np.dtype) -> str:
    """A truth value as a constant of ``dtype``: ``True``/``False`` for booleans, else 1/0 of that type (the CUDA
    backend keeps booleans in 32-bit integers)."""
    if np.dtype(dtype) == np.dtype(bool):
        return "True" if value else "False"
    return cast(str(int(value)), dtype)


@dataclass
class EmitContext:
    """What an emitter may ask: the node, its operand dtypes, the loop dtypes NumPy would use, and (from the
    backend's subclass) how that backend spells a scalar function."""

    node: Node
    in_dtypes: tuple[np.dtype, ...]
    out_dtype: np.dtype

    backend: ClassVar[str] = "kernel"  # as error messages name it: "... has no kernel emitter"

    @property
    def loop(self) -> tuple[np.dtype, ...]:
        """NumPy's loop dtypes (inputs..., output) for a ufunc node."""
        ufunc = getattr(np, self.node.op, None)
        if not isinstance(ufunc, np.ufunc):
            return self.in_dtypes + (self.out_dtype,)
        inputs = [i.type for i in self.node.inputs]
        # NEP 50: a weak Python scalar takes the other operand's type; Python op Python stays int64/float64 (as the
        # tracer typed it), not the object loop that two Python types would resolve to.
        all_weak = all(t.weak for t in inputs)
        types = [type(t.proto()) if t.weak and not all_weak else t.dtype for t in inputs]
        loop = ufunc.resolve_dtypes(tuple(types) + (None,) * ufunc.nout)
        # Kernels have no float16; a float16 loop only appears for predicates (signbit of uint8), exact in float32.
        return tuple(np.dtype(np.float32) if d == np.float16 else d for d in loop)

    def function(self, name: str) -> str:
        """The callable computing the float function ``name`` (a ufunc name: ``exp``, ``fmod``, ``isnan``, ...)
        in ``out_dtype`` on this backend."""
        raise NotImplementedError

    def float_power(self, a: str, b: str) -> str:
        """``a ** b`` for floats of ``out_dtype`` (already cast), as this backend computes it."""
        raise NotImplementedError

    def proven_in_range(self) -> bool:
        """Whether the node's integer result is proven to fit its type, so the plain operator is exact and no
        wrap-around spelling is needed (:func:`wrapping`). Kernels know no value ranges; the loop driver's bounds
        analysis does (induction variables and their arithmetic), and keeps its index arithmetic plain."""
        return False

    def unsupported(self, what: str) -> UnsupportedError:
        return UnsupportedError(f"{what} has no {self.backend} emitter")


Emitter = Callable[[Sequence[str], EmitContext], str]
EMITTERS: dict[str, Emitter] = {}
# Float functions that Numba's ``math`` module provides on both targets (libm on the CPU, libdevice on CUDA).
MATH_FUNCS = {
    "exp": "math.exp", "expm1": "math.expm1", "log": "math.log", "log1p": "math.log1p", "tanh": "math.tanh",
    "sin": "math.sin", "cos": "math.cos", "sqrt": "math.sqrt", "log2": "math.log2", "log10": "math.log10",
    "tan": "math.tan", "sinh": "math.sinh", "cosh": "math.cosh", "arcsin": "math.asin", "arccos": "math.acos",
    "arctan": "math.atan", "arcsinh": "math.asinh", "arccosh": "math.acosh", "arctanh": "math.atanh",
}


def registrar(table: dict[str, Emitter]) -> Callable[..., Callable[[Emitter], Emitter]]:
    """A decorator factory: ``@define("add", "subtract")`` enters the decorated emitter in ``table`` under those
    op names."""

    def define(*names: str) -> Callable[[Emitter], Emitter]:
        def deco(fn: Emitter) -> Emitter:
            for n in names:
                table[n] = fn
            return fn

        return deco

    return define


_define = registrar(EMITTERS)


def loop_args(args: Sequence[str], ctx: EmitContext) -> list[str]:
    """Operands cast to NumPy's loop dtypes."""
    loop = ctx.loop
    return [cast(a, loop[k], ctx.in_dtypes[k]) for k, a in enumerate(args)]


def wrapping(a: str, op: str, b: str) -> str:
    """int64 ``a op b`` that wraps on overflow as NumPy's does. Numba marks signed arithmetic ``nsw`` (overflow is
    undefined), and LLVM uses that: ``x + (-2**63)`` became ``x | -2**63``. Unsigned arithmetic has no such flag
    and is the same machine instruction."""
    return f"np.int64(np.uint64({a}) {op} np.uint64({b}))"


_INFIX = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "bitwise_and": "&", "bitwise_or": "|",
          "bitwise_xor": "^", "equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
          "greater_equal": ">="}


_COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")


def _exact_comparison(args: Sequence[str], ctx: EmitContext) -> str | None:
    """An integer array compared with a Python int, as NumPy 2 compares it: exactly, even when the int is outside
    the array's range (``int8 > 300`` is False everywhere, ``uint8 >= -1`` True), where casting the int to the
    loop's type would wrap it. Compared in int64, which holds both sides for every integer dtype but uint64; a
    uint64 array against a negative int has a fixed answer."""
    weak = [i.type.weak and i.type.dtype.kind in "iu" for i in ctx.node.inputs]
    if ctx.node.op not in _COMPARISONS or weak.count(True) != 1 or ctx.loop[0].kind not in "iu":
        return None
    op, k = _INFIX[ctx.node.op], weak.index(True)
    python_int = cast(args[k], np.dtype(np.int64), ctx.in_dtypes[k])
    if ctx.loop[0] != np.dtype(np.uint64):
        a, b = (cast(x, np.dtype(np.int64), d) for x, d in zip(args, ctx.in_dtypes))
        return f"({a} {op} {b})"
    a, b = loop_args(args, ctx)
    # The Python int is below every uint64: true for "array > int" (or "int < array") and for "!=".
    array_side_greater = op in (">", ">=") if k == 1 else op in ("<", "<=")
    fixed = truth(array_side_greater or op == "!=", ctx.out_dtype)
    return f"(({a} {op} {b}) if {python_int} >= 0 else {fixed})"


@_define(*_INFIX)
def _infix(args: Sequence[str], ctx: EmitContext) -> str:
    exact = _exact_comparison(args, ctx)
    if exact is not None:
        return exact
    a, b = loop_args(args, ctx)
    op = _INFIX[ctx.node.op]
    if ctx.loop[0] == np.dtype(np.int64) and op in "+-*" and not ctx.proven_in_range():
        return wrapping(a, op, b)
    if ctx.loop[0] == np.dtype(bool):  # NumPy's boolean add/multiply are or/and
        if op in ("+", "*"):
            op = "|" if op == "+" else "&"
        elif op in ("-", "/"):
            raise ctx.unsupported(f"{ctx.node.op} on booleans")
    return f"({a} {op} {b})"


@_define("left_shift", "right_shift")
def _shift(args: Sequence[str], ctx: EmitContext) -> str:
    """NumPy's shifts (``npy_lshift``/``npy_rshift``): a count outside ``[0, bits)`` gives 0 (-1 for a negative
    number shifted right) where the machine shift is undefined. A constant count in range is the plain shift."""
    a, b = loop_args(args, ctx)
    dtype = ctx.loop[0]
    if dtype.kind not in "iu":
        raise ctx.unsupported(f"{ctx.node.op} on {dtype}")
    bits = 8 * dtype.itemsize
    op = "<<" if ctx.node.op == "left_shift" else ">>"
    count = ctx.node.inputs[1]
    if count.op == "const" and 0 <= int(np.asarray(count.attrs["value"])) < bits:
        return f"({a} {op} {b})"
    zero = cast("0", dtype)
    beyond = zero if op == "<<" or dtype.kind == "u" else f"({cast('-1', dtype)} if {a} < 0 else {zero})"
    return f"(({a} {op} {b}) if np.uint64({b}) < {bits} else {beyond})"


_LOGICAL = {"logical_and": "&", "logical_or": "|", "logical_xor": "^"}


@_define(*_LOGICAL)
def _logical(args: Sequence[str], ctx: EmitContext) -> str:
    a, b = (cast(x, np.dtype(bool), d) for x, d in zip(args, ctx.in_dtypes))
    return f"({a} {_LOGICAL[ctx.node.op]} {b})"


@_define("logical_not")
def _logical_not(args: Sequence[str], ctx: EmitContext) -> str:
    return f"({args[0]} == 0)"


@_define("invert")
def _invert(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = loop_args(args, ctx)
    return f"(not {a})" if ctx.loop[0] == np.dtype(bool) else f"(~{a})"


@_define("negative")
def _negative(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = loop_args(args, ctx)
    if ctx.out_dtype.kind == "f":
        return f"(-{a})"
    if ctx.out_dtype.kind == "b":
        raise ctx.unsupported("negative on booleans")
    if ctx.loop[0] == np.dtype(np.int64) and not ctx.proven_in_range():
        return wrapping("np.int64(0)", "-", a)
    return f"({cast('0', ctx.loop[0])} - {a})"  # 0 - a, so unsigned types wrap as in NumPy


@_define("positive", "copy")
def _identity(args: Sequence[str], ctx: EmitContext) -> str:
    return args[0]


@_define("astype")
def _astype(args: Sequence[str], ctx: EmitContext) -> str:
    return cast(args[0], ctx.out_dtype, ctx.in_dtypes[0])


@_define("setitem")
def _setitem(args: Sequence[str], ctx: EmitContext) -> str:
    """Whole-array assignment (the fusion pass only lets ``x[...] = v`` in): the value, cast like NumPy's
    assignment does (unsafe casting); the old contents of ``x`` are not read."""
    return cast(args[1], ctx.out_dtype, ctx.in_dtypes[1])


@_define("absolute")
def _absolute(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = loop_args(args, ctx)
    return a if ctx.loop[0].kind in "ub" else f"abs({a})"


@_define("square")
def _square(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = loop_args(args, ctx)
    return f"({a} * {a})"


@_define("sign")
def _sign(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = loop_args(args, ctx)
    if ctx.loop[0].kind == "b":
        raise ctx.unsupported("sign on booleans")
    return f"jg_sign({a})"


@_define(*MATH_FUNCS)
def unary_math(args: Sequence[str], ctx: EmitContext) -> str:
    """A float function of one argument, computed in the result's dtype."""
    a = cast(args[0], ctx.out_dtype, ctx.in_dtypes[0])
    return f"{ctx.function(ctx.node.op)}({a})"


@_define("floor", "ceil", "trunc", "rint")
def _rounding(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = loop_args(args, ctx)
    return a if ctx.loop[0].kind in "iub" else f"{ctx.function(ctx.node.op)}({a})"


@_define("isnan", "isinf", "isfinite")
def _classify(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = loop_args(args, ctx)
    if ctx.loop[0].kind != "f":
        return "True" if ctx.node.op == "isfinite" else "False"
    return f"{ctx.function(ctx.node.op)}({a})"


@_define("signbit")
def _signbit(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = loop_args(args, ctx)
    return f"(math.copysign(1.0, {a}) < 0)" if ctx.loop[0].kind == "f" else f"({a} < 0)"


@_define("floor_divide", "remainder", "fmod")
def _divmod(args: Sequence[str], ctx: EmitContext) -> str:
    a, b = loop_args(args, ctx)
    if ctx.loop[0] == np.dtype(bool):
        raise ctx.unsupported(f"{ctx.node.op} on booleans")
    kind = "float" if ctx.loop[0].kind == "f" else "int"
    if ctx.node.op == "fmod":
        return f"{ctx.function('fmod')}({a}, {b})" if kind == "float" else f"jg_fmod_int({a}, {b})"
    fn = "floordiv" if ctx.node.op == "floor_divide" else "mod"
    return f"jg_{fn}_{kind}({a}, {b})"


def const_exponent(ctx: EmitContext) -> float | None:
    """The exponent of a ``power`` node when it is a scalar constant, else None."""
    e = ctx.node.inputs[1]
    if e.op == "const" and isinstance(e.type, TensorType) and e.type.shape == ():
        return float(e.attrs["value"])
    return None


@_define("power")
def power(args: Sequence[str], ctx: EmitContext) -> str:
    a, b = loop_args(args, ctx)
    if ctx.loop[0].kind in "iu":
        return f"jg_power_int({a}, {b})"
    if ctx.loop[0] == np.dtype(bool):
        raise ctx.unsupported("power on booleans")
    e = const_exponent(ctx)
    # Small integer exponents as products: NumPy's pow is correctly rounded, the product is within 2 ulp.
    if e in (1.0, 2.0, 3.0, 4.0):
        return "(" + " * ".join([a] * int(e)) + ")"
    if e == 0.5:
        return f"{ctx.function('sqrt')}({a})"
    return ctx.float_power(a, b)


@_define("maximum", "minimum", "fmax", "fmin")
def _extremum(args: Sequence[str], ctx: EmitContext) -> str:
    a, b = loop_args(args, ctx)
    return f"jg_{ctx.node.op}({a}, {b})"


@_define("clip")
def _clip(args: Sequence[str], ctx: EmitContext) -> str:
    x, lo, hi = loop_args(args, ctx)
    return f"jg_minimum(jg_maximum({x}, {lo}), {hi})"


@_define("where")
def _where(args: Sequence[str], ctx: EmitContext) -> str:
    c = cast(args[0], np.dtype(bool), ctx.in_dtypes[0])
    x, y = (cast(a, ctx.out_dtype, d) for a, d in zip(args[1:], ctx.in_dtypes[1:]))
    return f"({x} if {c} else {y})"


@_define("deg2rad", "rad2deg")
def _angle(args: Sequence[str], ctx: EmitContext) -> str:
    """``x * (pi / 180)`` (or its inverse) in the result's float type, as NumPy's loops compute it."""
    a = cast(args[0], ctx.out_dtype, ctx.in_dtypes[0])
    factor = math.pi / 180.0 if ctx.node.op == "deg2rad" else 180.0 / math.pi
    return f"({a} * {cast(repr(factor), ctx.out_dtype)})"


@_define("reciprocal")
def _reciprocal(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = loop_args(args, ctx)
    if ctx.loop[0].kind != "f":
        raise ctx.unsupported(f"reciprocal on {ctx.loop[0]}")
    return f"({cast('1.0', ctx.loop[0])} / {a})"


@_define("cbrt")
def _cbrt(args: Sequence[str], ctx: EmitContext) -> str:
    a = cast(args[0], ctx.out_dtype, ctx.in_dtypes[0])
    return f"{ctx.function('cbrt')}({a})"


@_define("float_power")
def _float_power(args: Sequence[str], ctx: EmitContext) -> str:
    a, b = loop_args(args, ctx)
    if ctx.loop[0].kind != "f":
        raise ctx.unsupported(f"float_power on {ctx.loop[0]}")
    return ctx.float_power(a, b)


@_define("heaviside")
def _heaviside(args: Sequence[str], ctx: EmitContext) -> str:
    """``np.heaviside(x, h)``: 0 below zero, ``h`` at zero, 1 above, NaN for NaN."""
    x, h = loop_args(args, ctx)
    if ctx.loop[0].kind != "f":
        raise ctx.unsupported(f"heaviside on {ctx.loop[0]}")
    zero, one = cast("0.0", ctx.loop[0]), cast("1.0", ctx.loop[0])
    return f"({x} if {x} != {x} else ({zero} if {x} < 0 else ({h} if {x} == 0 else {one})))"


_BINARY_MATH = {"arctan2": "math.atan2", "hypot": "math.hypot", "copysign": "math.copysign",
                "logaddexp": "jg_logaddexp"}


@_define(*_BINARY_MATH)
def _binary_math(args: Sequence[str], ctx: EmitContext) -> str:
    a, b = loop_args(args, ctx)
    if ctx.loop[0].kind != "f":
        raise ctx.unsupported(f"{ctx.node.op} on {ctx.loop[0]}")
    return f"{_BINARY_MATH[ctx.node.op]}({a}, {b})"


# ---- reductions: accumulator dtype, initial value, combine --------------------------------------------------------
_BOOL = np.dtype(bool)


def accumulator_dtype(op: str, out: np.dtype, booleans: np.dtype = _BOOL) -> np.dtype:
    """The dtype a reduction ``op`` with result dtype ``out`` accumulates in. float32 sums accumulate in float64:
    as accurate as NumPy's pairwise sum, and vectorisable. any/all and the max/min of booleans accumulate truth
    values in ``booleans``."""
    if op in ("any", "all") or out.kind == "b":
        return booleans
    if op in ("sum", "mean") and out.kind == "f" and out.itemsize < 8:
        return np.dtype(np.float64)
    return out


def reduction_init(op: str, acc: np.dtype, of_booleans: bool | None = None) -> str:
    """The identity of reduction ``op`` in accumulator dtype ``acc``. ``of_booleans`` says a max/min reduces
    booleans (it defaults to ``acc`` being bool; a backend that keeps booleans in integers says so)."""
    if op in ("sum", "mean"):
        return cast("0", acc)
    if op == "prod":
        return cast("1", acc)
    if op in ("any", "all"):
        return truth(op == "all", acc)
    if (acc.kind == "b") if of_booleans is None else of_booleans:
        return truth(op == "min", acc)
    if acc.kind == "f":
        return cast(("-" if op == "max" else "") + "np.inf", acc)
    info = np.iinfo(acc)
    return cast(str(info.min if op == "max" else info.max), acc)


def reduction_combine(op: str, acc: str, value: str) -> str:
    """``acc`` combined with ``value``, both in the accumulator dtype (for any/all: truth values)."""
    return {"sum": f"{acc} + {value}", "mean": f"{acc} + {value}", "prod": f"{acc} * {value}",
            "max": f"jg_max_acc({acc}, {value})", "min": f"jg_min_acc({acc}, {value})",
            "any": f"{acc} | {value}", "all": f"{acc} & {value}"}[op]
