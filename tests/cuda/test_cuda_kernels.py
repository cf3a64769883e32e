"""Every CUDA kernel family against eager NumPy, in the simulator at small sizes.

Families: elementwise (grid-stride), broadcast, row-wise reductions (block per row, shared-memory tree),
column-wise reductions (thread per column), full reductions (two stages), softmax and layernorm (one kernel per
row block), matmul with a fused epilogue, and matmul followed by a reduction epilogue.
"""

from __future__ import annotations

import numpy as np
import pytest
from cuda_util import assert_matches_eager, build, compile_cuda, rand

# The simulator runs kernels as Python on NumPy scalars, which warn where the GPU silently wraps or makes NaN.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _families(compiled) -> list[str]:
    return [p.family for p in compiled.plans.values()]


def test_elementwise_w1_chain() -> None:
    g = build([((300,), "float32")] * 3, lambda b, x, y, z: b.op("add", b.op(
        "multiply", b.op("tanh", b.op("add", b.op("multiply", x, y), z)), b.const(0.5)), x))
    c = assert_matches_eager(g, [rand((300,), seed=k) for k in range(3)])
    assert _families(c) == ["elementwise"]
    assert "math.tanh" in next(iter(c.sources.values()))


def test_compiled_graph_answers_the_backend_protocol() -> None:
    """explain asks the protocol: the CUDA artifact returns its kernel sources (they show in explain)."""
    from jitgraph.backends.base import CompiledGraph

    g = build([((64,), "float32")] * 2, lambda b, x, y: b.op("tanh", b.op("multiply", x, y)))
    c = compile_cuda(g)
    assert isinstance(c, CompiledGraph) and c.fallback_reason() is None and c.regions() == []
    (source,) = c.kernel_sources()
    assert source.title.startswith("CUDA kernel") and "math.tanh" in source.source
    assert set(c.compile_times()) == {"codegen", "numba"}


def test_broadcast_row_and_column_operands() -> None:
    def fn(b, x, row, col):
        return b.op("maximum", b.op("subtract", b.op("multiply", x, row), col), b.const(0.0))

    g = build([((12, 40), "float32"), ((40,), "float32"), ((12, 1), "float32")], fn)
    c = assert_matches_eager(g, [rand((12, 40)), rand((40,), seed=1), rand((12, 1), seed=2)])
    assert _families(c) == ["elementwise"]


def test_gelu_with_power_and_float64() -> None:
    def fn(b, x):
        inner = b.op("multiply", b.const(0.7978845608), b.op("add", x, b.op("multiply", b.const(0.044715),
                                                                                 b.op("power", x, b.const(3)))))
        return b.op("multiply", b.op("multiply", b.const(0.5), x), b.op("add", b.const(1.0), b.op("tanh", inner)))

    for dtype in ("float32", "float64"):
        g = build([((257,), dtype)], fn)
        assert_matches_eager(g, [rand((257,), dtype)], rtol=1e-5)


UNARY = ["negative", "absolute", "exp", "log1p", "expm1", "sqrt", "sin", "cos", "arctan", "square", "floor", "ceil",
         "trunc", "rint", "sign", "isnan", "isinf", "isfinite", "signbit", "exp2", "log2", "cosh", "arcsinh"]


@pytest.mark.parametrize("op", UNARY)
def test_unary_emitters(op: str) -> None:
    x = rand((64,), low=-3, high=3)
    x[:4] = [np.nan, np.inf, -np.inf, -0.0]
    if op in ("log1p", "sqrt", "log2"):
        x = np.abs(x)
    g = build([((64,), "float32")], lambda b, v: b.op(op, b.op("add", v, b.const(0.0))))
    assert_matches_eager(g, [x], rtol=1e-5, atol=1e-6)


BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "fmod", "maximum", "minimum",
          "fmax", "fmin", "less", "greater_equal", "equal", "arctan2", "hypot", "copysign", "logaddexp"]


@pytest.mark.parametrize("op", BINARY)
def test_binary_emitters_float_with_nan(op: str) -> None:
    x, y = rand((48,), seed=3), rand((48,), seed=4)
    x[0], y[1], y[2] = np.nan, np.nan, 0.0
    g = build([((48,), "float32"), ((48,), "float32")], lambda b, u, v: b.op(op, b.op("add", u, b.const(0.0)), v))
    assert_matches_eager(g, [x, y], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["add", "multiply", "floor_divide", "remainder", "bitwise_xor", "maximum", "less"])
