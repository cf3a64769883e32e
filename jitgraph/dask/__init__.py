"""Dask integration: compiled functions as Dask tasks (see README "Dask").

* :mod:`.pickling`  compiled functions travel to workers (by reference, or by value from ``__main__``);
* :mod:`.blocks`    :func:`map_blocks`: output meta, dtype and chunks found by tracing one block, and
  :func:`plan` / ``explain`` of what a chunked call will do;
* :mod:`.moments`   cross-chunk mean and variance from partial moments (``da.reduction``);
* :mod:`.stats`     the kernel-cache statistics of each worker (what compiled, what came from the disk cache);
* :mod:`.worker_env` worker processes launch kernels on one thread per task, as Dask launches BLAS.

This package sits at the top layer: it imports the driver (``jitgraph.jit``) and Dask, and nothing imports it.
"""

from jitgraph.dask.pickling import install as _install_pickling
from jitgraph.dask.worker_env import install as _install_worker_env

_install_pickling()
_install_worker_env()

from jitgraph.dask.blocks import BlockTrace, ChunkPlanError, Plan, map_blocks, plan
from jitgraph.dask.moments import mean, mean_var, var
from jitgraph.dask.stats import cache_stats, cluster_cache_stats, warm, worker_addresses, worker_cache_dir

explain = plan  # ``print(jitgraph.dask.explain(f, x))``: what a chunked call will do

__all__ = ["BlockTrace", "ChunkPlanError", "Plan", "cache_stats", "cluster_cache_stats", "explain", "map_blocks",
           "mean", "mean_var", "plan", "var", "warm", "worker_addresses",
           "worker_cache_dir"]
