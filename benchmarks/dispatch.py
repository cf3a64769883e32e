"""Per-call dispatch overhead of a compiled function: what jitgraph adds on top of running the compiled graph.

Two cases: three small (16-element) arrays (``a * b + c``), and an SGD step on a dict of four parameter arrays
with a dict of gradients and a float learning rate (the arguments of a training step). Every timing is the median
of alternating blocks (eager, compiled, eager again, the graph alone, ...), so a load change hits all of them
alike; "noise" is the eager function timed against itself (the difference of its two interleaved series).

Printed per case:
* eager, compiled call, and the compiled graph alone (the backend's call on the flat leaves);
* the overhead: compiled call minus graph alone (everything jitgraph adds: recognising the call and rebuilding the
  result), and the compiled call minus eager;
* its breakdown, measured with the graph replaced by a stub that returns precomputed outputs: the generated
  runner of the entry (dispatch.py: layout, guards, aliasing), the result builder, and what ``__call__`` adds;
  and, for comparison, the generic path's pieces (key, guards, alias check) that a call takes when no runner does.

Run: ``python benchmarks/dispatch.py [backend] [--min]`` (default: cpu; ``--min`` takes each series' fastest block
instead of its median, the better estimate on a machine shared with other work).
"""

from __future__ import annotations

import os
import statistics
import sys
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

import jitgraph
from jitgraph.tracer.keys import alias_pattern, make_key

# What is measured is the compiled graph's own call path: no measured tier-down (jit/tiering.py, read when an entry
# is published), which could run the small cases eagerly and leave the stubbed graph below never called.
os.environ.setdefault("JITGRAPH_TIER_DOWN", "0")

BLOCKS, NUMBER = 61, 500


def three_arrays(a, b, c):
    return a * b + c


def sgd(params, grads, lr):
    for k in params:
        params[k] -= lr * grads[k]


def alternating(fns: dict[str, Callable[[], Any]], pick: Callable[[list[float]], float]) -> dict[str, float]:
    """Seconds per call of each function, timed in alternating blocks: ``pick`` (the median, or the fastest block
    when the machine is loaded) of its blocks."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(BLOCKS):
        for name, fn in fns.items():
            times[name].append(timeit.timeit(fn, number=NUMBER) / NUMBER)
    return {name: pick(t) for name, t in times.items()}


def measure(name: str, fn: Callable[..., Any], args: tuple, backend: str, pick: Callable[[list[float]], float]
            ) -> None:
    compiled = jitgraph.compile(fn, backend=backend)
    compiled(*args)
    entry = compiled.entries[0]
    leaves: list[Any] = []
    key = make_key(args, {}, leaves)
    t = alternating({"eager": lambda: fn(*args), "compiled": lambda: compiled(*args),
                     "eager again": lambda: fn(*args), "graph": lambda: entry.compiled(leaves)}, pick)
    outs = entry.compiled(leaves)
    real, entry.compiled = entry.compiled, lambda _leaves: outs
    runner = getattr(entry, "runner", None)  # None: a jitgraph without generated runners (the "before" tree)
    generic = getattr(compiled, "_dispatch", None)
    real_build = entry.build
    s = alternating({
        "stubbed call": lambda: compiled(*args),
        "stub alone": lambda: entry.compiled(leaves),
        "runner": (lambda: runner(args, {})) if runner is not None else lambda: entry.compiled(leaves),
        "build": lambda: real_build(outs, leaves, args, {}),
        "generic path": (lambda: generic(args, {})) if generic is not None else lambda: compiled(*args),
        "key": lambda: make_key(args, {}, []),
        "table lookup": lambda: compiled._table.get(key),
        "alias check": lambda: alias_pattern(leaves),
    }, pick)
    entry.compiled = real
    us = 1e6
    overhead = t["compiled"] - t["graph"]
    print(f"{name}  [{backend}, {pick.__name__} of {BLOCKS} alternating blocks of {NUMBER} calls]")
    print(f"  eager function        {t['eager'] * us:8.2f} us/call   (noise: eager vs itself "
          f"{abs(t['eager'] - t['eager again']) * us:.2f} us)")
    print(f"  compiled call         {t['compiled'] * us:8.2f} us/call   ({t['compiled'] / t['eager']:.2f}x eager, "
          f"{(t['compiled'] - t['eager']) * us:+.2f} us)")
    print(f"  compiled graph alone  {t['graph'] * us:8.2f} us/call")
    print(f"  dispatch overhead     {overhead * us:8.2f} us/call   (compiled call - graph alone; target <= 2 us)")
    print(f"    stubbed call - stub {(s['stubbed call'] - s['stub alone']) * us:8.2f} us   of which:")
    print(f"    runner (layout, guards, aliasing, hit count; result builder included) "
          f"{(s['runner'] - s['stub alone']) * us:.2f} us")
    print(f"    result builder      {s['build'] * us:8.2f} us")
    print(f"    __call__ frame      {(s['stubbed call'] - s['runner']) * us:8.2f} us")
    print(f"  generic path (no runner), for comparison: {(s['generic path'] - s['stub alone']) * us:.2f} us "
          f"(key {s['key'] * us:.2f}, table lookup {s['table lookup'] * us:.2f}, alias check "
          f"{s['alias check'] * us:.2f})")
    print(f"  cache_info            {compiled.cache_info()}")


def main() -> None:
    backend = next((a for a in sys.argv[1:] if not a.startswith("--")), "cpu")
    pick = min if "--min" in sys.argv else statistics.median
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(16).astype(np.float32) for _ in range(3))
    measure("three 16-element arrays: a * b + c", three_arrays, (a, b, c), backend, pick)
    params = {k: rng.standard_normal(16).astype(np.float32) for k in ("W1", "b1", "W2", "b2")}
    grads = {k: np.full(16, 1e-9, np.float32) for k in params}
    measure("SGD on a dict of 4 parameters (+ grads dict, float lr)", sgd, (params, grads, 1e-3), backend, pick)


if __name__ == "__main__":
    main()
