"""Facts about GPU device arrays that every layer may ask, without importing a backend or numba.cuda.

The tracer keys and guards on device arguments, the driver refuses to run them eagerly, and the CUDA backend
computes on them; all three need the same few facts (is it a device array, its shape, dtype, strides and byte
range), read from ``__cuda_array_interface__``. They live here, at the bottom of the package beside ``errors``
and ``config``, so that the tracer imports no backend.
"""

from __future__ import annotations

import sys
import weakref
from typing import Any, NamedTuple

import numpy as np

from jitgraph.ir.types import TensorType


def is_device_array(value: Any) -> bool:
    """Whether ``value`` lives on a GPU: it exposes ``__cuda_array_interface__`` (Numba device arrays, CuPy,
    torch CUDA tensors) or is a Numba simulator array. Cheap and imports nothing: the tracer may call it on
    every argument. (``hasattr`` evaluates the interface property, a dict built per read on Numba's arrays, so
    types known to be Numba device arrays are answered from a table.)"""
    kind = type(value)
    if kind is np.ndarray:
        return False
    if _FIXED.get(kind):
        return True
    return hasattr(value, "__cuda_array_interface__") or getattr(value, "__cuda_ndarray__", False) is True


def may_exist() -> bool:
    """Whether this process can hold GPU device arrays at all: ``numba.cuda`` or CuPy is imported, or torch with
    CUDA. A CPU-only process never can, so a function whose calls all run eagerly may skip the checks that refuse
    device arguments (jit/eager_mode.py); otherwise it keeps them."""
    if "numba.cuda" in sys.modules or "cupy" in sys.modules:
        return True
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    return bool(cuda is not None and cuda.is_available())


class _Facts(NamedTuple):
    facts: tuple[tuple[int, ...], np.dtype, tuple[int, ...]]
    span: tuple[int, int] | None
    address: int


# Facts of Numba device arrays, by object: a call on device arguments asks for them several times (key, guards,
# aliasing, replay key), and each ``__cuda_array_interface__`` read costs about a microsecond. Only Numba's arrays
# are remembered: their shape, strides and address are fixed for the object's life, while a CuPy array's ``.shape``
# can be assigned and a torch tensor resized in place. An entry is valid while its weak reference still reaches the
# same object (an id can be reused after the object dies).
_MEMO: dict[int, tuple[Any, _Facts]] = {}
_MEMO_MAX = 1024
_FIXED: dict[type, bool] = {}


def _fixed(value: Any) -> bool:
    kind = type(value)
    known = _FIXED.get(kind)
    if known is None:
        known = _FIXED[kind] = getattr(kind, "__module__", "").startswith("numba.") and hasattr(
            value, "__cuda_array_interface__")
    return known


def _read(iface: dict[str, Any]) -> _Facts:
    shape, dtype = tuple(iface["shape"]), np.dtype(iface["typestr"])
    strides = tuple(iface.get("strides") or c_strides(shape, dtype.itemsize))
    start = int(iface["data"][0])
    if any(n == 0 for n in shape):
        span = (start, start)
    else:
        lo = sum(min(0, (n - 1) * st) for n, st in zip(shape, strides))
        hi = sum(max(0, (n - 1) * st) for n, st in zip(shape, strides)) + dtype.itemsize
        span = (start + lo, start + hi)
    return _Facts((shape, dtype, strides), span, start)


def _facts(value: Any) -> _Facts | None:
    """The facts of an array with ``__cuda_array_interface__`` (remembered for Numba's), else None."""
    if not _fixed(value):  # one read of the interface (``hasattr`` would build it once more)
        iface = getattr(value, "__cuda_array_interface__", None)
        return None if iface is None else _read(iface)
    hit = _MEMO.get(id(value))
    if hit is not None and hit[0]() is value:
        return hit[1]
    found = _read(value.__cuda_array_interface__)
    if len(_MEMO) >= _MEMO_MAX:
        _MEMO.clear()
    key = id(value)
    # A weak reference with a callback: it forgets the entry when the array dies, and it is never the shared
    # callback-free ``weakref.ref(value)`` a caller may hold (``memo_ref`` tells them apart).
    _MEMO[key] = (weakref.ref(value, lambda ref, key=key: _MEMO.get(key, (None,))[0] is ref and _MEMO.pop(key)),
                  found)
    return found


def memo_ref(value: Any) -> Any:
    """The weak reference this module's memo holds to ``value`` (None if none): not a reference a caller holds,
    so code that asks whether anyone still refers to an array (``backends/cuda/outputs.py``) leaves it out."""
    hit = _MEMO.get(id(value))
    return hit[0] if hit is not None and hit[0]() is value else None


def device_array_facts(value: Any) -> tuple[tuple[int, ...], np.dtype, tuple[int, ...]] | None:
    """(shape, dtype, byte strides) of a device array, what the tracer keys and guards on (None if not one).

    Read from ``__cuda_array_interface__`` where present (``strides`` None there means C-contiguous), else from
    the array's own attributes (the simulator's arrays). The key must also say "device", so that host and device
    arguments of the same shape compile separately.
    """
    found = _facts(value)
    if found is not None:
        return found.facts
    if not is_device_array(value):
        return None
    return tuple(value.shape), np.dtype(value.dtype), tuple(value.strides)


def device_address(value: Any) -> int | None:
    """The device address of a device array's first element (None without ``__cuda_array_interface__``)."""
    found = _facts(value)
    return None if found is None else found.address


def device_type_of(value: Any) -> TensorType:
    """The IR type of a device array argument (layout from its strides, as ``type_of`` does for NumPy)."""
    facts = device_array_facts(value)
    if facts is None:
        raise TypeError(f"not a device array: {type(value).__name__}")
    shape, dtype, strides = facts
    probe = np.lib.stride_tricks.as_strided(np.empty(1, dtype), shape=shape, strides=strides)
    layout = "C" if probe.flags.c_contiguous else "F" if probe.flags.f_contiguous else "S"
    return TensorType(shape, dtype, layout=layout)


def byte_range(value: Any) -> tuple[int, int] | None:
    """(lowest, highest + 1) byte address a device array spans (None for a host array): what overlap checks
    compare, since device arrays have no ``.base`` chain to follow."""
    found = _facts(value)
    return None if found is None else found.span


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, acc = [], itemsize
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))
