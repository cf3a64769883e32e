"""CUDA emitters: one table entry per op, turning operand expressions into one scalar expression in a kernel.

The type discipline is the CPU backend's: operands are cast to NumPy's *loop* dtypes (``ufunc.resolve_dtypes``,
which applies NEP 50 to weak Python scalars), the op runs in that dtype, and the statement that binds the result
casts it to the node's dtype (narrow integer casts truncate, which is NumPy's wrap-around). Numba's own promotion
never decides a result type. Math is CUDA's: ``math.exp`` and friends lower to libdevice on the device.

An op without an entry (or a dtype an entry refuses) raises :class:`~jitgraph.errors.UnsupportedError`; the
backend then runs that whole group on the host through NumPy and says so in its explain data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from jitgraph.errors import UnsupportedError
from jitgraph.ir.graph import Node
from jitgraph.ir.types import TensorType


def np_name(dtype: np.dtype) -> str:
    return f"np.{np.dtype(dtype).name}"


def cast(expr: str, to: np.dtype, src: np.dtype | None = None) -> str:
    """``expr`` converted to ``to``; booleans go through a comparison (there is no ``np.bool_(x)`` in kernels)."""
    to = np.dtype(to)
    if src is not None and np.dtype(src) == to:
        return expr
    if to == np.dtype(bool):
        return f"({expr} != 0)"
    return f"{np_name(to)}({expr})"


def literal(value: object, dtype: np.dtype) -> str:
    """A constant as kernel source, already of ``dtype``."""
    dtype = np.dtype(dtype)
    if dtype == np.dtype(bool):
        return "True" if bool(value) else "False"
    if dtype.kind == "f":
        v = float(value)  # type: ignore[arg-type]
        text = "math.nan" if np.isnan(v) else ("math.inf" if v == np.inf else "-math.inf" if v == -np.inf else repr(v))
        return f"{np_name(dtype)}({text})"
    if dtype.kind in "iu":
        return f"{np_name(dtype)}({int(value)})"  # type: ignore[call-overload]
    raise UnsupportedError(f"constant of dtype {dtype} has no CUDA emitter")


@dataclass
class EmitContext:
    node: Node
    in_dtypes: tuple[np.dtype, ...]
    out_dtype: np.dtype

    @property
    def loop(self) -> tuple[np.dtype, ...]:
        """NumPy's loop dtypes (inputs..., output) for a ufunc node."""
        ufunc = getattr(np, self.node.op, None)
        if not isinstance(ufunc, np.ufunc):
            return self.in_dtypes + (self.out_dtype,)
        types = [type(t.proto()) if t.weak else t.dtype for t in (i.type for i in self.node.inputs)]
        return tuple(ufunc.resolve_dtypes(tuple(types) + (None,) * ufunc.nout))


Emitter = Callable[[Sequence[str], EmitContext], str]
EMITTERS: dict[str, Emitter] = {}
MATH_FUNCS = {
    "exp": "math.exp", "expm1": "math.expm1", "log": "math.log", "log1p": "math.log1p", "tanh": "math.tanh",
    "sin": "math.sin", "cos": "math.cos", "sqrt": "math.sqrt", "log2": "math.log2", "log10": "math.log10",
    "tan": "math.tan", "sinh": "math.sinh", "cosh": "math.cosh", "arcsin": "math.asin", "arccos": "math.acos",
    "arctan": "math.atan", "arcsinh": "math.asinh", "arccosh": "math.acosh", "arctanh": "math.atanh",
}


def emit(node: Node, args: Sequence[str]) -> str:
    """The expression computing ``node`` from operand expressions ``args`` (not yet cast to the node's dtype)."""
    try:
        emitter = EMITTERS[node.op]
    except KeyError:
        raise UnsupportedError(f"no CUDA emitter for op {node.op!r}", hint="the group runs on the host via NumPy") \
            from None
    ctx = EmitContext(node, tuple(i.type.dtype for i in node.inputs), node.type.dtype)
    for dt in ctx.in_dtypes + (ctx.out_dtype,):
        if dt.kind not in "biuf" or dt.itemsize < 4 and dt.kind == "f":
            raise UnsupportedError(f"{node.op} on dtype {dt} has no CUDA emitter")
    return emitter(args, ctx)


