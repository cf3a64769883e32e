"""Builtins and ``math`` functions on NumPy scalars and 0-d values of the graph: selects and scalar ops with
Python's results (values, types, dtypes) and Python's exceptions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import jitgraph
from tests.tracer.helpers import assert_same, run_both

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def outcome(fn, *args):
    try:
        return fn(*args), None
    except Exception as exc:  # noqa: BLE001 - the exception is what is compared
        return None, (type(exc), str(exc))


def same_outcome(fn, *calls, graphs=1):
    cf = jitgraph.compile(fn, backend="eager", cache=False)
    for args in calls:
        expected, expected_exc = outcome(fn, *args)
        actual, actual_exc = outcome(cf, *args)
        assert actual_exc == expected_exc, f"{args}: compiled raised {actual_exc}, eager {expected_exc}"
        if expected_exc is None:
            assert_same(expected, actual, path=f"result for {args}")
    if graphs is not None:
        assert len(cf.graphs()) == graphs, [str(b) for b in cf.break_reasons()]
    return cf


# ---- min / max --------------------------------------------------------------------------------------------------
def min3(x):
    return min(x[0], x[1], x[2])


def max3(x):
    return max(x[0], x[1], x[2])


def max_list(x):
    return max([x[0] * 2, x[1], x[2] - 1])


finite = st.floats(-1e6, 1e6, allow_nan=False)


@given(st.lists(st.one_of(finite, st.just(float("nan")), st.just(0.0), st.just(-0.0)), min_size=3, max_size=3))
def test_min_max_follow_python_order(values):
    """NaN, ties and signed zeros: Python keeps the first candidate unless a later one compares less/greater."""
    x = np.array(values)
    for fn in (min3, max3, max_list):
        expected, actual = fn(x), jitgraph.compile(fn, backend="eager", cache=False)(x)
        assert type(actual) is type(expected)
        assert np.array_equal(actual, expected, equal_nan=True) and np.signbit(actual) == np.signbit(expected)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float32, np.float64, np.uint8])
def test_min_max_dtypes(dtype):
    x = np.array([3, 1, 2], dtype)
    run_both(min3, x)
    run_both(max3, x)
    # a Python int competing with a NumPy scalar: the graph's result is the NumPy scalar type (Python would hand
    # back the int when it wins); in arithmetic both give the same dtype and value
    run_both(lambda x: x * min(x[0], 2), x)
    assert jitgraph.compile(lambda x: min(x[0], 2), backend="eager")(x) == min(x[0], 2)
    run_both(lambda x: max(x[0] + x[1], x[2]) * 2, x)


def test_min_of_python_numbers_of_the_graph():
    run_both(lambda x, t: x * min(1.0, 0.5 ** t), np.ones(3), 3)
    run_both(lambda x: x * min(1.0, 1.0 / (np.sqrt((x * x).sum()) + 1e-6)), np.arange(4.0))


def test_min_max_of_arrays_break_with_numpy_error():
    cf = same_outcome(lambda x, y: max(x, y), (np.ones(3), np.zeros(3)), graphs=0)
    assert "truth value" in str(cf.break_reasons()[0])


def test_min_key_breaks():
    cf = same_outcome(lambda x: min(x[0], x[1], key=abs), (np.array([-3.0, 2.0]),), graphs=0)
    assert "key" in str(cf.break_reasons()[0])


# ---- float / int / round / pow / abs ----------------------------------------------------------------------------
@pytest.mark.parametrize("value", [2.7, -2.7, 0.5, 1.5, 2.5, -0.0, 1e300])
def test_conversions_of_array_scalars(value):
    x = np.array([value])
    same_outcome(lambda x: float(x[0]) * 2, (x,))
    same_outcome(lambda x: int(x[0]) + 1, (x,))  # 1e300: Python's big int (the graph's check reruns eagerly)
    if abs(value) < 1e18:
        same_outcome(lambda x: x * round(x[0]), (x,))
    else:  # compiled on a small value first, then a big one: the cached graph's check, not a new trace, decides
        cf = jitgraph.compile(lambda x: int(x[0]) + 1, backend="eager", cache=False)
        assert cf(np.array([2.5])) == 3
        assert cf(x) == int(value) + 1
    same_outcome(lambda x: round(x[0], 1), (x,))
    same_outcome(lambda x: x + abs(x[0]), (x,))
    same_outcome(lambda x: pow(x[0], 2), (x,))


def test_conversion_types():
    run_both(lambda x: float(x.sum()), np.arange(3, dtype=np.float32))
    run_both(lambda x: int(x.sum()), np.arange(3))
    run_both(lambda x: float(x.sum()) / 3, np.arange(3))
    run_both(lambda x: round(x.mean()), np.arange(4.0))
    run_both(lambda x: round(x.mean(), 2), np.arange(7.0) / 3)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_int_of_nan_and_inf_raise_pythons_errors(bad):
    same_outcome(lambda x: int(x[0]) + 1, (np.array([bad]),), (np.array([2.5]),))
    same_outcome(lambda x: round(x[0]) + 1, (np.array([bad]),), (np.array([2.5]),))


# ---- math.* -----------------------------------------------------------------------------------------------------
UNARY = ["exp", "log", "log2", "log10", "log1p", "expm1", "sin", "cos", "tan", "tanh", "sinh", "cosh", "asin", "acos",
         "atan", "asinh", "acosh", "atanh", "fabs", "degrees", "radians", "sqrt", "floor", "ceil", "trunc"]


@pytest.mark.parametrize("name", UNARY)
def test_math_unary_values_types_and_errors(name):
    fn = getattr(math, name)

    def f(x):
        return fn(x[0])

    calls = [(np.array([v]),) for v in (0.5, -0.5, 0.0, 2.0, -3.0, 1000.0, float("nan"), float("inf"), -1.0, 1.0)]
    same_outcome(f, *calls, graphs=None)
    cf = jitgraph.compile(f, backend="eager", cache=False)
    cf(np.array([1.5 if name == "acosh" else 0.5]))
    assert len(cf.graphs()) == 1 and not cf.break_reasons(), cf.break_reasons()


@pytest.mark.parametrize("name", ["atan2", "hypot", "copysign", "pow"])
def test_math_binary(name):
    fn = getattr(math, name)
    calls = [(np.array([a, b]),) for a, b in ((1.0, 2.0), (-8.0, 0.5), (0.0, -1.0), (10.0, 400.0), (-2.0, 3.0))]
    same_outcome(lambda x: fn(x[0], x[1]), *calls, graphs=None)
    same_outcome(lambda x: fn(x[0], 2.0), *calls, graphs=None)


def test_math_in_a_loop_region():
    def f(x):
        out = np.zeros_like(x)
        for i in range(x.shape[0]):
            out[i] = math.exp(x[i]) + math.floor(x[i] * 3)
        return out

    run_both(f, np.linspace(-2.0, 2.0, 40))
