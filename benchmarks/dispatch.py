"""Per-call dispatch overhead of a compiled function on three small (16-element) arrays.

Prints the eager function's time, the compiled call's time, the time of the compiled graph alone (the backend's
call on the flat leaves), and the dispatch overhead measured directly: the compiled call with the graph replaced
by a stub that returns precomputed outputs (key, guards, alias check, output rebuild — everything jitgraph adds).
Run: ``python benchmarks/dispatch.py [backend]`` (default: eager, the reference interpreter).
"""

from __future__ import annotations

import sys
import timeit

import numpy as np

import jitgraph


def f(a, b, c):
    return a * b + c


def best_per_call(fn, number: int = 20000, repeat: int = 5) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main() -> None:
    backend = sys.argv[1] if len(sys.argv) > 1 else "eager"
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(16).astype(np.float32) for _ in range(3))
    compiled = jitgraph.compile(f, backend=backend)
    compiled(a, b, c)
    entry = compiled.entries[0]
    leaves = [a, b, c]
    eager = best_per_call(lambda: f(a, b, c))
    total = best_per_call(lambda: compiled(a, b, c))
    graph_only = best_per_call(lambda: entry.compiled(leaves))
    outs = entry.compiled(leaves)
    real, entry.compiled = entry.compiled, lambda _leaves: outs
    stubbed = best_per_call(lambda: compiled(a, b, c))
    stub_alone = best_per_call(lambda: entry.compiled(leaves))
    entry.compiled = real
    overhead = stubbed - stub_alone
    print(f"backend               {backend}")
    print(f"eager function        {eager * 1e6:8.2f} us/call")
    print(f"compiled call         {total * 1e6:8.2f} us/call")
    print(f"compiled graph alone  {graph_only * 1e6:8.2f} us/call")
    print(f"dispatch overhead     {overhead * 1e6:8.2f} us/call  (target < 10 us)")
    print(f"compiled / eager      {total / eager:8.2f}x")
    print(f"cache_info            {compiled.cache_info()}")


if __name__ == "__main__":
    main()
