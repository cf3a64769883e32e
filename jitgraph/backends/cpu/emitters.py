"""Emitters: one entry per op, turning operand expressions into a scalar Python expression Numba compiles.

Types are decided here and never by Numba's own promotion rules: operands are first cast to NumPy's *loop* dtype
(``ufunc.resolve_dtypes``, which applies NEP 50 to weak Python scalars), the op runs in that dtype, and the result
is cast to the node's dtype. Casting to a narrower integer type truncates, which gives NumPy's wrap-around.

Transcendental functions come from the vectorisable math library (``mathlib.VECTOR_MATH``) when it is importable
and ``math="fast"`` (the default); otherwise from ``math.*`` (libm, exact to NumPy but scalar, so loops using it
do not vectorise).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from jitgraph.errors import UnsupportedError
from jitgraph.ir.graph import Node
from jitgraph.ir.types import TensorType


def np_name(dtype: np.dtype) -> str:
    return "np.bool_" if dtype == np.dtype(bool) else f"np.{np.dtype(dtype).name}"


def cast(expr: str, to: np.dtype, src: np.dtype | None = None) -> str:
    """``expr`` converted to ``to``; booleans go through a comparison, since Numba has no ``np.bool_(x)``."""
    to = np.dtype(to)
    if src is not None and np.dtype(src) == to:
        return expr
    if to == np.dtype(bool):
        return f"({expr} != 0)"
    return f"{np_name(to)}({expr})"


@dataclass
class EmitContext:
    """What an emitter may ask: the node, its operand dtypes and the loop dtypes NumPy would use."""

    node: Node
    in_dtypes: tuple[np.dtype, ...]
    out_dtype: np.dtype
    math: str  # "fast" or "libm"
    math_table: dict[tuple[str, str], object] | None
    used_math: set[tuple[str, str]]

    @property
    def loop(self) -> tuple[np.dtype, ...]:
        """NumPy's loop dtypes (inputs..., output) for a ufunc node."""
        ufunc = getattr(np, self.node.op, None)
        if not isinstance(ufunc, np.ufunc):
            return self.in_dtypes + (self.out_dtype,)
        types = [t.proto().__class__ if t.weak else t.dtype for t in (i.type for i in self.node.inputs)]
        loop = ufunc.resolve_dtypes(tuple(types) + (None,) * ufunc.nout)
        # Kernels have no float16; a float16 loop only appears for predicates (isnan of uint8), exact in float32.
        return tuple(np.dtype(np.float32) if d == np.float16 else d for d in loop)


Emitter = Callable[[Sequence[str], EmitContext], str]
EMITTERS: dict[str, Emitter] = {}
MATH_FUNCS = {
    "exp": "math.exp", "expm1": "math.expm1", "log": "math.log", "log1p": "math.log1p", "tanh": "math.tanh",
    "sin": "math.sin", "cos": "math.cos", "sqrt": "math.sqrt", "log2": "math.log2", "log10": "math.log10",
    "tan": "math.tan", "sinh": "math.sinh", "cosh": "math.cosh", "arcsin": "math.asin", "arccos": "math.acos",
    "arctan": "math.atan", "arcsinh": "math.asinh", "arccosh": "math.acosh", "arctanh": "math.atanh",
    "exp2": "np.exp2",
}
VECTORISED = ("exp", "expm1", "log", "log1p", "tanh", "sin", "cos", "sqrt", "power")


def math_call(name: str, ctx: EmitContext) -> str:
    """The callable for a float math function in ``ctx.out_dtype``: the vector library's, else libm's."""
    key = (name, ctx.out_dtype.name)
    if ctx.math == "fast" and ctx.math_table and key in ctx.math_table:
        ctx.used_math.add(key)
        return f"VM_{name}_{ctx.out_dtype.name}"
    return MATH_FUNCS[name]


def _define(*names: str) -> Callable[[Emitter], Emitter]:
    def deco(fn: Emitter) -> Emitter:
        for n in names:
            EMITTERS[n] = fn
        return fn

    return deco


