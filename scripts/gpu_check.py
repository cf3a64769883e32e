"""Check the CUDA backend on a real GPU: every kernel family against NumPy, then the workload timing table.

    python scripts/gpu_check.py                       # on a GPU machine: full sizes, well under 5 minutes
    NUMBA_ENABLE_CUDASIM=1 python scripts/gpu_check.py --sim   # tiny sizes in Numba's simulator (no GPU)
    python scripts/gpu_check.py --ptx                 # no GPU: compile the device code path to PTX (needs NVVM)

Part 1 runs one graph per kernel family (``jitgraph.backends.cuda.selfcheck``) three times with device-resident
arguments and prints agreement with the eager interpreter: on a GPU the first call runs the cuBLAS self-check, the
second records a CUDA graph, the third replays it; a line under a check says why cuBLAS or replay was not used. Part 2 runs the workloads of ``benchmarks/workloads.py`` (W1..W6) at
full size: NumPy on the CPU, ``backend="cpu"``, and ``backend="cuda"`` with device-resident arguments (call time,
kernel time from CUDA events, then the device->host copy of the results counted separately), plus the time of a
call with host NumPy arguments (which pays both transfers). For the bandwidth-bound workloads (W1, W4, W6) it prints
the achieved fraction of the device's theoretical DRAM bandwidth (memory clock x bus width, or ``--peak-gbps``),
counting kernel time only.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.timing import median  # the repository root is on the path now


def families(scale: float) -> bool:
    from jitgraph.backends.cuda import selfcheck
    from jitgraph.passes import run_pipeline

    print("== kernel families vs NumPy (device-resident arguments) ==")
    all_ok = True
    for check in selfcheck.checks(scale):
        try:
            ok, err, chosen, notes = selfcheck.run_check(check, lambda graph: run_pipeline(graph)[0])
            status = "ok  " if ok else "FAIL"
            print(f"  {status} {check.name:<26} {check.family:<24} kernels: {chosen:<28} max rel err {err:.1e}")
            for note in notes:
                print(f"         {note}")
        except Exception as exc:  # noqa: BLE001 - go on: one broken family must not hide the others
            ok = False
            print(f"  FAIL {check.name:<26} {check.family:<24} {type(exc).__name__}: {exc}")
            traceback.print_exc(limit=3)
        all_ok = all_ok and ok
    return all_ok


def _workloads() -> tuple[dict[str, tuple[str, Callable[..., Any]]], Callable[..., list[np.ndarray]], dict[str, int]]:
    """The workload table, tolerant of renames in benchmarks/workloads.py."""
    import benchmarks.workloads as w

    table = getattr(w, "WORKLOADS", None)
    if table is None:
        fns = {name.split("_")[0].upper(): fn for name, fn in vars(w).items()
               if callable(fn) and name[:1] == "w" and name[1:2].isdigit()}
        table = {k: (k, fn) for k, fn in sorted(fns.items())}
    bound = getattr(w, "BANDWIDTH_BOUND", {"W1": 4, "W4": 2, "W6": 7})
    return table, w.make_inputs, bound


def _cuda_entry(compiled_fn: Any) -> Any:
    """The CUDA CompiledGraph the tracer made for the last call, or the reason there is none."""
    entries = getattr(compiled_fn, "entries", [])
    for entry in reversed(entries):
        if getattr(entry, "compiled", None) is not None and hasattr(entry.compiled, "plans"):
            return entry
    reasons = compiled_fn.break_reasons() if hasattr(compiled_fn, "break_reasons") else []
    return "; ".join(str(r) for r in reasons) or "no CUDA graph was compiled"


def _leaves(entry: Any, args: list[Any]) -> list[Any]:
    from jitgraph.tracer.keys import make_key

    leaves: list[Any] = []
    make_key(tuple(args), {}, leaves)
    return leaves + (entry.check(tuple(args), {}) or [])


def workload_row(name: str, desc: str, fn: Callable[..., Any], inputs: list[np.ndarray], repeat: int,
                 budget: float) -> dict[str, Any]:
    import jitgraph
    from jitgraph.backends.base import _BACKENDS
    from jitgraph.backends.cuda import runtime

    row: dict[str, Any] = {"name": name, "desc": desc}
    ea = [x.copy() for x in inputs]
    row["numpy"] = median(lambda: fn(*ea), repeat, budget)
    if "cpu" not in _BACKENDS:
        try:
            import jitgraph.backends.cpu
        except ImportError:
            pass
    if "cpu" in _BACKENDS:
        cpu_fn = jitgraph.compile(fn, backend="cpu")
        ca = [x.copy() for x in inputs]
        cpu_fn(*ca)
        row["cpu"] = median(lambda: cpu_fn(*ca), repeat, budget)
    from jitgraph.backends.cuda import cublas

    known = set(getattr(cublas.provider()[0], "plans", None) or ())  # GEMM plans made before this workload
    gpu_fn = jitgraph.compile(fn, backend="cuda")
    ha = [x.copy() for x in inputs]
    t = time.perf_counter()
    gpu_fn(*ha)
    row["compile"] = time.perf_counter() - t
    entry = _cuda_entry(gpu_fn)
    if isinstance(entry, str):
        row["note"] = f"not compiled for CUDA: {entry}"
        return row
    # Correctness on device-resident arguments against NumPy on the same inputs.
    want_args = [x.copy() for x in inputs]
    want = fn(*want_args)
    dev_leaves = [runtime.to_device(v) if isinstance(v, np.ndarray) and v.ndim else v
                  for v in _leaves(entry, [x.copy() for x in inputs])]
    outs = entry.compiled(dev_leaves)
    runtime.synchronize()
    got = entry.build([runtime.to_host(o) for o in outs], dev_leaves, tuple(inputs), {}) if outs else None
    host_leaves = [runtime.to_host(v) for v in dev_leaves]
    rtol, atol = (2e-3, 1e-4) if name == "W5" else (1e-4, 1e-5)
    ok = all(np.allclose(a, b, rtol=rtol, atol=atol) for a, b in zip(host_leaves, want_args))
    if want is not None:
        ok = ok and np.allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)
    row["ok"] = bool(ok)

    def device_call() -> None:
        entry.compiled(dev_leaves)
        runtime.synchronize()

    device_call()
    row["gpu"] = median(device_call, repeat, budget)
    row["host_us"] = host_overhead(lambda: entry.compiled(dev_leaves), repeat)
    dev_args = [runtime.to_device(x.copy()) for x in inputs]
    gpu_fn(*dev_args)  # the entry for device arguments (traced once), then its replay recording
    gpu_fn(*dev_args)
    row["call_us"] = host_overhead(lambda: gpu_fn(*dev_args), repeat)
    replay = getattr(entry.compiled, "replay", None)
    if replay is not None:
        row["replay"] = replay.describe()
    if not runtime.device_info().simulated:
        launch_each = getattr(entry.compiled, "run_launching", entry.compiled)  # replays record no events
        runtime.KERNEL_EVENTS = None
        launch_each(dev_leaves)  # warm: library plans, CuPy's pool
        runtime.synchronize()
        runtime.KERNEL_EVENTS = []
        with runtime.cuda().defer_cleanup():  # no cuMemFree (it waits for the GPU) inside a timed launch
            for _ in range(5):
                launch_each(dev_leaves)
        row["kernel"] = runtime.kernel_seconds(runtime.KERNEL_EVENTS) / 5
        per_kernel: dict[str, float] = {}
        for kname, s, e in runtime.KERNEL_EVENTS:
            per_kernel[kname] = per_kernel.get(kname, 0.0) + runtime.cuda().event_elapsed_time(s, e) / 5e3
        row["kernels"] = per_kernel
        runtime.KERNEL_EVENTS = None
        try:
            row["gemm"] = gemm_versus_cublas(entry.compiled, per_kernel, known)
        except Exception as exc:  # noqa: BLE001 - the reference failing must not lose the row
            row["gemm"] = f"cuBLAS reference failed ({type(exc).__name__}: {str(exc)[:200]})"
        finally:
            runtime.KERNEL_EVENTS = None
    outs = entry.compiled(dev_leaves)
    runtime.synchronize()
    row["d2h"] = median(lambda: [runtime.to_host(o) for o in outs], repeat, budget) if outs else 0.0
    ha = [x.copy() for x in inputs]
    row["host_call"] = median(lambda: gpu_fn(*ha), repeat, budget)
    row["bytes"] = inputs[0].size * inputs[0].dtype.itemsize
    return row


def host_overhead(call: Callable[[], Any], repeat: int) -> float:
    """Microseconds of host time per call on device arguments: each call starts with the GPU idle (synchronised
    before, outside the timing) and returns once its work is queued, so what is timed is Python and the driver
    calls alone, not the GPU's queue filling up."""
    from jitgraph.backends.cuda import runtime

    times = []
    for _ in range(max(repeat, 20)):
        runtime.synchronize()
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    runtime.synchronize()
    return float(np.median(times)) * 1e6


