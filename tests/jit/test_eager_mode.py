"""Eager mode (jitgraph/jit/eager_mode.py): a function whose calls all run eagerly skips its checks on most calls,
still answers as NumPy does, counts every call, and compiles a new layout within CHECK_EVERY calls."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import jitgraph
from jitgraph import device_arrays
from jitgraph.jit import eager_mode, tiering
from jitgraph.jit.breaks import BreakReason
from tests.realworld import corpus, corpus_numeric, harness
from tests.thread_storm import storm

MAY_EXIST = device_arrays.may_exist  # the real one (the fixture below replaces it)
WARM = 3 * eager_mode.TICK  # eager calls after which a function whose every call runs eagerly is in eager mode


@pytest.fixture(autouse=True)
def cpu_only_process(monkeypatch):
    """The suite's process has imported numba.cuda (the CUDA tests run in it), and eager mode is entered only where
    no device array can exist (``device_arrays.may_exist``): these tests run as a CPU-only process does."""
    monkeypatch.setattr(device_arrays, "may_exist", lambda: False)


def _axpy(a, x, y):
    return a * x + y


def _scaled(x, scale=2.0, *, shift=0.0):
    return x * scale + shift


def _store_through_property(obj, x):
    corpus.store_property(obj, x)  # a property setter: user code the tracer does not replay, the call runs eagerly
    return obj.v.sum()


def _in_eager_mode(f) -> bool:
    return hasattr(f.func, "checked")


def _demoted(fn, *args, **options):
    f = jitgraph.compile(fn, backend="cpu", tier_down=False, **options)
    f(*args)
    f.entries[0].demote(BreakReason("demoted by the test", None, None))  # as a measured tier-down does
    return f


def test_demoted_function_enters_eager_mode_and_counts_every_call() -> None:
    x, y = np.arange(4.0), np.ones(4)
    f = _demoted(_axpy, 2.0, x, y)
    for _ in range(WARM):
        np.testing.assert_array_equal(f(2.0, x, y), _axpy(2.0, x, y))
    assert _in_eager_mode(f)
    before = f.cache_info()
    for k in range(1000):
        np.testing.assert_array_equal(f(float(k), x, y), _axpy(float(k), x, y))
    after = f.cache_info()
    assert after.hits - before.hits == 1000 and after.fallbacks - before.fallbacks == 1000
    assert after.misses == before.misses == 1  # float values share the entry
    assert "Eager mode: calls run the function itself" in f.explain().summary()


def test_eager_mode_compiles_a_new_layout_within_check_every_calls() -> None:
    x, y = np.arange(4.0), np.ones(4)
    f = _demoted(_axpy, 2.0, x, y)
    for _ in range(WARM):
        f(2.0, x, y)
    assert _in_eager_mode(f)
    big, ones = np.arange(100.0), np.ones(100)
    for _ in range(eager_mode.CHECK_EVERY):
        np.testing.assert_array_equal(f(3.0, big, ones), _axpy(3.0, big, ones))
    assert f.cache_info().misses == 2 and f.entries[-1].mode == "graph"
    assert not _in_eager_mode(f)  # the new graph entry's call function took over
    np.testing.assert_array_equal(f(3.0, big, ones), _axpy(3.0, big, ones))


def test_a_graph_entry_still_hit_keeps_the_function_out_of_eager_mode() -> None:
    x, y = np.arange(4.0), np.ones(4)
    f = _demoted(_axpy, 2.0, x, y)
    big, ones = np.arange(100.0), np.ones(100)
    f(2.0, big, ones)  # a graph entry for the larger layout
    for _ in range(WARM):
        f(2.0, x, y)
        f(2.0, big, ones)
    assert not _in_eager_mode(f)
    assert f.entries[1].mode == "graph"


def test_eager_mode_leaves_when_a_checked_call_runs_a_graph() -> None:
    x, y = np.arange(4.0), np.ones(4)
    f = _demoted(_axpy, 2.0, x, y)
    big, ones = np.arange(100.0), np.ones(100)
    f(2.0, big, ones)  # graph entry 2, then only small calls: eager mode
    for _ in range(WARM):
        f(2.0, x, y)
    assert _in_eager_mode(f)
    for _ in range(eager_mode.CHECK_EVERY):  # the checked one among these runs entry 2's graph
        np.testing.assert_array_equal(f(2.0, big, ones), _axpy(2.0, big, ones))
    assert not _in_eager_mode(f)
    assert f.cache_info().misses == 2


def test_an_eager_entry_of_a_break_enters_eager_mode_with_the_same_effects() -> None:
    f = jitgraph.compile(_store_through_property)
    objs, ref = corpus.WithProperty(), corpus.WithProperty()
    x = np.arange(3.0)
    for k in range(WARM + 10):
        assert f(objs, x + k) == _store_through_property(ref, x + k)
        np.testing.assert_array_equal(objs.v, ref.v)
    assert f.entries[0].mode == "eager" and _in_eager_mode(f)


def test_eager_mode_passes_keywords_defaults_and_raises_as_the_function() -> None:
    x = np.arange(3.0)
    f = _demoted(_scaled, x)
    for _ in range(WARM):
        f(x)
    assert _in_eager_mode(f)
    for _ in range(2 * eager_mode.CHECK_EVERY):  # the checked calls among them too
        np.testing.assert_array_equal(f(x), _scaled(x))
        np.testing.assert_array_equal(f(x, 3.0), _scaled(x, 3.0))
        np.testing.assert_array_equal(f(x, shift=1.0), _scaled(x, shift=1.0))
        np.testing.assert_array_equal(f(x=x, scale=0.5), _scaled(x=x, scale=0.5))
    with pytest.raises(TypeError):
        f()
    with pytest.raises(ValueError):
        f(np.ones(2), np.ones(3))


def test_grad_functions_never_enter_eager_mode() -> None:
    assert jitgraph.grad(lambda x: (x * x).sum()).skips_to_eager is False


def test_eager_mode_under_threads() -> None:
    x, y = np.arange(4.0), np.ones(4)
    f = _demoted(_axpy, 2.0, x, y)

    def work(seed: int) -> None:
        for k in range(WARM):
            a = float(seed * 1000 + k)
            np.testing.assert_array_equal(f(a, x, y), _axpy(a, x, y))

    storm(4, work)
    info = f.cache_info()
    assert info.hits == 4 * WARM and info.fallbacks == 4 * WARM


def _step(w, g, /, lr=0.1, decay=0.0):
    return w - lr * (g + decay * w)


def _message(fn, *args, **kwargs) -> str:
    with pytest.raises(TypeError) as info:
        fn(*args, **kwargs)
    return str(info.value)


def test_mirrored_parameters_bind_and_fail_as_the_function_does() -> None:
    w, g = np.arange(3.0), np.ones(3)
    f = _demoted(_step, w, g)
    for _ in range(WARM):
        f(w, g)
    assert _in_eager_mode(f) and f.func.__name__ == "_step"  # the function's own parameters (no packing)
    for _ in range(2 * eager_mode.CHECK_EVERY):
        np.testing.assert_array_equal(f(w, g), _step(w, g))
        np.testing.assert_array_equal(f(w, g, 0.2), _step(w, g, 0.2))
        np.testing.assert_array_equal(f(w, g, decay=0.5), _step(w, g, decay=0.5))
        np.testing.assert_array_equal(f(w, g, lr=0.3, decay=0.1), _step(w, g, lr=0.3, decay=0.1))
    for args, kwargs in [((), {}), ((w,), {}), ((w, g, 0.1, 0.2, 0.3), {}), ((w,), {"g": g}), ((w, g), {"x": 1})]:
        assert _message(f, *args, **kwargs) == _message(_step, *args, **kwargs)


@pytest.mark.parametrize("name", ["Tanh.forward", "Dense.forward", "SGD.update", "store_attr[property]", "with_random",
                                  "coo_spmv"])
def test_corpus_functions_stay_exact_in_eager_mode(name, monkeypatch):
    """Corpus cases (tests/realworld) the probe demotes or that break: every call compared with eager NumPy on deep
    copies (results, arguments, objects, globals, identity) through the probe, into eager mode and past its checked
    calls."""
    monkeypatch.setenv("JITGRAPH_TIER_DOWN", "1")
    case = next(c for c in corpus.CASES + corpus_numeric.CASES if c.name == name)
    out = harness.run_case(case, backend="cpu", calls=tiering.PROBE_CALLS + WARM + 2 * eager_mode.CHECK_EVERY)
    assert out.wrong == []


def test_no_eager_mode_where_device_arrays_may_exist(monkeypatch):
    """Device arguments must meet the checks that refuse to run a function eagerly on them (refusals.py)."""
    x, y = np.arange(4.0), np.ones(4)
    monkeypatch.setattr(device_arrays, "may_exist", lambda: True)
    f = _demoted(_axpy, 2.0, x, y)
    for _ in range(WARM):
        f(2.0, x, y)
    assert not _in_eager_mode(f)
    monkeypatch.setattr(device_arrays, "may_exist", lambda: False)
    for _ in range(WARM):
        f(2.0, x, y)
    assert _in_eager_mode(f)
    monkeypatch.setattr(device_arrays, "may_exist", lambda: True)  # numba.cuda imported since: the next checked
    for _ in range(eager_mode.CHECK_EVERY):  # call leaves eager mode
        np.testing.assert_array_equal(f(2.0, x, y), _axpy(2.0, x, y))
    assert not _in_eager_mode(f)


def test_may_exist_follows_the_imported_modules(monkeypatch):
    monkeypatch.delitem(sys.modules, "numba.cuda", raising=False)
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert MAY_EXIST() is False
    monkeypatch.setitem(sys.modules, "cupy", types.ModuleType("cupy"))
    assert MAY_EXIST() is True


class _Scale:
    def __init__(self, k: float) -> None:
        self.k = k

    def apply(self, x):
        return x * self.k

    def __call__(self, x, *more):
        return x * self.k + sum(more)


def _factorial_sum(x, n):
    return x if n == 0 else x + _FACT(x, n - 1)


_FACT = None


@pytest.mark.parametrize("how", ["bound method", "callable object", "varargs", "recursive"])
def test_eager_mode_for_other_callables(how):
    global _FACT
    x = np.arange(3.0)
    s = _Scale(2.0)
    fn, args = {"bound method": (s.apply, (x,)), "callable object": (s, (x,)), "varargs": (s, (x, 1.0, 2.0)),
                "recursive": (_factorial_sum, (x, 3))}[how]
    f = jitgraph.compile(fn, backend="cpu", tier_down=False)
    if how == "recursive":
        _FACT = f
    f(*args)
    for entry in f.entries:
        entry.demote(BreakReason("demoted by the test", None, None))
    f._runners = f._runners  # as a demotion's publication does: every entry eager, eager mode at once
    assert _in_eager_mode(f)
    for _ in range(2 * eager_mode.CHECK_EVERY):
        np.testing.assert_array_equal(f(*args), fn(*args))
    with pytest.raises(TypeError):
        f()