def _define(*names: str) -> Callable[[Emitter], Emitter]:
    def deco(fn: Emitter) -> Emitter:
        for n in names:
            EMITTERS[n] = fn
        return fn

    return deco


def _args(args: Sequence[str], ctx: EmitContext) -> list[str]:
    loop = ctx.loop
    return [cast(a, loop[k], ctx.in_dtypes[k]) for k, a in enumerate(args)]


_INFIX = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "bitwise_and": "&", "bitwise_or": "|",
          "bitwise_xor": "^", "equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
          "greater_equal": ">="}


@_define(*_INFIX)
def _infix(args: Sequence[str], ctx: EmitContext) -> str:
    a, b = _args(args, ctx)
    op = _INFIX[ctx.node.op]
    if ctx.loop[0] == np.dtype(bool):
        if op in "+*":
            op = "|" if op == "+" else "&"
        elif op in ("-", "/"):
            raise UnsupportedError(f"{ctx.node.op} on booleans has no CUDA emitter")
    return f"({a} {op} {b})"


_LOGICAL = {"logical_and": "and", "logical_or": "or", "logical_xor": "!="}


@_define(*_LOGICAL)
def _logical(args: Sequence[str], ctx: EmitContext) -> str:
    a, b = (cast(x, np.dtype(bool), d) for x, d in zip(args, ctx.in_dtypes))
    return f"({a} {_LOGICAL[ctx.node.op]} {b})"


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
    if ctx.out_dtype.kind == "b":
        raise UnsupportedError("negative on booleans has no CUDA emitter")
    return f"({cast('0', ctx.loop[0])} - {a})"


@_define("positive", "copy")
def _identity(args: Sequence[str], ctx: EmitContext) -> str:
    return args[0]


@_define("astype")
def _astype(args: Sequence[str], ctx: EmitContext) -> str:
    if ctx.in_dtypes[0].kind == "f" and ctx.out_dtype.kind in "iu":
        # float -> int of NaN/inf/out-of-range is undefined in CUDA and platform-defined in NumPy
        raise UnsupportedError("astype from float to integer has no CUDA emitter")
    return cast(args[0], ctx.out_dtype, ctx.in_dtypes[0])


