"""Python-scalar semantics found by fuzzing: Python float arithmetic that raises or turns complex, NumPy's OverflowError
for bool arrays, ``ndarray.__pow__``'s fast path, identity and equality tests on objects, and returned namedtuples.
Each test compares the compiled call with eager Python/NumPy: value, type, dtype, or the exception raised."""

from __future__ import annotations

import collections
import decimal
import typing

import numpy as np
import pytest

import jitgraph
from tests.tracer.helpers import assert_same, tracer_only

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def compiled(fn, backend: str = "eager"):
    return jitgraph.compile(fn, backend=backend, cache=False, **tracer_only(backend))


def outcome(fn, *args):
    try:
        return fn(*args), None
    except Exception as exc:  # noqa: BLE001 - the exception is what is compared
        return None, type(exc)


def same_outcome(fn, cf, *args):
    expected, expected_exc = outcome(fn, *args)
    actual, actual_exc = outcome(cf, *args)
    assert actual_exc is expected_exc, f"{args}: compiled raised {actual_exc}, eager {expected_exc}"
    if expected_exc is None:
        assert_same(expected, actual, path=f"result for {args}")


def check_calls(fn, *calls, backend: str = "eager"):
    """One compiled function called on each argument tuple in turn (later calls test the guards)."""
    cf = compiled(fn, backend)
    for args in calls:
        same_outcome(fn, cf, *args)
    return cf


# ---- 1. float ** float is complex for a negative base (and raises for 0 ** negative, or on overflow) -------------
def test_found_float_pow_negative_base_is_complex():
    x = np.ones(2)
    check_calls(lambda x, a: x * a ** 0.5, (x, -4.0))
    check_calls(lambda x, a, e: x * a ** e, (x, -8.0, 1 / 3))
    check_calls(lambda x, a: x * (-8) ** a, (x, 0.5))


def test_found_float_pow_guards_the_operands():
    x = np.ones(2)
    cf = check_calls(lambda x, a: x * a ** 0.5, (x, 4.0), (x, -4.0), (x, 9.0))
    assert len(cf.graphs()) == 1  # the positive bases share one entry
    check_calls(lambda x, a, e: x * a ** e, (x, 8.0, 1 / 3), (x, -8.0, 1 / 3), (x, -8.0, 2.0), (x, 2.0, -0.5))
    check_calls(lambda x, a: x * a ** -1.0, (x, 2.0), (x, 0.0))  # ZeroDivisionError
    check_calls(lambda x, a: x * a ** 2.0, (x, 2.0), (x, 1e200))  # OverflowError
    check_calls(lambda x, a: x * a ** 2, (x, -2.0), (x, 1e200))


def test_found_float_pow_computed_base_falls_back():
    x = np.ones(2)
    cf = check_calls(lambda x, a: x * (a - 1.0) ** 0.5, (x, 5.0), (x, -3.0))
    assert cf.break_reasons()
    check_calls(lambda x, a: x * (a - 1.0) ** 1, (x, -3.0))


def test_found_float_pow_cpu_backend():
    check_calls(lambda x, a: x * a ** 0.5, (np.ones(2), 4.0), (np.ones(2), -4.0), backend="cpu")


# ---- 2. Python float / // % by 0.0 raises ZeroDivisionError -----------------------------------------------------
@pytest.mark.parametrize("op", ["/", "//", "%"])
def test_found_float_division_by_zero(op):
    p = np.ones(3, np.float32)
    step = eval(f"lambda p, lr, decay: p * (lr {op} decay)")
    check_calls(step, (p, 0.1, 0.0))
    cf = check_calls(step, (p, 0.1, 2.0), (p, 0.1, 0.0), (p, 0.1, -0.0), (p, 0.1, 3.0))
    assert len(cf.graphs()) == 1
    check_calls(eval(f"lambda p, a: p * (2 {op} a)"), (p, 0.5), (p, 0.0))
    check_calls(eval(f"lambda p, a: p * (a {op} 0)"), (p, 0.5))
    check_calls(eval(f"lambda p, a: p * (a {op} (a - 1.0))"), (p, 3.0), (p, 1.0))


def test_found_float_division_by_zero_cpu_backend():
    step = lambda p, lr, decay: p * (lr / decay)
    check_calls(step, (np.ones(3, np.float32), 0.1, 0.0), (np.ones(3, np.float32), 0.1, 0.5), backend="cpu")


@pytest.mark.parametrize("backend", ["eager", "cpu"])
def test_found_computed_float_divisor_is_checked_at_run_time(backend):
    """``lr / (1 - beta1 ** t)`` (Adam's bias correction with its hyperparameters as arguments) divides by a Python
    float computed in the graph: a run-time check raises Python's ZeroDivisionError where it is zero, instead of
    the whole step running eagerly."""

    def adam_step(p, m, lr, beta1, t):
        return p - lr / (1 - beta1 ** t) * m

    p, m = np.ones(4, np.float32), np.full(4, 0.5, np.float32)
    cf = check_calls(adam_step, (p, m, 1e-3, 0.9, 3), (p, m, 1e-2, 0.99, 3), (p, m, 1e-3, 1.0, 3), backend=backend)
    assert cf.break_reasons() == []
    assert len(cf.graphs()) == 1


