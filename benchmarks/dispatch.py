"""Per-call dispatch overhead of a compiled function: what jitgraph adds on top of running the compiled graph.

Two cases: three small (16-element) arrays (``a * b + c``), and an SGD step on a dict of four parameter arrays
with a dict of gradients and a float learning rate (the arguments of a training step). For each it prints the
eager function's time, the compiled call's time, the compiled graph alone (the backend's call on the flat
leaves), and the dispatch overhead measured directly: the compiled call with the graph replaced by a stub that
returns precomputed outputs (key, guards, alias check, output rebuild -- everything jitgraph adds).

Run: ``python benchmarks/dispatch.py [backend]`` (default: eager, the reference interpreter). Timings are the
best of several repeats; on a loaded machine all of them grow together.
"""

from __future__ import annotations

import sys
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

import jitgraph


def three_arrays(a, b, c):
    return a * b + c


def sgd(params, grads, lr):
    for k in params:
        params[k] -= lr * grads[k]


def best_per_call(fn: Callable[[], Any], number: int = 20000, repeat: int = 7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def measure(name: str, fn: Callable[..., Any], args: tuple, backend: str) -> None:
    compiled = jitgraph.compile(fn, backend=backend)
    compiled(*args)
    entry = compiled.entries[0]
    leaves: list[Any] = []
    from jitgraph.tracer.keys import make_key

    make_key(args, {}, leaves)
    eager = best_per_call(lambda: fn(*args))
    total = best_per_call(lambda: compiled(*args))
    graph_only = best_per_call(lambda: entry.compiled(leaves))
    outs = entry.compiled(leaves)
    real, entry.compiled = entry.compiled, lambda _leaves: outs
    stubbed = best_per_call(lambda: compiled(*args))
    stub_alone = best_per_call(lambda: entry.compiled(leaves))
    entry.compiled = real
    overhead = stubbed - stub_alone
    print(f"{name}  [{backend}]")
    print(f"  eager function        {eager * 1e6:8.2f} us/call")
    print(f"  compiled call         {total * 1e6:8.2f} us/call   ({total / eager:.2f}x eager)")
    print(f"  compiled graph alone  {graph_only * 1e6:8.2f} us/call")
    print(f"  dispatch overhead     {overhead * 1e6:8.2f} us/call   (target < 10 us)")
    print(f"  cache_info            {compiled.cache_info()}")


def main() -> None:
    backend = sys.argv[1] if len(sys.argv) > 1 else "eager"
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(16).astype(np.float32) for _ in range(3))
    measure("three 16-element arrays: a * b + c", three_arrays, (a, b, c), backend)
    params = {k: rng.standard_normal(16).astype(np.float32) for k in ("W1", "b1", "W2", "b2")}
    grads = {k: np.full(16, 1e-9, np.float32) for k in params}
    measure("SGD on a dict of 4 parameters (+ grads dict, float lr)", sgd, (params, grads, 1e-3), backend)


if __name__ == "__main__":
    main()