def test_integer_ops_wrap_and_divide_by_zero(op: str) -> None:
    x = rand((40,), "int32", seed=5)
    y = rand((40,), "int32", seed=6)
    y[:3] = [0, -1, 7]
    x[1] = np.iinfo(np.int32).min
    x[2] = np.iinfo(np.int32).max
    g = build([((40,), "int32"), ((40,), "int32")], lambda b, u, v: b.op(op, b.op("multiply", u, b.const(3)), v))
    assert_matches_eager(g, [x, y], rtol=0, atol=0)


def test_mixed_dtypes_where_clip_astype() -> None:
    def fn(b, x, i, m):
        y = b.op("add", x, b.op("astype", i, dtype=np.dtype("float64")))
        return b.op("where", m, b.op("clip", y, b.const(-1.0), b.const(1.5)), b.op("multiply", y, b.const(2)))

    g = build([((50,), "float32"), ((50,), "int16"), ((50,), "bool")], fn)
    m = rand((50,), seed=9) > 0
    assert_matches_eager(g, [rand((50,)), rand((50,), "int16", seed=8), m])


def test_row_sum_max_and_mean_keepdims() -> None:
    def fn(b, x):
        y = b.op("exp", x)
        return (b.op("sum", y, axis=(1,), keepdims=False), b.op("max", y, axis=(1,), keepdims=True),
                b.op("mean", y, axis=(1,), keepdims=False))

    g = build([((20, 150), "float32")], fn)
    x = rand((20, 150))
    x[3, 7] = np.nan
    c = assert_matches_eager(g, [x], rtol=1e-5)
    assert _families(c) == ["row"]


def test_column_reduction_is_thread_per_column() -> None:
    g = build([((90, 33), "float32")], lambda b, x: b.op("sum", b.op("multiply", x, x), axis=(0,), keepdims=False))
    c = assert_matches_eager(g, [rand((90, 33))], rtol=1e-5)
    assert _families(c) == ["column"]
    g = build([((6, 50, 10), "float64")],
              lambda b, x: b.op("min", b.op("absolute", x), axis=(1,), keepdims=True))
    assert _families(assert_matches_eager(g, [rand((6, 50, 10), "float64")])) == ["column"]


def test_full_reduction_two_stages() -> None:
    def fn(b, x):
        sq = b.op("multiply", x, x)
        return b.op("sum", sq, axis=(0, 1), keepdims=False), b.op("max", b.op("absolute", x), axis=(0, 1),
                                                                   keepdims=False)

    g = build([((40, 50), "float32")], fn)
    c = assert_matches_eager(g, [rand((40, 50))], rtol=1e-5)
    assert _families(c) == ["split"]
    assert len(c.plans[next(iter(c.plans))].variants[frozenset()]) == 2  # partials, then combine + store


def test_full_reduction_feeding_elementwise_two_levels() -> None:
    """x - x.mean() and its variance over all elements: two levels, three stages, full-shape output."""
    def fn(b, x):
        xc = b.op("subtract", x, b.op("mean", x, axis=(0,), keepdims=True))
        var = b.op("mean", b.op("multiply", xc, xc), axis=(0,), keepdims=False)
        return xc, var

    g = build([((1500,), "float32")], fn)
    c = assert_matches_eager(g, [rand((1500,), low=3, high=5)], rtol=1e-4, atol=1e-5)
    assert _families(c) == ["split"]


def test_any_all_and_integer_sum() -> None:
    def fn(b, x):
        pos = b.op("greater", x, b.const(0))
        return (b.op("any", pos, axis=(1,), keepdims=False), b.op("all", pos, axis=(1,), keepdims=False),
                b.op("sum", b.op("multiply", x, b.const(2)), axis=(1,), keepdims=False))

    g = build([((8, 70), "int32")], fn)
    x = rand((8, 70), "int32", seed=11)
    x[2] = 1
    x[5] = -1
    assert_matches_eager(g, [x], rtol=0, atol=0)


def test_softmax_one_row_kernel() -> None:
    def fn(b, x):
        e = b.op("exp", b.op("subtract", x, b.op("max", x, axis=(1,), keepdims=True)))
        return b.op("divide", e, b.op("sum", e, axis=(1,), keepdims=True))

    g = build([((16, 100), "float32")], fn)
    x = rand((16, 100), low=-30, high=30)
    x[0, :] = -np.inf
    x[0, 5] = 0.0
    c = assert_matches_eager(g, [x])
    assert _families(c) == ["row"] and len(c.sources) == 1


