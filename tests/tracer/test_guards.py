"""Guards and the cache: what recompiles, what does not, readable reasons, the recompile limit, aliasing."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import jitgraph
from tests.tracer.helpers import assert_same

FACTOR = 3


def scaled(x, flag=True):
    y = x * FACTOR
    return y + 1 if flag else y - 1


def step(w, g, lr):
    w -= lr * g
    return w.sum()


def test_new_shape_recompiles_with_reason():
    f = jitgraph.compile(scaled, backend="eager")
    f(np.ones((4, 3), np.float32))
    f(np.ones((4, 3), np.float32))
    out = f(np.ones((8, 3), np.float32))
    assert out.shape == (8, 3)
    info = f.cache_info()
    assert (info.hits, info.misses, info.recompiles, info.entries) == (1, 2, 1, 2)
    assert f.recompile_reasons() == ["x.shape[0]: 4 -> 8 (x.shape[0] now dynamic)"]


def test_new_dtype_recompiles():
    f = jitgraph.compile(scaled, backend="eager")
    f(np.ones(3, np.float32))
    out = f(np.ones(3, np.float64))
    assert out.dtype == np.float64
    assert f.recompile_reasons() == ["x.dtype: 'float32' -> 'float64'"]


def test_bool_flag_recompiles():
    f = jitgraph.compile(scaled, backend="eager")
    x = np.ones(3)
    assert_same(f(x, True), scaled(x, True))
    assert_same(f(x, False), scaled(x, False))
    assert f.recompile_reasons() == ["flag: True -> False"]
    assert_same(f(x, True), scaled(x, True))
    assert f.cache_info().hits == 1


def test_global_value_change_recompiles():
    global FACTOR
    f = jitgraph.compile(scaled, backend="eager")
    x = np.ones(3)
    f(x)
    try:
        FACTOR = 5
        assert_same(f(x), scaled(x))
    finally:
        FACTOR = 3
    (reason,) = f.recompile_reasons()
    assert reason.startswith("guard failed: FACTOR == 3") and "(now 5)" in reason


def test_new_float_learning_rate_does_not_recompile():
    f = jitgraph.compile(step, backend="eager")
    w, g = np.ones(4, np.float32), np.full(4, 2, np.float32)
    for lr in (0.1, 0.01, 0.5):
        f(w, g, lr)
    np.testing.assert_allclose(w, 1 - 2 * (0.1 + 0.01 + 0.5), rtol=1e-6)
    info = f.cache_info()
    assert (info.misses, info.hits, info.recompiles) == (1, 2, 0)


def test_int_argument_is_specialised_until_it_changes():
    """An int is keyed by value at first; the recompile its change causes traces it as a runtime value
    (tests/tracer/test_dynamic_ints.py), so later values reuse that entry."""
    def f(x, n):
        return x * n

    compiled = jitgraph.compile(f, backend="eager")
    compiled(np.ones(2), 2)
    assert "n == 2" in compiled.entries[0].guard_texts
    assert_same(compiled(np.ones(2), 3), f(np.ones(2), 3))
    assert_same(compiled(np.ones(2), 4), f(np.ones(2), 4))
    assert compiled.recompile_reasons() == ["n: 2 -> 3 (now traced as a runtime value)"]


def test_recompile_limit_falls_back_with_one_warning(caplog):
    f = jitgraph.compile(scaled, backend="eager", cache_limit=3, dynamic=False)  # sizes never size variants
    with caplog.at_level(logging.WARNING, logger="jitgraph"):
        for n in range(1, 8):
            x = np.ones(n)
            assert_same(f(x), scaled(x))
        assert_same(f(np.ones(100)), scaled(np.ones(100)))
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert "x.shape" in warnings[0].getMessage() and "recompile limit" in warnings[0].getMessage()
    info = f.cache_info()
    assert info.entries == 3 and info.fallbacks == 5


def test_readable_guards():
    def f(params, x, flag):
        return params["W1"] @ x if flag else x

    compiled = jitgraph.compile(f, backend="eager")
    compiled({"W1": np.ones((2, 3)), "b1": np.ones(2)}, np.ones(3), True)
    texts = compiled.entries[0].guard_texts
    for expected in ("type(params) is dict", "params.keys() == ['W1', 'b1']", "params['W1'].shape == (2, 3)",
                     "x.shape == (3,)", "x.dtype == 'float64'", "flag == True"):
        assert expected in texts, texts


def test_container_structure_change_recompiles():
    def f(params):
        return sum(v.sum() for v in params.values())

    compiled = jitgraph.compile(f, backend="eager")
    compiled({"a": np.ones(2)})
    d = {"a": np.ones(2), "b": np.ones(3)}
    assert_same(compiled(d), f(d))
    assert compiled.recompile_reasons() == ["params.keys(): ['a'] -> ['a', 'b']"]


def test_closure_and_attribute_values_are_guarded():
    class Conf:
        def __init__(self):
            self.n = 2

    conf = Conf()
    k = [1]

    def make(k0):
        def f(x):
            return x * k0 + conf.n
        return f

    f = make(2)
    compiled = jitgraph.compile(f, backend="eager")
    x = np.ones(2)
    compiled(x)
    conf.n = 5
    assert_same(compiled(x), f(x))
    assert "conf.n == 2" in compiled.recompile_reasons()[0] or "n == 2" in compiled.recompile_reasons()[0]
    del k


def test_layout_change_recompiles():
    f = jitgraph.compile(scaled, backend="eager")
    x = np.arange(12.0).reshape(3, 4)
    f(x)
    xt = np.asfortranarray(x)
    assert_same(f(xt), scaled(xt))
    assert f.cache_info().recompiles == 1


def test_same_array_twice_is_guarded():
    def f(a, b):
        a += 1
        return a + b

    a_e = np.arange(3.0)
    expected = f(a_e, a_e)
    compiled = jitgraph.compile(f, backend="eager")
    a_c = np.arange(3.0)
    assert_same(compiled(a_c, a_c), expected)
    assert_same(a_c, a_e)
    x, y = np.arange(3.0), np.arange(3.0)
    assert_same(compiled(x, y), f(np.arange(3.0), np.arange(3.0)))
    assert compiled.cache_info().entries == 2
    assert len(compiled.graphs()) == 2


def test_method_defined_in_class_body():
    class Layer:
        def __init__(self):
            self.W = np.eye(3)

        @jitgraph.compile(backend="eager")
        def forward(self, x):
            return x @ self.W * 2

    layer = Layer()
    assert_same(layer.forward(np.ones((2, 3))), np.ones((2, 3)) @ layer.W * 2)
    layer.W = np.eye(3) * 3
    assert_same(layer.forward(np.ones((2, 3))), np.ones((2, 3)) * 6)
    assert Layer.forward.cache_info().recompiles == 0


@pytest.mark.parametrize("limit", [1, 2])
def test_cache_limit_is_configurable(limit):
    f = jitgraph.compile(scaled, backend="eager", cache_limit=limit, dynamic=False)
    for n in range(1, 5):
        f(np.ones(n))
    assert f.cache_info().entries == limit


def test_aliasing_guard_is_readable():
    def f(a, b):
        a += 1
        return a + b

    compiled = jitgraph.compile(f, backend="eager")
    x = np.ones(3)
    compiled(x, np.ones(3))
    assert "no two array arguments share memory" in compiled.entries[0].guard_texts
    compiled(x, x)
    assert "a is b" in compiled.entries[1].guard_texts
    assert compiled.recompile_reasons() == ["aliasing: no two array arguments share memory -> a is b"]


def test_complex_and_string_arguments_are_specialised():
    def f(x, c, mode):
        return x * c if mode == "mul" else x + c

    compiled = jitgraph.compile(f, backend="eager")
    x = np.ones(2)
    for c, mode in [(1j, "mul"), (2j, "mul"), (2j, "add")]:
        assert_same(compiled(x, c, mode), f(x, c, mode))
    assert compiled.recompile_reasons() == ["c: 1j -> 2j", "mode: 'mul' -> 'add'"]


def test_ndarray_subclass_global_is_not_baked_in():
    compiled = jitgraph.compile(_uses_matrix, backend="eager")
    assert_same(compiled(np.ones(2)), _uses_matrix(np.ones(2)))
    assert "subclass" in compiled.break_reasons()[0].reason


_MATRIX = np.ma.masked_array([1.0, 2.0], mask=[False, True])


def _uses_matrix(x):
    return (x * _MATRIX).sum()
