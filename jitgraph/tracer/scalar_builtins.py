"""Python builtins and ``math`` functions on traced numbers: ``min``/``max`` as selects, ``float``/``int``/``round``
as conversions, ``pow`` as ``**``, ``math.exp`` and friends as ufuncs behind Python's own checks.

A NumPy scalar or a 0-d value of the graph (``norm = np.sqrt((g * g).sum())``) reaching ``min(1.0, 1.0 / norm)``
is data: the trace cannot compare it, so the builtin becomes ops of the graph that compute what Python would.

* ``min``/``max`` keep Python's order of comparisons: ``r = a; r = b if b < r else r; ...`` is a chain of
  ``where(less(b, r), b, r)``, so NaN and ties pick exactly what Python picks. Python returns the chosen object,
  whose type may be any of the candidates'; the graph has one type, the promotion of the candidates: a Python float
  competing with an ``np.float64`` gives an ``np.float64`` even when Python would hand back the float (equal value;
  the type only differs when that result is returned as is).
* ``float(x)``/``int(x)`` give Python numbers of the graph (weak, as Python numbers are in NumPy's promotion).
  ``int`` of a float truncates behind Python's checks: NaN raises ValueError, infinity OverflowError, with
  Python's messages; a float beyond the int64 range raises OverflowError too (Python would give a big int).
* ``math.f(x)`` computes NumPy's ``f`` in float64 and raises where Python's would: ValueError (``math domain
  error``) where NumPy returns NaN from a number, or infinity from a finite number for the logarithms;
  OverflowError (``math range error``) where it overflows to infinity from a finite number (``exp``, ``cosh``...).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from jitgraph.errors import RerunEagerly
from jitgraph.ir.graph import Node
from jitgraph.tracer.arrays import binary
from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.values import Buffer, TArray

__all__ = ["MATH", "conversion", "select_extreme", "traced_pow", "traced_round"]


def _scalar_nodes(tx: TraceContext, items: list[Any], what: str) -> list[Node]:
    nodes = [tx.node(i) for i in items]
    if any(n.tensor_type.shape != () for n in nodes):
        err = ValueError("The truth value of an array with more than one element is ambiguous. Use a.any() or "
                         "a.all()")
        tx.graph_break(f"builtin {what}() compares arrays: {err}", err)
    if any(n.tensor_type.dtype.kind == "c" for n in nodes):
        err = TypeError("'<' not supported between instances of 'complex' and 'complex'")
        tx.graph_break(str(err), err)
    return nodes


def _kind(node: Node) -> str:
    return "py" if node.tensor_type.weak else "scalar"


def select_extreme(tx: TraceContext, builtin: Any, items: list[Any]) -> TArray:
    """``min(a, b, ...)``/``max(...)`` of numbers some of which are traced: Python's left-to-right selection."""
    nodes = _scalar_nodes(tx, items, builtin.__name__)
    compare = "less" if builtin is min else "greater"
    result = nodes[0]
    for node in nodes[1:]:
        result = tx.op("where", tx.op(compare, node, result), node, result)
    return TArray(Buffer(result), (), _kind(result))


def _checked(tx: TraceContext, value: Node, ok: Node, error: BaseException) -> Node:
    return tx.op("check", value, ok, message=str(error), error=type(error).__name__)


def _python_error(fn: Callable[..., Any], *args: Any) -> BaseException:
    """The exception Python's ``fn(*args)`` raises (its message differs between versions)."""
    try:
        fn(*args)
    except (ValueError, OverflowError) as exc:
        return type(exc)(str(exc).split(", got")[0] if isinstance(exc, ValueError) else str(exc))
    raise AssertionError(f"{fn}{args} did not raise")


def _float_value(tx: TraceContext, value: TArray, what: str) -> Node:
    node = tx.read(value)
    t = node.tensor_type
    if t.shape != ():
        err = TypeError("only length-1 arrays can be converted to Python scalars")
        tx.graph_break(f"{what}() of an array with {t.size} elements", err if t.size != 1 else None)
    if t.dtype.kind not in "biuf":
        tx.graph_break(f"{what}() of a {t.dtype} value")
    return node if t.dtype == np.float64 else tx.op("astype", node, dtype=np.dtype(np.float64))


_BEYOND_INT64 = "int() of a float beyond the int64 range: compiled code has no Python big ints"
_UINT64_BEYOND = "int() of a uint64 beyond the int64 range: compiled code has no Python big ints"


