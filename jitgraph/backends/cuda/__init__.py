"""The CUDA backend: the fusion pass's kernel groups as ``numba.cuda.jit`` kernels.

Importing this package costs nothing and imports no numba.cuda: it only registers the backend under ``"cuda"``.
numba-cuda (the ``cuda`` extra, ``pip install 'jitgraph[cuda]'``) is imported the first time a graph is compiled
with ``backend="cuda"``; without it, or without a GPU and without the simulator (``NUMBA_ENABLE_CUDASIM=1``), that
compile raises :class:`jitgraph.errors.BackendError` saying which and how to get past it.

Modules: ``runtime`` (numba.cuda import, device properties, launch sizes, host/device transfers), ``emitters``
(one scalar CUDA expression per op), ``device_fns`` (NumPy-exact scalar helpers as device functions), ``codegen``
(kernel source for elementwise and reduction groups), ``matmul`` (tiled matmul with the epilogue in its store),
``backend`` (the CompiledGraph: runs the outer graph, host fallbacks, mutations, explain data).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jitgraph.backends.base import register_backend
from jitgraph.ir.types import TensorType


def _load() -> Any:
    from jitgraph.backends.cuda import runtime

    runtime.require_cuda()  # raises BackendError naming what is missing
    from jitgraph.backends.cuda.backend import compile_graph

    return compile_graph


register_backend("cuda", _load)


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
