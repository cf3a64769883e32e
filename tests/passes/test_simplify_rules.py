"""Each algebraic rule: the printed graph before and after ``simplify``, and eager results unchanged on -0.0,
NaN, +-inf and integer extremes. Rules that must *not* fire (inexact for these dtypes/values) are tested too."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from passes_helpers import assert_same_results, build, f32, f64, golden, i32

from jitgraph.ir import TensorType
from jitgraph.passes import run_pipeline


@dataclass
class Case:
    name: str
    fn: Callable[..., Any]
    types: tuple[TensorType, ...]
    before: str
    after: str
    options: dict | None = None


def simplify(graph, **options):
    return run_pipeline(graph, {"passes": ("simplify",), **options})[0]


CASES = [
    Case("reduce_no_axes", lambda b, x: b.op("mean", x, axis=(), keepdims=False), (i32(2, 3),), """
        %0 = input[x0] : i32[2,3]
        %1 = mean(%0, axis=(), keepdims=False) : f64[2,3]
        return %1
    """, """
        %0 = input[x0] : i32[2,3]
        %1 = astype(%0, dtype=f64) : f64[2,3]
        return %1
    """),
    Case("reduce_no_axes_any", lambda b, x: b.op("any", x, axis=(), keepdims=True), (f32(4),), """
        %0 = input[x0] : f32[4]
        %1 = any(%0, axis=(), keepdims=True) : b1[4]
        return %1
    """, """
        %0 = input[x0] : f32[4]
        %1 = astype(%0, dtype=b1) : b1[4]
        return %1
    """),
    Case("multiply_one", lambda b, x: b.op("multiply", x, b.const(1)), (f32(2, 3),), """
        %0 = input[x0] : f32[2,3]
        %1 = const(1) : pyint[]
        %2 = multiply(%0, %1) : f32[2,3]
        return %2
    """, """
        %0 = input[x0] : f32[2,3]
        %1 = copy(%0) : f32[2,3]
        return %1
    """),
    Case("one_times_x", lambda b, x: b.op("exp", b.op("multiply", b.const(np.ones(3, np.float32)), x)),
         (f32(2, 3),), """
        %0 = input[x0] : f32[2,3]
        %1 = const(f32[1.0,1.0,1.0]) : f32[3]
        %2 = multiply(%1, %0) : f32[2,3]
        %3 = exp(%2) : f32[2,3]
        return %3
    """, """
        %0 = input[x0] : f32[2,3]
        %1 = exp(%0) : f32[2,3]
        return %1
    """),
    Case("divide_one", lambda b, x: b.op("sin", b.op("divide", x, b.const(1.0))), (f64(4),), """
        %0 = input[x0] : f64[4]
        %1 = const(1.0) : pyfloat[]
        %2 = divide(%0, %1) : f64[4]
        %3 = sin(%2) : f64[4]
        return %3
    """, """
        %0 = input[x0] : f64[4]
        %1 = sin(%0) : f64[4]
        return %1
    """),
    Case("add_zero_int", lambda b, x: b.op("negative", b.op("add", b.const(0), x)), (i32(5),), """
        %0 = input[x0] : i32[5]
        %1 = const(0) : pyint[]
        %2 = add(%1, %0) : i32[5]
        %3 = negative(%2) : i32[5]
        return %3
    """, """
        %0 = input[x0] : i32[5]
        %1 = negative(%0) : i32[5]
        return %1
    """),
    Case("add_negative_zero_float", lambda b, x: b.op("exp", b.op("add", x, b.const(-0.0))), (f32(5),), """
        %0 = input[x0] : f32[5]
        %1 = const(-0.0) : pyfloat[]
        %2 = add(%0, %1) : f32[5]
        %3 = exp(%2) : f32[5]
        return %3
    """, """
        %0 = input[x0] : f32[5]
        %1 = exp(%0) : f32[5]
        return %1
    """),
    Case("subtract_zero_float", lambda b, x: b.op("exp", b.op("subtract", x, b.const(0.0))), (f32(5),), """
        %0 = input[x0] : f32[5]
        %1 = const(0.0) : pyfloat[]
        %2 = subtract(%0, %1) : f32[5]
        %3 = exp(%2) : f32[5]
        return %3
    """, """
        %0 = input[x0] : f32[5]
        %1 = exp(%0) : f32[5]
        return %1
    """),
    Case("negate_twice", lambda b, x: b.op("exp", b.op("negative", b.op("negative", x))), (f64(3),), """
        %0 = input[x0] : f64[3]
        %1 = negative(%0) : f64[3]
        %2 = negative(%1) : f64[3]
        %3 = exp(%2) : f64[3]
        return %3
    """, """
        %0 = input[x0] : f64[3]
        %1 = exp(%0) : f64[3]
        return %1
    """),
    Case("compose_transposes", lambda b, x: b.op("exp", b.op("transpose", b.op("transpose", x, axes=(1, 2, 0)),
                                                             axes=(1, 0, 2))), (f32(2, 3, 4),), """
        %0 = input[x0] : f32[2,3,4]
        %1 = transpose(%0, axes=(1, 2, 0)) : f32[3,4,2]{S}
        %2 = transpose(%1, axes=(1, 0, 2)) : f32[4,3,2]{S}
        %3 = exp(%2) : f32[4,3,2]
        return %3
    """, """
        %0 = input[x0] : f32[2,3,4]
        %1 = transpose(%0, axes=(2, 1, 0)) : f32[4,3,2]{F}
        %2 = exp(%1) : f32[4,3,2]
        return %2
    """),
    Case("cancel_transposes", lambda b, x: b.op("exp", b.op("transpose", b.op("transpose", x, axes=(1, 0)),
                                                            axes=(1, 0))), (f32(2, 3),), """
        %0 = input[x0] : f32[2,3]
        %1 = transpose(%0, axes=(1, 0)) : f32[3,2]{F}
        %2 = transpose(%1, axes=(1, 0)) : f32[2,3]
        %3 = exp(%2) : f32[2,3]
        return %3
    """, """
        %0 = input[x0] : f32[2,3]
        %1 = exp(%0) : f32[2,3]
        return %1
    """),
    Case("collapse_reshapes", lambda b, x: b.op("exp", b.op("reshape", b.op("reshape", x, shape=(6, 2)),
                                                            shape=(3, -1))), (f32(2, 6),), """
        %0 = input[x0] : f32[2,6]
        %1 = reshape(%0, shape=(6, 2)) : f32[6,2]
        %2 = reshape(%1, shape=(3, -1)) : f32[3,4]
        %3 = exp(%2) : f32[3,4]
        return %3
    """, """
        %0 = input[x0] : f32[2,6]
        %1 = reshape(%0, shape=(3, 4)) : f32[3,4]
        %2 = exp(%1) : f32[3,4]
        return %2
    """),
    Case("reshape_round_trip", lambda b, x: b.op("exp", b.op("reshape", b.op("reshape", x, shape=(12,)),
                                                             shape=(2, 6))), (f32(2, 6),), """
        %0 = input[x0] : f32[2,6]
        %1 = reshape(%0, shape=(12,)) : f32[12]
        %2 = reshape(%1, shape=(2, 6)) : f32[2,6]
        %3 = exp(%2) : f32[2,6]
        return %3
    """, """
        %0 = input[x0] : f32[2,6]
        %1 = exp(%0) : f32[2,6]
        return %1
    """),
    Case("power_two", lambda b, x: b.op("power", x, b.const(2)), (f32(6),), """
        %0 = input[x0] : f32[6]
        %1 = const(2) : pyint[]
        %2 = power(%0, %1) : f32[6]
        return %2
    """, """
        %0 = input[x0] : f32[6]
        %1 = multiply(%0, %0) : f32[6]
        return %1
    """),
    Case("power_two_int", lambda b, x: b.op("power", x, b.const(2)), (i32(6),), """
        %0 = input[x0] : i32[6]
        %1 = const(2) : pyint[]
        %2 = power(%0, %1) : i32[6]
        return %2
    """, """
        %0 = input[x0] : i32[6]
        %1 = multiply(%0, %0) : i32[6]
        return %1
    """),
    Case("power_half", lambda b, x: b.op("power", x, b.const(0.5)), (f64(6),), """
        %0 = input[x0] : f64[6]
        %1 = const(0.5) : pyfloat[]
        %2 = power(%0, %1) : f64[6]
        return %2
    """, """
        %0 = input[x0] : f64[6]
        %1 = sqrt(%0) : f64[6]
        return %1
    """),
    Case("power_half_f32_array_scalar", lambda b, x: b.op("power", x, b.const(np.array([0.5], np.float32))),
         (f32(2, 3),), """
        %0 = input[x0] : f32[2,3]
        %1 = const(f32[0.5]) : f32[1]
        %2 = power(%0, %1) : f32[2,3]
        return %2
    """, """
        %0 = input[x0] : f32[2,3]
        %1 = sqrt(%0) : f32[2,3]
        return %1
    """),
    Case("power_one", lambda b, x: b.op("exp", b.op("power", x, b.const(1.0))), (f32(3),), """
        %0 = input[x0] : f32[3]
        %1 = const(1.0) : pyfloat[]
        %2 = power(%0, %1) : f32[3]
        %3 = exp(%2) : f32[3]
        return %3
    """, """
        %0 = input[x0] : f32[3]
        %1 = exp(%0) : f32[3]
        return %1
    """),
    Case("broadcast_minimisation_int",
         lambda b, m1, s1, m2, s2: b.op("add", b.op("add", m1, s1), b.op("add", s2, m2)),
         (i32(4, 8), i32(8), i32(4, 8), i32(1, 8)), """
        %0 = input[x0] : i32[4,8]
        %1 = input[x1] : i32[8]
        %2 = input[x2] : i32[4,8]
        %3 = input[x3] : i32[1,8]
        %4 = add(%0, %1) : i32[4,8]
        %5 = add(%3, %2) : i32[4,8]
        %6 = add(%4, %5) : i32[4,8]
        return %6
    """, """
        %0 = input[x0] : i32[4,8]
        %1 = input[x1] : i32[8]
        %2 = input[x2] : i32[4,8]
        %3 = input[x3] : i32[1,8]
        %4 = add(%1, %3) : i32[1,8]
        %5 = add(%0, %2) : i32[4,8]
        %6 = add(%5, %4) : i32[4,8]
        return %6
    """),
    Case("broadcast_minimisation_float_reassociate",
         lambda b, m1, s1, m2, s2: b.op("add", b.op("add", m1, s1), b.op("add", m2, s2)),
         (f32(4, 8), f32(8), f32(4, 8), f32(8)), """
        %0 = input[x0] : f32[4,8]
        %1 = input[x1] : f32[8]
        %2 = input[x2] : f32[4,8]
        %3 = input[x3] : f32[8]
        %4 = add(%0, %1) : f32[4,8]
        %5 = add(%2, %3) : f32[4,8]
        %6 = add(%4, %5) : f32[4,8]
        return %6
    """, """
        %0 = input[x0] : f32[4,8]
        %1 = input[x1] : f32[8]
        %2 = input[x2] : f32[4,8]
        %3 = input[x3] : f32[8]
        %4 = add(%1, %3) : f32[8]
        %5 = add(%0, %2) : f32[4,8]
        %6 = add(%5, %4) : f32[4,8]
        return %6
    """, {"reassociate": True}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_rule_printed_before_and_after(case: Case) -> None:
    graph = build(case.fn, *case.types)
    assert str(graph) == golden(case.before)
    assert str(simplify(graph, **(case.options or {}))) == golden(case.after)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_rule_keeps_eager_results(case: Case) -> None:
    graph = build(case.fn, *case.types)
    exact = not (case.options or {}).get("reassociate")
    assert_same_results(graph, simplify(graph, **(case.options or {})), rtol=0.0 if exact else 1e-5)
