"""The generated runners (jitgraph/jit/dispatch.py) pick exactly the entry the generic key lookup would: every call
here is checked against eager NumPy and against the generic path (``_dispatch``) with the runners switched off."""

from __future__ import annotations

import linecache

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import jitgraph
from jitgraph.jit.dispatch import MISS, runner_source
from jitgraph.tracer.keys import make_key

G = np.arange(3.0)


def axpy(a, x, y):
    return a * x + y


def update(p, g):
    p -= 0.5 * g
    return p.sum()


def with_global(x):
    return x + G


def decay(x, t):
    return x * 0.9 ** t


def test_runner_source_is_readable_and_in_linecache() -> None:
    f = jitgraph.compile(axpy)
    x = np.ones(4)
    f(2.0, x, x.copy())
    source = runner_source(f.entries[0])
    assert source is not None and "x: float64[4]" in source and "def run_entry_1(A, KW):" in source
    filename = f.entries[0].runner.__code__.co_filename
    assert "".join(linecache.getlines(filename)) == source


@pytest.mark.parametrize("case", ["fresh", "same array", "views of one buffer", "overlapping views", "as_strided",
                                  "non-native byte order", "bool for float", "kwargs", "strided view"])
def test_calls_match_eager_and_the_generic_path(case: str) -> None:
    f = jitgraph.compile(update)
    base = np.arange(8.0)
    f(base[:4].copy(), np.ones(4))  # entry 1: two distinct owning arrays
    p, g = np.arange(4.0), np.ones(4)
    if case == "same array":
        g = p
    elif case == "views of one buffer":
        buf = np.arange(8.0)
        p, g = buf[:4], buf[4:]
    elif case == "overlapping views":
        buf = np.arange(8.0)
        p, g = buf[:4], buf[2:6]
    elif case == "as_strided":
        buf = np.arange(8.0)
        p = np.lib.stride_tricks.as_strided(buf, (4,), (8,))
        g = buf[4:]
    elif case == "non-native byte order":
        g = np.ones(4, dtype=">f8")
    elif case == "bool for float":
        g = np.ones(4, dtype=bool)
    elif case == "strided view":
        p = np.arange(8.0)[::2]
    p_eager, g_eager = p.copy(), g.copy() if g is not p else None
    if g_eager is None:
        expected = update(p_eager, p_eager)
    else:
        expected = update(p_eager, g_eager)
    if case == "kwargs":
        got = f(p=p, g=g)
    else:
        got = f(p, g)
    assert got == pytest.approx(expected)
    np.testing.assert_array_equal(p, p_eager)
    # The same call again: a runner takes it exactly when the generic path finds the same entry.
    p2 = p.copy() if case not in ("views of one buffer", "overlapping views", "as_strided") else p
    args = (p2, g if g is not p else p2)
    runners = f._runners
    taken = next((k for k, r in enumerate(runners) if r(args, {}) is not MISS), None)
    f._runners = ()
    generic_hits = f.cache_info().hits
    f(*args)
    assert f.cache_info().hits == generic_hits + 1
    if taken is not None:
        found = f._find(f.entries[taken].key, list(args), args, {})
        assert found is not None and found[0] is f.entries[taken]


def test_global_guard_and_extra_input() -> None:
    global G
    f = jitgraph.compile(with_global)
    x = np.ones(3)
    np.testing.assert_array_equal(f(x), with_global(x))
    old = G
    try:
        G = np.full(3, 7.0)  # same layout: the extra input is the new array
        np.testing.assert_array_equal(f(x), with_global(x))
        G = np.ones(4)  # another shape: a guard fails, recompile
        np.testing.assert_array_equal(f(np.ones(4)), np.ones(4) + G)
        np.testing.assert_array_equal(f(G), G + G)  # the argument is the global: other aliasing, another entry
        np.testing.assert_array_equal(f(G[::-1].copy()), G + G)
    finally:
        G = old
    assert f.cache_info().entries == 3


def test_dynamic_int_runner_and_demotion() -> None:
    f = jitgraph.compile(decay)
    x = np.ones(3)
    for t in range(5):
        np.testing.assert_allclose(f(x, t), decay(x, t))
    assert f.cache_info().entries == 2  # static, then t as a runtime value
    assert len(f._runners) == 1  # the static entry (t == 0) is unreachable now
    entry = f._runners[0].__globals__["E"]
    entry.demote(jitgraph.jit.BreakReason("test", None, None))
    fallbacks = f.cache_info().fallbacks
    np.testing.assert_allclose(f(x, 7), decay(x, 7))
    assert f.cache_info().fallbacks == fallbacks + 1


def test_python_values_keyed_by_value_and_type() -> None:
    def scale(x, k, flag, name):
        return x * k if flag and name == "a" else x - k

    f = jitgraph.compile(scale)
    x = np.ones(3)
    for args in [(x, 2, True, "a"), (x, 2, True, "a"), (x, 2, 1, "a"), (x, 2, False, "a"), (x, 2, True, "b")]:
        np.testing.assert_array_equal(f(*args), scale(*args))


def _argument(kind: str, base: np.ndarray) -> object:
    return {
        "f8[4]": lambda: np.arange(4.0),
        "f4[4]": lambda: np.arange(4, dtype=np.float32),
        ">f8[4]": lambda: np.arange(4.0).astype(">f8"),
        "f8[::-1]": lambda: np.arange(4.0)[::-1],
        "f8[::2]": lambda: np.arange(8.0)[::2],
        "base[:4]": lambda: base[:4],
        "base[2:6]": lambda: base[2:6],
        "base[4:]": lambda: base[4:],
        "float": lambda: 1.5,
        "np.float32": lambda: np.float32(2.5),
    }[kind]()


KINDS = ["f8[4]", "f4[4]", ">f8[4]", "f8[::-1]", "f8[::2]", "base[:4]", "base[2:6]", "base[4:]", "float",
         "np.float32"]


@given(st.lists(st.tuples(st.sampled_from(KINDS), st.sampled_from(KINDS + ["same"])), min_size=2, max_size=8))
def test_runners_pick_the_entry_the_generic_path_finds(calls: list[tuple[str, str]]) -> None:
    f = jitgraph.compile(axpy, backend="eager", cache_limit=64)
    for first, second in calls:
        base = np.arange(8.0)
        a = _argument(first, base)
        b = a if second == "same" else _argument(second, base)
        args = (2.0, a, b)
        leaves: list = []
        found = f._find(make_key(args, {}, leaves), leaves, args, {})
        taken = next((k for k, run in enumerate(f._runners) if run(args, {}) is not MISS), None)
        if taken is not None:
            assert found is not None and found[0] is f.entries[taken]
        elif found is not None and f.entries.index(found[0]) < len(f._runners):
            raise AssertionError("a runner missed its own entry")
        np.testing.assert_allclose(f(*args), axpy(*args))