def _int_of_float(tx: TraceContext, node: Node) -> Node:
    """Python's ``int(float)``: truncation, after its errors for NaN and infinity."""
    node = _checked(tx, node, tx.op("logical_not", tx.op("isnan", node)), _python_error(int, float("nan")))
    node = _checked(tx, node, tx.op("logical_not", tx.op("isinf", node)), _python_error(int, float("inf")))
    fits = tx.op("less", tx.op("absolute", node), tx.node(2.0 ** 63))
    node = _checked(tx, node, fits, RerunEagerly(_BEYOND_INT64))  # Python's answer is a big int: eager gives it
    return tx.op("to_python", tx.op("astype", tx.op("trunc", node), dtype=np.dtype(np.int64)), kind="int")


def conversion(tx: TraceContext, builtin: Any, value: TArray) -> TArray:
    """``float(x)``/``int(x)`` of a traced scalar: a Python number of the graph."""
    node = tx.read(value)
    t = node.tensor_type
    if builtin is float:
        if value.kind == "py" and t.dtype.kind == "f":
            return value
        return tx.fresh(tx.op("to_python", _float_value(tx, value, "float"), kind="float"), "py")
    if t.shape != () or t.dtype.kind not in "biuf":
        tx.graph_break(f"int() of a {t} value")
    if t.dtype.kind == "f":
        return tx.fresh(_int_of_float(tx, node), "py")
    if t.dtype == np.uint64:  # a Python int of 2**63 or more would wrap negative in int64: the eager run gives it
        fits = tx.op("less_equal", node, tx.builder.const(np.asarray(2 ** 63 - 1, np.uint64)))
        node = _checked(tx, node, fits, RerunEagerly(_UINT64_BEYOND))
    return tx.fresh(tx.op("to_python", node, kind="int"), "py")


def traced_round(tx: TraceContext, value: TArray, ndigits: Any = None) -> TArray:
    """``round(x)`` is an int (half to even, as NumPy's ``rint``); ``round(x, n)`` keeps ``x``'s type."""
    node = tx.read(value)
    t = node.tensor_type
    if t.shape != () or t.dtype.kind not in "biuf":
        tx.graph_break(f"round() of a {t} value")
    if ndigits is None:
        if t.dtype.kind != "f":
            return conversion(tx, int, value)
        return tx.fresh(_int_of_float(tx, tx.op("rint", node)), "py")
    if not isinstance(ndigits, int):
        tx.graph_break("round() with a number of digits computed from array data")
    if t.dtype.kind != "f":
        return value
    if value.kind == "py":
        # Python rounds a float to the nearest decimal correctly (round(0.35, 1) is 0.3); NumPy's scale-and-rint,
        # which NumPy scalars use, gives 0.4. Compiled code has only the latter.
        tx.graph_break(f"round() of a Python float to {ndigits} digits: Python rounds the decimal value exactly, "
                       "NumPy's algorithm (the only one compiled) can differ in the last digit")
    return tx.result(round_decimals(tx, node, ndigits))


def round_decimals(tx: TraceContext, node: Node, decimals: int) -> Node:
    """NumPy's ``around`` for floats: scale by ``10**decimals``, ``rint``, scale back (its own algorithm)."""
    if decimals == 0:
        return tx.op("rint", node)
    scale = tx.builder.const(np.asarray(10.0 ** abs(decimals), node.tensor_type.dtype))
    if decimals > 0:
        return tx.op("divide", tx.op("rint", tx.op("multiply", node, scale)), scale)
    return tx.op("multiply", tx.op("rint", tx.op("divide", node, scale)), scale)


def traced_pow(tx: TraceContext, base: Any, exp: Any, mod: Any = None) -> Any:
    """``pow(a, b)`` is ``a ** b`` (the same checks for Python floats); three-argument pow is integer-only."""
    if mod is not None:
        tx.graph_break("pow() with a modulus on traced values")
    return binary(tx, "**", base, exp)


