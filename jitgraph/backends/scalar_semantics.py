"""NumPy's scalar semantics where they differ from Python's, LLVM's or CUDA's: written once, compiled per backend.

Generated kernels call these functions (as ``jg_<name>``, see :data:`HELPERS`) instead of an operator wherever
NumPy's C loops define a result the plain operator would not give: integer division by zero is 0 rather than a
trap, remainders take the divisor's sign, ``maximum`` propagates NaN, and so on. Each function restates one NumPy
C loop, and its docstring names it.

They are plain, undecorated Python so that the two backends compile the *same* code: the CPU backend wraps them in
``numba.njit(inline="always")`` (``cpu/helpers.py``), the CUDA backend in ``cuda.jit(device=True)``
(``cuda/device_fns.py``). As plain Python they also run on NumPy scalars, which is how the tests check them
against NumPy itself.

Targets spell two primitives differently, so the functions call them through module-level names rather than
directly: ``fmod`` and ``floor`` are NumPy's ufuncs here, which is what Numba's CPU target compiles (it has no
``math.fmod``, and its ``math.floor`` returns an integer). The CUDA target has neither ufunc; it compiles the
functions against ``math.fmod`` and :func:`floor_by_fmod` instead, through :func:`retarget`.
"""

# ruff: noqa: PLR0124  (x != x is the NaN test; it compiles to one compare)
from __future__ import annotations

import math
import types
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

fmod = np.fmod  # C's fmod: exact, with the dividend's sign
floor = np.floor  # floor in the argument's float type


def floordiv_int(a, b):
    """``np.floor_divide`` on integers (NumPy's ``@TYPE@_floor_divide``): floor semantics, 0 for a zero divisor
    instead of a trap, and ``INT_MIN // -1`` wraps to ``INT_MIN`` (``-a`` wraps) instead of trapping."""
    if b == 0:
        return a - a
    if b == -1:
        return -a
    return a // b


def mod_int(a, b):
    """``np.remainder`` on integers (``@TYPE@_remainder``): the result takes the divisor's sign, 0 for a zero
    divisor. A divisor of -1 is answered here, because ``INT_MIN % -1`` traps in hardware."""
    if b == 0 or b == -1:
        return a - a
    return a % b


def fmod_int(a, b):
    """``np.fmod`` on integers (``@TYPE@_fmod``, C's ``%``): the result takes the dividend's sign, 0 for a zero
    divisor. Built from the floor remainder, which is what Python's (and so Numba's) ``%`` computes."""
    if b == 0 or b == -1:
        return a - a
    r = a % b
    if r != 0 and (r < 0) != (a < 0):
        r -= b
    return r


def floordiv_float(a, b):
    """``np.floor_divide`` on floats: the quotient of ``npy_divmod``, which snaps ``(a - fmod(a, b)) / b`` to the
    nearest integer rather than taking ``floor(a / b)``, whose rounding can be one off."""
    if b == 0:
        return a / b
    mod = fmod(a, b)
    div = (a - mod) / b
    if mod != 0 and (b < 0) != (mod < 0):
        div -= 1.0
    if div != 0:
        floordiv = floor(div)
        if div - floordiv > 0.5:
            floordiv += 1.0
    else:
        floordiv = math.copysign(0.0, a / b)
    return floordiv


def mod_float(a, b):
    """``np.remainder`` on floats: the modulus of ``npy_divmod`` (the divisor's sign, and a zero remainder takes
    the divisor's sign too); NaN for a zero divisor, as ``fmod`` gives."""
    if b == 0:
        return fmod(a, b)
    mod = fmod(a, b)
    if mod == 0:
        return math.copysign(0.0, b)
    if (b < 0) != (mod < 0):
        mod += b
    return mod


def floor_by_fmod(x):
    """``floor(x)`` in ``x``'s float type from ``fmod`` alone, for targets without a float-typed floor (CUDA).

    ``x - fmod(x, 1.0)`` is ``trunc(x)`` exactly; infinities, NaN and zeros are their own floor (``fmod`` would
    turn the first two into NaN and ``-0.0`` into ``+0.0``)."""
    if x == 0 or x != x or math.isinf(x):
        return x
    t = x - fmod(x, 1.0)
    if t > x:
        t -= 1.0
    return t


def maximum(a, b):
    """``np.maximum`` (``@TYPE@_maximum``): a NaN in either operand is the result."""
    return a if (a >= b or a != a) else b


def minimum(a, b):
    """``np.minimum``: a NaN in either operand is the result."""
    return a if (a <= b or a != a) else b


def fmax(a, b):
    """``np.fmax``: NaN only when both operands are NaN; otherwise the larger of the numbers."""
    return a if (a >= b or b != b) else b


def fmin(a, b):
    """``np.fmin``: NaN only when both operands are NaN; otherwise the smaller of the numbers."""
    return a if (a <= b or b != b) else b


def max_acc(acc, v):
    """One step of ``np.max``: the running maximum sticks at the first NaN it meets."""
    return v if (v > acc or v != v) else acc


def min_acc(acc, v):
    """One step of ``np.min``: the running minimum sticks at the first NaN it meets."""
    return v if (v < acc or v != v) else acc


def sign(a):
    """``np.sign`` (``@TYPE@_sign``): 1, -1 or 0 (``+0`` for both zeros), and NaN for NaN."""
    if a > 0:
        return 1
    if a < 0:
        return -1
    if a == 0:
        return a - a
    return a


def logaddexp(x, y):
    """``np.logaddexp`` (``npy_logaddexp``): ``log(exp(x) + exp(y))`` without overflow; equal infinities give
    themselves rather than NaN."""
    if x == y:
        return x + math.log(2.0)
    d = x - y
    if d > 0:
        return x + math.log1p(math.exp(-d))
    if d <= 0:
        return y + math.log1p(math.exp(d))
    return d  # NaN


def power_int(a, b):
    """``np.power`` on integers (``@TYPE@_power``): square and multiply in the operands' type, so it wraps as
    NumPy does; a negative exponent raises NumPy's ValueError."""
    if b < 0:
        raise ValueError("Integers to negative integer powers are not allowed.")
    result = a - a + 1
    base = a
    while b:
        if b & 1:
            result = result * base
        base = base * base
        b >>= 1
    return result


# The names generated kernels call the helpers by (``floor_by_fmod`` is a primitive, not a helper).
HELPERS: dict[str, Callable[..., Any]] = {
    f"jg_{fn.__name__}": fn
    for fn in (floordiv_int, mod_int, fmod_int, floordiv_float, mod_float, maximum, minimum, fmax, fmin, max_acc,
               min_acc, sign, logaddexp, power_int)
}


def retarget(fn: Callable[..., Any], primitives: Mapping[str, Any]) -> types.FunctionType:
    """``fn``'s code reading ``primitives`` in place of this module's globals of the same names.

    Numba resolves a function's globals when it compiles it, so this is how a target whose primitives differ
    (``fmod``, ``floor``, or ``math`` itself under the CUDA simulator) compiles these functions unchanged."""
    assert isinstance(fn, types.FunctionType)
    namespace = {**globals(), **primitives}
    return types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
