"""Every kernel emitter against NumPy: each elementwise op, per dtype, on edge values (NaN, inf, signed zeros,
integer extremes, division by zero). All ops of one dtype read the same operands, so horizontal fusion compiles
them into one kernel per dtype: one compile covers the whole table."""

from __future__ import annotations

import numpy as np
import pytest
from helpers_cpu import check_against_eager, cpu_compile

from jitgraph.errors import TypeInferenceError
from jitgraph.ir import GraphBuilder, TensorType
from jitgraph.ir.fusion_groups import FUSIBLE_ELEMENTWISE
from jitgraph.ir.ops.elementwise import BINARY_UFUNCS, UNARY_UFUNCS
from jitgraph.passes.fuse import fuse_graph

UNARY = sorted(set(UNARY_UFUNCS) & FUSIBLE_ELEMENTWISE) + ["copy"]
BINARY = sorted(set(BINARY_UFUNCS) & FUSIBLE_ELEMENTWISE - {"power"})


def edge_values(dtype: np.dtype, n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e30, -1e-30, 7.0, -7.0])
        x = np.concatenate([special, rng.standard_normal(n - len(special)) * 3]).astype(dtype)
        y = np.concatenate([special[::-1], rng.standard_normal(n - len(special)) * 3]).astype(dtype)
    elif dtype.kind == "b":
        x, y = rng.integers(0, 2, n).astype(bool), rng.integers(0, 2, n).astype(bool)
    else:
        info = np.iinfo(dtype)
        special = np.array([info.min, info.max, 0, 1, -1 if info.min < 0 else 2, 7, 3], dtype=dtype)
        lo, hi = max(info.min, -100), min(info.max, 100)
        x = np.concatenate([special, rng.integers(lo, hi, n - len(special))]).astype(dtype)
        y = np.concatenate([special[::-1], rng.integers(lo, hi, n - len(special))]).astype(dtype)
        y[np.arange(n) % 5 == 0] = 0
        y[np.arange(n) % 7 == 0] = -1 if info.min < 0 else 1
    return x, y


def table_graph(dtype: str, ops: list[str], arity: int):
    b = GraphBuilder()
    n = 64
    x = b.input(TensorType((n,), np.dtype(dtype)), "x")
    y = b.input(TensorType((n,), np.dtype(dtype)), "y")
    outs = []
    for op in ops:
        try:
            outs.append(b.op(op, x) if arity == 1 else b.op(op, x, y))
        except TypeInferenceError:
            continue  # NumPy rejects this op for this dtype too
    return b.build(outs)


DTYPES = ["float32", "float64", "int32", "uint8", "bool"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("ops", "arity"), [(UNARY, 1), (BINARY, 2)], ids=["unary", "binary"])
def test_ops_against_numpy(dtype, ops, arity):
    graph = table_graph(dtype, ops, arity)
    if dtype == "bool" and arity == 2:
        graph = table_graph(dtype, [o for o in ops if o not in ("floor_divide", "remainder", "fmod")], 2)
    fused = fuse_graph(graph)
    assert sum(n.op == "fused" for n in fused.nodes) == 1, "one kernel for the whole table"
    x, y = edge_values(np.dtype(dtype))
    check_against_eager(graph, [x, y])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8"])
def test_power_and_clip_and_where(dtype):
    b = GraphBuilder()
    t = TensorType((32,), np.dtype(dtype))
    x, y, c = b.input(t, "x"), b.input(t, "y"), b.input(TensorType((32,), np.dtype(bool)), "c")
    outs = [b.op("power", x, y), b.op("power", x, b.const(3)), b.op("power", x, b.const(2)),
            b.op("clip", x, b.const(1), b.const(5)), b.op("where", c, x, y), b.op("astype", x, dtype=np.dtype("f4")),
            b.op("astype", x, dtype=np.dtype("i1")), b.op("astype", x, dtype=np.dtype(bool))]
    if np.dtype(dtype).kind == "f":
        outs.append(b.op("power", x, b.const(0.5)))
    graph = b.build(outs)
    rng = np.random.default_rng(2)
    x = (rng.random(32) * 6).astype(dtype)
    y = (rng.random(32) * 4).astype(dtype)
    check_against_eager(graph, [x, y, rng.random(32) > 0.5])


