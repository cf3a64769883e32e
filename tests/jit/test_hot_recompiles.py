"""Hot recompiles (jit/hot_recompiles.py): a function whose guards fail on every call stops recompiling after a few
calls and runs eagerly, exactly; a graph measured slower is not retraced for another aliasing; a disabled function's
miss does not run the generic lookup."""

from __future__ import annotations

import copy

import numpy as np

import jitgraph
from jitgraph.jit import hot_recompiles
from jitgraph.jit.breaks import BreakReason


class _Stack:
    def __init__(self) -> None:
        self.items = [np.zeros(3)]

    def push(self, x):
        self.items.append(x * 2)
        return self.items[0] + x


class _Layer:
    def __init__(self, n: int) -> None:
        self.w = np.ones(n)

    def forward(self, x):
        return x * self.w.sum()


def _same(a, b) -> None:
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def test_growing_state_stops_recompiling_and_stays_exact() -> None:
    f = jitgraph.compile(_Stack.push, backend="cpu")
    eager_s, comp_s = _Stack(), _Stack()
    x = np.arange(3.0)
    for _ in range(12):
        np.testing.assert_array_equal(f(comp_s, x), _Stack.push(eager_s, x))
    _same(eager_s.items, comp_s.items)
    info = f.cache_info()
    assert info.recompiles == hot_recompiles.HOT_STREAK  # not cache_limit - 1: the catch-all took over
    assert f.entries[-1].mode == "eager" and "every call" in f.entries[-1].break_reason.reason
    assert info.fallbacks == 12 - hot_recompiles.HOT_STREAK  # the calls from the catch-all on
    assert all(e.retired for e in f.entries[:-1]) and len(f._runners) == 1  # one layout check, then eager


def test_layers_of_one_class_are_not_hot() -> None:
    f = jitgraph.compile(_Layer.forward, backend="cpu")
    layers = [_Layer(n) for n in (2, 3, 4, 5, 6)]
    x = np.arange(4.0)
    for _ in range(2):
        for layer in layers:
            np.testing.assert_array_equal(f(layer, x), _Layer.forward(layer, x))
    assert all(e.mode == "graph" for e in f.entries)


STORE: dict = {}


def _keep(x):
    STORE["last"] = x
    return x * 2


def test_measured_eager_entry_takes_other_aliasing() -> None:
    f = jitgraph.compile(_keep, backend="cpu", tier_down=False)
    x = np.arange(4.0)
    STORE.clear()
    f(x)
    f(x)  # entry 2: STORE["last"] is x
    second = f.entries[1]
    second.measured = "measured: compiled 2 us, eager 1 us (set by the test)"  # as tiering._decide demotes
    second.demote(BreakReason(second.measured, None, None))
    for _ in range(4):
        y = np.arange(4.0)
        STORE["last"] = np.zeros(4)  # another array: only the aliasing differs from entry 2's call
        np.testing.assert_array_equal(f(y), y * 2)
        assert STORE["last"] is y
    assert len(f.entries) == 3 and f.entries[2].mode == "eager" and f.entries[2].probe is None
    assert second.retired and not f.entries[0].retired  # the twin took its place


def test_disabled_miss_skips_the_generic_lookup(monkeypatch) -> None:
    f = jitgraph.compile(_Stack.push, backend="cpu", cache_limit=2)
    s, e = _Stack(), _Stack()
    x = np.arange(3.0)
    for _ in range(4):
        np.testing.assert_array_equal(f(s, x), _Stack.push(e, x))
    assert f._disabled and f._covered

    def no_find(*a, **k):
        raise AssertionError("the generic lookup ran on a disabled function's miss")

    monkeypatch.setattr(f, "_find", no_find)
    for _ in range(3):
        np.testing.assert_array_equal(f(s, x), _Stack.push(e, x))
    _same(copy.copy(e.items), s.items)


def _axpy(a, x, y):
    return a * x + y


def test_demoted_entry_calls_the_function_from_its_runner() -> None:
    f = jitgraph.compile(_axpy, backend="cpu", tier_down=False)
    x, y = np.arange(3.0), np.ones(3)
    f(2.0, x, y)
    f.entries[0].demote(BreakReason("demoted by the test", None, None))  # as a measured tier-down does
    for k in range(3):
        np.testing.assert_array_equal(f(2.0, x, y), _axpy(2.0, x, y))
    assert f.cache_info().fallbacks == 3 and f.cache_info().misses == 1
    assert 'if E.mode == "eager"' in f._call.source  # no _run_slow frame, no argument packing
