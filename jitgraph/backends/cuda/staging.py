"""Pinned staging buffers for host NumPy arguments and results.

Why: a copy from pageable NumPy memory makes the driver stage it through its own pinned buffer (a second copy, and
roughly half the PCIe bandwidth); a copy from page-locked memory is one DMA transfer that can run asynchronously.
A :class:`Staging` belongs to one compiled graph and keeps one page-locked buffer per argument position and per
result position (``numba.cuda.pinned_array``), reused from call to call: the host copies the argument into it
(``np.copyto``, memory speed), and the device copy is issued asynchronously on the current stream.

Reuse is safe because a call with host arguments ends by copying its results and mutated arguments back, which
waits for the stream (``download`` synchronises before it reads the pinned buffer), and ``finish`` synchronises
when there was nothing to copy back. Arrays larger than ``MAX_STAGED_BYTES`` in all go the plain way (pinned memory
is a scarce, locked resource).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jitgraph.backends.cuda import runtime

MAX_STAGED_BYTES = 256 << 20


@dataclass
class Staging:
    buffers: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    pending: bool = False  # an asynchronous upload may still read a pinned buffer
    broken: str = ""  # why staging is off (pinned allocation failed once)

    def _buffer(self, slot: tuple[str, int], shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray | None:
        found = self.buffers.get(slot)
        if found is not None and found.shape == shape and found.dtype == dtype:
            return found
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        total = sum(b.nbytes for k, b in self.buffers.items() if k != slot)
        if self.broken or total + nbytes > MAX_STAGED_BYTES:
            return None
        try:
            buf = runtime.cuda().pinned_array(shape, dtype=dtype)
        except Exception as exc:  # noqa: BLE001 - out of page-locked memory: the plain copies still work
            self.broken = f"{type(exc).__name__}: {exc}"
            return None
        self.buffers[slot] = buf
        return buf

    def upload(self, index: int, value: np.ndarray, pool: Any) -> Any:
        """Argument ``index`` on the device: through its pinned buffer into a pooled device buffer."""
        pinned = self._buffer(("in", index), value.shape, value.dtype)
        if pinned is None:
            return runtime.to_device(value)
        np.copyto(pinned, value)
        dev = pool.take(value.shape, value.dtype) if pool is not None else runtime.empty(value.shape, value.dtype)
        dev.copy_to_device(pinned, stream=runtime.copy_stream())  # asynchronous: the host goes on
        self.pending = True
        return dev

    def download(self, slot: tuple[str, int], value: Any) -> Any:
        """A result (a device array) as a fresh NumPy array, through the pinned buffer of ``slot`` (("out", k) for
        output k, ("mut", i) for mutated argument i)."""
        if not runtime.is_device_array(value):
            return value
        dev = runtime.as_numba_device(value)
        if not dev.is_c_contiguous():
            return runtime.to_host(dev)
        pinned = self._buffer(slot, tuple(dev.shape), dev.dtype)
        if pinned is None:
            return runtime.to_host(dev)
        stream = runtime.copy_stream()
        dev.copy_to_host(pinned, stream=stream)
        stream.synchronize()  # every earlier upload and launch on the stream has finished too
        self.pending = False
        return pinned.copy()

    def finish(self) -> None:
        """End of a call with host arguments: no upload may still read a pinned buffer the next call rewrites."""
        if self.pending:
            runtime.synchronize()
            self.pending = False