def test_weak_scalars_and_mixed_dtypes():
    """NEP 50: f32 * python float stays f32; int8 + python int wraps in int8; uint8 + int8 promotes to int16."""
    b = GraphBuilder()
    f = b.input(TensorType((8,), np.dtype("f4")), "f")
    i8 = b.input(TensorType((8,), np.dtype("i1")), "i8")
    u8 = b.input(TensorType((8,), np.dtype("u1")), "u8")
    s = b.input(TensorType((), np.dtype("f8"), weak=True), "s")
    outs = [b.op("multiply", f, b.const(0.1)), b.op("add", i8, b.const(100)), b.op("add", u8, i8),
            b.op("multiply", f, s), b.op("divide", i8, u8), b.op("add", f, i8)]
    graph = b.build(outs)
    assert [o.type.dtype.name for o in graph.outputs] == ["float32", "int8", "int16", "float32", "float64",
                                                           "float32"]
    args = [np.linspace(-3, 3, 8).astype("f4"), np.array([100, 27, -128, 0, 5, -5, 1, 127], "i1"),
            np.array([0, 1, 2, 200, 255, 7, 3, 9], "u1"), 0.3]
    check_against_eager(graph, args)


def test_libm_option_matches_numpy_closely():
    b = GraphBuilder()
    x = b.input(TensorType((256,), np.dtype("f8")), "x")
    graph = b.build([b.op("tanh", x), b.op("exp", x)])
    xs = np.linspace(-20, 20, 256)
    got = cpu_compile(graph, math="libm")([xs])
    np.testing.assert_allclose(got[0], np.tanh(xs), rtol=1e-15)
    np.testing.assert_allclose(got[1], np.exp(xs), rtol=1e-15)


_COMPARE = [lambda a, b: a > b, lambda a, b: a >= b, lambda a, b: a < b, lambda a, b: a <= b,
            lambda a, b: a == b, lambda a, b: a != b]


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.uint64])
def test_integer_array_compared_with_a_python_int_outside_its_range(dtype):
    """NumPy 2 compares exactly (``int8 > 300`` is False everywhere, ``uint8 >= -1`` True); casting the int to the
    loop's type wrapped it (300 -> 44), silently (regression)."""
    import jitgraph

    x = np.array([np.iinfo(dtype).min, 0, 1, 44, np.iinfo(dtype).max], dtype)
    for k, op in enumerate(_COMPARE):
        for f in (lambda x, s, op=op: op(x, s), lambda x, s, op=op: op(s, x)):
            compiled = jitgraph.compile(f, backend="cpu", cache=False)  # one entry: the int is a run-time value
            for c in (300, -1, -300, 2**40, -(2**63), 7):
                got, want = compiled(x, c), f(x, c)
                assert compiled.break_reasons() == []
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(got, want, err_msg=f"comparison {k} with {c}")


def test_int64_arithmetic_wraps_even_where_llvm_could_assume_it_does_not():
    """Numba marks signed arithmetic ``nsw`` (overflow undefined) and LLVM turned ``x + (-2**63)`` into
    ``x | -2**63``: -2**63 + -2**63 gave -2**63 instead of NumPy's wrapped 0 (regression)."""
    import jitgraph

    y = np.array([-(2**63), 1, 2**62, -5, 2**63 - 1], np.int64)
    fns = [lambda x: x + (-(2**63)), lambda x: x - (-(2**63)), lambda x: -x, lambda x: x * 4 + 3,
           lambda x: (x + 2**62) + 2**62]
    for f in fns:
        with np.errstate(over="ignore"):
            got, want = jitgraph.compile(f, backend="cpu", cache=False)(y), f(y)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
