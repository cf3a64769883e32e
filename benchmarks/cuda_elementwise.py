"""Tune the CUDA elementwise family on a real GPU: unroll factor x blocks per SM, against a copy of the same size.

    python benchmarks/cuda_elementwise.py            # on a GPU machine, about a minute

For W1, W4 and W6 of ``benchmarks/workloads.py`` (device-resident arguments) it prints the kernel time (CUDA events,
launch overhead excluded as in ``scripts/gpu_check.py``) and the bandwidth reached for each setting of
``codegen.UNROLL`` (``auto``: ``codegen.unroll_for``) and ``runtime.BLOCKS_PER_SM``, beside the driver's
device-to-device copy of the same number of bytes: the fraction of that copy is the honest ceiling at this size, where
launch and ramp-up are not amortised.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
os.environ.setdefault("JITGRAPH_CUDA_GRAPHS", "0")  # kernel times come from per-launch events: no graph replay

ARRAYS = {"W1": 4, "W4": 2, "W6": 7}  # arrays of n float32 read or written by each workload


def kernel_ms(fn, inputs, reps: int = 10) -> float:
    import jitgraph
    from jitgraph.backends.cuda import runtime

    compiled = jitgraph.compile(fn, backend="cuda")
    dev = [runtime.to_device(x) for x in inputs]
    compiled(*dev)
    runtime.synchronize()
    runtime.KERNEL_EVENTS = []
    for _ in range(reps):
        compiled(*dev)
    seconds = runtime.kernel_seconds(runtime.KERNEL_EVENTS) / reps if runtime.KERNEL_EVENTS else float("nan")
    runtime.KERNEL_EVENTS = None
    return seconds * 1e3


def copy_ms(n_bytes: int, reps: int = 20) -> float:
    from jitgraph.backends.cuda import runtime

    cuda = runtime.cuda()
    if runtime.device_info().simulated:
        return float("nan")
    src = cuda.device_array(n_bytes // 4, np.float32)
    dst = cuda.device_array(n_bytes // 4, np.float32)
    dst.copy_to_device(src)
    runtime.KERNEL_EVENTS = []
    with runtime.timed("copy"):  # back to back after the spin kernel: no host overhead between copies
        for _ in range(reps):
            dst.copy_to_device(src)
    ms = runtime.kernel_seconds(runtime.KERNEL_EVENTS) * 1e3 / reps
    runtime.KERNEL_EVENTS = None
    return ms


def main() -> int:
    import benchmarks.workloads as w
    from jitgraph.backends.cuda import codegen, runtime

    runtime.require_cuda()
    info = runtime.device_info()
    print(f"device: {info.name}, {info.sm_count} SMs")
    start = time.perf_counter()
    for scale in ((1e-4,) if info.simulated else (1.0, 10.0)):  # the simulator only smoke-tests the script
        for name, arrays in ARRAYS.items():
            _desc, fn = w.WORKLOADS[name]
            inputs = w.make_inputs(name, scale)
            n_bytes = arrays * inputs[0].nbytes
            copy = copy_ms(n_bytes // 2)  # a copy of n_bytes/2 reads and writes n_bytes in all
            print(f"\n{name} x{scale:g} ({inputs[0].size:.0e} elements, {n_bytes / 1e6:.0f} MB moved): "
                  f"same-size copy {copy:.4f} ms = {n_bytes / copy / 1e6:.0f} GB/s")
            print(f"  {'unroll':>6} {'blocks/SM':>9} {'kernel ms':>10} {'GB/s':>7} {'of copy':>8}")
            for unroll in (None, 1, 2, 4, 8):
                for per_sm in (4, 8, 16, 32):
                    codegen.UNROLL, runtime.BLOCKS_PER_SM = unroll, per_sm
                    ms = kernel_ms(fn, inputs)
                    print(f"  {unroll or 'auto':>6} {per_sm:>9} {ms:>10.4f} {n_bytes / ms / 1e6:>7.0f} "
                          f"{copy / ms:>8.0%}")
    print(f"\nfinished in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
