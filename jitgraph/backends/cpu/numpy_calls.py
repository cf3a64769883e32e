"""How the CPU driver spells one NumPy call: the expression computing a node that runs through NumPy, and whether
that call can ever set a floating-point flag.

Why apart from ``program.py``: the driver's per-call cost at small sizes is mostly these calls' Python layers, so
each spelling here is the cheapest one that runs the same NumPy loop (``a.T`` rather than ``np.transpose(a)``, a
typed constant rather than a Python scalar NumPy converts per call); ``program.py`` only orders them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from jitgraph.ir.graph import Node
from jitgraph.ir.ops import OPS
from jitgraph.ir.types import TensorType, python_type


def is_array(node: Node) -> bool:
    """Whether the driver holds ``node``'s value as an ndarray (a strong value of one dimension or more): its
    methods then run the same NumPy loops as the module functions, without their Python wrappers."""
    return isinstance(node.type, TensorType) and not node.type.weak and node.type.ndim >= 1


# Reductions that the ndarray method runs as one ufunc's ``reduce`` behind a Python frame (NumPy's
# ``_methods._sum(a, axis, dtype, out, keepdims, ...)`` is ``np.add.reduce(a, axis, dtype, out, keepdims, ...)``):
# called directly, the same loop costs ~0.5 us less a call (1.9 -> 1.3 us for a sum over 4 floats).
_UFUNC_REDUCE = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def _reduction_method(node: Node, args: list[str], ns: dict[str, Any], name: str) -> str:
    """``R(x, axis, None, None, keepdims)`` with R the ufunc's reduce (``_UFUNC_REDUCE``), else
    ``x.sum(axis=..., keepdims=...)``: ``np.sum(x, ...)`` on an ndarray calls the same reduction through
    ``_wrapreduction`` (1-3 us more per call, which a small matrix-vector function pays several times)."""
    attrs = dict(node.attrs)
    axis, keepdims = attrs.pop("axis", None), bool(attrs.pop("keepdims", False))
    ufunc = _UFUNC_REDUCE.get(node.op)
    if ufunc is not None and all(value is None for value in attrs.values()):
        ns[f"R{name}"] = ufunc.reduce
        return f"R{name}({args[0]}, {axis!r}, None, None, {keepdims!r})"
    keyword = [f"axis={axis!r}", f"keepdims={keepdims!r}"]
    for key, value in attrs.items():
        if value is None:
            continue
        if isinstance(value, (int, float, bool)):
            keyword.append(f"{key}={value!r}")
        else:
            ns[f"K{name}_{key}"] = value
            keyword.append(f"{key}=K{name}_{key}")
    return f"{args[0]}.{node.op}({', '.join(keyword)})"


def _transpose(node: Node, args: list[str], ns: dict[str, Any], name: str) -> str:
    axes = node.attrs.get("axes")
    if node.type.ndim == 2 and axes in ((1, 0), None):
        return f"{args[0]}.T"
    return f"{args[0]}.transpose({tuple(axes) if axes is not None else None!r})"


def _reshape(node: Node, args: list[str], ns: dict[str, Any], name: str) -> str:
    return f"{args[0]}.reshape({tuple(node.attrs['shape'])!r})"


def _astype(node: Node, args: list[str], ns: dict[str, Any], name: str) -> str:
    """``x.astype(dtype)``: the reference ``np.asarray(x).astype(dtype=...)`` adds a Python frame and keywords."""
    ns[f"D{name}"] = node.attrs["dtype"]
    return f"{args[0]}.astype(D{name})"


# Driver spellings of ops on ndarrays that are cheaper than the op's reference function (the same NumPy loops behind
# fewer Python layers: ``np.transpose(a, axes)`` costs 1 us more than ``a.T``); every other op calls its reference.
_METHODS: dict[str, Callable[[Node, list[str], dict[str, Any], str], str]] = {
    **dict.fromkeys(("sum", "mean", "max", "min", "prod", "var", "std", "any", "all", "argmax", "argmin"),
                    _reduction_method),
    "transpose": _transpose,
    "reshape": _reshape,
    "astype": _astype,
}

# Ops whose NumPy call never sets a floating-point flag, whatever the values (NaN and infinities included: checked
# under ``np.errstate(all="raise")`` for float16/32/64, SIMD and tail lengths): views and selections, comparisons,
# maximum/minimum (NumPy clears the flags its NaN handling sets), sign-bit ops, and reductions by comparison. A
# weak operand can still overflow when NumPy casts it to the array's dtype (``np.maximum(x32, 1e300)`` warns), so
# a call counts as quiet only with strong operands or small constants (:func:`quiet`).
_QUIET = frozenset((
    "input", "const", "tuple_get", "reshape", "transpose", "broadcast_to", "getitem",
    "maximum", "minimum", "fmax", "fmin", "absolute", "negative", "positive", "sign", "copysign", "signbit",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "isnan", "isinf", "isfinite",
    "logical_and", "logical_or", "logical_xor", "logical_not", "where",
    "max", "min", "argmax", "argmin", "any", "all",
))
_SMALL_CONST = 65504.0  # the largest float16: a constant within it converts to any float dtype without overflow


def quiet(node: Node) -> bool:
    """Whether the driver's NumPy call for ``node`` can never warn (so it needs no ``errstate``)."""
    if node.op not in _QUIET:
        return False
    for i in node.inputs:
        if isinstance(i.type, TensorType) and i.type.weak:
            value = i.attrs.get("value") if i.op == "const" else None
            if type(value) not in (bool, int, float) or not abs(value) <= _SMALL_CONST:
                return False
    return True


