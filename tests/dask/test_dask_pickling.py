"""Compiled functions pickle for Dask: by reference from an importable module, by value from ``__main__`` and
closures (through cloudpickle), and what is rebuilt is a working compiled function. No cluster needed here."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

pytest.importorskip("dask.array")
cloudpickle = pytest.importorskip("cloudpickle")

import dask_helpers as H

import jitgraph
from jitgraph.dask import pickling
from jitgraph.jit import CompiledFunction


def main_function(source: str, name: str) -> CompiledFunction:
    """A compiled function defined as a script's ``__main__`` defines it (its module is ``__main__``)."""
    namespace: dict = {"__name__": "__main__", "np": np, "jitgraph": jitgraph}
    exec(source, namespace)  # noqa: S102 - test source
    return namespace[name]


SCRIPT = "@jitgraph.compile\ndef scaled(x):\n    return np.sin(x) * 3.0 + 1.0\n"


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
def test_module_level_function_round_trips_by_reference(dumps):
    data = dumps(H.fused)
    assert len(data) < 200 and b"dask_helpers" in data  # a name, not the code
    assert pickle.loads(data) is H.fused


def test_main_function_travels_by_value_through_cloudpickle():
    cf = main_function(SCRIPT, "scaled")
    assert cf.__module__ == "__main__" and pickling.by_value(cf)
    data = cloudpickle.dumps(cf)
    back = pickle.loads(data)
    assert isinstance(back, CompiledFunction) and back.fn.__module__ == "__main__"
    x = np.linspace(0, 1, 7)
    np.testing.assert_allclose(back(x), np.sin(x) * 3.0 + 1.0)
    assert back.cache_info().misses == 1
    assert pickle.loads(data) is back  # one object per payload per process: its compiled entries are reused


def test_plain_pickle_is_unchanged():
    """pickle treats a compiled function as it treats the plain function: ``__main__`` by reference (here, where
    this ``__main__`` has no such name, that fails), a closure not at all."""
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(main_function(SCRIPT, "scaled"))
    assert pickle.loads(pickle.dumps(H.fused)) is H.fused


def test_closures_and_options_travel_by_value():
    def make(k):
        @jitgraph.compile(cache_limit=3)
        def times_k(x):
            return x * k
        return times_k

    f = make(2.5)
    assert pickling.by_value(f)  # no importable name: the function travels, as cloudpickle sends closures
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(f)
    back = pickle.loads(cloudpickle.dumps(f))
    assert back is not f and back.cache_limit == 3
    np.testing.assert_allclose(back(np.ones(3)), 2.5)
    assert pickle.loads(cloudpickle.dumps(f)) is back  # one object per payload per process: entries are reused
    assert pickle.loads(cloudpickle.dumps(make(3.5)))(np.ones(2))[0] == 3.5  # another closure, another object


def test_dask_token_is_deterministic():
    from dask.base import tokenize

    assert tokenize(H.fused) == tokenize(pickle.loads(pickle.dumps(H.fused)))
    assert tokenize(H.fused) != tokenize(H.softmax)
