"""The competitors' columns of ``benchmarks/workloads.py``: ``torch.compile`` and ``jax.jit`` on the same workload.

Neither is a dependency: a column appears only when its package imports. ``torch.compile`` takes the NumPy function
as it is (TorchDynamo traces NumPy calls through ``torch._numpy``), NumPy arguments in and out, in-place updates
included. JAX cannot trace NumPy calls, so its column runs the same source with ``np`` bound to ``jax.numpy``; its
arrays are immutable, so the workloads that update their arguments in place (W5, W6) get no JAX figure.

Run alone, it prints only the competitor table (no eager, copy-bandwidth or warm-start columns):

    python benchmarks/competitors.py              # W1-W6, each peer in alternating blocks with jitgraph
    python benchmarks/competitors.py --only W2,W6
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

IN_PLACE = {"W5", "W6"}


def available() -> list[str]:
    names = []
    for name, module in (("torch.compile", "torch"), ("jax.jit", "jax")):
        try:
            __import__(module)
            names.append(name)
        except ImportError:
            pass
    return names


def _compile(kind: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    if kind == "torch.compile":
        import torch

        return torch.compile(fn)
    import jax
    import jax.numpy as jnp

    as_jax = types.FunctionType(fn.__code__, {**fn.__globals__, "np": jnp}, fn.__name__, fn.__defaults__,
                                fn.__closure__)
    jitted = jax.jit(as_jax)

    def call(*args: Any) -> Any:
        out = jitted(*args)
        return None if out is None else np.asarray(jax.block_until_ready(out))

    return call


def measure(kind: str, name: str, fn: Callable[..., Any], base: list[np.ndarray], repeat: int,
            paired: Callable[..., Any], agree: Callable[..., bool], ours: Callable[[], object],
            shared: list[np.ndarray] | None = None) -> dict[str, Any]:
    """{"time": median s, "compile": first call s, "agree": bool, "ours": jitgraph's median s} or {"note": why
    there is no figure}. The competitor is timed in alternating blocks with ``ours`` (a jitgraph call of the same
    workload), so the two figures of a row come from the same state of the machine; with ``shared`` (the arrays
    ``ours`` runs on) on the very same arrays too: W6 streams 280 MB a call, and two sets of arrays placed
    differently in memory (huge pages or not) differed by up to 20% between runs, more than the two compilers."""
    if kind == "jax.jit" and name in IN_PLACE:
        return {"note": "n/a (updates its arguments in place)"}
    try:
        compiled = _compile(kind, fn)
        a, b = [x.copy() for x in base], [x.copy() for x in base]
        start = time.perf_counter()
        got = compiled(*a)
        first = time.perf_counter() - start
        want = fn(*b)
        ok = agree(name, got, want, a, b) if kind != "jax.jit" else agree(name, got, want, [], [])
        args = shared if shared is not None else [x.copy() for x in base]
        (median, _), (mine, _) = paired(lambda: compiled(*args), ours, repeat)
    except Exception as exc:  # noqa: BLE001 - a competitor failing is a result to print, not a crash
        return {"note": f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:60]}"}
    return {"time": median, "compile": first, "agree": ok, "ours": mine}


def target_line() -> str:
    """The CPU and the SIMD width jitgraph's kernels were compiled for (``JITGRAPH_VECTOR_WIDTH``), so that figures
    from runs under different settings are not compared by mistake."""
    import llvmlite.binding as llvm

    from jitgraph import config
    from jitgraph.backends.cpu.vector_width import attribute_width

    width = attribute_width()
    return (f"CPU {llvm.get_host_cpu_name()}; kernels' vector width: {f'{width} bits' if width else 'LLVM default'}"
            f" (JITGRAPH_VECTOR_WIDTH={config.env('JITGRAPH_VECTOR_WIDTH')})")


def cell(result: dict[str, Any]) -> str:
    if "note" in result:
        return result["note"]
    return (f"{result['time'] * 1e3:.2f} ms ({result['compile']:.1f} s) [jitgraph {result['ours'] * 1e3:.2f}]"
            f"{'' if result['agree'] else ' DIFFERS'}")


def main() -> None:
    """The competitor table of ``benchmarks/workloads.py`` alone."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import jitgraph
    from benchmarks import workloads
    from benchmarks.timing import paired_timings, settle

    parser = argparse.ArgumentParser(description="torch.compile and jax.jit beside jitgraph on W1-W6")
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--repeat", type=int, default=30, help="recorded calls of each side")
    args = parser.parse_args()
    kinds = available()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{os.cpu_count()} CPUs, load average {load}; peers: {', '.join(kinds) or 'none installed'}; "
          f"{target_line()}")
    print("median ms (first call s, compile included) [jitgraph's median ms in alternating blocks with that peer];"
          " jitgraph's first call loads kernels when the cache already holds them")
    print("| workload | jitgraph 1st call s | " + " | ".join(kinds) + " |")
    print("|---|---|" + "---|" * len(kinds))
    for name, (label, fn) in workloads.WORKLOADS.items():
        if args.only and name not in args.only.split(","):
            continue
        compiled = jitgraph.compile(fn)
        base = workloads.make_inputs(name)
        mine = [x.copy() for x in base]
        start = time.perf_counter()
        compiled(*mine)
        cold = time.perf_counter() - start
        ours = (lambda f=compiled, a=mine: f(*a))  # the jitgraph side of each pairing
        settle(compiled, ours)  # past the tier-down probe (jit/tiering.py): the steady state
        cells = [cell(measure(kind, name, fn, base, args.repeat, paired_timings, workloads.results_agree, ours,
                              mine)) for kind in kinds]
        print(f"| {name} {label} | {cold:.1f} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