def gemm_versus_cublas(compiled: Any, per_kernel: dict[str, float],
                       known: set[tuple]) -> tuple[float, float, float | None] | str:
    """(ms of this graph's GEMM launches, ms of cuBLAS alone on the same products, ms of the same planned calls
    alone) from CUDA events, or why not.

    Ours: the events of the cuBLAS calls, or of the hand-written matmul kernels where cuBLAS is not in use (their
    fused epilogue included). cuBLAS alone: ``nvmath.linalg.advanced.Matmul`` planned once on random C-ordered
    operands of the same shapes and dtypes, no epilogue, timed apart with the same spin-kernel events. The same calls
    alone: the provider's own planned ``Matmul`` objects (transposes, alpha, bias and ``beta = 1`` as this graph
    calls them) executed back to back, so the difference from ours is what our path adds on the GPU."""
    from jitgraph.backends.cuda import cublas, runtime

    heads = [(name, plan) for name, plan in ((p.name, p) for p in compiled.plans.values()) if plan.head is not None]
    if not heads:
        return "no GEMM"
    ours = 1e3 * sum(s for kname, s in per_kernel.items() for name, _ in heads
                     if kname in (f"{name}_cublas", name, f"{name}_product"))
    try:
        import cupy as cp
        from nvmath.linalg import advanced
    except Exception as exc:  # noqa: BLE001 - the cuda extra is not installed: no reference
        return f"cuBLAS reference unavailable ({type(exc).__name__})"

    def event_ms(call: Callable[[], Any]) -> float:
        call()
        runtime.KERNEL_EVENTS = []
        for _ in range(5):
            with runtime.timed("cublas alone"):
                call()
        ms = runtime.kernel_seconds(runtime.KERNEL_EVENTS) / 5 * 1e3
        runtime.KERNEL_EVENTS = None
        return ms

    total = 0.0
    for _, plan in heads:
        a, b = plan.head.inputs
        ops = [cp.random.standard_normal(leaf.tensor_type.shape).astype(leaf.tensor_type.dtype) for leaf in (a, b)]
        mm = advanced.Matmul(*ops)
        mm.plan()
        total += event_ms(mm.execute)
        mm.free()
    same: float | None = None
    found, _ = cublas.provider()
    planned = getattr(found, "plans", None)
    planned = {key: value for key, value in (planned or {}).items() if key not in known}  # this workload's
    if planned:
        stream = runtime.stream_handle(runtime.current_stream()) or None
        same = sum(event_ms(lambda mm=mm: mm.execute(stream=stream)) for mm, _ in planned.values())
    return ours, total, same


