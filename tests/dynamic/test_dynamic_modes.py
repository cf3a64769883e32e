"""``compile(dynamic=None | True | False)``, ``mark_dynamic`` and ``mark_static`` (jitgraph/jit/dynamic_policy.py):
results equal eager NumPy in every mode, and the entries, recompiles and size variants are those each mode
promises; the recompile reason names the dimension that became dynamic."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import jitgraph
from jitgraph.jit import dynamic_policy
from jitgraph.tracer import dynamic_ints

W = np.linspace(-1.0, 1.0, 12).reshape(4, 3)


def layer(x, w):
    return np.tanh(x @ w + 1.0)


def decay(x, t):
    return x * 0.9 ** t


def halves(x):
    return x.reshape(2, x.shape[0] // 2).sum(axis=1)  # the size is in an attribute: another graph per size


def _run(f, sizes):
    for n in sizes:
        x = np.arange(n * 4, dtype=np.float64).reshape(n, 4) / 10
        np.testing.assert_allclose(f(x, W), layer(x, W), rtol=1e-12)


@pytest.mark.parametrize(("mode", "recompiles", "entries", "instances", "reasons"), [
    (None, 1, 2, 3, ["x.shape[0]: 2 -> 3 (x.shape[0] now dynamic)"]),
    (True, 0, 1, 4, []),
])
def test_sizes_dynamic_after_one_recompile_or_from_the_first_call(mode, recompiles, entries, instances,
                                                                   reasons) -> None:
    """Two traces (static, then symbolic) with automatic dynamic shapes, one with dynamic=True; every later size is
    an instance of the symbolic trace (no trace, no recompile)."""
    f = jitgraph.compile(layer, dynamic=mode, cache_limit=2)
    _run(f, (2, 3, 5, 6, 7))
    info = f.cache_info()
    assert (info.recompiles, info.size_variants, info.entries, info.size_instances, info.fallbacks) == \
        (recompiles, 0, entries, instances, 0)
    assert f.recompile_reasons() == reasons


def test_dynamic_false_specialises_every_size_until_the_limit() -> None:
    f = jitgraph.compile(layer, dynamic=False, cache_limit=2)
    _run(f, (2, 3, 5, 6))
    info = f.cache_info()
    assert (info.recompiles, info.size_variants, info.entries, info.fallbacks) == (1, 0, 2, 2)
    assert f.recompile_reasons() == ["x.shape[0]: 2 -> 3"]


def test_a_size_in_the_graph_is_a_recompile_even_when_dynamic() -> None:
    f = jitgraph.compile(halves, dynamic=True, cache_limit=8)
    for n in (4, 6, 8):
        x = np.arange(float(n))
        np.testing.assert_array_equal(f(x), halves(x))
    assert f.cache_info().size_variants == 0 and f.cache_info().recompiles == 2


@pytest.mark.parametrize(("mode", "entries"), [(None, 2), (True, 1), (False, 4)])
def test_int_arguments_by_mode(mode, entries) -> None:
    f = jitgraph.compile(decay, dynamic=mode)
    x = np.ones(3)
    for t in range(4):
        np.testing.assert_allclose(f(x, t), decay(x, t))
    assert f.cache_info().entries == entries


def test_mark_dynamic_wins_over_dynamic_false_and_mark_static_over_true() -> None:
    f = jitgraph.compile(layer, dynamic=False)
    x = np.ones((5, 4))
    jitgraph.mark_dynamic(x, 0)
    np.testing.assert_allclose(f(x, W), layer(x, W))
    _run(f, (6, 7))
    assert (f.cache_info().recompiles, f.cache_info().size_instances) == (0, 2)

    g = jitgraph.compile(layer, dynamic=True)
    y = np.ones((5, 4))
    jitgraph.mark_static(y, [-2])
    np.testing.assert_allclose(g(y, W), layer(y, W))
    _run(g, (6,))
    assert (g.cache_info().recompiles, g.cache_info().size_variants) == (1, 0)
    assert g.recompile_reasons() == ["x.shape[0]: 5 -> 6"]


def test_marks_are_checked_and_forgotten_with_their_array() -> None:
    with pytest.raises(jitgraph.JitgraphError, match="NumPy array"):
        jitgraph.mark_dynamic([1, 2], 0)
    with pytest.raises(jitgraph.JitgraphError, match="out of range"):
        jitgraph.mark_dynamic(np.ones(3), 1)
    x = np.ones((2, 3))
    jitgraph.mark_dynamic(x, (0, 1))
    key = id(x)
    assert dynamic_ints._MARKS[key][1] == {0, 1}
    del x
    gc.collect()
    assert key not in dynamic_ints._MARKS


def test_marks_inside_containers_name_the_dimension() -> None:
    def step(batch):
        return batch["x"].sum(axis=0)

    f = jitgraph.compile(step, dynamic=False)
    for n in (3, 4, 5):
        x = np.ones((n, 2))
        jitgraph.mark_dynamic(x, 0)
        np.testing.assert_array_equal(f({"x": x}), step({"x": x}))
    assert f.cache_info().size_instances == 2 and f.cache_info().recompiles == 0


def branchy(x, w):
    y = np.tanh(x @ w + 1.0)
    return y * 2.0 if x.shape[0] > 1 else y  # a branch on a size: no symbolic trace, a size variant per size


def test_size_variants_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dynamic_policy, "MAX_VARIANTS", 2)
    f = jitgraph.compile(branchy, dynamic=True, cache_limit=2)
    for n in (2, 3, 4, 5, 6, 7):  # 2 variants, then recompiles up to the limit, then eager
        x = np.arange(n * 4, dtype=np.float64).reshape(n, 4) / 10
        np.testing.assert_allclose(f(x, W), branchy(x, W), rtol=1e-12)
    info = f.cache_info()
    assert (info.size_variants, info.size_instances, info.recompiles, info.entries, info.fallbacks) == \
        (2, 0, 1, 4, 2)
    assert f.recompile_reasons() == ["x.shape[0]: 4 -> 5 (2 sizes of dynamic dimensions traced already)"]