# ---- math.* ----------------------------------------------------------------------------------------------------
# name -> (ufunc, what an infinite result from a finite argument raises: None, "domain" or "range")
_UNARY_MATH: dict[str, tuple[str, str | None]] = {
    "exp": ("exp", "range"), "exp2": ("exp2", "range"), "expm1": ("expm1", "range"), "log": ("log", "domain"),
    "log2": ("log2", "domain"), "log10": ("log10", "domain"), "log1p": ("log1p", "domain"),
    "sin": ("sin", None), "cos": ("cos", None), "tan": ("tan", None), "asin": ("arcsin", None),
    "acos": ("arccos", None), "atan": ("arctan", None), "sinh": ("sinh", "range"), "cosh": ("cosh", "range"),
    "tanh": ("tanh", None), "asinh": ("arcsinh", None), "acosh": ("arccosh", None), "atanh": ("arctanh", "domain"),
    "fabs": ("absolute", None), "degrees": ("rad2deg", None), "radians": ("deg2rad", None), "cbrt": ("cbrt", None),
}
_BINARY_MATH: dict[str, str] = {"atan2": "arctan2", "hypot": "hypot", "copysign": "copysign"}
_DOMAIN = _python_error(math.log, -1.0)
_RANGE = _python_error(math.exp, 1000.0)


def _unary_math(name: str, ufunc: str, on_inf: str | None) -> Callable[..., Any]:
    def lowering(tx: TraceContext, x: TArray) -> TArray:
        arg = _float_value(tx, x, f"math.{name}")
        out = tx.op(ufunc, arg)
        nan_ok = tx.op("logical_or", tx.op("isnan", arg), tx.op("logical_not", tx.op("isnan", out)))
        out = _checked(tx, out, nan_ok, _DOMAIN)
        if on_inf is not None:
            inf_ok = tx.op("logical_or", tx.op("logical_not", tx.op("isfinite", arg)), tx.op("isfinite", out))
            out = _checked(tx, out, inf_ok, _DOMAIN if on_inf == "domain" else _RANGE)
        return tx.fresh(tx.op("to_python", out, kind="float"), "py")

    return lowering


def _binary_math(name: str, ufunc: str) -> Callable[..., Any]:
    def lowering(tx: TraceContext, a: Any, b: Any) -> TArray:
        args = [_float_value(tx, v, f"math.{name}") if isinstance(v, TArray) else tx.node(float(v)) for v in (a, b)]
        return tx.fresh(tx.op("to_python", tx.op(ufunc, *args), kind="float"), "py")

    return lowering


def _math_pow(tx: TraceContext, a: Any, b: Any) -> TArray:
    """``math.pow``: float64 power; ValueError where NumPy gives NaN from numbers, OverflowError for infinity."""
    args = [_float_value(tx, v, "math.pow") if isinstance(v, TArray) else tx.node(float(v)) for v in (a, b)]
    out = tx.op("power", *args)
    finite_in = tx.op("logical_and", tx.op("isfinite", args[0]), tx.op("isfinite", args[1]))
    nan_in = tx.op("logical_or", tx.op("isnan", args[0]), tx.op("isnan", args[1]))
    out = _checked(tx, out, tx.op("logical_or", nan_in, tx.op("logical_not", tx.op("isnan", out))), _DOMAIN)
    zero_neg = tx.op("logical_and", tx.op("equal", args[0], tx.node(0.0)), tx.op("less", args[1], tx.node(0.0)))
    out = _checked(tx, out, tx.op("logical_not", zero_neg), _DOMAIN)  # 0.0 ** -1: ValueError in math.pow
    overflow = tx.op("logical_and", finite_in, tx.op("isinf", out))
    out = _checked(tx, out, tx.op("logical_not", overflow), _RANGE)
    return tx.fresh(tx.op("to_python", out, kind="float"), "py")


def _floor_ceil(name: str) -> Callable[..., Any]:
    def lowering(tx: TraceContext, x: TArray) -> TArray:
        node = tx.read(x)
        if node.tensor_type.shape == () and node.tensor_type.dtype.kind in "biu":
            return tx.fresh(tx.op("to_python", node, kind="int"), "py")
        return tx.fresh(_int_of_float(tx, tx.op(name, _float_value(tx, x, f"math.{name}"))), "py")

    return lowering


MATH: dict[Any, Callable[..., Any]] = {}
"""``math`` functions -> lowerings on traced arguments (trace-time numbers call the real function)."""
for _name, (_ufunc, _inf) in _UNARY_MATH.items():
    if hasattr(math, _name):
        MATH[getattr(math, _name)] = _unary_math(_name, _ufunc, _inf)
for _name, _ufunc in _BINARY_MATH.items():
    MATH[getattr(math, _name)] = _binary_math(_name, _ufunc)
for _name in ("floor", "ceil", "trunc"):
    MATH[getattr(math, _name)] = _floor_ceil(_name)
MATH[math.pow] = _math_pow
