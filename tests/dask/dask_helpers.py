"""Functions the Dask tests run on workers. Workers import this module by name (the cluster fixture puts this
directory on their ``sys.path``), so compiled functions here travel by reference, as in a user's package."""

from __future__ import annotations

from typing import Any

import numpy as np

import jitgraph
from jitgraph.dask import cache_stats, worker_cache_dir


@jitgraph.compile
def fused(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.tanh(x * 2.0 + y) * 0.5 + np.exp(-x * x)


def fused_numpy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.tanh(x * 2.0 + y) * 0.5 + np.exp(-x * x)


@jitgraph.compile
def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def softmax_numpy(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@jitgraph.compile
def noisy(x: np.ndarray) -> np.ndarray:
    """A graph break (``x.tolist()`` needs the data at trace time): each call runs eagerly, on a worker too
    (``np.unique`` splits and resumes since issue 18)."""
    n = len(x.tolist())
    return x * 2.0 + (n - n)


def make_probe(k: float) -> Any:
    """A compiled closure whose kernel holds ``k`` as a literal: a kernel no earlier run compiled when ``k`` is
    new (for the shared-cache test, whatever the cache directory already holds)."""
    @jitgraph.compile
    def cache_probe(x: np.ndarray) -> np.ndarray:
        return np.sqrt(np.abs(x * k - 0.6789)) + x * 0.4242
    return cache_probe


def probe_on_worker(probe: Any, x: np.ndarray) -> dict[str, Any]:
    """Call ``probe`` here and say what the kernel cache did during that first call."""
    before = cache_stats()
    y = probe(x)
    after = cache_stats()
    return {"delta": {k: after[k] - before[k] for k in after}, "result": y, "cache_dir": worker_cache_dir(),
            "misses": probe.cache_info().misses}


def behaviour_on_worker(cf: Any, a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    """A compiled function's guards (a second shape recompiles), its explain text and its counters, on a worker."""
    ra, rb = cf(a), cf(b)
    info = cf.cache_info()
    return {"results": (ra, rb), "misses": info.misses, "recompiles": info.recompiles, "fallbacks": info.fallbacks,
            "reasons": cf.recompile_reasons(), "explain": str(cf.explain()), "breaks": len(cf.break_reasons())}
