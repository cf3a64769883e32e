"""The call function (dispatch.build_call, issue 21): a compiled function's call runs its first entry's checks on
the parameters directly. Every call here is compared with eager NumPy, and the counters (hits, misses, recompiles,
fallbacks) with what the generic path reports for the same calls (runners switched off: ``_runners = ()``)."""

from __future__ import annotations

import pickle

import numpy as np

import jitgraph
from jitgraph.jit.breaks import BreakReason
from jitgraph.jit.function import CompiledFunction
from tests.thread_storm import storm

G = np.arange(4.0)


def relu(x):
    return np.maximum(x, 0)


@jitgraph.compile
def scaled(x, k=2.0):
    return x * k


def with_global(x):
    return x + G


def constant():
    return np.arange(3.0) * 2


def _calls(f, calls):
    """Each call's result (compared with eager) and the counters at the end."""
    for args, kwargs in calls:
        np.testing.assert_array_equal(f(*args, **kwargs), f.fn(*args, **kwargs))
    return f.cache_info()


def test_counters_match_the_generic_path() -> None:
    x, y = np.arange(-3.0, 3.0), np.arange(5.0)
    calls = [((x,), {}), ((x,), {}), ((), {"x": x}), ((x,), {}), ((y,), {}), ((y,), {}), ((x,), {}), ((), {"x": x})]
    compiled = jitgraph.compile(relu)
    fast = _calls(compiled, calls)
    assert compiled._call.__name__ == "call_entry_1"  # the first entry's call function took the positional calls
    generic = jitgraph.compile(relu)
    generic(x)
    generic._runners = ()  # every later call through the generic path
    assert generic._call == generic._generic
    real = generic._publish

    def publish(*a):  # keep it generic after each compile too
        real(*a)
        generic._runners = ()

    generic._publish = publish
    assert _calls(generic, calls[1:]) == fast
    assert fast.hits == 5 and fast.misses == 3 and fast.entries == 3  # a keyword call is its own entry, as before


def test_defaults_other_counts_and_the_second_entry() -> None:
    scaled.reset()
    x = np.arange(4.0)
    for args in [(x,), (x,), (x, 3.0), (x, 3.0), (x,), (x, 2.0)]:
        np.testing.assert_array_equal(scaled(*args), scaled.fn(*args))
    info = scaled.cache_info()
    assert info.entries == 2 and info.hits == 4 and info.misses == 2


def test_method_call() -> None:
    class Layer:
        def __init__(self) -> None:
            self.w = np.arange(3.0)

        @jitgraph.compile
        def forward(self, x):
            return x * 2 + 1

    layer, x = Layer(), np.ones(3)
    for _ in range(3):
        np.testing.assert_array_equal(layer.forward(x), x * 2 + 1)
    assert Layer.forward.cache_info().hits == 2


def test_no_arguments_and_a_global_guard() -> None:
    global G
    f = jitgraph.compile(constant)
    for _ in range(3):
        np.testing.assert_array_equal(f(), constant())
    assert f.cache_info().hits == 2 and f._call.__name__ == "call_entry_1"
    g = jitgraph.compile(with_global)
    x = np.ones(4)
    old = G
    try:
        g(x)
        G = np.full(4, 5.0)  # the same layout: the call function reads the new array
        np.testing.assert_array_equal(g(x), x + G)
        G = np.ones((2, 4))  # another shape: the guard fails, the generic path recompiles
        np.testing.assert_array_equal(g(x), x + G)
        np.testing.assert_array_equal(g(x), x + G)
    finally:
        G = old
    assert g.cache_info().entries == 2 and g.cache_info().hits == 2


def test_demotion_and_stub_take_effect_at_once() -> None:
    f = jitgraph.compile(relu)
    x = np.arange(-2.0, 4.0)
    f(x)
    entry = f.entries[0]
    marker = np.full(6, 42.0)
    real, entry.compiled = entry.compiled, lambda leaves: [marker]
    assert f(x) is marker
    entry.compiled = real
    entry.demote(BreakReason("test", None, None))
    np.testing.assert_array_equal(f(x), relu(x))
    assert f.cache_info().fallbacks == 1


def test_threads_share_the_call_function() -> None:
    f = jitgraph.compile(relu)
    arrays = [np.arange(-5.0, n) for n in (3, 4, 5)]  # three shapes: entries published while others call

    def work(k: int) -> None:
        for i in range(60):
            a = arrays[(i + k) % 3]
            np.testing.assert_array_equal(f(a), relu(a))

    storm(4, work)
    info = f.cache_info()
    assert info.hits + info.misses == 240 and info.entries + info.size_instances == 3


def test_pickled_by_type_and_name() -> None:
    assert type(scaled) is CompiledFunction  # copyreg tables are keyed by the exact type
    assert pickle.loads(pickle.dumps(scaled)) is scaled
    f = jitgraph.compile(relu)  # not reachable under its name: rebuilt from the function and its options
    f(np.ones(2))
    g = pickle.loads(pickle.dumps(f))
    assert g is not f and type(g) is CompiledFunction
    np.testing.assert_array_equal(g(-np.ones(2)), relu(-np.ones(2)))