def table(scale: float, peak: float | None, repeat: int, budget: float) -> None:
    from jitgraph.backends.cuda import runtime

    workloads, make_inputs, bound = _workloads()
    print("\n== workloads: NumPy (CPU) vs backend='cpu' vs backend='cuda' ==")
    print("gpu = call with device-resident arguments (kernels + launch + allocation; CUDA-graph replay where it "
          "applies); host us = host time per such call, GPU idle before it: the compiled graph alone / the user's call "
          "f(*device arrays) with its guards; kernel = CUDA-event time of the "
          "kernels alone (launched one by one); d2h = copying the results to the host; host-args = a call with "
          "NumPy arguments (pays both transfers); GEMM/cuBLAS = this graph's GEMM time over the same cuBLAS calls "
          "timed alone (<= 1.11 means >= 90% of cuBLAS); 1st call = trace and compile, or load from the disk cache")
    head = (f"| {'workload':<34} | {'NumPy ms':>9} | {'cpu ms':>8} | {'gpu ms':>8} | {'host us':>9} | "
            f"{'kernel ms':>9} | {'d2h ms':>7} | {'host-args ms':>12} | {'vs NumPy':>8} | {'vs cpu':>6} | "
            f"{'GEMM/cuBLAS':>11} | {'1st call s':>10} | ok  |")
    print(head)
    print("|" + "|".join("-" * len(c) for c in head.split("|")[1:-1]) + "|")
    rows = []
    for name, (desc, fn) in workloads.items():
        try:
            row = workload_row(name, desc, fn, make_inputs(name, scale), repeat, budget)
        except Exception as exc:  # noqa: BLE001 - keep going: the table shows which workload failed and why
            row = {"name": name, "desc": desc, "note": f"{type(exc).__name__}: {exc}"}
            traceback.print_exc(limit=4)
        rows.append(row)

        def ms(key: str, row: dict[str, Any] = row) -> str:
            return f"{row[key] * 1e3:.3f}" if key in row else "-"

        ratio = f"{row['numpy'] / row['gpu']:.1f}x" if "gpu" in row and "numpy" in row else "-"
        vs_cpu = f"{row['cpu'] / row['gpu']:.1f}x" if "gpu" in row and "cpu" in row else "-"
        host_us = f"{row['host_us']:.0f}/{row['call_us']:.0f}" if "call_us" in row else "-"
        gemm = row.get("gemm")
        reference = (gemm[2] or gemm[1]) if isinstance(gemm, tuple) else 0.0  # the same planned calls, timed alone
        gemm_ratio = f"{gemm[0] / reference:.2f}" if reference else "-"
        first = f"{row['compile']:.2f}" if "compile" in row else "-"  # trace + compile, or load from the disk cache
        ok = {True: "yes", False: "NO"}.get(row.get("ok"), "-")
        label = f"{name} {desc}"[:34]
        print(f"| {label:<34} | {ms('numpy'):>9} | {ms('cpu'):>8} | {ms('gpu'):>8} | {host_us:>9} | "
              f"{ms('kernel'):>9} | {ms('d2h'):>7} | {ms('host_call'):>12} | {ratio:>8} | {vs_cpu:>6} | "
              f"{gemm_ratio:>11} | {first:>10} | {ok:<3} |")
        if "note" in row:
            print(f"    {name}: {row['note']}")
        if isinstance(gemm, tuple):
            same = "" if gemm[2] is None else f", the same planned calls alone {gemm[2]:.3f} ms"
            print(f"    {name}: GEMMs {gemm[0]:.3f} ms here, cuBLAS alone on C-ordered operands {gemm[1]:.3f} ms{same}")
        elif gemm and gemm != "no GEMM":
            print(f"    {name}: {gemm}")
        if "replay" in row:
            print(f"    {name}: {row['replay']}")
    info = runtime.device_info()
    peak_gbps, source = _peak(info, peak)
    copy_gbps = None if info.simulated else copy_bandwidth()
    print(f"\n== bandwidth (kernel time only; peak {peak_gbps and round(peak_gbps)} GB/s from {source}; "
          f"measured device-to-device copy {copy_gbps and round(copy_gbps)} GB/s) ==")
    if info.simulated:
        print("  (the simulator has no CUDA events: kernel times and bandwidth need a real GPU)")
    for row in rows:
        if row.get("kernels"):
            parts = ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in sorted(row["kernels"].items(), key=lambda kv: -kv[1]))
            print(f"  {row['name']} kernels: {parts}")
    for row in rows:
        arrays = bound.get(row["name"])
        if not arrays or "kernel" not in row or not row["kernel"]:
            continue
        gbps = arrays * row["bytes"] / row["kernel"] / 1e9
        frac = f"{100 * gbps / peak_gbps:.0f}% of peak" if peak_gbps else "peak unknown: pass --peak-gbps"
        if copy_gbps:
            frac += f", {100 * gbps / copy_gbps:.0f}% of the measured copy"
        print(f"  {row['name']}: {arrays} arrays x {row['bytes'] / 1e6:.0f} MB in {row['kernel'] * 1e3:.3f} ms "
              f"= {gbps:.0f} GB/s, {frac}")


