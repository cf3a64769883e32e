"""Scalar device functions that kernels call where NumPy's semantics differ from CUDA's (and Python's).

The functions are those of :mod:`jitgraph.backends.scalar_semantics` (the CPU backend inlines the same ones),
compiled with ``cuda.jit(device=True)`` under their kernel names ``jg_<name>``. The device has neither
``np.fmod`` nor a float-typed ``floor``, so they are compiled against ``math.fmod`` and the shared
``floor_by_fmod``. Floats use CUDA's own math (``math.*`` lowers to libdevice), never the CPU backend's vector
library. :func:`namespace` returns the globals that generated kernel modules run in.

Rounding (floor, ceil, trunc, rint) must keep the float type: ``math.floor`` returns an integer in Numba, so real
devices call libdevice's ``floorf``/``floor`` directly. The simulator's libdevice functions are stubs, so there the
same names are bound to NumPy's ufuncs.
"""

from __future__ import annotations

import functools
import math
from typing import Any, ClassVar

import numpy as np

from jitgraph.backends import scalar_semantics as semantics
from jitgraph.backends.cuda.runtime import cuda, simulated


def _rounding() -> dict[str, Any]:
    if simulated():
        return {f"jg_{name}_{dt}": getattr(np, name) for name in ("floor", "ceil", "trunc", "rint")
                for dt in ("float32", "float64")}
    from numba.cuda import libdevice  # lazy: numba.cuda, imported only when a CUDA kernel is built

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


if simulated():  # kernels and the device functions below read ``math`` from here
    math = _SimulatorMath()  # type: ignore[assignment]


@functools.cache
def device_functions() -> dict[str, Any]:
    """``jg_<name>`` -> device function, for every helper of ``scalar_semantics.HELPERS`` (compiled once)."""
    device = cuda().jit(device=True)
    primitives: dict[str, Any] = {"math": math, "fmod": math.fmod}
    primitives["floor"] = device(semantics.retarget(semantics.floor_by_fmod, primitives))
    return {name: device(semantics.retarget(fn, primitives)) for name, fn in semantics.HELPERS.items()}


def namespace() -> dict[str, Any]:
    """Globals for a generated kernel module. ``cuda`` must be bound under that name (the simulator swaps it)."""
    ns: dict[str, Any] = {"cuda": cuda(), "math": math, "np": np}
    ns.update(device_functions())
    ns.update(_rounding())
    return ns