def _typed_constant(node: Node, const: Node) -> Any:
    """The Python scalar ``const`` (an operand of the ufunc call ``node``) as the NumPy scalar NumPy converts it to,
    or None to pass it as it is.

    NumPy converts a Python scalar operand to the dtype of the array operands (NEP 50), on every call: passing
    ``np.float32(0)`` instead of ``0`` saves ~0.25 us of a 1 us ``np.maximum`` over 1000 floats. Only where that
    conversion is exact and the same NumPy makes: a ufunc whose strong operands all have one float dtype, which is
    also the result's (or a comparison's bool), and a finite constant that dtype holds exactly (an int) or without
    overflow (a float, rounded once as NumPy rounds it)."""
    if not isinstance(OPS[node.op].impl, np.ufunc) or not isinstance(node.type, TensorType) or node.type.weak:
        return None
    strong = {i.type.dtype for i in node.inputs if i is not const and isinstance(i.type, TensorType)
              and not i.type.weak}
    others_weak = any(i is not const and (not isinstance(i.type, TensorType) or i.type.weak) for i in node.inputs)
    if len(strong) != 1 or others_weak:
        return None
    (dtype,) = strong
    if dtype.kind != "f" or node.type.dtype not in (dtype, np.dtype(bool)):
        return None
    value = const.attrs.get("value")
    info = np.finfo(dtype)
    if type(value) is int:
        exact = 2 ** (info.nmant + 1)
        return dtype.type(value) if -exact <= value <= exact else None
    if type(value) is float and math.isfinite(value) and abs(value) <= float(info.max):
        return dtype.type(value)
    return None


# Binary ufuncs whose Python operator on NumPy scalars runs NumPy's scalar math: the same loop, promotion (NEP 50) and
# floating-point error state as the ufunc, without the ufunc's array machinery (0.1 us rather than ~1 us a call).
_OPERATORS = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "less": "<", "less_equal": "<=",
              "greater": ">", "greater_equal": ">=", "equal": "==", "not_equal": "!="}
_SMALL_INT = 2 ** 31


def _scalar_operator(node: Node, args: list[str]) -> str | None:
    """``(a + b)`` for a binary ufunc of 0-d values with a strong (NumPy) operand and result (the optimiser's bias
    corrections, a loss divided by a count), or None. A Python operand must be a float, or an int constant small
    enough that no dtype overflows converting it: a large Python int can make NumPy's scalar path and the ufunc's
    raise differently."""
    symbol = _OPERATORS.get(node.op)
    if symbol is None or len(node.inputs) != 2 or not isinstance(node.type, TensorType) or node.type.shape != () \
            or node.type.weak:
        return None
    strong = False
    for i in node.inputs:
        if not isinstance(i.type, TensorType) or i.type.shape != ():
            return None
        if not i.type.weak:
            strong = True
        elif i.type.dtype.kind != "f":
            value = i.attrs.get("value") if i.op == "const" else None
            if type(value) not in (int, bool) or abs(value) >= _SMALL_INT:
                return None
    return f"({args[0]} {symbol} {args[1]})" if strong else None


