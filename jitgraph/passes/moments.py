"""``var`` and ``std`` as the moments NumPy itself computes, so that fusion can make them kernels.

No kernel emitter has ``var`` or ``std``: left whole, each is a NumPy call of its own (three passes over memory and
a temporary as large as the operand), and the elementwise work before and after it cannot join a kernel. NumPy's
``_var`` is, for a float32/float64 operand and no ``dtype``::

    mu = umr_sum(x, axis, keepdims=True) / n          # np.mean(x, axis, keepdims=True), bit for bit
    d = x - mu
    var = umr_sum(d * d, axis, keepdims=keepdims) / max(n - ddof, 0)
    std = sqrt(var)

The rule below writes exactly those ops, so a graph run by NumPy gives the same bits (NumPy divides in float64 and
rounds to float32, which equals float32 division: a double-rounded quotient is correctly rounded), and a kernel
computes the same moments with its own sums (float32 sums accumulate in float64, as for ``mean``). The user's own
``x.mean(axis, keepdims=True)`` and the rule's ``mu`` are the same node after common-subexpression elimination, so
a layer norm makes its mean once. (A divisor ``n - ddof`` the float type cannot hold exactly is declined too:
NumPy divides by it in float64.)

The rule declines what NumPy does differently: float16 (its mean sums in float32), complex (the square is
``d * conj(d)``), integers (summed in float64), an explicit ``dtype``, and ``n - ddof <= 0`` (NumPy warns and
divides by zero: its own call keeps that).
"""

from __future__ import annotations

import math

import numpy as np

from jitgraph.ir.graph import Node
from jitgraph.ir.types import TensorType
from jitgraph.passes.rewrite import Emitter, Match, Rule, pat, var

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _moments(emit: Emitter, m: Match) -> Node | None:
    root, x = m["root"], m["x"]
    t = x.type
    if not isinstance(t, TensorType) or t.weak or t.dtype not in _FLOATS or root.attrs.get("dtype") is not None:
        return None
    axes = tuple(root.attrs["axis"])
    ddof = root.attrs.get("ddof", 0) or 0
    count = math.prod(t.shape[a] for a in axes)
    divisor = count - ddof
    if not axes or divisor <= 0 or float(t.dtype.type(divisor)) != divisor:
        return None  # (a divisor the float type cannot hold exactly: NumPy divides in float64)
    mu = emit.op("mean", x, axis=axes, keepdims=True)
    d = emit.op("subtract", x, mu)
    total = emit.op("sum", emit.op("multiply", d, d), axis=axes, keepdims=bool(root.attrs.get("keepdims")))
    result = emit.op("divide", total, emit.const(int(divisor) if float(divisor).is_integer() else float(divisor)))
    return emit.op("sqrt", result) if root.op == "std" else result


MOMENT_RULES: tuple[Rule, ...] = (
    Rule("var_as_moments", pat(("var", "std"), var("x"), name="root"), _moments,
         "var/std of float32/float64 -> mean, subtract, multiply, sum, divide (sqrt): NumPy's own _var formula, "
         "so fusion can make it a kernel"),
)
