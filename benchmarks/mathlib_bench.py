"""Is the kernel math library vectorised? NumPy ufunc vs a prange loop calling libm vs a prange loop calling mathlib.

Usage: ``python benchmarks/mathlib_bench.py [op ...] [--n 1e7] [--dtype float32] [--repeat 7]``

For each function and dtype it prints the best-of-``repeat`` time of
  numpy   the NumPy expression (erf has no NumPy ufunc),
  libm    ``numba.njit(parallel=True)`` prange loop calling ``math.<fn>`` (scalar libm: does not vectorise),
  mathlib the same loop calling ``jitgraph.backends.cpu.mathlib.<fn>_<f32|f64>`` (inlined, vectorised),
and the compile time of the mathlib kernel. At the end it times the motivating fused expression
``tanh(a*b+c)*0.5+a`` over float32, next to the same expression without tanh (the memory-bandwidth floor).

The threading layer defaults to workqueue (no OpenMP/TBB dependency, and on 2 cores it is as fast as omp here);
override with NUMBA_THREADING_LAYER.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Callable

os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

import numba  # after setting the threading layer: numba reads it at import
import numpy as np

from jitgraph.backends.cpu import mathlib

OPS = ["exp", "expm1", "log", "log1p", "tanh", "sigmoid", "erf", "sin", "cos", "power", "sqrt", "gelu_tanh"]

# Input domains: where the functions are typically used, and away from trivial saturation.
DOMAINS = {
    "exp": (-20, 20), "expm1": (-5, 5), "log": (1e-3, 1e3), "log1p": (-0.9, 100), "tanh": (-5, 5),
    "sigmoid": (-20, 20), "erf": (-4, 4), "sin": (-100, 100), "cos": (-100, 100), "power": (0.1, 10),
    "sqrt": (0, 1e4), "gelu_tanh": (-6, 6),
}


def numpy_reference(op: str, ft: type) -> Callable | None:
    """The NumPy spelling of ``op`` (as a user would write it), or None where NumPy has none."""
    half, one, c, a = ft(0.5), ft(1.0), ft(0.7978845608028654), ft(0.044715)
    return {
        "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "tanh": np.tanh, "sin": np.sin,
        "cos": np.cos, "sqrt": np.sqrt, "power": np.power,
        "sigmoid": lambda x: one / (one + np.exp(-x)),
        "gelu_tanh": lambda x: half * x * (one + np.tanh(c * (x + a * x**3))),
    }.get(op)


def libm_scalar(op: str, ft: type) -> Callable:
    """A scalar njit function computing ``op`` with the math module (libm), constants typed as ``ft``."""
    half, one, c, a = ft(0.5), ft(1.0), ft(0.7978845608028654), ft(0.044715)
    fns = {
        "exp": lambda x: math.exp(x), "expm1": lambda x: math.expm1(x), "log": lambda x: math.log(x),
        "log1p": lambda x: math.log1p(x), "tanh": lambda x: math.tanh(x), "erf": lambda x: math.erf(x),
        "sin": lambda x: math.sin(x), "cos": lambda x: math.cos(x), "sqrt": lambda x: math.sqrt(x),
        "power": lambda x, y: math.pow(x, y), "sigmoid": lambda x: one / (one + math.exp(-x)),
        "gelu_tanh": lambda x: half * x * (one + math.tanh(c * (x + a * x * x * x))),
    }
    return numba.njit(fns[op])


def prange_kernel(fn: Callable, arity: int) -> Callable:
    """``out[i] = fn(x[i] [, y[i]])`` as a parallel loop, fastmath off: what jitgraph's code generator emits."""
    if arity == 2:
        @numba.njit(parallel=True, fastmath=False)
        def binary(x, y, out):
            for i in numba.prange(x.size):
                out[i] = fn(x[i], y[i])
        return binary

    @numba.njit(parallel=True, fastmath=False)
    def unary(x, out):
        for i in numba.prange(x.size):
            out[i] = fn(x[i])
    return unary


