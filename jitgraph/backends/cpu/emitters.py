"""The CPU backend's emitters: the shared table (:mod:`jitgraph.backends.emitter_table`) plus the CPU's spelling of
float functions and its reductions.

Transcendental functions come from the vectorisable math library (``mathlib.VECTOR_MATH``) when it is importable
and ``math="fast"`` (the default); otherwise from ``math.*`` (libm, exact to NumPy but scalar, so loops using it
do not vectorise). Functions Numba's ``math`` lacks or types as integers (``fmod``, rounding, ``isnan``, ``exp2``)
are NumPy's ufuncs, which Numba compiles to scalar code.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitgraph.backends import emitter_table as shared
from jitgraph.backends.emitter_table import cast, np_name, reduction_init
from jitgraph.ir.graph import Node
from jitgraph.ir.types import TensorType

__all__ = ["EMITTERS", "MATH_FUNCS", "VECTORISED", "EmitContext", "accumulator_dtype", "cast", "literal", "mean_total",
           "np_name", "reduction_combine", "reduction_init"]

_NUMPY_SPELLED = ("exp2", "cbrt", "fmod", "floor", "ceil", "trunc", "rint", "isnan", "isinf", "isfinite")
MATH_FUNCS = {**shared.MATH_FUNCS, **{name: f"np.{name}" for name in _NUMPY_SPELLED}}
VECTORISED = ("exp", "expm1", "log", "log1p", "tanh", "sin", "cos", "sqrt", "power")


@dataclass
class EmitContext(shared.EmitContext):
    """The shared context plus the math option: ``math`` is "fast" or "libm"; ``math_table`` the vector library's
    functions by ``(op, dtype name)``; ``used_math`` collects those a kernel calls, for its imports."""

    math: str
    math_table: dict[tuple[str, str], object] | None
    used_math: set[tuple[str, str]]

    def _vector_math(self, name: str) -> str | None:
        key = (name, self.out_dtype.name)
        if self.math == "fast" and self.math_table and key in self.math_table:
            self.used_math.add(key)
            return f"VM_{name}_{self.out_dtype.name}"
        return None

    def function(self, name: str) -> str:
        """The vector library's function, else libm's (or NumPy's, see ``MATH_FUNCS``)."""
        return self._vector_math(name) or MATH_FUNCS[name]

    def float_power(self, a: str, b: str) -> str:
        vector = self._vector_math("power")
        return f"{vector}({a}, {b})" if vector else f"({a} ** {b})"


EMITTERS = dict(shared.EMITTERS)
EMITTERS["exp2"] = shared.unary_math  # the CPU spells it np.exp2; Numba's math has no exp2


def reduction_combine(op: str, acc: str, value: str) -> str:
    """``value`` (of the reduced array's dtype, for any/all) combined into ``acc``."""
    if op in ("any", "all"):
        value = f"({value} != 0)"
    return shared.reduction_combine(op, acc, value)


def accumulator_dtype(node: Node) -> np.dtype:
    """The shared rule (float32 sums in float64, integer sums in the result's integer type)."""
    return shared.accumulator_dtype(node.op, node.type.dtype)


def mean_total(total: str, count: str, out: np.dtype) -> str:
    """A mean from its sum, as NumPy forms it: with an integer ``dtype=`` the sum wraps in that type first (Numba
    widens narrow integer sums to int64), then the float quotient is truncated by the caller's cast."""
    return f"{cast(total, out) if out.kind in 'iu' else total} / {count}"


def literal(n: Node) -> str:
    """A ``const`` node as kernel source: ``np.float32(0.5)``, ``np.inf``; weak (Python) scalars stay bare."""
    t = n.type
    assert isinstance(t, TensorType)
    v = np.asarray(n.attrs["value"]).item()
    text = repr(float(v)) if t.dtype.kind == "f" else repr(v)
    if text in ("inf", "-inf", "nan"):
        text = {"inf": "np.inf", "-inf": "-np.inf", "nan": "np.nan"}[text]
    return text if t.weak else cast(text, t.dtype)