def test_layernorm_one_row_kernel_two_levels() -> None:
    def fn(b, x, w, bias):
        xc = b.op("subtract", x, b.op("mean", x, axis=(1,), keepdims=True))
        var = b.op("mean", b.op("multiply", xc, xc), axis=(1,), keepdims=True)
        inv = b.op("divide", b.const(1.0), b.op("sqrt", b.op("add", var, b.const(1e-5))))
        return b.op("add", b.op("multiply", b.op("multiply", xc, inv), w), bias)

    g = build([((10, 96), "float32"), ((96,), "float32"), ((96,), "float32")], fn)
    c = assert_matches_eager(g, [rand((10, 96)), rand((96,), seed=1), rand((96,), seed=2)], rtol=1e-4, atol=1e-5)
    assert _families(c) == ["row"] and len(c.sources) == 1


def test_matmul_bias_relu_epilogue_in_store() -> None:
    def fn(b, x, w, bias):
        return b.op("maximum", b.op("add", b.op("matmul", x, w), bias), b.const(0.0))

    g = build([((19, 23), "float32"), ((23, 13), "float32"), ((13,), "float32")], fn)
    c = assert_matches_eager(g, [rand((19, 23)), rand((23, 13), seed=1), rand((13,), seed=2)], rtol=1e-4, atol=1e-5)
    assert _families(c) == ["matmul+epilogue"]
    src = next(iter(c.sources.values()))
    assert "cuda.shared.array" in src and "jg_maximum" in src


def test_matmul_then_softmax_reduction_epilogue() -> None:
    def fn(b, x, w):
        z = b.op("matmul", x, w)
        e = b.op("exp", b.op("subtract", z, b.op("max", z, axis=(1,), keepdims=True)))
        return b.op("divide", e, b.op("sum", e, axis=(1,), keepdims=True)), z

    g = build([((9, 20), "float64"), ((20, 30), "float32")], fn)
    c = assert_matches_eager(g, [rand((9, 20), "float64"), rand((20, 30), seed=1)], rtol=1e-5)
    assert _families(c) == ["matmul, then row reduction"]


def test_kernels_are_shared_between_compiles() -> None:
    g = build([((64,), "float32")], lambda b, x: b.op("sqrt", b.op("absolute", x)))
    a, b = compile_cuda(g), compile_cuda(g)
    assert_matches_eager(g, [rand((64,))], a)
    assert_matches_eager(g, [rand((64,), seed=1)], b)
    assert a.sources == b.sources


def test_column_family_with_full_shape_output() -> None:
    def fn(b, x):
        return b.op("divide", x, b.op("sum", b.op("absolute", x), axis=(0,), keepdims=True))

    g = build([((30, 3, 17), "float32")], fn)
    c = assert_matches_eager(g, [rand((30, 3, 17))], rtol=1e-5)
    assert _families(c) == ["column"]


def test_two_stage_family_with_several_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU with many SMs a few long rows use the split family; pretend the simulated device has 8 SMs."""
    from jitgraph.backends.cuda import runtime

    info = runtime.device_info()
    monkeypatch.setattr(runtime, "device_info", lambda: runtime.DeviceInfo(
        info.name, 8, info.max_threads, info.warp, info.simulated, info.peak_gbps))

    def fn(b, x, w):
        xc = b.op("subtract", x, b.op("mean", x, axis=(1,), keepdims=True))
        var = b.op("mean", b.op("multiply", xc, xc), axis=(1,), keepdims=True)
        return b.op("multiply", b.op("divide", xc, b.op("sqrt", b.op("add", var, b.const(1e-5)))), w), var

    # Long enough for several chunks per row at this device's block size (64 threads simulated, 256 on a GPU).
    n = runtime.row_block_threads(1 << 20, runtime.device_info()) * 8 * 2 + 100
    g = build([((3, n), "float32"), ((n,), "float32")], fn)
    c = assert_matches_eager(g, [rand((3, n), low=1, high=3), rand((n,), seed=1)], rtol=1e-4, atol=1e-5)
    assert _families(c) == ["split"]
    (plan,) = c.plans.values()
    assert [launch.nchunks > 1 for launch in plan.variants[frozenset()]] == [True, True, True]


def test_kernel_source_is_registered_in_linecache() -> None:
    import linecache

    from jitgraph.backends.cuda import compiler

    g = build([((40,), "float32")], lambda b, x: b.op("tanh", b.op("multiply", x, x)))
    c = compile_cuda(g)
    ((name, source),) = c.sources.items()
    kernel = compiler.kernel_from_source(name, source)
    filename = kernel.py_func.__code__.co_filename
    assert name in filename and "".join(linecache.getlines(filename)) == source
    assert f"def {name}(o0, a0, n0):" in source
