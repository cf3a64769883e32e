"""Error-free transformations (double-word arithmetic) for the math library.

Some results need more precision than one float carries: pow's ``y * log(x)`` (an error of one ulp in a result near
700 is 2**-43 relative, far beyond 4 ulp after ``exp``), the cubic inside gelu's tanh, and Payne-Hanek reduction of
huge sin/cos arguments. A value is then kept as an unevaluated sum ``hi + lo``. These helpers never round away
information: ``two_sum(a, b)`` returns ``s, e`` with ``s + e == a + b`` exactly.

They rely on IEEE semantics, which is why the kernels that use the library must not enable fastmath (reassociation
would fold ``(a - (s - b))`` to zero).
"""

from __future__ import annotations

from collections.abc import Callable

import numba

from jitgraph.backends.cpu.mathlib_bits import fma, target_has_fma
from jitgraph.backends.cpu.mathlib_consts import FloatSpec

_inline = numba.njit(inline="always")


@_inline
def two_sum(a, b):
    """Knuth's TwoSum: ``s = fl(a + b)`` and its exact rounding error, for operands of any magnitude."""
    s = a + b
    b_virtual = s - a
    return s, (a - (s - b_virtual)) + (b - b_virtual)


@_inline
def fast_two_sum(a, b):
    """Dekker's FastTwoSum: like ``two_sum`` in three operations, valid when ``|a| >= |b|`` (or a == 0)."""
    s = a + b
    return s, b - (s - a)


@_inline
def _two_prod_fma(a, b):
    p = a * b
    return p, fma(a, b, -p)


def make_two_prod(spec: FloatSpec) -> Callable:
    """``two_prod(a, b) -> (p, e)`` with ``p + e == a * b`` exactly (barring over/underflow).

    With a hardware FMA the error is one ``fma``. Without one, ``llvm.fma`` would become a libm call that does not
    vectorise, so fall back to Veltkamp splitting and Dekker's product (17 flops, all vectorisable). The splitting
    overflows for ``|a| > max_float / 2**(p/2)``, far outside the ranges where the library calls it.
    """
    if target_has_fma():
        return _two_prod_fma
    splitter = spec.ftype(spec.dekker_splitter)

    @_inline
    def split(a):
        c = splitter * a
        hi = c - (c - a)
        return hi, a - hi

    @_inline
    def two_prod_dekker(a, b):
        p = a * b
        ah, al = split(a)
        bh, bl = split(b)
        return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl

    return two_prod_dekker
