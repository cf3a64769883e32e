"""Kernel-cache statistics of this process and of every worker of a Dask cluster.

The CPU backend counts, per process, the kernel modules it wrote to and loaded from the disk cache and the
kernels Numba compiled or loaded from its cache (``jitgraph.backends.cpu.cache.STATS``). On a cluster sharing
``JITGRAPH_CACHE_DIR``, a worker that starts after another has compiled a function should show ``compiled == 0``
and ``modules_written == 0`` after its first call: that is what "compiled once per cluster" means, measured.

Workers whose first calls overlap compile once between them as well: the backend holds a per-kernel ``flock`` in
the cache directory around a kernel's first compile, so the others wait and load. Where the filesystem has no
``flock`` each of them compiles (correctly: files are published atomically); :func:`warm` avoids that: one worker
makes the first call, and the others then load.
"""

from __future__ import annotations

from typing import Any

from jitgraph.backends.cpu import cache as kernel_cache
from jitgraph.backends.cpu.cache_safety import cache_dir

__all__ = ["cache_stats", "cluster_cache_stats", "warm", "worker_cache_dir"]


def cache_stats() -> dict[str, int]:
    """This process's counts: ``modules_written``, ``modules_loaded``, ``compiled`` (Numba compiles),
    ``cache_hits`` (kernels loaded from Numba's disk cache)."""
    return dict(kernel_cache.STATS)


def worker_cache_dir() -> str:
    """The cache directory this process uses (to check that workers share one)."""
    return str(cache_dir())


def cluster_cache_stats(client: Any) -> dict[str, dict[str, int]]:
    """``{worker address: cache_stats()}`` for every worker of a ``distributed.Client``."""
    return client.run(cache_stats)


def _first_call(f: Any, args: tuple, kwargs: dict[str, Any]) -> dict[str, int]:
    before = cache_stats()
    f(*args, **kwargs)
    after = cache_stats()
    return {k: after[k] - before[k] for k in after}


def worker_addresses(client: Any) -> list[str]:
    """The addresses of ``client``'s workers, sorted, asked of the scheduler now. Not
    ``client.scheduler_info()["workers"]``: the client refreshes that dictionary in the background with worker
    totals only, so read right after its own refresh it can come back empty (seen as a ZeroDivisionError in CI)."""
    return sorted(client.nthreads())


def warm(client: Any, f: Any, *args: Any, **kwargs: Any) -> dict[str, int]:
    """Call ``f(*args, **kwargs)`` on one worker of ``client`` (arguments shaped like one block), so that its
    kernels are in the shared cache before the other workers' first calls; returns what that call did to the
    cache (``compiled``: kernels Numba compiled, ``cache_hits``: kernels loaded)."""
    first = worker_addresses(client)[0]
    return client.submit(_first_call, f, args, kwargs, workers=[first], pure=False).result()