def best_time(fn: Callable, repeat: int) -> float:
    """Best wall time in ms: other work on the machine only ever makes a run slower."""
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def bench_op(op: str, dtype: str, n: int, repeat: int) -> str:
    ft = np.dtype(dtype).type
    rng = np.random.default_rng(0)
    lo, hi = DOMAINS[op]
    args = [rng.uniform(lo, hi, n).astype(dtype)]
    if op == "power":
        args.append(rng.uniform(-5, 5, n).astype(dtype))
    out = np.empty_like(args[0])

    reference = numpy_reference(op, ft)
    with np.errstate(all="ignore"):
        t_numpy = best_time(lambda: reference(*args), repeat) if reference else math.nan
    libm = prange_kernel(libm_scalar(op, ft), len(args))
    libm(*args, out)
    t_libm = best_time(lambda: libm(*args, out), repeat)

    ours = prange_kernel(mathlib.VECTOR_MATH[op, dtype], len(args))
    start = time.perf_counter()
    ours(*args, out)
    t_compile = time.perf_counter() - start
    t_ours = best_time(lambda: ours(*args, out), repeat)
    numpy_col = f"{t_numpy:9.2f}" if reference else f"{'-':>9}"
    return (f"{op:<10} {dtype:<8} {numpy_col} {t_libm:9.2f} {t_ours:9.2f}   {t_libm / t_ours:6.1f}x "
            f"{(t_numpy / t_ours) if reference else math.nan:7.1f}x {t_compile:8.1f}s")


def bench_fused(n: int, repeat: int) -> None:
    """tanh(a*b+c)*0.5+a over float32: NumPy, libm loop, mathlib loop, and the loop without tanh."""
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    out = np.empty_like(a)
    half = np.float32(0.5)
    tanh_f32 = mathlib.tanh_f32

    @numba.njit(parallel=True, fastmath=False)
    def fused_mathlib(a, b, c, out):
        for i in numba.prange(a.size):
            out[i] = tanh_f32(a[i] * b[i] + c[i]) * half + a[i]

    @numba.njit(parallel=True, fastmath=False)
    def fused_libm(a, b, c, out):
        for i in numba.prange(a.size):
            out[i] = math.tanh(a[i] * b[i] + c[i]) * half + a[i]

    @numba.njit(parallel=True, fastmath=False)
    def no_tanh(a, b, c, out):
        for i in numba.prange(a.size):
            out[i] = (a[i] * b[i] + c[i]) * half + a[i]

    for kernel in (fused_mathlib, fused_libm, no_tanh):
        kernel(a, b, c, out)
    rows = [
        ("numpy", best_time(lambda: np.tanh(a * b + c) * half + a, repeat)),
        ("libm prange", best_time(lambda: fused_libm(a, b, c, out), repeat)),
        ("mathlib prange", best_time(lambda: fused_mathlib(a, b, c, out), repeat)),
        ("prange without tanh (memory floor)", best_time(lambda: no_tanh(a, b, c, out), repeat)),
    ]
    print(f"\ntanh(a*b+c)*0.5+a, {n:.0e} float32, {numba.get_num_threads()} threads:")
    for name, ms in rows:
        print(f"  {name:<36} {ms:8.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ops", nargs="*", metavar="op", help=f"any of {' '.join(OPS)} (default: all)")
    parser.add_argument("--n", type=float, default=1e7)
    parser.add_argument("--dtype", choices=["float32", "float64"], action="append")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--no-fused", action="store_true", help="skip the tanh(a*b+c)*0.5+a benchmark")
    args = parser.parse_args()
    unknown = set(args.ops) - set(OPS)
    if unknown:
        parser.error(f"unknown ops {sorted(unknown)}; choose from {OPS}")
    n = int(args.n)
    print(f"n = {n:.0e}, threads = {numba.get_num_threads()}, layer = {os.environ['NUMBA_THREADING_LAYER']}, "
          f"best of {args.repeat}, times in ms")
    print(f"{'op':<10} {'dtype':<8} {'numpy':>9} {'libm':>9} {'mathlib':>9}   {'vs libm':>7} {'vs numpy':>8} "
          f"{'compile':>8}")
    for op in args.ops or OPS:
        for dtype in args.dtype or ["float32", "float64"]:
            print(bench_op(op, dtype, n, args.repeat), flush=True)
    if not args.no_fused:
        bench_fused(n, args.repeat)


if __name__ == "__main__":
    main()
