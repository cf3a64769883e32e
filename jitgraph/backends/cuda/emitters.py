"""CUDA emitters: the shared table (:mod:`jitgraph.backends.emitter_table`) plus what the device does differently.

The type discipline is the CPU backend's: operands are cast to NumPy's *loop* dtypes, the op runs in that dtype,
and the statement that binds the result casts it to the node's dtype. What differs here: math is CUDA's
(``math.exp`` and friends lower to libdevice on the device; rounding calls libdevice's ``floorf``/``floor``
through the ``jg_<op>_<dtype>`` names of ``device_fns``), booleans are accumulated in 32-bit integers (shuffles
and shared memory move 32-bit words), and some ops are refused.

An op without an entry (or a dtype an entry refuses) raises :class:`~jitgraph.errors.UnsupportedError`; the
backend then runs that whole group on the host through NumPy and says so in its explain data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from jitgraph.backends import emitter_table as shared
from jitgraph.backends.emitter_table import cast, np_name
from jitgraph.errors import UnsupportedError
from jitgraph.ir.graph import Node

__all__ = ["EMITTERS", "MATH_FUNCS", "REDUCTIONS", "EmitContext", "accumulator_dtype", "cast", "emit", "literal",
           "np_name", "reduction_combine", "reduction_finish", "reduction_init", "reduction_value"]

MATH_FUNCS = {**shared.MATH_FUNCS, "fmod": "math.fmod", "isnan": "math.isnan", "isinf": "math.isinf",
              "isfinite": "math.isfinite"}
_ROUNDING = ("floor", "ceil", "trunc", "rint")


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


class EmitContext(shared.EmitContext):
    backend: ClassVar[str] = "CUDA"

    def function(self, name: str) -> str:
        if name in _ROUNDING:  # Numba's math.floor returns an integer; libdevice's keeps the float type
            return f"jg_{name}_{self.out_dtype.name}"
        return MATH_FUNCS[name]

    def float_power(self, a: str, b: str) -> str:
        return f"math.pow({a}, {b})"


EMITTERS = dict(shared.EMITTERS)
_define = shared.registrar(EMITTERS)


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


@_define("astype")
def _astype(args: Sequence[str], ctx: shared.EmitContext) -> str:
    if ctx.in_dtypes[0].kind == "f" and ctx.out_dtype.kind in "iu":
        # float -> int of NaN/inf/out-of-range is undefined in CUDA and platform-defined in NumPy
        raise ctx.unsupported("astype from float to integer")
    return cast(args[0], ctx.out_dtype, ctx.in_dtypes[0])


@_define("exp2")
def _exp2(args: Sequence[str], ctx: shared.EmitContext) -> str:
    a = cast(args[0], ctx.out_dtype, ctx.in_dtypes[0])
    return f"math.pow({cast('2.0', ctx.out_dtype)}, {a})"


@_define("power")
def _power(args: Sequence[str], ctx: shared.EmitContext) -> str:
    e = shared.const_exponent(ctx)
    if ctx.loop[0].kind in "iu" and (e is None or e < 0):
        raise UnsupportedError("integer power without a constant non-negative exponent has no CUDA emitter "
                               "(NumPy raises for negative exponents)")
    return shared.power(args, ctx)


# ---- reductions: accumulator dtype, initial value, combine, finish ------------------------------------------------
REDUCTIONS = ("sum", "mean", "max", "min", "prod", "any", "all")


def accumulator_dtype(node: Node) -> np.dtype:
    """The shared rule (float32 sums in float64), with truth values (any/all, max/min of booleans) in int32."""
    if node.op not in REDUCTIONS:
        raise UnsupportedError(f"no CUDA emitter for reduction {node.op!r}")
    return shared.accumulator_dtype(node.op, node.type.dtype, np.dtype(np.int32))


def reduction_init(node: Node) -> str:
    return shared.reduction_init(node.op, accumulator_dtype(node), node.type.dtype.kind == "b")


def reduction_value(node: Node, value: str) -> str:
    """An element, as the accumulator combines it (``value`` has the reduced operand's dtype)."""
    acc = accumulator_dtype(node)
    src = node.inputs[0].type.dtype
    if node.op in ("any", "all") or src.kind == "b" and node.op in ("max", "min"):
        return cast(f"({value} != 0)", acc)
    return cast(value, acc, src)


def reduction_combine(node: Node, acc: str, value: str) -> str:
    """``acc`` and ``value`` combined; products are cast back, since Numba widens narrow integer products."""
    expr = shared.reduction_combine(node.op, acc, value)
    return cast(expr, accumulator_dtype(node)) if node.op == "prod" else expr


def reduction_finish(node: Node, acc: str, count: str) -> str:
    """The reduction's value (node dtype) from the combined accumulator; ``count`` = elements reduced."""
    out = node.type.dtype
    if node.op == "mean":
        return cast(f"{acc} / {count}", out)
    return cast(acc, out, accumulator_dtype(node))