def _args(args: Sequence[str], ctx: EmitContext) -> list[str]:
    """Operands cast to NumPy's loop dtypes."""
    loop = ctx.loop
    return [cast(a, loop[k], ctx.in_dtypes[k]) for k, a in enumerate(args)]


_INFIX = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "bitwise_and": "&", "bitwise_or": "|",
          "bitwise_xor": "^", "equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
          "greater_equal": ">="}


@_define(*_INFIX)
def _infix(args: Sequence[str], ctx: EmitContext) -> str:
    a, b = _args(args, ctx)
    op = _INFIX[ctx.node.op]
    if ctx.loop[0] == np.dtype(bool) and op in "+*":
        op = "|" if op == "+" else "&"
    return f"({a} {op} {b})"


@_define("logical_and", "logical_or", "logical_xor")
def _logical(args: Sequence[str], ctx: EmitContext) -> str:
    a, b = (cast(x, np.dtype(bool), d) for x, d in zip(args, ctx.in_dtypes))
    op = {"logical_and": "&", "logical_or": "|", "logical_xor": "^"}[ctx.node.op]
    return f"({a} {op} {b})"


@_define("logical_not")
def _logical_not(args: Sequence[str], ctx: EmitContext) -> str:
    return f"({args[0]} == 0)"