# Datasheet DRAM bandwidth (GB/s) by device name, for drivers that no longer report the memory clock (CUDA 13).
DATASHEET_GBPS = {"H200": 4800.0, "H100 80GB HBM3": 3350.0, "H100 PCIe": 2000.0, "H100 NVL": 3900.0,
                  "A100-SXM4-80GB": 2039.0, "A100-SXM4-40GB": 1555.0, "A100-PCIE-40GB": 1555.0}


def _peak(info: Any, given: float | None) -> tuple[float | None, str]:
    if given:
        return given, "--peak-gbps"
    for key, gbps in DATASHEET_GBPS.items():
        if key in info.name:
            return gbps, f"the datasheet of {key}"
    if info.peak_gbps:
        return info.peak_gbps, "memory clock x bus width"
    return None, "nowhere (pass --peak-gbps)"


def copy_bandwidth(n_bytes: int = 1 << 30) -> float:
    """Bytes read plus written per second by the driver's device-to-device copy: the practical ceiling."""
    from jitgraph.backends.cuda import runtime

    cuda = runtime.cuda()
    src = cuda.device_array(n_bytes // 4, np.float32)
    dst = cuda.device_array(n_bytes // 4, np.float32)
    dst.copy_to_device(src)
    cuda.synchronize()
    start, end = cuda.event(), cuda.event()
    start.record()
    for _ in range(10):
        dst.copy_to_device(src)
    end.record()
    end.synchronize()
    return 2 * n_bytes * 10 / (cuda.event_elapsed_time(start, end) / 1e3) / 1e9


def ptx_check(cc: tuple[int, int]) -> bool:
    """Without a GPU: generate every kernel family as a real device would (warp shuffles, 256-thread blocks) and
    compile each kernel to PTX for ``cc`` with NVVM, which type-checks the device code path the simulator skips.

    Needs libNVVM (``pip install nvidia-cuda-nvcc nvidia-cuda-nvrtc``) but no driver: kernels are not launched,
    arrays stay on the host, and Numba is told the device's compute capability instead of asking a driver.
    """
    import contextlib
    import types

    import numba
    from numba import cuda
    from numba.cuda import dispatcher

    from jitgraph.backends.cuda import compiler, device_fns, plan, runtime, selfcheck
    from jitgraph.backends.cuda.backend import compile_graph
    from jitgraph.passes import run_pipeline

    os.environ["JITGRAPH_CUDA_GRAPHS"] = "0"  # host arrays stand in for device arrays here: nothing to record
    os.environ["JITGRAPH_CUDA_CUBLAS"] = "0"
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=cc)  # device functions
    runtime.device_info = lambda: runtime.DeviceInfo(f"PTX only, sm_{cc[0]}{cc[1]}", 132, 1024, 32, False, None)
    runtime.require_cuda = lambda: None
    runtime.timed = lambda name: contextlib.nullcontext()
    runtime.empty = lambda shape, dtype: np.empty(shape, dtype)
    runtime.to_device = np.ascontiguousarray
    runtime.to_host = lambda value: value
    runtime.is_device_array = lambda value: isinstance(value, np.ndarray)
    runtime.as_numba_device = lambda value: value
    compiled: list[str] = []

    class PtxKernel:
        def __init__(self, name: str, fn: Any) -> None:
            self.name, self.fn = name, fn

        def __getitem__(self, config: Any) -> Callable[..., None]:
            def launch(*args: Any) -> None:
                sig = tuple(numba.int64 if isinstance(a, int) else numba.typeof(a) for a in args)
                cuda.compile_ptx(self.fn, sig, cc=cc)
                compiled.append(self.name)

            return launch

    def from_source(name: str, source: str, disk_cache: bool = False) -> PtxKernel:
        namespace = device_fns.namespace()
        exec(compile(source, f"<jitgraph-cuda {name}>", "exec"), namespace)  # noqa: S102 - our generated source
        return PtxKernel(name, namespace[name])

    compiler.kernel_from_source = from_source
    plan.compiler.kernel_from_source = from_source
    ok = True
    for check in selfcheck.checks(0.01):
        try:
            compile_graph(run_pipeline(check.graph)[0], {})([a.copy() for a in check.args])
            print(f"  ok   {check.name:<26} PTX for sm_{cc[0]}{cc[1]}")
        except Exception as exc:  # noqa: BLE001 - report every family
            ok = False
            print(f"  FAIL {check.name:<26} {type(exc).__name__}: {str(exc).splitlines()[0]}")
    print(f"{len(compiled)} kernels compiled to PTX")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sim", action="store_true", help="tiny sizes under Numba's CUDA simulator")
    parser.add_argument("--peak-gbps", type=float, default=None, help="theoretical DRAM bandwidth of the GPU")
    parser.add_argument("--skip-workloads", action="store_true", help="only the kernel-family checks")
    parser.add_argument("--ptx", action="store_true", help="no GPU: compile every family to PTX (needs NVVM)")
    args = parser.parse_args()
    if args.ptx:
        return 0 if ptx_check((9, 0)) else 1
    os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")  # small test grids are intended
    if args.sim and "numba.cuda" not in sys.modules:
        os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    from jitgraph.backends.cuda import runtime

    runtime.require_cuda()
    info = runtime.device_info()
    print(f"device: {info.name} ({info.sm_count} SMs, simulated={info.simulated}, peak "
          f"{info.peak_gbps and round(info.peak_gbps)} GB/s)")
    start = time.perf_counter()
    ok = families(0.002 if args.sim else 1.0)
    if not args.skip_workloads:
        table(2e-4 if args.sim else 1.0, args.peak_gbps, 3 if args.sim else 30, 0.5 if args.sim else 2.0)
    print(f"\nfinished in {time.perf_counter() - start:.1f} s; kernel families {'all agree' if ok else 'DISAGREE'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
