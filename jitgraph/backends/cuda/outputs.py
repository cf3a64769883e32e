"""Device result buffers reused across replays once the caller has dropped them (no allocation per call).

Why: a replayed CUDA graph writes its results into buffers the recording owns, and each call copies them into
fresh arrays so that results returned earlier are never overwritten. Allocating those fresh arrays through Numba
costs 35 us for a scalar and 130 us for 40 MB on an H200 (``cuMemAlloc`` plus Numba's array object), more than
the replay itself. An :class:`OutputSlot` remembers the arrays it handed out (``KEEP`` per result) and hands one
out again when nothing but the slot refers to it: no other Python reference to the array object, none to the
memory behind it (a Numba view of it holds a counted reference to that memory, a CuPy or torch array made from it
holds the array object), and no weak reference (other than the one ``device_arrays`` keeps to remember an
array's facts). What counts as "nothing else" is measured on the fresh array
right after it is made, so the test does not depend on how many references Numba keeps internally.

Ordering: the copy into a reused buffer is issued on the replay stream, which is ordered with the legacy default
stream, so a caller's kernels that read a dropped result on the default stream have run before it is overwritten.
A result read on a stream of the caller's own making, then dropped, should be synchronised first (as with memory
that Numba frees and hands out again).
"""

from __future__ import annotations

import sys
import weakref
from typing import Any

import numpy as np

from jitgraph.backends.cuda import runtime
from jitgraph.device_arrays import memo_ref

KEEP = 2  # arrays remembered per result: two, so that ``x = f(x)`` alternates between two buffers


def _references(array: Any) -> tuple[int, ...]:
    """Reference counts that rise when anyone else holds the array or its memory (see the module docstring).

    Called with the array held by the slot's list, the caller's loop variable and this function's argument."""
    gpu_data = getattr(array, "gpu_data", None)  # a Numba device array: an OwnedPointer on counted memory
    inner = getattr(array, "_ary", None)  # a simulator array: the NumPy array behind it (views refer to it)
    ours = memo_ref(array)  # the device-array facts memo's weak reference is not the caller's
    counts = [sys.getrefcount(array), sum(ref is not ours for ref in weakref.getweakrefs(array))]
    if gpu_data is not None:
        counts.append(sys.getrefcount(gpu_data))
        mem = getattr(gpu_data, "_mem", None)
        counts.append(int(getattr(mem, "refct", -1)) if mem is not None else -1)
    if inner is not None:
        counts.append(sys.getrefcount(inner))
    return tuple(counts)


class OutputSlot:
    """The buffers of one result of one recording (fixed shape and dtype)."""

    __slots__ = ("arrays", "dtype", "free", "reused", "shape")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.shape, self.dtype = shape, dtype
        self.arrays: list[Any] = []
        self.free: tuple[int, ...] | None = None  # the counts of an array nobody else holds
        self.reused = 0

    def take(self) -> Any:
        """A device array of the slot's shape and dtype that nobody else refers to (contents undefined)."""
        for array in self.arrays:
            if _references(array) == self.free:
                self.reused += 1
                return array
        if len(self.arrays) >= KEEP:
            self.arrays.pop(0)
        self.arrays.append(runtime.empty(self.shape, self.dtype))
        for array in self.arrays:  # measured as above (the list, the loop variable, the argument)
            if array is self.arrays[-1]:
                self.free = _references(array)
        return self.arrays[-1]
