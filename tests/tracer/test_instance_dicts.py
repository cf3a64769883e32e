"""Attributes read and stored at trace time without creating the object's ``__dict__`` (tracer/instance_dicts.py):
the same values, guards and effects as eager NumPy, and the user's object stays as fast as before it was traced."""

from __future__ import annotations

import functools
import gc

import numpy as np
import pytest

import jitgraph
from jitgraph.tracer import instance_dicts


def _dict_is_visible() -> bool:
    """Whether this CPython shows a created ``__dict__`` among an object's referents (3.11, 3.12; 3.13 keeps the
    values inline beside it and lists those)."""
    o = _Plain()
    o.a = 1
    vars(o)
    return any(type(r) is dict for r in gc.get_referents(o))


class _Plain:
    pass


class _Layer:
    scale = 2.0  # a class attribute an instance may shadow

    def __init__(self) -> None:
        self.w = np.arange(3.0)
        self.calls = 0

    def helper(self, x):
        return x * self.scale

    def forward(self, x):
        self.out = self.helper(x) + self.w
        self.calls += 1
        return self.out


def test_tracing_a_method_leaves_the_object_without_a_dict() -> None:
    if not _dict_is_visible():
        pytest.skip("this CPython lists inline values even once __dict__ exists")
    layer, ref = _Layer(), _Layer()
    f = jitgraph.compile(_Layer.forward)
    for _ in range(3):
        np.testing.assert_array_equal(f(layer, np.ones(3)), _Layer.forward(ref, np.ones(3)))
    assert layer.calls == ref.calls == 3
    assert not any(type(r) is dict for r in gc.get_referents(layer))


def test_an_instance_attribute_shadowing_the_class_is_read_and_guarded() -> None:
    f = jitgraph.compile(_Layer.forward)
    layer, ref = _Layer(), _Layer()
    np.testing.assert_array_equal(f(layer, np.ones(3)), _Layer.forward(ref, np.ones(3)))
    for obj in (layer, ref):
        obj.scale = 5.0  # now the instance's own
    np.testing.assert_array_equal(f(layer, np.ones(3)), _Layer.forward(ref, np.ones(3)))
    layer.helper = ref.helper = lambda x: x - 1.0  # an instance attribute shadowing a method
    np.testing.assert_array_equal(f(layer, np.ones(3)), _Layer.forward(ref, np.ones(3)))
    del layer.helper, ref.helper
    np.testing.assert_array_equal(f(layer, np.ones(3)), _Layer.forward(ref, np.ones(3)))


def test_own_value_says_whether_the_instance_holds_the_name() -> None:
    layer = _Layer()
    assert instance_dicts.own_value(layer, "w", None) == (True, layer.w)
    assert instance_dicts.own_value(layer, "missing", None) == (False, None)
    assert instance_dicts.own_value(layer, "scale", _Layer.__dict__["scale"]) == (False, None)
    assert instance_dicts.own_value(layer, "helper", _Layer.__dict__["helper"]) == (False, None)
    layer.scale = 3.0
    assert instance_dicts.own_value(layer, "scale", _Layer.__dict__["scale"]) == (True, 3.0)
    vars(layer)  # once the dict exists, it answers
    assert instance_dicts.own_value(layer, "scale", _Layer.__dict__["scale"]) == (True, 3.0)
    assert instance_dicts.own_value(layer, "helper", _Layer.__dict__["helper"]) == (False, None)


class _Cached:
    def __init__(self) -> None:
        self.runs = 0

    @functools.cached_property
    def table(self):
        self.runs += 1
        return np.arange(3.0)


def _uses_cached(obj, x):
    return x + obj.table


def test_a_cached_property_getter_is_not_run_by_the_tracer() -> None:
    obj, ref = _Cached(), _Cached()
    f = jitgraph.compile(_uses_cached)
    for _ in range(3):
        np.testing.assert_array_equal(f(obj, np.ones(3)), _uses_cached(ref, np.ones(3)))
    assert obj.runs == ref.runs == 1
