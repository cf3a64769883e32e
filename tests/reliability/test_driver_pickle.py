"""Issue 17, item 6: pickling. A module-level ``@jitgraph.compile`` function pickles by reference (module and
qualified name), as a plain function does, so ``multiprocessing`` with the spawn start method can send it to its
workers; each worker compiles its own. The pool is bounded by a timeout and always terminated."""

from __future__ import annotations

import multiprocessing
import pickle
from typing import Any

import driver_pickle_helpers as H
import numpy as np
import pytest

import jitgraph

POOL_S = 240.0  # two spawned workers import numpy, Numba and jitgraph and compile once each


def test_module_level_compiled_function_pickles_by_reference() -> None:
    for f in (H.step, H.scaled):
        data = pickle.dumps(f)
        assert pickle.loads(data) is f
    x = np.arange(5.0)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(H.step))(x), H.step.fn(x))


def test_compiled_method_and_unreachable_function_pickle() -> None:
    model = pickle.loads(pickle.dumps(H.Model(2.0)))
    x = np.arange(4.0)
    np.testing.assert_array_equal(model.forward(x), x * 2.0 + 1.0)
    bound = pickle.loads(pickle.dumps(H.Model(3.0).forward))
    np.testing.assert_array_equal(bound(x), x * 3.0 + 1.0)
    # Not reachable under its name: rebuilt from the function it wraps, with the same options (a fresh cache).
    f = H.plain_compiled_elsewhere["f"]
    g = pickle.loads(pickle.dumps(f))
    assert g is not f and isinstance(g, jitgraph.jit.CompiledFunction)
    assert (g.fn, g.backend, g.cache_limit) == (H.plain, "eager", 8)
    np.testing.assert_array_equal(g(x), H.plain(x))


def test_a_local_compiled_function_fails_as_a_local_function_does() -> None:
    def local(x: Any) -> Any:
        return x

    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(jitgraph.compile(local))


@pytest.mark.parametrize("target", ["compiled", "wrapper"])
def test_spawn_pool_maps_a_decorated_module_level_function(target: str, tmp_path: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JITGRAPH_CACHE_DIR", str(tmp_path / "cache"))  # inherited by the spawned workers
    inputs = [np.linspace(0.0, k, 16 + k) for k in range(6)]
    fn = H.step if target == "compiled" else H.apply_step
    pool = multiprocessing.get_context("spawn").Pool(2)
    try:
        results = pool.map_async(fn, inputs).get(timeout=POOL_S)
    finally:
        pool.terminate()
        pool.join()
    for x, r in zip(inputs, results):
        np.testing.assert_array_equal(r, H.step.fn(x))
