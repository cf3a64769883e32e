"""The staged API: ``compile(f).trace(*args)`` -> ``Traced`` -> ``lower()`` -> ``Lowered`` -> ``compile()`` ->
``Compiled``. Each stage prints; the compiled stage runs like the function; a break raises at ``lower()`` naming
the user's line; a cache miss goes through the very same stage objects."""

from __future__ import annotations

import gc
import inspect
import sys
import weakref

import numpy as np
import pytest

import jitgraph
from jitgraph.errors import GraphBreakError
from jitgraph.jit import Compiled, Lowered, Traced


def scaled_tanh(x, w):
    return np.tanh(x @ w) * 0.5


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def structured(x, y):
    return {"sum": (x + y).sum(), "pair": (x * 2.0, y - 1.0)}


def prints(x):
    y = x * 2.0
    print("y:", y.sum(), file=sys.stdout)  # BREAK (a stream argument: not split, issue 18's split takes values only)
    return y + 1.0


def updates(x, g):
    x -= 0.1 * g
    return x.sum()


def line_of(fn, marker: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, text in enumerate(lines) if marker in text)


def arguments(rng: np.random.Generator) -> dict:
    x = rng.standard_normal((8, 5)).astype(np.float32)
    return {scaled_tanh: (x, rng.standard_normal((5, 3)).astype(np.float32)), softmax: (x,),
            structured: (x, rng.standard_normal((8, 5)).astype(np.float32))}


def assert_same(a, b) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, tuple):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            assert_same(u, v)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["eager", "cpu"])
@pytest.mark.parametrize("fn", [scaled_tanh, softmax, structured], ids=lambda f: f.__name__)
def test_compiled_stage_runs_like_numpy(fn, backend):
    args = arguments(np.random.default_rng(0))[fn]
    traced = jitgraph.compile(fn, backend=backend).trace(*args)
    compiled = traced.lower().compile()
    assert isinstance(compiled, Compiled)
    assert_same(compiled(*args), fn(*args))


def test_each_stage_prints():
    x, w = arguments(np.random.default_rng(1))[scaled_tanh]
    traced = jitgraph.compile(scaled_tanh, backend="cpu").trace(x, w)
    assert isinstance(traced, Traced) and traced.graph is not None and traced.break_reasons == []
    text = str(traced)
    assert text.startswith("Traced scaled_tanh") and "matmul" in text and "tanh" in text
    assert "x.shape == (8, 5)" in text  # the guards
    lowered = traced.lower()
    assert isinstance(lowered, Lowered)
    text = str(lowered)
    assert "fused(" in text and "fuse" in text and "plan_memory" in text  # the output graph and the pass report
    compiled = lowered.compile()
    text = str(compiled)
    assert text.startswith("Compiled scaled_tanh (backend cpu")
    (kernel,) = [k for k in compiled.artifact.kernel_sources() if k.title.startswith("kernel ")]
    assert kernel.title in text


def test_a_break_has_no_graph_and_lower_raises_at_the_users_line():
    traced = jitgraph.compile(prints, backend="eager").trace(np.ones(3))
    assert traced.graph is None
    (reason,) = traced.break_reasons
    line = line_of(prints, "# BREAK")
    assert (reason.filename, reason.lineno) == (__file__, line)
    assert f"{__file__}:{line}" in str(traced) and 'print("y:", y.sum(), file=sys.stdout)' in str(traced)
    with pytest.raises(GraphBreakError) as info:
        traced.lower()
    assert (info.value.filename, info.value.lineno) == (__file__, line)
    assert f"{__file__}:{line}" in str(info.value) and "print() is a side effect" in str(info.value)


def test_side_effects_are_the_graphs_mutations():
    x, g = np.ones(4), np.full(4, 2.0)
    traced = jitgraph.compile(updates, backend="eager").trace(x, g)
    assert [name for name, _ in traced.side_effects] == ["x"]
    assert "side effects" in str(traced)
    compiled = traced.lower().compile()
    assert compiled(x, g) == pytest.approx(4 * 0.8) and np.allclose(x, 0.8)  # written in place, once


def test_trace_leaves_the_cache_alone_and_a_miss_keeps_the_same_stages():
    cf = jitgraph.compile(softmax, backend="eager")
    (x,) = arguments(np.random.default_rng(2))[softmax]
    cf.trace(x)
    assert cf.cache_info().misses == 0 and cf.entries == []
    out = cf(x)
    (entry,) = cf.entries
    assert isinstance(entry.traced, Traced) and isinstance(entry.lowered, Lowered)
    assert isinstance(entry.stage, Compiled) and entry.stage.lowered is entry.lowered
    assert entry.lowered.traced is entry.traced
    assert entry.compiled is entry.stage.artifact and entry.graph is entry.lowered.graph
    assert entry.traced_graph is entry.traced.graph
    assert set(entry.times) >= {"trace", "passes", "backend"}
    np.testing.assert_allclose(entry.stage(x), out)
    assert cf.stages() == [entry.stage]


def test_compiled_stage_refuses_arguments_it_was_not_traced_for():
    compiled = jitgraph.compile(softmax, backend="eager").trace(np.ones((2, 3))).lower().compile()
    with pytest.raises(TypeError, match=r"x.shape\[0\]: 2 -> 4"):
        compiled(np.ones((4, 3)))
    a = np.ones(6)
    pair = jitgraph.compile(updates, backend="eager").trace(a[:4], np.ones(4)).lower().compile()
    with pytest.raises(TypeError, match="share memory"):
        pair(a[:4], a[:4])  # traced with separate arrays; the same array twice is another program


def test_dynamic_int_stage_takes_plain_ints():
    def step(x, t):
        return x * (1.0 - 0.9 ** t)

    cf = jitgraph.compile(step, backend="eager")
    x = np.ones(3)
    for t in (1, 2, 3):
        np.testing.assert_allclose(cf(x, t), step(x, t))
    assert len(cf.entries) == 2  # t became a runtime value
    compiled = cf.trace(x, 5).lower().compile()
    np.testing.assert_allclose(compiled(x, 7), step(x, 7))


def test_the_cache_does_not_keep_the_callers_arrays_alive():
    cf = jitgraph.compile(softmax, backend="eager")
    x = np.ones((2, 3))
    ref = weakref.ref(x)
    cf(x)
    del x
    gc.collect()
    assert ref() is None and len(cf.entries) == 1
    np.testing.assert_allclose(cf.entries[0].stage(np.zeros((2, 3))), np.full((2, 3), 1 / 3))
