"""Column reductions against the copy bandwidth (issue 21, "column reductions at >= 70% of the copy bandwidth at
(4096, 1024) float32").

    python benchmarks/columns.py            # (4096, 1024) float32
    python benchmarks/columns.py --rows 8192 --cols 512 --dtype float64

A reduction over axis 0 of a C-ordered matrix reads the matrix once; the row-by-row template
(``backends/cpu/column_sweep.py``) should stream it as fast as a copy streams memory. Each function is timed
compiled, in alternating blocks with a copy of the same matrix on every core (``workloads.CopyProbe`` over the same
number of elements: the copy reads and writes them), so both figures come from the same state of the machine. The
percentage is the compiled function's bytes per second (the matrix read once, plus what it writes) over the copy's
(read + write): 100% means the reduction moves memory as fast as the copy. Eager NumPy is timed the same way, for
the ratio. Median of alternating blocks; "best" is the best call of each side. "per sweep": the same against the
bytes the algorithm streams (var sweeps the matrix twice, NumPy's formula: the mean, then the deviations from it).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jitgraph  # after the path is set, so the script runs from anywhere
from benchmarks.timing import paired_timings, settle
from benchmarks.workloads import CopyProbe


def col_sum(x):
    return x.sum(axis=0)


def col_mean_var(x):
    return x.mean(axis=0), x.var(axis=0)


def col_max_min(x):
    return x.max(axis=0) - x.min(axis=0)


def batchnorm_forward(x, gamma, beta):
    mu = x.mean(axis=0)
    var = x.var(axis=0)
    return gamma * (x - mu) / np.sqrt(var + 1e-5) + beta


# name, function, whether it writes a full matrix, and the sweeps over the matrix its algorithm needs (NumPy's var
# is two: the mean, then the squared deviations from it; batch norm a third to write its output)
FUNCTIONS: list[tuple[str, Callable[..., object], bool, int]] = [
    ("x.sum(axis=0)", col_sum, False, 1),
    ("x.mean(axis=0), x.var(axis=0)", col_mean_var, False, 2),
    ("x.max(axis=0) - x.min(axis=0)", col_max_min, False, 1),
    ("batch-norm forward", batchnorm_forward, True, 3),
]


def main() -> None:
    parser = argparse.ArgumentParser(description="column reductions against the copy bandwidth")
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=1024)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.rows, args.cols)).astype(args.dtype)
    gamma, beta = np.ones(args.cols, args.dtype), np.zeros(args.cols, args.dtype)
    probe = CopyProbe(x.size) if args.dtype == "float32" else CopyProbe(x.size * 2)  # the matrix's bytes
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"({args.rows}, {args.cols}) {args.dtype}, {x.nbytes / 1e6:.0f} MB; {os.cpu_count()} CPUs, load {load}")
    print(f"| {'function':<32} | {'NumPy ms':>8} | {'jitgraph ms':>11} | {'ratio':>6} | {'copy ms':>7} "
          f"| {'% of copy bw':>12} | {'best':>5} | {'sweeps':>6} | {'per sweep':>9} | ok |")
    print("|" + "|".join("-" * n for n in (34, 10, 13, 8, 9, 14, 7, 8, 11, 4)) + "|")
    for name, fn, full, sweeps in FUNCTIONS:
        inputs = (x, gamma, beta) if fn is batchnorm_forward else (x,)
        compiled = jitgraph.compile(fn)
        got, want = compiled(*inputs), fn(*inputs)
        pairs = zip(got, want) if isinstance(want, tuple) else [(got, want)]
        ok = all(np.allclose(g, w, rtol=1e-4, atol=1e-4) for g, w in pairs)
        def eager(f=fn, a=inputs) -> object:
            return f(*a)

        def ours(c=compiled, a=inputs) -> object:
            return c(*a)

        settle(compiled, ours)
        (eager_t, _), (comp_t, _) = paired_timings(eager, ours, args.repeat)
        (copy_t, copy_best), (comp2_t, comp_best) = paired_timings(probe.call, ours, args.repeat)
        moved = x.nbytes * (2 if full else 1) + args.cols * x.itemsize * 2
        pct = 100 * (moved / comp2_t) / (probe.bytes / copy_t)
        best = 100 * (moved / comp_best) / (probe.bytes / copy_best)
        streamed = moved + x.nbytes * (sweeps - 1)  # what the algorithm reads and writes, sweep by sweep
        per_sweep = 100 * (streamed / comp2_t) / (probe.bytes / copy_t)
        print(f"| {name:<32} | {eager_t * 1e3:8.2f} | {comp_t * 1e3:11.2f} | {eager_t / comp_t:5.1f}x | "
              f"{copy_t * 1e3:7.2f} | {pct:11.0f}% | {best:4.0f}% | {sweeps:6d} | {per_sweep:8.0f}% | "
              f"{'yes' if ok else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