@_define("invert")
def _invert(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = _args(args, ctx)
    return f"(not {a})" if ctx.loop[0] == np.dtype(bool) else f"(~{a})"


@_define("negative")
def _negative(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = _args(args, ctx)
    if ctx.out_dtype.kind == "f":
        return f"(-{a})"
    return f"({cast('0', ctx.loop[0])} - {a})"


@_define("positive", "copy")
def _identity(args: Sequence[str], ctx: EmitContext) -> str:
    return args[0]


@_define("astype")
def _astype(args: Sequence[str], ctx: EmitContext) -> str:
    return cast(args[0], ctx.out_dtype, ctx.in_dtypes[0])


@_define("absolute")
def _absolute(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = _args(args, ctx)
    return a if ctx.loop[0].kind in "ub" else f"abs({a})"


@_define("square")
def _square(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = _args(args, ctx)
    return f"({a} * {a})"


@_define("sign")
def _sign(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = _args(args, ctx)
    return f"jg_sign({a})"


@_define(*MATH_FUNCS)
def _math(args: Sequence[str], ctx: EmitContext) -> str:
    a = cast(args[0], ctx.out_dtype, ctx.in_dtypes[0])
    return f"{math_call(ctx.node.op, ctx)}({a})"


@_define("floor", "ceil", "trunc", "rint")
def _rounding(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = _args(args, ctx)
    return a if ctx.loop[0].kind in "iub" else f"np.{ctx.node.op}({a})"


@_define("isnan", "isinf", "isfinite")
def _classify(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = _args(args, ctx)
    if ctx.loop[0].kind != "f":
        return "True" if ctx.node.op == "isfinite" else "False"
    return f"np.{ctx.node.op}({a})"


@_define("signbit")
def _signbit(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = _args(args, ctx)
    return f"(math.copysign(1.0, {a}) < 0)" if ctx.loop[0].kind == "f" else f"({a} < 0)"


@_define("divide")
def _divide(args: Sequence[str], ctx: EmitContext) -> str:
    a, b = _args(args, ctx)
    return f"({a} / {b})"


@_define("floor_divide", "remainder", "fmod")
def _divmod(args: Sequence[str], ctx: EmitContext) -> str:
    a, b = _args(args, ctx)
    kind = "float" if ctx.loop[0].kind == "f" else "int"
    if ctx.loop[0] == np.dtype(bool):
        raise UnsupportedError(f"{ctx.node.op} on booleans has no kernel emitter")
    if ctx.node.op == "fmod":
        return f"np.fmod({a}, {b})" if kind == "float" else f"jg_fmod_int({a}, {b})"
    fn = "floordiv" if ctx.node.op == "floor_divide" else "mod"
    return f"jg_{fn}_{kind}({a}, {b})"


def _const_exponent(ctx: EmitContext) -> float | None:
    e = ctx.node.inputs[1]
    if e.op == "const" and isinstance(e.type, TensorType) and e.type.shape == ():
        return float(e.attrs["value"])
    return None


@_define("power")
def _power(args: Sequence[str], ctx: EmitContext) -> str:
    a, b = _args(args, ctx)
    if ctx.loop[0].kind in "iu":
        return f"jg_power_int({a}, {b})"
    if ctx.loop[0] == np.dtype(bool):
        raise UnsupportedError("power on booleans has no kernel emitter")
    e = _const_exponent(ctx)
    # Small integer exponents as products: NumPy's pow is correctly rounded, the product is within 2 ulp.
    if e in (1.0, 2.0, 3.0, 4.0):
        return "(" + " * ".join([a] * int(e)) + ")"
    if e == 0.5:
        return f"{math_call('sqrt', ctx)}({a})"
    key = ("power", ctx.out_dtype.name)
    if ctx.math == "fast" and ctx.math_table and key in ctx.math_table:
        ctx.used_math.add(key)
        return f"VM_power_{ctx.out_dtype.name}({a}, {b})"
    return f"({a} ** {b})"


@_define("maximum", "minimum", "fmax", "fmin")
def _extremum(args: Sequence[str], ctx: EmitContext) -> str:
    a, b = _args(args, ctx)
    return f"jg_{ctx.node.op}({a}, {b})"


@_define("clip")
def _clip(args: Sequence[str], ctx: EmitContext) -> str:
    x, lo, hi = _args(args, ctx)
    return f"jg_minimum(jg_maximum({x}, {lo}), {hi})"


@_define("where")
def _where(args: Sequence[str], ctx: EmitContext) -> str:
    c = cast(args[0], np.dtype(bool), ctx.in_dtypes[0])
    x, y = (cast(a, ctx.out_dtype, d) for a, d in zip(args[1:], ctx.in_dtypes[1:]))
    return f"({x} if {c} else {y})"


@_define("setitem")
def _setitem(args: Sequence[str], ctx: EmitContext) -> str:
    """Whole-array assignment (the fusion pass only lets ``x[...] = v`` in): the value, cast like NumPy's
    assignment does (unsafe casting); the old contents of ``x`` are not read."""
    return cast(args[1], ctx.out_dtype, ctx.in_dtypes[1])


@_define("arctan2", "hypot", "copysign", "logaddexp")
def _binary_math(args: Sequence[str], ctx: EmitContext) -> str:
    a, b = _args(args, ctx)
    fn = {"arctan2": "math.atan2", "hypot": "math.hypot", "copysign": "math.copysign",
          "logaddexp": "jg_logaddexp"}[ctx.node.op]
    return f"{fn}({a}, {b})"


# Reductions: (initial value, combine(acc, value) -> expr) in the accumulator dtype.
def reduction_init(op: str, acc: np.dtype) -> str:
    if op in ("sum", "mean"):
        return cast("0", acc)
    if op == "prod":
        return cast("1", acc)
    if op == "any":
        return "False"
    if op == "all":
        return "True"
    if acc.kind == "f":
        return cast(("-" if op == "max" else "") + "np.inf", acc)
    if acc.kind == "b":
        return "False" if op == "max" else "True"
    info = np.iinfo(acc)
    return cast(str(info.min if op == "max" else info.max), acc)


def reduction_combine(op: str, acc: str, value: str) -> str:
    return {"sum": f"{acc} + {value}", "mean": f"{acc} + {value}", "prod": f"{acc} * {value}",
            "max": f"jg_max_acc({acc}, {value})", "min": f"jg_min_acc({acc}, {value})",
            "any": f"{acc} | ({value} != 0)", "all": f"{acc} & ({value} != 0)"}[op]


def accumulator_dtype(node: Node) -> np.dtype:
    """float32 (and smaller) sums accumulate in float64: as accurate as NumPy's pairwise sum, and vectorisable."""
    out = node.type.dtype
    if node.op in ("sum", "mean") and out.kind == "f" and out.itemsize < 8:
        return np.dtype(np.float64)
    if node.op in ("any", "all"):
        return np.dtype(bool)
    if node.op == "mean":
        return np.dtype(np.float64) if out.kind != "f" else out
    return out
