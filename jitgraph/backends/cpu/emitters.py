"""The CPU backend's emitters: the shared table (:mod:`jitgraph.backends.emitter_table`) plus the CPU's spelling of
float functions and its reductions.

Transcendental functions come from the vectorisable math library (``mathlib.VECTOR_MATH``) when it is importable
and ``math="fast"`` (the default); otherwise from ``math.*`` (libm, exact to NumPy but scalar, so loops using it
do not vectorise). Functions Numba's ``math`` lacks or types as integers (``fmod``, rounding, ``isnan``, ``exp2``)
are NumPy's ufuncs, which Numba compiles to scalar code.
"""

from __future__ import annotations

import re
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


# The row template's lane accumulators (``accv1_3``: kernel_source's ``acc{var}_{lane}``), and an operand that is a
# variable or one subscript of one (``a0[i0, j + 1]``, ``buf4[k]``): cheap to name more than once.
_LANE = re.compile(r"accv\d+_\d+")
_SIMPLE = re.compile(r"[A-Za-z_]\w*(\[[^\[\]()]*\])?")


def reduction_combine(op: str, acc: str, value: str) -> str:
    """``value`` (of the reduced array's dtype, for any/all) combined into ``acc``.

    ``max``/``min`` into a row kernel's lane accumulator, of a simple operand, are spelled
    ``(max(acc, v) if v == v else v)``: the same result as
    ``jg_max_acc`` for every input (NaN sticks, ties and signed zeros keep ``acc``; checked over the special
    values in ``tests/cpu/test_reduction_spelling.py``), but without the short-circuit ``or``, whose branches kept
    the row kernels' eight max lanes scalar: the max sweep of the row softmax (4096, 1024) float32 took 3.0 ms on
    one thread, 2.0-2.5 ms spelled this way (NumPy's own ``max(axis=1)``: 1.0 ms). Longer operands keep the
    helper, which names each once; so do the other templates' accumulators (column sweeps, the scalar backend's
    loops), whose generated sources stay as they were."""
    if op in ("any", "all"):
        value = f"({value} != 0)"
    if op in ("max", "min") and _LANE.fullmatch(acc) and _SIMPLE.fullmatch(value):
        return f"({op}({acc}, {value}) if {value} == {value} else {value})"
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