def test_recompile_site_is_the_callers_line() -> None:
    f = jitgraph.compile(relu)
    f(np.ones(3))
    f(np.ones(5))  # a recompile, found from inside the call function of the first entry
    (reason,) = f.recompile_reasons(with_site=True)
    assert "test_call_path.py:" in reason, reason


def _adam(p, g, m, v):
    m[...] = 0.9 * m + 0.1 * g
    v[...] = 0.999 * v + 0.001 * (g * g)
    p -= 1e-3 * m / (np.sqrt(v) + 1e-8)


def _two(x, y):
    return np.maximum(x, 0.5) * y, (x > 0) * 1.0


def _scalar(x):
    return float(np.maximum(x, 0).sum())


def test_the_driver_runs_inline_in_the_call_function() -> None:
    """The CPU driver's lines in the call function (one frame less): each call equals eager, inputs mutated the
    same way, a scalar result still built by the builder, and a stub for the compiled graph still takes over."""
    rng = np.random.default_rng(0)
    for fn, make in ((relu, lambda: [rng.standard_normal(32).astype(np.float32)]),
                     (_two, lambda: [rng.standard_normal(16), rng.standard_normal(16)]),
                     (_scalar, lambda: [rng.standard_normal(8)]),
                     (_adam, lambda: [np.abs(rng.standard_normal(64)).astype(np.float32) for _ in range(4)])):
        f = jitgraph.compile(fn)
        for _ in range(3):
            args = make()
            mine, want = [a.copy() for a in args], [a.copy() for a in args]
            got, expected = f(*mine), fn(*want)
            if isinstance(expected, tuple):
                for a, b in zip(got, expected):
                    np.testing.assert_allclose(a, b, rtol=1e-6)
            else:
                np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(expected, dtype=float), rtol=1e-6)
            assert type(got) is type(expected)
            for a, b in zip(mine, want):
                np.testing.assert_allclose(a, b, rtol=1e-6)
        assert "# the driver, inline" in f._call.source, fn.__name__
    f = jitgraph.compile(relu)
    x = np.arange(-2.0, 4.0)
    f(x)
    marker = np.full(6, 42.0)
    entry = f.entries[0]
    real, entry.compiled = entry.compiled, lambda leaves: [marker]
    assert f(x) is marker  # not the inlined driver: the entry's compiled graph is no longer the one published
    entry.compiled = real
    np.testing.assert_array_equal(f(x), relu(x))


def test_a_python_constant_beside_an_array_is_a_0d_array_of_its_dtype() -> None:
    """``np.maximum(x, 0)`` runs with the 0 as a float32 0-d array (faster than NumPy converting the int each call):
    the same dtype and values as eager, for float32 and float64, and between 0-d values the scalar path."""
    for dtype in (np.float32, np.float64):
        x = np.linspace(-1, 1, 9, dtype=dtype)
        f = jitgraph.compile(relu)
        out = f(x)
        assert out.dtype == relu(x).dtype and out.shape == x.shape
        np.testing.assert_array_equal(out, relu(x))
        assert "Sv" in f._call.source
        s = jitgraph.compile(_total)
        assert s(x) == _total(x) and type(s(x)) is type(_total(x))


def _total(a):
    return np.maximum(a.sum(), 0) * 2


def test_the_compiled_function_is_called_in_c_and_keeps_the_users_face() -> None:
    """A call goes straight to the call function (``functools.partial``'s C call, no Python ``__call__``), whose
    replacement in place takes effect; the object still shows the user's signature, name and docstring, binds as a
    method, and its ``repr`` is not a partial's."""
    import functools
    import inspect

    def scale(x, k=3.0):
        """Scale x."""
        return x * k

    f = jitgraph.compile(scale)
    assert "__call__" not in vars(CompiledFunction)
    x = np.arange(5.0)
    np.testing.assert_array_equal(f(x), scale(x))
    assert f._call is f.func and "call_entry" in f._call.__name__
    assert inspect.signature(f) == inspect.signature(scale)
    assert f.__name__ == "scale" and f.__doc__ == "Scale x." and f.args == () and f.keywords == {}
    assert repr(f).startswith("<jitgraph.jit.function.CompiledFunction object at")
    seen = []
    f._call = lambda *a, **k: seen.append((a, k)) or "stub"
    assert f(x, k=2.0) == "stub" and seen == [((x,), {"k": 2.0})]
    assert f.__name__ == "scale" and f.fn is scale  # the instance's attributes survive the swap
    f._clear()
    np.testing.assert_array_equal(f(x, 2.0), scale(x, 2.0))
    assert isinstance(f, functools.partial)

    class Layer:
        w = 2.0

        @jitgraph.compile
        def forward(self, x):
            return x * self.w

    np.testing.assert_array_equal(Layer().forward(x), x * 2.0)


def test_a_hit_builds_no_leaves_list() -> None:
    """The call function's direct hit passes the leaves by name; the list is built only where it is read (the
    builder, the non-direct paths), and a result the inline code does not expect still goes to the builder."""
    f = jitgraph.compile(relu)
    x = np.arange(-3.0, 3.0)
    np.testing.assert_array_equal(f(x), relu(x))
    hit = f._call.source.split("if E.go is COMPILED:")[1].split("return r0")[0]
    assert "leaves" not in hit
    s = jitgraph.compile(_total)
    assert s(x) == _total(x) and type(s(x)) is type(_total(x))
