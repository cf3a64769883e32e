"""A Dask worker unpickles a task's arguments for every task: a compiled function among them must come back as the
same object each time, or every task traces and loads kernels again (the compiled training step of
``examples/dask_training.py`` ran slower than eager NumPy under Dask for this reason). Dask's own serializer is
used here, in one process: no cluster needed."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

pytest.importorskip("distributed")

from distributed.protocol import pickle as dask_pickle

import jitgraph
import jitgraph.dask  # registers the reducers and the workers' environment
from jitgraph.dask import worker_env


def scaled_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * 2.0 + b).sum(axis=0)


# Compiled under another name, as examples/dask_training.py's ``shard_gradient``: its module and name lead to the
# plain function, so it cannot travel by name and is rebuilt from the function and its options.
compiled_elsewhere = jitgraph.compile(scaled_sum, cache_limit=5)


@pytest.mark.parametrize("dumps, loads", [(pickle.dumps, pickle.loads), (dask_pickle.dumps, dask_pickle.loads)],
                         ids=["pickle", "dask"])
def test_every_task_gets_the_same_compiled_object(dumps, loads):
    data = dumps(compiled_elsewhere)
    assert b"scaled_sum" in data and len(data) < 400  # the function by reference, not by value
    first, second = loads(data), loads(dumps(compiled_elsewhere))
    assert first is second and first is not compiled_elsewhere and first.cache_limit == 5
    a, b = np.ones((4, 3)), np.arange(12.0).reshape(4, 3)
    hits = first.cache_info().hits
    for _ in range(3):  # as three tasks would, each with its own unpickled argument
        np.testing.assert_allclose(loads(data)(a, b), scaled_sum(a, b))
    info = first.cache_info()
    assert info.misses == 1 and info.hits >= hits + 2  # traced once (by either test), then reused


def test_workers_launch_kernels_on_one_thread_per_task():
    import dask

    environ = dask.config.get(worker_env.KEY)
    assert environ["JITGRAPH_NUM_THREADS"] == 1
    assert environ.get("OMP_NUM_THREADS") == 1  # Dask's own entries are kept


@pytest.mark.parametrize("mode", [True, False])
def test_rebuilt_function_keeps_its_dynamic_mode(mode) -> None:
    """Regression: the reducers rebuilt a function from its options alone and lost ``dynamic=`` (kept apart from
    the options the backends see), so a ``dynamic=False`` function became automatic on the worker."""
    f = jitgraph.compile(scaled_sum, dynamic=mode)
    for dumps, loads in ((pickle.dumps, pickle.loads), (dask_pickle.dumps, dask_pickle.loads)):
        g = loads(dumps(f))
        assert g.dynamic is mode and g.options == f.options
