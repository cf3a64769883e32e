"""Issue 19: stores to attributes whose assignment is not a plain ``__dict__`` write.

A ``__slots__`` member is written by C code alone (no user code, nothing else changes), so its store is recorded
and replayed after the graph like a ``__dict__`` entry: the function stays one graph. A property setter or a
class's own ``__setattr__`` runs user code that could read or write anything the rest of the trace reads, so
those stores still run the call eagerly: the setter runs exactly once per call, in order. Every case is compared
with eager NumPy on deep copies of the arguments, over three calls.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import jitgraph


class Slotted:
    __slots__ = ("other", "value")

    def __init__(self) -> None:
        self.value = None
        self.other = 0


class SlottedChild(Slotted):  # a subclass with a __dict__: the inherited slot is still a slot
    pass


class WithSetattr:
    def __init__(self) -> None:
        object.__setattr__(self, "log", [])

    def __setattr__(self, name, value):
        self.log.append((name, float(np.sum(value))))
        object.__setattr__(self, name, value)


class WithProperty:
    def __init__(self) -> None:
        self._v = np.zeros(3)
        self.sets = 0

    @property
    def v(self):
        return self._v

    @v.setter
    def v(self, value):
        self.sets += 1
        if np.any(value < 0):
            raise ValueError("negative")
        self._v = value * 1.0


def store_then_read(obj, x):
    obj.value = x * 3
    y = obj.value + 1  # the read after the store sees the stored value
    obj.value = y
    obj.other = 5
    return obj.value * 2


def store_returned(obj, x):
    y = x + 1
    obj.value = y
    return y  # the same object as obj.value, as in NumPy


def store_then_raise(obj, x):
    obj.value = x * 2
    return x.reshape(7)  # raises after the store: the eager rerun makes the store once


def store_setattr(obj, x):
    obj.value = x * 3
    return x


def store_property(obj, x):
    before = x.sum()
    obj.v = x * 3
    return obj.v + before


def _run(fn, make, calls: int = 3):
    base = make()
    eager_args, comp_args = copy.deepcopy(base), copy.deepcopy(base)
    compiled = jitgraph.compile(fn)
    for k in range(calls):
        x = np.arange(3.0) - (4.0 if k == 2 and fn is store_property else 0.0) + k
        results = []
        for f, args in ((fn, eager_args), (compiled, comp_args)):
            try:
                results.append(("ok", f(args[0], x.copy())))
            except Exception as exc:  # noqa: BLE001 - compared below
                results.append(("raised", f"{type(exc).__name__}: {exc}"))
        (ek, ev), (ck, cv) = results
        assert ek == ck, results
        if ek == "ok":
            np.testing.assert_array_equal(ev, cv)
        else:
            assert ev == cv
        yield k, eager_args[0], comp_args[0], results, compiled


@pytest.mark.parametrize("cls", [Slotted, SlottedChild])
def test_slot_store_is_one_graph(cls):
    for _, e, c, _, compiled in _run(store_then_read, lambda: (cls(),)):
        np.testing.assert_array_equal(e.value, c.value)
        assert e.other == c.other == 5
    assert compiled.cache_info().fallbacks == 0
    assert compiled.break_reasons() == []


def test_slot_store_keeps_identity():
    for _, e, c, results, _ in _run(store_returned, lambda: (Slotted(),)):
        assert results[0][1] is e.value
        assert results[1][1] is c.value


def test_slot_store_then_raise_stores_once():
    for _, e, c, results, _ in _run(store_then_raise, lambda: (Slotted(),)):
        assert results[0][0] == results[1][0] == "raised"
        np.testing.assert_array_equal(e.value, c.value)


def test_setattr_runs_once_per_call_in_order():
    for k, e, c, _, compiled in _run(store_setattr, lambda: (WithSetattr(),)):
        assert c.log == e.log and len(c.log) == k + 1
        np.testing.assert_array_equal(e.value, c.value)
    assert any("__setattr__" in str(b) for b in compiled.break_reasons())


def test_property_setter_runs_once_and_raises_as_eager():
    for k, e, c, results, _ in _run(store_property, lambda: (WithProperty(),)):
        assert c.sets == e.sets == k + 1  # the setter ran once per call, the raising one included
        np.testing.assert_array_equal(e._v, c._v)
        assert (results[0][0] == "raised") == (k == 2)
