"""Three CPU-backend speed paths that must not change results: the row-by-row template for reductions over axis 0,
in-place outputs stored through the input's own kernel argument, and output buffers reused across calls only once
the caller has dropped them."""

from __future__ import annotations

import linecache

import numpy as np
import pytest
from helpers_cpu import check_against_eager

import jitgraph
from jitgraph.backends.cpu import launch
from jitgraph.ir import GraphBuilder, TensorType

COLUMN_OPS = ("sum", "mean", "max", "min", "prod", "any", "all")


def column_graph(shape: tuple[int, int], dtype: str, with_elementwise: bool):
    b = GraphBuilder()
    x = b.input(TensorType(shape, np.dtype(dtype)), "x")
    w = b.input(TensorType((shape[1],), np.dtype(dtype)), "w")
    p = b.op("multiply", x, w)  # a row-broadcast operand inside the sweep
    outs = [b.op(op, p, axis=(0,), keepdims=keep) for op in COLUMN_OPS for keep in (False,)]
    outs.append(b.op("add", b.op("sum", p, axis=(0,), keepdims=False), w))  # a value after the reduction
    if with_elementwise:
        outs.append(b.op("negative", p))  # a full-shape output that does not depend on the reductions
    return b.build(outs)


@pytest.mark.parametrize(("shape", "dtype"), [((9, 13), "float32"), ((7, 300), "float64"), ((5, 6), "int32"),
                                              ((64, 40000), "float64")])
def test_axis0_reductions_against_numpy(shape, dtype):
    """(64, 40000) is above the parallel threshold: threads get column chunks [lo, hi) of the same kernel."""
    graph = column_graph(shape, dtype, with_elementwise=True)
    rng = np.random.default_rng(7)
    if dtype.startswith("int"):
        x, w = rng.integers(-3, 4, shape).astype(dtype), rng.integers(1, 3, shape[1]).astype(dtype)
    else:
        x, w = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape[1]).astype(dtype)
    before = len(launch.COMPILE_LOG)
    check_against_eager(graph, [x, w])
    assert len(launch.COMPILE_LOG) > before


def test_axis0_template_is_the_one_used_and_propagates_nan(caplog):
    graph = column_graph((6, 9), "float64", with_elementwise=False)
    x = np.arange(54, dtype=np.float64).reshape(6, 9)
    x[0, 1] = np.nan
    x[:, 3] = np.nan
    x[2, 5] = -np.inf
    with caplog.at_level("DEBUG", logger="jitgraph.kernels"):
        got = check_against_eager(graph, [x, np.ones(9)])
    source = "\n".join(r.getMessage() for r in caplog.records)
    assert "for i0 in range(n0):" in source and "col" in source  # rows outside, column accumulators
    assert np.isnan(got[2][[1, 3]]).all() and np.isnan(got[3][[1, 3]]).all()


def test_inplace_update_is_stored_through_the_input_argument(caplog):
    def sgd(p, g):
        p -= 0.1 * g
        return p.sum()

    rng = np.random.default_rng(8)
    p, g = rng.standard_normal(1000), rng.standard_normal(1000)
    want_p = p.copy()
    want_p -= 0.1 * g
    f = jitgraph.compile(sgd)
    with caplog.at_level("DEBUG", logger="jitgraph.kernels"):
        got = f(p, g)
    np.testing.assert_allclose(p, want_p, rtol=1e-12)
    np.testing.assert_allclose(got, want_p.sum(), rtol=1e-12)
    source = "\n".join(r.getMessage() for r in caplog.records)
    header = next(line for line in source.splitlines() if line.startswith("def "))
    assert "o0" not in header  # no separate output parameter: the kernel writes a0 itself


def test_read_only_inplace_target_behaves_like_numpy():
    def sgd(p, g):
        p -= 0.1 * g
        return p

    p, g = np.ones(64), np.ones(64)
    p.flags.writeable = False
    with pytest.raises(ValueError):
        sgd(p, g)
    with pytest.raises(ValueError):
        jitgraph.compile(sgd)(p, g)


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_output_buffer_is_reused_only_after_the_caller_drops_it():
    f = jitgraph.compile(lambda x: x * 2.0 + 1.0)
    x = np.arange(4096.0)
    r1 = f(x)
    r2 = f(x + 1)
    assert not np.shares_memory(r1, r2)
    np.testing.assert_array_equal(r1, x * 2 + 1)
    address = _address(r1)
    del r1
    r3 = f(x + 2)
    assert _address(r3) == address  # the dropped buffer came back
    np.testing.assert_array_equal(r2, (x + 1) * 2 + 1)  # the kept result was not touched
    np.testing.assert_array_equal(r3, (x + 2) * 2 + 1)


def test_a_view_of_a_result_keeps_its_buffer():
    f = jitgraph.compile(lambda x: x * 3.0)
    x = np.arange(1000.0)
    r = f(x)
    tail = r[500:]
    del r
    for k in range(4):
        f(x + k)
    np.testing.assert_array_equal(tail, x[500:] * 3)


def test_x_equals_f_of_x_loop_matches_numpy():
    def step(x):
        return np.tanh(x) * 0.5 + x

    f = jitgraph.compile(step)
    x = want = np.linspace(-2, 2, 10000)
    for _ in range(6):
        x, want = f(x), step(want)
    np.testing.assert_allclose(x, want, rtol=1e-6)


def _new_launch_sources(before: set[str]) -> str:
    return "".join("".join(v[2]) for k, v in linecache.cache.items()
                   if str(k).startswith("<jitgraph launch") and k not in before)


@pytest.mark.parametrize("reuse", [True, False])
def test_reuse_outputs_option(reuse):
    before = set(linecache.cache)
    f = jitgraph.compile(lambda x: x * 2.0 - 1.0, reuse_outputs=reuse)  # two ops: a kernel (one runs as NumPy)
    np.testing.assert_array_equal(f(np.zeros(2048)), -1.0)
    source = _new_launch_sources(before)
    assert "def run(" in source
    assert (".take()" in source) == reuse
