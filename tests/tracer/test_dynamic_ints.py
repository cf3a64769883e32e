"""Automatic dynamic ints (tracer/dynamic_ints.py): an int argument whose value changes is retraced as a runtime
value when it only feeds float arithmetic, and stays specialised (with correct results) otherwise."""

from __future__ import annotations

import math

import numpy as np
import pytest

import jitgraph


def adam(p, g, m, v, t):
    lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8
    m[...] = b1 * m + (1 - b1) * g
    v[...] = b2 * v + (1 - b2) * (g * g)
    mhat = m / (1 - b1**t)
    vhat = v / (1 - b2**t)
    p -= lr * mhat / (np.sqrt(vhat) + eps)


def _runtime_value(f) -> bool:
    return any("now traced as a runtime value" in r for r in f.recompile_reasons())


def test_float_uses_and_keywords():
    def scale(x, *, t):
        return x * (0.5**t) + t / 3, t * 0.25

    x = np.linspace(-1, 1, 11, dtype=np.float32)
    f = jitgraph.compile(scale)
    for t in (1, 2, 3, 7, 0, -4, 100):
        got, want = f(x, t=t), scale(x, t=t)
        assert got[0].dtype == want[0].dtype and type(got[1]) is type(want[1]) is float
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1]
    assert len(f.entries) == 2 and _runtime_value(f)


def test_division_by_a_dynamic_int_zero_is_numpys():
    def f(x, t):
        return x / t

    compiled = jitgraph.compile(f)
    x = np.array([1.0, -1.0, 0.0], np.float32)
    for t in (1, 2, 0, -3):
        with np.errstate(all="ignore"):
            want = f(x, t)
        got = compiled(x, t)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
    assert _runtime_value(compiled)


def test_values_beyond_the_range_are_keyed_by_value():
    def f(x, t):
        return x * (t * 0.5)

    compiled = jitgraph.compile(f)
    x = np.ones(4)
    for t in (1, 2, 3, 2**40, 2**40 + 1, 5):
        np.testing.assert_array_equal(compiled(x, t), f(x, t))
    reasons = compiled.recompile_reasons()
    assert reasons[0] == "t: 1 -> 2 (now traced as a runtime value)"
    assert reasons[1] == "t: 1099511627776 is outside abs(t) < 2**31, so it is keyed by value"
    assert len(compiled.entries) == 4  # t=1, dynamic, 2**40, 2**40+1; t=5 reuses the dynamic entry


def _loop(x, t):
    for _ in range(t):
        x = x + 1
    return x


def _branch(x, t):
    if t > 2:
        return x + 1
    return x - 1


UNSAFE = {
    "int times int": (lambda x, t: x * (t * t), np.float32),
    "index": (lambda x, t: x[t], np.float64),
    "shape": (lambda x, t: np.zeros(t) + x.sum(), np.float64),
    "branch": (_branch, np.float32),
    "axis": (lambda x, t: x.reshape(2, -1).sum(axis=t % 2), np.float64),
    "returned": (lambda x, t: (x + 1, t), np.float64),
    "int array": (lambda x, t: x + t, np.int32),
    "negated": (lambda x, t: -t * x, np.float32),
    "bool array": (lambda x, t: (x > 0) * t, np.float64),
}


def test_a_loop_bound_becomes_a_run_time_trip_count():
    """``for _ in range(t)``: the loop region reads its trip count at run time, so ``t`` stays a runtime value
    (negative and zero counts run no iteration, as in Python)."""
    compiled = jitgraph.compile(_loop)
    x = np.arange(6.0) - 2
    for t in (1, 2, 3, 4, 1, 0, -3, 40):
        np.testing.assert_array_equal(compiled(x, t), _loop(x, t))
    assert _runtime_value(compiled) and len(compiled.entries) == 2


@pytest.mark.parametrize("name", list(UNSAFE))
def test_uses_that_need_the_value_stay_specialised(name):
    """Each of these would be wrong (int64 overflow, Python's big ints) or impossible (a shape, an index, a
    branch) with the int as a runtime value: the retrace is rejected and every call matches eager."""
    fn, dtype = UNSAFE[name]
    compiled = jitgraph.compile(fn)
    x = np.arange(6).astype(dtype) - 2
    for t in (1, 2, 3, 4, 1):
        got, want = compiled(x, t), fn(x, t)
        if isinstance(want, tuple):
            np.testing.assert_array_equal(got[0], want[0])
            assert got[1] == want[1] and type(got[1]) is type(want[1])
        else:
            np.testing.assert_array_equal(got, want)
            assert np.asarray(got).dtype == np.asarray(want).dtype
    assert not _runtime_value(compiled) and compiled._static == {1}  # tried once, then refused for good
    assert len(compiled.entries) == 4  # t = 1, 2, 3, 4: specialised by value, as before


def test_bools_are_not_ints():
    def f(x, flag):
        return x * (0.5**flag)

    compiled = jitgraph.compile(f)
    x = np.ones(3)
    for flag in (True, False, True):
        np.testing.assert_array_equal(compiled(x, flag), f(x, flag))
    assert not _runtime_value(compiled) and len(compiled.entries) == 2


def test_eager_fallback_sees_the_callers_int():
    """A break elsewhere in the function runs it eagerly with the caller's own int, not the tracer's wrapper."""
    seen = []

    def f(x, t):
        seen.append(type(t))
        return x * (0.5**t)

    compiled = jitgraph.compile(f)
    x = np.ones(2)
    for t in (1, 2, 3):
        np.testing.assert_array_equal(compiled(x, t), f(x, t))
    assert set(seen) == {int}


def adam_torch_style(p, g, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    m[:] = b1 * m + (1 - b1) * g
    v[:] = b2 * v + (1 - b2) * g * g
    step_size = lr / (1 - b1**t)
    denom = np.sqrt(v) / math.sqrt(1 - b2**t) + eps
    p -= step_size * m / denom


@pytest.mark.parametrize("step", [adam, adam_torch_style])
def test_adam_step_counter_compiles_twice_and_matches_eager(step):
    """Both common forms of the bias correction (``/ (1 - b2**t)`` and ``/ math.sqrt(1 - b2**t)``)."""
    rng = np.random.default_rng(0)
    ours = [rng.standard_normal(257).astype(np.float32) for _ in range(4)]
    ours[3] = np.abs(ours[3])
    eager = [a.copy() for a in ours]
    f = jitgraph.compile(step)
    for t in range(1, 21):
        assert f(*ours, t) is None
        step(*eager, t)
        for a, b in zip(ours, eager):
            np.testing.assert_array_equal(a, b)  # 0.9 ** t is computed by the same pow in both
    assert len(f.entries) == 2 and f.recompile_reasons() == ["t: 1 -> 2 (now traced as a runtime value)"]
    assert "abs(t) < 2**31 (a runtime value)" in f.entries[1].guard_texts and f.break_reasons() == []


def test_math_sqrt_of_a_python_float_argument_raises_as_python_does():
    def f(x, lr):
        return x * math.sqrt(lr)

    compiled = jitgraph.compile(f)
    x = np.ones(3, np.float32)
    for lr in (0.25, 4.0, -0.0, float("nan"), float("inf")):
        got, want = compiled(x, lr), f(x, lr)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
    for lr in (-1.0, -np.inf):
        with pytest.raises(ValueError) as eager_error:
            f(x, lr)
        with pytest.raises(ValueError) as compiled_error:
            compiled(x, lr)
        assert str(compiled_error.value) in str(eager_error.value)
    assert len(compiled.entries) == 1 and compiled.break_reasons() == []
