"""A device buffer pool: a compiled graph's intermediates come from freed buffers of the same size class.

Why: allocating device memory costs a driver call (``cuMemAlloc``, tens of microseconds through Numba) per buffer
per call, more than a small kernel takes. A :class:`BufferPool` belongs to one compiled graph. ``take`` hands out a
typed view of a free block of the next power-of-two size (at least 256 bytes), or allocates one; at the end of a
call the backend gives back the blocks of that call that no returned value shares memory with (``release``).

Safety, on a real GPU: every launch of a call goes to one stream, so a block given back at the end of a call and
taken by the next call is written only after the kernels that read it have run (stream order). Blocks that back a
value returned to the caller are never given back: the caller owns them. A CUDA graph recording keeps its blocks
for its lifetime (``hold``), since replays write to the recorded addresses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jitgraph.backends.cuda import runtime

MIN_BLOCK = 256
MAX_FREE_PER_CLASS = 16  # more free blocks than that of one size are dropped (Numba frees them)


def size_class(nbytes: int) -> int:
    """The block size that serves ``nbytes``: the next power of two, at least MIN_BLOCK."""
    size = MIN_BLOCK
    while size < nbytes:
        size *= 2
    return size


@dataclass
class BufferPool:
    """Free device blocks by size class, and the blocks handed out during the current call."""

    free: dict[int, list[Any]] = field(default_factory=dict)
    taken: list[tuple[int, Any, Any]] = field(default_factory=list)  # (size class, block, typed view)
    hits: int = 0
    misses: int = 0

    def take(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """A device array of ``shape`` and ``dtype`` (C order, contents undefined) from a pooled block."""
        dtype = np.dtype(dtype)
        nbytes = max(1, int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
        cls = size_class(nbytes)
        blocks = self.free.get(cls)
        if blocks:
            block = blocks.pop()
            self.hits += 1
        else:
            block = runtime.empty((cls,), np.dtype(np.uint8))
            self.misses += 1
        count = int(np.prod(shape, dtype=np.int64))
        view = block[:count * dtype.itemsize].view(dtype)[:count].reshape(shape) if count else \
            runtime.empty(shape, dtype)
        self.taken.append((cls, block, view))
        return view

    def release(self, keep: list[Any]) -> None:
        """End of a call: every block taken since the last release goes back to the free lists, except those that
        share memory with a value in ``keep`` (results handed to the caller, buffers a recording holds)."""
        kept = [k for k in keep if runtime.is_device_array(k)]
        for cls, block, view in self.taken:
            if any(runtime.may_share_memory(view, k) or runtime.may_share_memory(block, k) for k in kept):
                continue
            blocks = self.free.setdefault(cls, [])
            if len(blocks) < MAX_FREE_PER_CLASS:
                blocks.append(block)
        self.taken.clear()

    def hold(self) -> list[Any]:
        """Blocks taken since the last release, which the caller now owns for good (a CUDA graph recording)."""
        blocks = [block for _, block, _ in self.taken]
        self.taken.clear()
        return blocks

    def stats(self) -> str:
        free = sum(len(v) for v in self.free.values())
        return f"buffer pool: {self.hits} reused, {self.misses} allocated, {free} free blocks"
