"""Rewrites that look like identities but are not exact: ``simplify`` must leave these graphs alone.

Each case also shows *why* with plain NumPy, so the test documents the counterexample it guards against.
"""

from __future__ import annotations

import numpy as np
import pytest
from passes_helpers import assert_same_results, build, f32, f64, i32

from jitgraph.ir import TensorType
from jitgraph.passes import run_pipeline


def simplify(graph, **options):
    return run_pipeline(graph, {"passes": ("simplify",), **options})[0]


c64 = TensorType((4,), np.complex64)
f16 = TensorType((4,), np.float16)
i8 = TensorType((4,), np.int8)

DECLINED = {
    "float_plus_positive_zero": (lambda b, x: b.op("add", x, b.const(0.0)), (f32(4),)),
    "float_plus_int_zero": (lambda b, x: b.op("add", x, b.const(0)), (f64(4),)),
    "float_plus_int_zero_array": (lambda b, x: b.op("add", x, b.const(np.zeros(4, np.int8))), (f32(4),)),
    "zero_plus_float": (lambda b, x: b.op("add", b.const(0.0), x), (f32(4),)),
    "float_minus_negative_zero": (lambda b, x: b.op("subtract", x, b.const(-0.0)), (f32(4),)),
    "zero_minus_x": (lambda b, x: b.op("subtract", b.const(0), x), (i32(4),)),
    "complex_times_one": (lambda b, x: b.op("multiply", x, b.const(1.0)), (c64,)),
    "complex_over_one": (lambda b, x: b.op("divide", x, b.const(1.0)), (c64,)),
    "times_one_changes_dtype": (lambda b, x: b.op("multiply", x, b.const(1.0)), (i8,)),
    "times_one_broadcasts": (lambda b, x: b.op("multiply", x, b.const(np.ones((2, 4), np.float32))), (f32(4),)),
    "int_over_one": (lambda b, x: b.op("divide", x, b.const(1)), (i32(4),)),
    "times_zero": (lambda b, x: b.op("multiply", x, b.const(0.0)), (f32(4),)),
    "exp_of_log": (lambda b, x: b.op("exp", b.op("log", x)), (f64(4),)),
    "float16_power_half": (lambda b, x: b.op("power", x, b.const(0.5)), (f16,)),
    "power_half_array_exponent": (lambda b, x: b.op("power", x, b.const(np.full(4, 0.5))), (f64(4),)),
    "power_two_array_exponent": (lambda b, x: b.op("power", x, b.const(np.full(4, 2.0))), (f64(4),)),
    "power_two_promotes": (lambda b, x: b.op("power", x, b.const(np.float64(2.0))), (f32(4),)),
    "float_reassociation": (lambda b, m1, s1, m2, s2: b.op("add", b.op("add", m1, s1), b.op("add", m2, s2)),
                            (f32(4, 8), f32(8), f32(4, 8), f32(8))),
    "int_reassociation_mixed_dtypes": (lambda b, m1, s1, m2, s2: b.op("add", b.op("add", m1, s1),
                                                                       b.op("add", m2, s2)),
                                       (TensorType((4, 8), np.int8), i32(8), i32(4, 8), i32(8))),
    "int_reassociation_weak_scalars": (lambda b, m1, m2: b.op("add", b.op("add", m1, b.const(100)),
                                                              b.op("add", m2, b.const(100))),
                                       (TensorType((4,), np.int8), TensorType((4,), np.int8))),
}


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_inexact_rewrite_is_declined(name: str) -> None:
    fn, types = DECLINED[name]
    graph = build(fn, *types)
    after = simplify(graph)
    assert str(after) == str(graph)
    assert_same_results(graph, after)


def test_why_the_declined_rules_are_wrong() -> None:
    """The counterexamples behind the declines, in plain NumPy."""
    with np.errstate(all="ignore"):
        assert not np.signbit(np.float32(-0.0) + np.float32(0.0))  # x + 0.0 loses -0.0
        assert not np.signbit(np.float32(-0.0) - np.float32(-0.0))  # x - (-0.0) loses -0.0
        assert np.isnan((np.array([complex(np.inf, 1)]) * 1.0).imag[0])  # complex x * 1 makes NaN
        assert np.isnan(np.float32(np.nan) * 0) and np.isnan(np.float32(np.inf) * 0)  # x * 0 is not 0
        assert np.isnan(np.exp(np.log(-1.0)))  # exp(log(x)) is not x
        half = np.array([-0.0, -np.inf], np.float16)
        assert not np.signbit(np.power(half, 0.5)[0]) and np.power(half, 0.5)[1] == np.inf  # C pow, not sqrt
        x = np.array([-0.0, -np.inf, 2.0])
        assert not np.signbit(np.power(x, np.full(3, 0.5))[0])  # array exponent: C pow, not the fast path
        assert np.signbit(np.power(x, 0.5)[0]) and np.isnan(np.power(x, 0.5)[1])  # scalar exponent: sqrt
        a, b, c = np.float32(1e8), np.float32(-1e8), np.float32(1.0)
        assert (a + c) + b != (a + b) + c  # float addition is not associative


def test_identity_rules_match_numpy_on_all_float16_values() -> None:
    """x ** 2 == x * x for every float16 (the square is exact in float32 and rounded once)."""
    x = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    graph = build(lambda b, v: b.op("power", v, b.const(2)), TensorType(x.shape, np.float16))
    after = simplify(graph)
    assert [n.op for n in after.nodes] == ["input", "multiply"]
    assert_same_results(graph, after, [x])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_power_rules_match_numpy_on_many_values(dtype) -> None:
    rng = np.random.default_rng(5)
    x = rng.integers(0, 2**63, 100_000, dtype=np.uint64)
    x = (x.astype(np.uint32) if dtype == np.float32 else x).view(dtype)
    x = np.concatenate([x, np.array([-0.0, 0.0, np.inf, -np.inf, np.nan], dtype)])
    for values in (x, x[::-1][::3]):  # contiguous and strided: NumPy takes the scalar fast path for both
        t = TensorType(values.shape, dtype, layout="C" if values.flags.c_contiguous else "S")
        for exponent, op in ((0.5, "sqrt"), (2, "multiply")):
            graph = build(lambda b, v, e=exponent: b.op("power", v, b.const(e)), t)
            after = simplify(graph)
            assert after.nodes[-1].op == op
            assert_same_results(graph, after, [values])
