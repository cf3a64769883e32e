"""Threading: one configuration under which Numba kernels and OpenBLAS calls never fight over the cores.

Measured on the 2-core development machine (``benchmarks/workloads.py`` prints the same probes):

* Numba's default OpenMP layer keeps its workers spinning after a ``prange`` kernel; a BLAS matmul issued right
  after then competes with them (matmul alone 1.8 ms, matmul + a ReLU kernel 44 ms). ``OMP_WAIT_POLICY=passive``
  must be set before libgomp loads, which an importing library cannot guarantee.
* The ``workqueue`` layer's workers sleep between launches: matmul + the same kernel took 2.7 ms against 2.8 ms
  for the matmul alone. Its price is a launch cost of 70-100 us, which is why small kernels run the serial variant.

So jitgraph selects ``workqueue`` (unless the user chose a layer through ``NUMBA_THREADING_LAYER``) and a kernel
runs its ``prange`` variant only when its estimated serial time is well above that launch cost:
``elements * cost_per_element >= PARALLEL_WORK``, with the op-weighted cost from the kernel body. The constant
comes from timing serial vs parallel kernels of increasing size (``python benchmarks/workloads.py --threshold``).
"""

from __future__ import annotations

import os

import numba

# Serial work (elements x cost units) above which the prange variant pays back its launch. Measured with a ReLU
# kernel (3 cost units: load, compare, store) under workqueue: serial 20 us / parallel 94 us at 1e5 elements,
# 53 / 125 us at 3e5, 5.9 / 4.2 ms at 1e7; the curves cross near 1e6 elements, i.e. 3e6 cost units.
# `python benchmarks/workloads.py --threshold` repeats the probe.
PARALLEL_WORK = 3_000_000


def configure() -> str:
    """Pick the threading layer once, before the first parallel kernel runs; returns the layer asked for."""
    if "NUMBA_THREADING_LAYER" not in os.environ and numba.config.THREADING_LAYER == "default":
        numba.config.THREADING_LAYER = "workqueue"
    return str(numba.config.THREADING_LAYER)


def parallel_threshold(cost_per_element: int) -> int:
    """Number of elements from which a kernel with this per-element cost runs in parallel."""
    if numba.config.NUMBA_NUM_THREADS <= 1:
        return 1 << 62
    return max(PARALLEL_WORK // max(cost_per_element, 1), 4096)
