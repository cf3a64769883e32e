"""Python's cyclic garbage collector held off while a kernel's first call compiles it.

Why: Numba's compile allocates hundreds of thousands of short-lived objects (bytecode, IR, typing and lowering
records), so the collector runs dozens of times during one compile, and now and then a full (oldest-generation)
collection, which walks every object the process holds: after the six workloads of ``benchmarks/workloads.py`` that
is ~170,000 objects, most of them Numba's own registries (~350,000 once torch and jax are imported, as the benchmark
does for its competitor columns), and 0.1-0.2 s a time on the 2-core development machine. The MLP step's cold
compile (``w5_mlp_step``, five kernels) spent 0.14-0.27 s of its ~2 s in the collector, one full collection among
them; paused, 0.03 s. The compile's garbage is left to the next collection after it, which walks only the young
objects still alive.

The compile's own memory is freed by reference counting as usual (what waits is only garbage in reference cycles),
so the peak memory of a compile grows by little. The pause nests and works across threads: the collector is
enabled again when the last compile running ends, and only if it was enabled when the first one began (a program
that disabled the collector keeps it disabled).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]

_lock = threading.Lock()
_state = {"depth": 0, "reenable": False}  # compiles in progress; whether the last one to end enables the collector


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with the cyclic garbage collector disabled (see the module docstring for why)."""
    with _lock:
        if _state["depth"] == 0:
            _state["reenable"] = gc.isenabled()
            gc.disable()
        _state["depth"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["depth"] -= 1
            if _state["depth"] == 0 and _state["reenable"]:
                gc.enable()