def writes_into(node: Node) -> bool:
    """Whether :func:`numpy_call` can write ``node``'s value into a given array (``out=``): a ufunc without attrs,
    or a reduction spelled as its ufunc's ``reduce``."""
    if node.op in _UFUNC_REDUCE:
        attrs = {k: v for k, v in node.attrs.items() if k not in ("axis", "keepdims")}
        return all(value is None for value in attrs.values()) and is_array(node.inputs[0])
    return isinstance(OPS[node.op].impl, np.ufunc) and not node.attrs


def numpy_call(node: Node, args: list[str], name: str, ns: dict[str, Any], out: str | None = None) -> str:
    """The driver expression computing ``node`` with NumPy from the variables ``args`` (names it needs go into
    ``ns`` under ``name``): a method of the ndarray where one does the same (``_METHODS``), else the op's reference
    function, with its attrs only when it has any. A weak result becomes the Python scalar it is. ``out``: an
    array expression the value is written into (only where :func:`writes_into` holds)."""
    args = list(args)
    for k, i in enumerate(node.inputs):
        if i.op == "const" and isinstance(i.type, TensorType) and i.type.weak and \
                (typed := _typed_constant(node, i)) is not None:
            # With an array operand, as a 0-d array: the ufunc takes it ~0.15 us faster than a NumPy scalar (the
            # same dtype, so the same loop and result); between scalars, a scalar for NumPy's scalar math.
            ns[f"S{name}_{k}"] = np.array(typed) if node.type.shape != () else typed
            args[k] = f"S{name}_{k}"
    if out is not None:
        if node.op in _UFUNC_REDUCE:
            ns[f"R{name}"] = _UFUNC_REDUCE[node.op].reduce
            axis, keepdims = node.attrs.get("axis"), bool(node.attrs.get("keepdims", False))
            return f"R{name}({args[0]}, {axis!r}, None, {out}, {keepdims!r})"
        ns[f"F{name}"] = OPS[node.op].impl
        return f"F{name}({', '.join(args)}, out={out})"
    spell = _METHODS.get(node.op)
    if (operator := _scalar_operator(node, args)) is not None:
        call = operator
    elif spell is not None and node.inputs and is_array(node.inputs[0]):
        call = spell(node, args, ns, name)
    else:
        ns[f"F{name}"] = OPS[node.op].impl
        parts = list(args)
        if node.attrs:
            ns[f"A{name}"] = dict(node.attrs)
            parts.append(f"**A{name}")
        call = f"F{name}({', '.join(parts)})"
    if isinstance(node.type, TensorType) and node.type.weak:
        ns[f"T{name}"] = python_type(node.type.dtype)
        call = f"T{name}({call})"
    return call


def dot_operands(group: Node) -> tuple[int, int] | None:
    """For a fused group that is ``sum(a * b)`` over the whole of two float vectors of one dtype (a norm's
    ``sum(x * x)``, a hand-written dot product): the positions of ``a`` and ``b`` among the group's inputs, else
    None. Run as NumPy, that is one BLAS dot (``a.dot(b)``, 0.5 us over 4 floats) where the multiply and the sum
    cost 2.5 us; np.linalg.norm and np.dot compute it the same way. Only the summation order differs from the
    pairwise sum (rounding, not values: both are accurate to a few ulps times log n)."""
    body = group.regions[0]
    members = [m for m in body.nodes if m.op not in ("input", "const")]
    if len(members) != 2 or len(body.outputs) != 1:
        return None
    product, total = members
    if product.op != "multiply" or total.op != "sum" or total.inputs != (product,) or body.outputs[0] is not total:
        return None
    attrs = dict(total.attrs)
    if attrs.pop("axis", None) not in (None, (0,)) or attrs.pop("keepdims", False) or \
            any(v is not None for v in attrs.values()):
        return None
    a, b = product.inputs
    types = [n.type for n in (a, b, product, total)]
    if a not in body.inputs or b not in body.inputs or not all(isinstance(t, TensorType) and not t.weak
                                                               for t in types):
        return None
    if a.type.ndim != 1 or a.type.shape != b.type.shape or total.type.shape != () or \
            len({t.dtype for t in types}) != 1 or a.type.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        return None
    return body.inputs.index(a), body.inputs.index(b)
