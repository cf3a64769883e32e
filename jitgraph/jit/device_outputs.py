"""The CUDA backend's converters for return values that involve device arrays (the tracer's
:class:`~jitgraph.tracer.outputs.DeviceOutputs`): a returned view of a device argument (``x.T``, ``x[1:]``) and a
Python scalar computed on the device. The tracer imports no backend, so the driver, which knows the backend of a
call, hands these in when it builds the output of a call with device arrays."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from jitgraph.backends.cuda import runtime
from jitgraph.tracer.outputs import DeviceOutputs
from jitgraph.tracer.values import ViewStep


class CudaOutputs:
    """Views made on the device as NumPy makes them on the host (same memory), and copies to the host."""

    def view(self, value: Any, path: Sequence[ViewStep]) -> Any:
        for step in path:
            attrs = step.kwargs
            if step.op == "transpose":  # a view (Numba's own transpose copies, recompiling a kernel each time)
                value = runtime.transpose(value, tuple(attrs["axes"]))
            elif step.op == "reshape":
                value = value.reshape(tuple(attrs["shape"]))
            elif step.op == "getitem" and all(isinstance(e, int | slice) for e in attrs["spec"]):
                value = value[tuple(attrs["spec"])]
            else:
                raise NotImplementedError(step.op)
        return value

    def to_host(self, value: Any) -> np.ndarray:
        return np.asarray(runtime.to_host(value))


CUDA_OUTPUTS: DeviceOutputs = CudaOutputs()


def device_outputs(backend: str, device_leaves: Sequence[int]) -> DeviceOutputs | None:
    """The converters a call's output needs: the CUDA backend's when it runs on the device, else none (a host
    call builds its outputs with NumPy alone)."""
    return CUDA_OUTPUTS if backend == "cuda" or device_leaves else None
