"""Named regressions of the fusion plan, each run end to end on the CPU backend against eager NumPy.

Every test sets ``JITGRAPH_STRICT=1``: without it the tracer falls back to eager when the backend fails on the
first run, which would hide exactly the crashes these tests are about.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jitgraph
from jitgraph.ir import GraphBuilder, TensorType, verify
from jitgraph.passes.fuse import fuse_graph

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import mlp_training


@pytest.fixture(autouse=True)
def strict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JITGRAPH_STRICT", "1")


def copy_args(args: Sequence[Any]) -> list[Any]:
    return [{k: v.copy() for k, v in a.items()} if isinstance(a, dict) else
            a.copy() if isinstance(a, np.ndarray) else a for a in args]


def assert_same(got: Any, want: Any, rtol: float) -> None:
    if isinstance(want, dict):
        assert got.keys() == want.keys()
        for k in want:
            assert_same(got[k], want[k], rtol)
        return
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w, rtol)
        return
    if not isinstance(want, np.ndarray):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
        return
    assert np.asarray(got).shape == want.shape and np.asarray(got).dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def check_compiled(fn: Callable, args: Sequence[Any], rtol: float = 2e-5) -> None:
    """Outputs and every mutated argument agree with plain NumPy, and the graph really ran fused kernels."""
    mine, ref = copy_args(args), copy_args(args)
    compiled = jitgraph.compile(fn, backend="cpu")
    got = compiled(*mine)
    want = fn(*ref)
    assert_same(got, want, rtol)
    for a, b in zip(mine, ref):
        assert_same(a, b, rtol)
    (graph,) = compiled.graphs()
    assert any(n.op == "fused" for n in graph.nodes), "the CPU backend fused nothing"


def _divide_feeds_matmul_and_sum(h, d, w, b, lr):
    d = d / 64
    w -= lr * (h.T @ d)
    b -= lr * d.sum(axis=0)
    return d


def test_matmul_operand_merged_into_epilogue_as_sibling():
    """``d / 64`` feeds both ``h.T @ d`` and ``d.sum(0)``; the product has d's shape, so sibling fusion (both
    kernels read ``lr``) used to merge the divide into the matmul's epilogue, which runs after BLAS needs it."""
    f32 = np.float32
    rng = np.random.default_rng(0)
    args = [rng.normal(size=(64, 64)).astype(f32), rng.normal(size=(64, 10)).astype(f32),
            rng.normal(size=(64, 10)).astype(f32), rng.normal(size=10).astype(f32), 0.1]
    check_compiled(_divide_feeds_matmul_and_sum, args)


def test_mlp_training_step_small():
    """The MLP step of examples/mlp_training.py (``dlogits /= n`` feeding ``h.T @ dlogits`` and a sum)."""
    x, y = mlp_training.make_dataset(64, 32, 10)
    params = mlp_training.init_params(32, 64, 10)
    check_compiled(mlp_training.train_step, [params, x, y, 0.1], rtol=1e-4)


def _plan(build: Callable[[GraphBuilder], Any]) -> tuple[Any, Any]:
    b = GraphBuilder()
    outputs, mutations = build(b)
    graph = b.build(outputs, mutations)
    fused = fuse_graph(graph)
    verify(fused)
    return graph, fused


def test_plan_keeps_matmul_operand_out_of_its_epilogue():
    """The fusion plan itself: no op upstream of a BLAS head lives in that head's kernel."""
    f32 = np.dtype("float32")

    def build(b: GraphBuilder) -> Any:
        h = b.input(TensorType((8, 8), f32), "h")
        d = b.input(TensorType((8, 4), f32), "d")
        w = b.input(TensorType((8, 4), f32), "w")
        bias = b.input(TensorType((4,), f32), "b")
        lr = b.input(TensorType((), f32), "lr")
        dd = b.op("divide", d, b.const(8.0))
        prod = b.op("matmul", b.op("transpose", h, axes=(1, 0)), dd)
        w2 = b.op("subtract", w, b.op("multiply", lr, prod))
        b2 = b.op("subtract", bias, b.op("multiply", lr, b.op("sum", dd, axis=(0,), keepdims=False)))
        return [dd], [(2, w2), (3, b2)]

    _, fused = _plan(build)
    for node in fused.nodes:
        if node.op == "fused" and node.attrs["kind"] == "matmul_epilogue":
            (body,) = node.regions
            (head,) = [n for n in body.nodes if n.op == "matmul"]
            assert all(i.op == "input" for i in head.inputs), str(fused)


def _mean_broadcast_along_other_dim(a):
    t = a * a.mean(axis=1)
    return t.T @ t.T, t


def test_square_broadcast_of_row_means_is_not_a_diagonal():
    """Sweep find: for a square ``a``, ``a.mean(axis=1)`` (walking the rows) broadcasts along the columns of
    ``a * mean``; fusing them mapped both result dims to one domain axis and the launch could not build views."""
    a = np.random.default_rng(1).normal(size=(8, 8))
    check_compiled(_mean_broadcast_along_other_dim, [a], rtol=1e-10)
