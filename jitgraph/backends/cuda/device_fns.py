"""Scalar device functions that kernels call where NumPy's semantics differ from CUDA's (and Python's).

They restate the NumPy C loops: floor division and remainder with floor semantics (0 for integer division by
zero, no trap on ``INT_MIN // -1``), NaN-propagating ``maximum``/``minimum``, NaN-ignoring ``fmax``/``fmin``,
``sign``, ``logaddexp``, integer ``power``. Floats use CUDA's own math (``math.*`` lowers to libdevice), never the
CPU backend's vector library. :func:`namespace` returns the globals that generated kernel modules run in.

Rounding (floor, ceil, trunc, rint) must keep the float type: ``math.floor`` returns an integer in Numba, so real
devices call libdevice's ``floorf``/``floor`` directly. The simulator's libdevice functions are stubs, so there the
same names are bound to NumPy's ufuncs.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from jitgraph.backends.cuda.runtime import cuda, simulated

_device = cuda().jit(device=True)


@_device
def jg_floordiv_int(a, b):
    if b == 0:
        return a - a
    if b == -1:
        return -a
    q = a // b
    return q


@_device
def jg_mod_int(a, b):
    if b == 0 or b == -1:
        return a - a
    return a % b


@_device
def jg_fmod_int(a, b):
    if b == 0 or b == -1:
        return a - a
    r = a % b
    if r != 0 and (r < 0) != (a < 0):
        r -= b
    return r


@_device
def _floor(x):
    t = x - math.fmod(x, 1.0)  # trunc(x), in x's float type
    if t > x:
        t -= 1.0
    return t


@_device
def jg_floordiv_float(a, b):
    if b == 0:
        return a / b
    mod = math.fmod(a, b)
    div = (a - mod) / b
    if mod != 0 and (b < 0) != (mod < 0):
        div -= 1.0
    if div != 0:
        floordiv = _floor(div)
        if div - floordiv > 0.5:
            floordiv += 1.0
    else:
        floordiv = math.copysign(0.0, a / b)
    return floordiv


@_device
def jg_mod_float(a, b):
    if b == 0:
        return math.fmod(a, b)
    mod = math.fmod(a, b)
    if mod != 0:
        if (b < 0) != (mod < 0):
            mod += b
    else:
        mod = math.copysign(0.0, b)
    return mod


@_device
def jg_maximum(a, b):
    return a if (a >= b or a != a) else b  # noqa: PLR0124 - NaN test


@_device
def jg_minimum(a, b):
    return a if (a <= b or a != a) else b  # noqa: PLR0124 - NaN test


@_device
def jg_fmax(a, b):
    return a if (a >= b or b != b) else b  # noqa: PLR0124 - NaN test


@_device
def jg_fmin(a, b):
    return a if (a <= b or b != b) else b  # noqa: PLR0124 - NaN test


@_device
def jg_max_acc(acc, v):
    """Running max that sticks at the first NaN, as np.max does."""
    return v if (v > acc or v != v) else acc  # noqa: PLR0124 - NaN test


@_device
def jg_min_acc(acc, v):
    return v if (v < acc or v != v) else acc  # noqa: PLR0124 - NaN test


@_device
def jg_sign(a):
    if a > 0:
        return 1
    if a < 0:
        return -1
    return a - a if a == a else a  # +0 for zeros, NaN stays NaN  # noqa: PLR0124 - NaN test


@_device
def jg_logaddexp(x, y):
    if x == y:
        return x + math.log(2.0)
    d = x - y
    if d > 0:
        return x + math.log1p(math.exp(-d))
    if d <= 0:
        return y + math.log1p(math.exp(d))
    return d


@_device
def jg_power_int(a, b):
    """Integer power for b >= 0 (the emitter only uses it for non-negative constant exponents)."""
    result = a - a + 1
    base = a
    while b > 0:
        if b & 1:
            result = result * base
        base = base * base
        b >>= 1
    return result


def _rounding() -> dict[str, Any]:
    if simulated():
        return {f"jg_{name}_{dt}": getattr(np, name) for name in ("floor", "ceil", "trunc", "rint")
                for dt in ("float32", "float64")}
    from numba.cuda import libdevice

    out = {}
    for name in ("floor", "ceil", "trunc", "rint"):
        out[f"jg_{name}_float32"] = getattr(libdevice, name + "f")
        out[f"jg_{name}_float64"] = getattr(libdevice, name)
    return out


class _SimulatorMath:
    """``math`` as kernels see it under the simulator: NumPy's functions, so that ``sqrt(-1)`` is NaN and
    ``exp(1000)`` is inf as on a GPU (Python's ``math`` raises), and float32 stays float32."""

    _NAMES: ClassVar[dict[str, str]] = {
        "asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh",
        "atanh": "arctanh", "pow": "power", "atan2": "arctan2",
    }
    inf, nan, pi, e = math.inf, math.nan, math.pi, math.e

    def __getattr__(self, name: str) -> Any:
        fn = getattr(np, self._NAMES.get(name, name))

        def call(*args: Any) -> Any:
            with np.errstate(all="ignore"):
                return fn(*args)

        return call


if simulated():  # the helpers above read ``math`` from these globals at call time
    math = _SimulatorMath()  # type: ignore[assignment]


def namespace() -> dict[str, Any]:
    """Globals for a generated kernel module. ``cuda`` must be bound under that name (the simulator swaps it)."""
    ns: dict[str, Any] = {"cuda": cuda(), "math": math, "np": np}
    ns.update({k: v for k, v in globals().items() if k.startswith("jg_")})
    ns.update(_rounding())
    return ns
