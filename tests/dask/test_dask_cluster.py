"""Compiled functions on a real cluster: ``LocalCluster(n_workers=2, processes=True, threads_per_worker=1)``, one
for the module, its workers sharing one kernel cache directory (``JITGRAPH_CACHE_DIR``).

Covered: map_blocks of a fused elementwise function and of a row softmax (equal to NumPy), cross-chunk mean/var,
a ``__main__`` function shipped by value (guards, eager fallback and explain work on the worker), the shared cache
(the second worker's first call compiles nothing, read from the backend's counters), and the training example.
"""

from __future__ import annotations

import importlib
import random
import site
import sys
from pathlib import Path

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
import dask
import dask_helpers as H

import jitgraph
import jitgraph.dask as jd
from jitgraph.dask import pickling

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[1] / "examples"
RNG = np.random.default_rng(1)


@pytest.fixture(scope="module")
def client():
    # The workers share this process's kernel cache: kernels the in-process tests compiled load there (Numba
    # compiles dominate a cold run), and the shared-cache tests make kernels of their own that no run has compiled.
    cache = jd.worker_cache_dir()
    try:
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None, env={"JITGRAPH_CACHE_DIR": str(cache)})
    except Exception as exc:  # noqa: BLE001 - no sockets, no processes: nothing to test here
        pytest.skip(f"distributed cannot start a LocalCluster here: {exc}")
    with cluster, distributed.Client(cluster) as c:
        c.wait_for_workers(2, timeout=60)
        c.run(site.addsitedir, str(HERE))  # workers import dask_helpers (and the example) by name
        c.run(site.addsitedir, str(EXAMPLES))
        yield c


def test_map_blocks_fused_and_softmax_equal_numpy(client):
    xn = RNG.normal(size=(400, 64)).astype(np.float32)
    yn = RNG.normal(size=(400, 64)).astype(np.float32)
    x, y = da.from_array(xn, chunks=(100, 64)), da.from_array(yn, chunks=(100, 64))
    fused, soft = dask.compute(jd.map_blocks(H.fused, x, y), jd.map_blocks(H.softmax, x))
    np.testing.assert_allclose(fused, H.fused_numpy(xn, yn), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(soft, H.softmax_numpy(xn), rtol=1e-5, atol=1e-7)
    ran_on = client.who_has()
    assert len({w for ws in ran_on.values() for w in ws}) <= 2


def test_mean_var_across_chunks(client):
    data = (RNG.normal(size=(500, 20)) * 2 + 300).astype(np.float32)
    x = da.from_array(data, chunks=(128, 20))  # an edge block of 116 rows
    m, v = dask.compute(*jd.mean_var(x, axis=0, ddof=1))
    np.testing.assert_allclose(m, data.astype(np.float64).mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(v, data.astype(np.float64).var(axis=0, ddof=1), rtol=1e-9)


def test_main_function_runs_on_a_worker_with_guards_fallback_and_explain(client):
    namespace: dict = {"__name__": "__main__", "np": np, "jitgraph": jitgraph}
    exec("@jitgraph.compile\ndef scaled(x):\n    return np.cos(x) * 2.0 - x\n", namespace)  # noqa: S102
    cf = namespace["scaled"]
    assert pickling.by_value(cf)
    a, b = np.linspace(0, 1, 8), np.linspace(0, 1, 5)
    out = client.submit(H.behaviour_on_worker, cf, a, b).result()
    np.testing.assert_allclose(out["results"][0], np.cos(a) * 2.0 - a)
    assert out["misses"] == 2 and out["recompiles"] == 1 and "8 -> 5" in out["reasons"][0]
    assert "Graph count: 2" in out["explain"] and "8 -> 5" in out["explain"]
    broken = client.submit(H.behaviour_on_worker, H.noisy, a, b).result()
    assert broken["breaks"] >= 1 and broken["fallbacks"] == 2
    np.testing.assert_array_equal(broken["results"][1], b * 2.0)


def test_second_worker_loads_every_kernel_from_the_shared_cache(client):
    first, second = jd.worker_addresses(client)
    x = np.linspace(-2, 2, 1000)
    k = 1.0 + random.random()  # a kernel constant no earlier run has compiled, in this cache directory or another
    probe = H.make_probe(k)
    a = client.submit(H.probe_on_worker, probe, x, workers=[first], pure=False).result()
    b = client.submit(H.probe_on_worker, probe, x, workers=[second], pure=False).result()
    assert a["cache_dir"] == b["cache_dir"]
    assert a["misses"] == 1 and b["misses"] == 1  # each worker traced its own first call
    assert a["delta"]["modules_written"] >= 1 and a["delta"]["compiled"] >= 1  # the first worker compiled
    assert b["delta"]["modules_written"] == 0 and b["delta"]["compiled"] == 0  # the second compiled nothing...
    assert b["delta"]["cache_hits"] >= 1 and b["delta"]["modules_loaded"] >= 1  # ...it loaded what the first wrote
    np.testing.assert_allclose(b["result"], np.sqrt(np.abs(x * k - 0.6789)) + x * 0.4242)


def test_warm_then_concurrent_first_calls_compile_nothing(client):
    x = np.linspace(-1, 1, 500)
    probe = H.make_probe(2.0 + random.random())
    warmed = jd.warm(client, probe, x)
    assert warmed["compiled"] >= 1
    workers = jd.worker_addresses(client)
    calls = [client.submit(H.probe_on_worker, probe, x, workers=[w], pure=False) for w in workers]
    warm_one, other = (call.result() for call in calls)  # at once, on both workers
    assert warm_one["misses"] == 1  # the warmed worker kept the function it rebuilt: no second trace
    assert warm_one["delta"]["compiled"] == 0 and warm_one["delta"]["modules_loaded"] == 0
    assert other["delta"]["compiled"] == 0 and other["delta"]["cache_hits"] >= 1


def test_training_example_equals_one_process_training(client):
    sys.path.insert(0, str(EXAMPLES))
    try:
        example = importlib.import_module("dask_training")
    finally:
        sys.path.remove(str(EXAMPLES))
    result = example.run(client, small=True)  # asserts agreement with one-process training itself
    assert result["workers"] == 2 and result["losses"][-1] < result["losses"][0]
