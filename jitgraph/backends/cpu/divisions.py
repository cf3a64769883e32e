"""float32 divisions by a value that does not change along the loop, done as float64 multiplications.

Why: ``vdivps`` issues one 512-bit quotient every ~10 cycles on the divider it shares with ``vsqrtps``, while a
multiplication issues twice a cycle. A division whose divisor is the same for every element of a loop -- a constant
(W6, Adam: ``m / (1 - beta1**t)``), or a per-row value in a row kernel's final sweep (W2, softmax:
``e / e.sum(axis=1, keepdims=True)``; a layer norm's ``/ std``) -- can take its reciprocal once and multiply.

How: for a float32 ``x`` and a float32 divisor ``c``, ``float32(float64(x) * RN64(1/c))`` is NumPy's ``x / c``
bit for bit, for every ``x`` (zeros, subnormals, infinities and NaN included), unless ``c`` is an even integer. The
float64 product is within 2**-52 (relative) of the exact ``x / c``. A float32 rounding boundary ``m`` (a midpoint
between neighbours, or the overflow threshold) that ``x / c`` is not exactly on lies at least 2**-49 away from it
(relative; 2**-174 absolute below the normal range), since ``x - c * m`` is then a nonzero multiple of the quantum
of ``c * m``; and ``x / c`` can be exactly on one only as a subnormal midpoint, ``x = c * k * 2**-150`` with ``k``
odd, which needs ``c`` to be an even integer (``tests/cpu/test_w6_kernel.py`` shows one: 147 * 2**-149 / 98). So
the product and the quotient round alike. Checked against NumPy for 133 divisors (the W6 ones, 1/3, 0.1, 7, 255,
2 - 2**-23, a subnormal, random ones from 1e-35 to 3e6) over every significand of one normal binade, every
subnormal and the largest binade: no difference. (Markstein's FMA quotient, ``q = x*y; q - (q*c - x)*y``, is cheaper
still, but exact only for dividends in range; checking each block's dividends cost as much as it saved.)

A constant divisor is checked when the kernel is generated (:func:`exact_reciprocal`); a scalar of the call or a
per-row divisor when the kernel or the row runs (``jg_exact_recip`` gives 0.0 for a divisor that does not qualify,
and the kernel or the row then runs the loop that divides: :func:`products_or_divisions`). Measured, W2 (softmax
over (4096, 1024) float32, two threads, the kernel alone): 1.76 -> 1.65 ms.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.backends.cpu import emitters as E
from jitgraph.backends.cpu.helpers import exact_recip
from jitgraph.ir.graph import Node

__all__ = ["exact_reciprocal", "product_divisions", "products_or_divisions", "row_divisions"]

_F32 = np.dtype(np.float32)


def exact_reciprocal(c: float) -> float | None:
    """``RN64(1 / c)`` for a float32 divisor ``c`` whose quotients it reproduces (``helpers.exact_recip``'s rule),
    else None: ``c`` zero, infinite, NaN, or an even integer; also a power of two, whose division LLVM already makes
    a float32 multiplication."""
    c32 = np.float32(c)
    if np.frexp(abs(float(c32)))[0] == 0.5:
        return None
    return float(exact_recip(c32)) or None


def _float32_division(emit: Any, n: Node) -> bool:
    """Whether ``n`` is a per-element float32 division NumPy computes in float32 (a float64 divisor would make it
    float64)."""
    if n.op != "divide" or n in emit.scalar_nodes or n.inputs[0].op == "const":
        return False
    dividend, divisor = n.inputs
    if n.type.dtype != _F32 or dividend.type.dtype != _F32 or divisor.type.dtype.kind != "f":
        return False
    ctx = E.EmitContext(n, (dividend.type.dtype, divisor.type.dtype), n.type.dtype, emit.spec.math,
                        emit.spec.math_table, set())
    return tuple(ctx.loop) == (_F32,) * 3


def _row_value(emit: Any, v: Node) -> bool:
    """Whether ``v`` is the same for every element of a row kernel's final sweep: computed before it (a reduction
    or what follows from one), a scalar argument, or an array operand broadcast along the reduced axes. A constant
    is left to the divider (LLVM makes a power of two a multiplication)."""
    if v.op == "const":
        return False
    if emit.operand(v):
        return not any(a.walks[d] for a in emit.loads_for.get(v, []) for d in emit.spec.inner)
    return v not in emit.spec.full


def product_divisions(emit: Any) -> tuple[dict[str, str], dict[Node, str]]:
    """An elementwise kernel's per-element float32 divisions by a constant or by a scalar of the call (a scalar
    argument, 0-d arithmetic on them), as ``({reciprocal variable: its expression}, {division: its product
    expression})``: a constant's reciprocal is a literal, a scalar's is ``jg_exact_recip``'s, which the loop with
    the products needs nonzero."""
    recips: dict[str, str] = {}
    found: dict[Node, str] = {}
    for n in emit.members:
        if not _float32_division(emit, n):
            continue
        divisor = n.inputs[1]
        if divisor.op == "const":
            y = exact_reciprocal(float(np.asarray(divisor.attrs["value"]).item()))
            if y is not None:
                found[n] = _product(emit, n, repr(y))
        elif divisor in emit.scalar_nodes:
            _by_reciprocal(emit, n, recips, found)
    return recips, found


def row_divisions(emit: Any, members: list[Node]) -> tuple[dict[str, str], dict[Node, str]]:
    """For a row kernel's final sweep computing ``members``: its float32 divisions by a value of the row (computed
    before the sweep), as ``({reciprocal variable: its expression}, {division: its product expression})``. The
    sweep may take the products when every reciprocal is nonzero."""
    recips: dict[str, str] = {}
    found: dict[Node, str] = {}
    for n in members:
        if _float32_division(emit, n) and _row_value(emit, n.inputs[1]):
            _by_reciprocal(emit, n, recips, found)
    return recips, found


def _by_reciprocal(emit: Any, n: Node, recips: dict[str, str], found: dict[Node, str]) -> None:
    """Division ``n`` by a value known before the loop: its reciprocal variable (``rcp`` + the divisor's name),
    computed once by ``jg_exact_recip`` from the divisor as NumPy divides by it (float32), and the product."""
    divisor = n.inputs[1]
    name = "rcp" + emit.var[divisor]
    recips[name] = f"jg_exact_recip(np.float32({emit.ref(divisor, '', n)}))"
    found[n] = _product(emit, n, name)


def _product(emit: Any, n: Node, reciprocal: str) -> str:
    """The expression of division ``n`` as ``float32(float64(dividend) * reciprocal)``."""
    return f"np.float32(np.float64({emit.ref(n.inputs[0], '', n)}) * {reciprocal})"


def products_or_divisions(w: Any, recips: dict[str, str], tests: list[str], loop: Any, comment: str = "") -> None:
    """Write the reciprocals, then ``if <tests, every reciprocal nonzero>:`` the loop with the products, ``else:``
    the loop that divides. ``loop(products)`` writes one loop at the writer's depth."""
    for name, value in recips.items():
        w(f"{name} = {value}")
    depth = w.depth
    w(f"if {' and '.join([*tests, *(f'{name} != 0.0' for name in recips)])}:{comment}")
    w.depth = depth + 1
    loop(True)
    w.depth = depth
    w("else:")
    w.depth = depth + 1
    loop(False)
    w.depth = depth