# ---- 3. bool array with a Python int beyond int64 -----------------------------------------------------------------
@pytest.mark.parametrize("op", ["+", "-", "*", "%", "**", "&", ">", "==", "<="])
@pytest.mark.parametrize("value", [2**63, -2**63 - 1, 300])
def test_found_bool_array_python_int_overflow(op, value):
    b = np.array([True, False])  # on the CPU backend: the eager backend's NumPy would raise by itself
    check_calls(eval(f"lambda x: x {op} {value}"), (b,), backend="cpu")
    check_calls(eval(f"lambda x: {value} {op} x"), (b,), backend="cpu")


def test_found_bool_array_fmod_overflow():
    check_calls(lambda x: np.fmod(x, 2**63), (np.array([True, False]),), backend="cpu")
    check_calls(lambda x: np.fmod(2**63, x), (np.array([True, False]),), backend="cpu")


# ---- 4. ndarray.__pow__ fast paths ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int64, np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("exponent", [2, -1, 0, 1, 3, 0.5, 2.0, -1.0, 1.0, 0.0, True, np.int64(2)])
def test_found_array_pow_fast_paths(dtype, exponent):
    x = np.array([1, 0, 1], dtype)
    check_calls(lambda x: x ** exponent, (x,), (x[:1].reshape(()),))


# ---- 5. / 6. identity and equality tests on objects ---------------------------------------------------------------
class Thing:
    pass


A_THING, B_THING = Thing(), Thing()


def test_found_stale_is_on_objects():
    x = np.ones(2)
    check_calls(lambda x, o: x * 2 if o is A_THING else x, (x, A_THING), (x, B_THING))
    check_calls(lambda x, o: x * 2 if o is not A_THING else x, (x, A_THING), (x, B_THING))
    check_calls(lambda x, o, p: x * 2 if o is p else x, (x, A_THING, A_THING), (x, A_THING, B_THING))
    check_calls(lambda x, o: x * 2 if o is None else x, (x, None), (x, A_THING))


def _f(x):
    return x


def _g(x):
    return x


def test_found_stale_compare_on_opaque_objects():
    x = np.ones(2)
    check_calls(lambda x, d: x * 2 if d == 3 else x, (x, decimal.Decimal(3)), (x, decimal.Decimal(4)))
    check_calls(lambda x, d: x * 2 if 3 != d else x, (x, decimal.Decimal(3)), (x, decimal.Decimal(4)))
    check_calls(lambda x, f: x * 2 if f == _f else x, (x, _f), (x, _g))
    check_calls(lambda x, f: x * 2 if f is _f else x, (x, _f), (x, _g))


def test_found_array_compare_none():
    for fn in (lambda x: x == None, lambda x: None != x, lambda x: x.sum() == None,
               lambda x: x < None):
        check_calls(fn, (np.ones(2),), (np.array(1.0),))


# ---- 7. returned namedtuples -------------------------------------------------------------------------------------
P = collections.namedtuple("P", "a b")


class Q(typing.NamedTuple):
    a: typing.Any
    b: typing.Any


def test_found_namedtuple_output():
    x = np.ones(2)
    check_calls(lambda x, c: c, (x, P(1, 2)))
    check_calls(lambda x, c: c, (x, Q(x, 2.0)))
    check_calls(lambda x: P(x + 1, (x * 2, Q(1, x.sum()))), (x,))
    check_calls(lambda x, c: P(c.b, c.a * x), (x, P(1, 2.0)))


# ---- storing a Python int argument that does not fit the array's dtype (fuzzing, round 2) -------------------------
def _store_ellipsis(x, s):
    x[...] = s
    return x


def _store_slice(x, s):
    x[:] = s
    return x


def _store_fill(x, s):
    x.fill(s)
    return x


def _store_strided(x, s):
    x[::2] = s
    return x


def _store_element(x, s):
    x[0] = s
    return x


@pytest.mark.parametrize("store", [_store_ellipsis, _store_slice, _store_fill, _store_strided, _store_element])
@pytest.mark.parametrize(("dtype", "value"), [(np.uint32, -1), (np.int16, 40000), (np.int16, 2**33), (np.uint8, 7)])
def test_found_storing_an_out_of_range_python_int_raises(store, dtype, value):
    """NumPy converts the int to the array's dtype and raises OverflowError; whole-array stores were fused into a
    kernel that wrapped it (uint32 got 4294967295)."""
    check_calls(store, (np.zeros(3, dtype), value), backend="cpu")
