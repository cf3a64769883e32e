"""One thread per task on Dask workers: kernels launched by a worker's task use that task's core only.

A Dask worker runs ``nthreads`` tasks at once, and a ``LocalCluster`` sizes workers x threads to the cores. Dask
therefore sets ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS`` and ``OPENBLAS_NUM_THREADS`` to 1 in every worker process it
spawns (``distributed.nanny.pre-spawn-environ``): a task that used every core would fight the other tasks and the
other workers for them. jitgraph's kernel launches split large loops over a pool of threads sized to the cores
(``jitgraph/backends/cpu/threads.py``), so under Dask two workers on two cores each ran kernels on two threads:
four busy threads on two cores, while the eager NumPy beside them ran on one thread per worker. :func:`install`
adds ``JITGRAPH_NUM_THREADS=1`` to the same setting, so workers spawned by a nanny (a ``LocalCluster`` with
processes, ``dask worker``) started from this process launch kernels as Dask launches BLAS. As with Dask's own
variables, a value already in the environment wins; a worker started elsewhere (``dask worker`` from a shell)
reads its own environment: set ``JITGRAPH_NUM_THREADS`` there.
"""

from __future__ import annotations

import dask

__all__ = ["KEY", "install"]

KEY = "distributed.nanny.pre-spawn-environ"


def install() -> None:
    """Add ``JITGRAPH_NUM_THREADS=1`` to Dask's pre-spawn environment of worker processes (idempotent; a value
    already configured there is kept)."""
    environ = dict(dask.config.get(KEY, default={}) or {})
    if "JITGRAPH_NUM_THREADS" not in environ:
        environ["JITGRAPH_NUM_THREADS"] = 1
        dask.config.set({KEY: environ})