@_define("absolute")
def _absolute(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = _args(args, ctx)
    if ctx.loop[0].kind in "ub":
        return a
    return f"math.fabs({a})" if ctx.loop[0].kind == "f" else f"abs({a})"


@_define("square")
def _square(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = _args(args, ctx)
    return f"({a} * {a})"


@_define("sign")
def _sign(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = _args(args, ctx)
    if ctx.loop[0].kind == "b":
        raise UnsupportedError("sign on booleans has no CUDA emitter")
    return f"jg_sign({a})"


@_define(*MATH_FUNCS)
def _math(args: Sequence[str], ctx: EmitContext) -> str:
    a = cast(args[0], ctx.out_dtype, ctx.in_dtypes[0])
    return f"{MATH_FUNCS[ctx.node.op]}({a})"


@_define("exp2")
def _exp2(args: Sequence[str], ctx: EmitContext) -> str:
    a = cast(args[0], ctx.out_dtype, ctx.in_dtypes[0])
    return f"math.pow({cast('2.0', ctx.out_dtype)}, {a})"


@_define("floor", "ceil", "trunc", "rint")
def _rounding(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = _args(args, ctx)
    if ctx.loop[0].kind in "iub":
        return a
    return f"jg_{ctx.node.op}_{ctx.loop[0].name}({a})"


@_define("isnan", "isinf", "isfinite")
def _classify(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = _args(args, ctx)
    if ctx.loop[0].kind != "f":
        return "True" if ctx.node.op == "isfinite" else "False"
    return f"math.{ctx.node.op}({a})"


@_define("signbit")
def _signbit(args: Sequence[str], ctx: EmitContext) -> str:
    (a,) = _args(args, ctx)
    return f"(math.copysign(1.0, {a}) < 0)" if ctx.loop[0].kind == "f" else f"({a} < 0)"


@_define("floor_divide", "remainder", "fmod")
def _divmod(args: Sequence[str], ctx: EmitContext) -> str:
    a, b = _args(args, ctx)
    if ctx.loop[0] == np.dtype(bool):
        raise UnsupportedError(f"{ctx.node.op} on booleans has no CUDA emitter")
    kind = "float" if ctx.loop[0].kind == "f" else "int"
    if ctx.node.op == "fmod":
        return f"math.fmod({a}, {b})" if kind == "float" else f"jg_fmod_int({a}, {b})"
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
    e = _const_exponent(ctx)
    if ctx.loop[0].kind in "iu":
        if e is None or e < 0:
            raise UnsupportedError("integer power without a constant non-negative exponent has no CUDA emitter "
                                   "(NumPy raises for negative exponents)")
        return f"jg_power_int({a}, {b})"
    if ctx.loop[0] == np.dtype(bool):
        raise UnsupportedError("power on booleans has no CUDA emitter")
    # Small integer exponents as products: within 2 ulp of NumPy's correctly rounded pow, and much cheaper.
    if e in (1.0, 2.0, 3.0, 4.0):
        return "(" + " * ".join([a] * int(e)) + ")"
    if e == 0.5:
        return f"math.sqrt({a})"
    return f"math.pow({a}, {b})"


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


@_define("arctan2", "hypot", "copysign", "logaddexp")
def _binary_math(args: Sequence[str], ctx: EmitContext) -> str:
    a, b = _args(args, ctx)
    if ctx.loop[0].kind != "f":
        raise UnsupportedError(f"{ctx.node.op} on {ctx.loop[0]} has no CUDA emitter")
    fn = {"arctan2": "math.atan2", "hypot": "math.hypot", "copysign": "math.copysign",
          "logaddexp": "jg_logaddexp"}[ctx.node.op]
    return f"{fn}({a}, {b})"


# ---- reductions: accumulator dtype, initial value, combine, finish ------------------------------------------------
REDUCTIONS = ("sum", "mean", "max", "min", "prod", "any", "all")


def accumulator_dtype(node: Node) -> np.dtype:
    """Sums of float32 accumulate in float64 (as accurate as NumPy's pairwise sum); any/all in int32 (shuffles and
    shared memory move 32-bit words, not bools)."""
    if node.op not in REDUCTIONS:
        raise UnsupportedError(f"no CUDA emitter for reduction {node.op!r}")
    out = node.type.dtype
    if node.op in ("any", "all"):
        return np.dtype(np.int32)
    if node.op in ("sum", "mean") and out.kind == "f" and out.itemsize < 8:
        return np.dtype(np.float64)
    if out.kind == "b":  # max/min of booleans
        return np.dtype(np.int32)
    return out


def reduction_init(node: Node) -> str:
    op, acc = node.op, accumulator_dtype(node)
    if op in ("sum", "mean"):
        return cast("0", acc)
    if op in ("prod", "all"):
        return cast("1", acc)
    if op == "any":
        return cast("0", acc)
    if node.type.dtype.kind == "b":
        return cast("0" if op == "max" else "1", acc)
    if acc.kind == "f":
        return cast(("-" if op == "max" else "") + "math.inf", acc)
    info = np.iinfo(acc)
    return cast(str(info.min if op == "max" else info.max), acc)


def reduction_value(node: Node, value: str) -> str:
    """An element, as the accumulator combines it (``value`` has the reduced operand's dtype)."""
    acc = accumulator_dtype(node)
    src = node.inputs[0].type.dtype
    if node.op in ("any", "all") or src.kind == "b" and node.op in ("max", "min"):
        return cast(f"({value} != 0)", acc)
    return cast(value, acc, src)


def reduction_combine(node: Node, acc: str, value: str) -> str:
    dt = accumulator_dtype(node)
    return {"sum": f"{acc} + {value}", "mean": f"{acc} + {value}", "prod": f"{cast(f'{acc} * {value}', dt)}",
            "max": f"jg_max_acc({acc}, {value})", "min": f"jg_min_acc({acc}, {value})",
            "any": f"{acc} | {value}", "all": f"{acc} & {value}"}[node.op]


def reduction_finish(node: Node, acc: str, count: str) -> str:
    """The reduction's value (node dtype) from the combined accumulator; ``count`` = elements reduced."""
    out = node.type.dtype
    if node.op == "mean":
        return cast(f"{acc} / {count}", out)
    return cast(acc, out, accumulator_dtype(node))
