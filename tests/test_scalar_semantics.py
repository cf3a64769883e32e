"""The shared scalar helpers (``jitgraph.backends.scalar_semantics``) against NumPy, run as plain Python on NumPy
scalars: every pair of edge values (zero divisors, ``INT_MIN // -1``, NaN, +-inf, -0.0, huge and tiny values).

Both backends compile these very functions, so this pins down their semantics once; tests/cpu/test_emitters.py and
tests/cuda check the compiled kernels."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from jitgraph.backends import scalar_semantics as sem

INT_TYPES = [np.int8, np.int32, np.int64, np.uint8, np.uint64]
FLOAT_TYPES = [np.float32, np.float64]
FLOAT_EDGES = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 7.0, -7.0, 1e30, -1e-30, 1e-10,
               3.4e38, 1e300, 5e-324, 2.0**52 + 1, -(2.0**23) - 0.5]


def int_edges(t: type) -> list[Any]:
    info = np.iinfo(t)
    values = [info.min, info.max, 0, 1, 2, 3, 7, 100]
    if info.min < 0:
        values += [-1, -2, -7, info.min + 1]
    return [t(v) for v in values]


def float_edges(t: type) -> list[Any]:
    with np.errstate(all="ignore"):
        return [t(v) for v in FLOAT_EDGES]


def same(got: Any, want: Any, zero_sign: bool = True) -> bool:
    """Equal as NumPy would print them: NaN equals NaN, and (unless ``zero_sign`` is off) the sign of a zero counts."""
    if np.asarray(want).dtype.kind != "f":
        return bool(got == want)
    if np.isnan(want):
        return bool(np.isnan(got))
    return bool(got == want) and (not zero_sign or bool(np.signbit(got) == np.signbit(want)))


# Which zero maximum(0.0, -0.0) returns is left open by IEEE 754, and NumPy's answer depends on its SIMD loops.
EXTREMA = {np.maximum, np.minimum, np.fmax, np.fmin}


def check_pairs(fn: Callable[..., Any], ufunc: np.ufunc, values: list[Any]) -> None:
    bad = []
    with np.errstate(all="ignore"):
        for a, b in itertools.product(values, values):
            got, want = fn(a, b), ufunc(a, b)
            if not same(got, want, zero_sign=ufunc not in EXTREMA):
                bad.append((a, b, got, want))
    assert not bad, f"{fn.__name__} differs from np.{ufunc.__name__} (a, b, got, want): {bad[:8]}"


@pytest.mark.parametrize("t", INT_TYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize(("fn", "ufunc"), [(sem.floordiv_int, np.floor_divide), (sem.mod_int, np.remainder),
                                           (sem.fmod_int, np.fmod), (sem.maximum, np.maximum),
                                           (sem.minimum, np.minimum)], ids=lambda f: getattr(f, "__name__", ""))
def test_integer_ops_match_numpy(fn: Callable[..., Any], ufunc: np.ufunc, t: type) -> None:
    check_pairs(fn, ufunc, int_edges(t))


def test_int_min_floordiv_minus_one_wraps() -> None:
    with np.errstate(all="ignore"):
        assert sem.floordiv_int(np.int32(-(2**31)), np.int32(-1)) == np.int32(-(2**31))
        assert sem.mod_int(np.int64(-(2**63)), np.int64(-1)) == 0


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize(("fn", "ufunc"), [(sem.floordiv_float, np.floor_divide), (sem.mod_float, np.remainder),
                                           (sem.maximum, np.maximum), (sem.minimum, np.minimum),
                                           (sem.fmax, np.fmax), (sem.fmin, np.fmin)],
                         ids=lambda f: getattr(f, "__name__", ""))
def test_float_ops_match_numpy(fn: Callable[..., Any], ufunc: np.ufunc, t: type) -> None:
    check_pairs(fn, ufunc, float_edges(t))


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=lambda t: t.__name__)
def test_floor_by_fmod_matches_floor(t: type) -> None:
    values = float_edges(t) + [t(v) for v in (-0.5, 0.25, -1e-30, 2.5, -3.0, 123456.75)]
    for x in values:
        assert same(sem.floor_by_fmod(x), np.floor(x)), x


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=lambda t: t.__name__)
def test_floordiv_with_floor_by_fmod_as_cuda_compiles_it(t: type) -> None:
    """CUDA has no float-typed floor: it compiles floordiv_float against floor_by_fmod. Same results, including a
    quotient that overflows to inf (a NaN there was a bug of the old device floor)."""
    floordiv = sem.retarget(sem.floordiv_float, {"floor": sem.floor_by_fmod})
    check_pairs(floordiv, np.floor_divide, float_edges(t))
    with np.errstate(all="ignore"):
        assert floordiv(np.finfo(t).max, t(0.5)) == np.inf


@pytest.mark.parametrize("t", FLOAT_TYPES + INT_TYPES, ids=lambda t: t.__name__)
def test_sign_matches_numpy(t: type) -> None:
    values = float_edges(t) if t in FLOAT_TYPES else int_edges(t)
    for x in values:
        assert same(sem.sign(x), np.sign(x)), x


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=lambda t: t.__name__)
def test_logaddexp_matches_numpy(t: type) -> None:
    """Exact on the special values; within rounding elsewhere (as plain Python, exp and log1p run in float64)."""
    rtol = 1e-6 if t == np.float32 else 1e-15
    with np.errstate(all="ignore"):
        for a, b in itertools.product(float_edges(t), float_edges(t)):
            got, want = np.float64(sem.logaddexp(a, b)), np.float64(np.logaddexp(a, b))
            if np.isnan(want) or np.isinf(want):
                assert same(got, want), (a, b)
            else:
                assert got == pytest.approx(want, rel=rtol, abs=1e-300), (a, b)


@pytest.mark.parametrize("t", INT_TYPES, ids=lambda t: t.__name__)
def test_power_int_matches_numpy_and_refuses_negative_exponents(t: type) -> None:
    with np.errstate(all="ignore"):
        for a in int_edges(t):
            for b in (0, 1, 2, 3, 7, 13, 64):
                assert sem.power_int(a, t(b)) == np.power(a, t(b)), (a, b)
    if np.iinfo(t).min < 0:
        with pytest.raises(ValueError, match="negative integer powers"):
            sem.power_int(t(2), t(-1))


def test_running_max_and_min_stick_at_the_first_nan() -> None:
    values = [np.float64(v) for v in (1.0, 5.0, math.nan, 7.0, -math.inf)]
    acc_max, acc_min = np.float64(-math.inf), np.float64(math.inf)
    for v in values:
        acc_max, acc_min = sem.max_acc(acc_max, v), sem.min_acc(acc_min, v)
    assert np.isnan(acc_max) and np.isnan(acc_min)
    finite = [v for v in values if not np.isnan(v)]
    acc_max, acc_min = np.float64(-math.inf), np.float64(math.inf)
    for v in finite:
        acc_max, acc_min = sem.max_acc(acc_max, v), sem.min_acc(acc_min, v)
    assert (acc_max, acc_min) == (np.max(finite), np.min(finite))


def test_cpu_helpers_are_the_shared_functions() -> None:
    """cpu/helpers.py binds every shared helper under its kernel name (and exports it to generated modules)."""
    from jitgraph.backends.cpu import helpers

    for name, fn in sem.HELPERS.items():
        assert name in helpers.__all__
        assert getattr(helpers, name).py_func is fn
