"""Facts about GPU device arrays that every layer may ask, without importing a backend or numba.cuda.

The tracer keys and guards on device arguments, the driver refuses to run them eagerly, and the CUDA backend
computes on them; all three need the same few facts (is it a device array, its shape, dtype, strides and byte
range), read from ``__cuda_array_interface__``. They live here, at the bottom of the package beside ``errors``
and ``config``, so that the tracer imports no backend.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.ir.types import TensorType


def is_device_array(value: Any) -> bool:
    """Whether ``value`` lives on a GPU: it exposes ``__cuda_array_interface__`` (Numba device arrays, CuPy,
    torch CUDA tensors) or is a Numba simulator array. Cheap and imports nothing: the tracer may call it on
    every argument."""
    return hasattr(value, "__cuda_array_interface__") or getattr(value, "__cuda_ndarray__", False) is True


def device_array_facts(value: Any) -> tuple[tuple[int, ...], np.dtype, tuple[int, ...]] | None:
    """(shape, dtype, byte strides) of a device array, what the tracer keys and guards on (None if not one).

    Read from ``__cuda_array_interface__`` where present (``strides`` None there means C-contiguous), else from
    the array's own attributes (the simulator's arrays). The key must also say "device", so that host and device
    arguments of the same shape compile separately.
    """
    if not is_device_array(value):
        return None
    iface = getattr(value, "__cuda_array_interface__", None)
    if iface is None:
        return tuple(value.shape), np.dtype(value.dtype), tuple(value.strides)
    shape, dtype = tuple(iface["shape"]), np.dtype(iface["typestr"])
    strides = iface.get("strides")
    if strides is None:
        acc, out = dtype.itemsize, []
        for n in reversed(shape):
            out.append(acc)
            acc *= n
        strides = tuple(reversed(out))
    return shape, dtype, tuple(strides)


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
    try:
        iface = value.__cuda_array_interface__
    except AttributeError:
        return None
    start = iface["data"][0]
    itemsize = np.dtype(iface["typestr"]).itemsize
    shape = iface["shape"]
    strides = iface.get("strides") or c_strides(shape, itemsize)
    if any(s == 0 for s in shape):
        return (start, start)
    lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + itemsize
    return (start + lo, start + hi)


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, acc = [], itemsize
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))
