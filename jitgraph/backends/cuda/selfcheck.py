"""One small graph per CUDA kernel family, for ``scripts/gpu_check.py`` to run on a real GPU (or the simulator).

Each check builds its graph with GraphBuilder (no tracer involved), lowers it with the caller's ``lower`` (the
pass pipeline: a backend imports no pass, so the script hands it in), compiles it with the CUDA backend, runs it
with device-resident arguments, and compares every output and mutated argument with the eager
interpreter. ``scale`` multiplies the sizes: 1.0 is a few hundred thousand elements, the simulator wants ~0.002.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from jitgraph.backends import eager
from jitgraph.backends.cuda import runtime
from jitgraph.backends.cuda.backend import compile_graph
from jitgraph.ir.graph import Graph, GraphBuilder, Node
from jitgraph.ir.types import TensorType


@dataclass
class Check:
    name: str
    family: str
    graph: Graph
    args: list[np.ndarray]


def _dim(n: int, scale: float, low: int = 3) -> int:
    return max(low, int(n * scale))


def _graph(shapes: list[tuple[int, ...]], body: Callable[..., Any]) -> Graph:
    b = GraphBuilder()
    xs = [b.input(TensorType(s, np.dtype(np.float32)), f"x{k}") for k, s in enumerate(shapes)]
    result = body(b, *xs)
    if isinstance(result, dict):
        return b.build(result.get("outputs", []), result.get("mutations", []))
    return b.build(result if isinstance(result, tuple) else (result,))


def _softmax(b: GraphBuilder, x: Node) -> Node:
    e = b.op("exp", b.op("subtract", x, b.op("max", x, axis=(1,), keepdims=True)))
    return b.op("divide", e, b.op("sum", e, axis=(1,), keepdims=True))


def _layernorm(b: GraphBuilder, x: Node, w: Node, bias: Node) -> Node:
    xc = b.op("subtract", x, b.op("mean", x, axis=(1,), keepdims=True))
    var = b.op("mean", b.op("multiply", xc, xc), axis=(1,), keepdims=True)
    inv = b.op("divide", b.const(1.0), b.op("sqrt", b.op("add", var, b.const(1e-5))))
    return b.op("add", b.op("multiply", b.op("multiply", xc, inv), w), bias)


def _adam(b: GraphBuilder, p: Node, g: Node, m: Node, v: Node) -> dict:
    m2 = b.op("add", b.op("multiply", b.const(0.9), m), b.op("multiply", b.const(0.1), g))
    v2 = b.op("add", b.op("multiply", b.const(0.999), v), b.op("multiply", b.const(0.001), b.op("multiply", g, g)))
    upd = b.op("divide", b.op("multiply", b.const(1e-3), m2), b.op("add", b.op("sqrt", v2), b.const(1e-8)))
    return {"mutations": [(0, b.op("subtract", p, upd)), (2, m2), (3, v2)]}


def checks(scale: float, seed: int = 0) -> list[Check]:
    rng = np.random.default_rng(seed)

    def r(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    n = _dim(300_000, scale, 100)
    rows, cols = _dim(512, scale, 4), _dim(1024, scale, 40)
    mm, kk, nn = _dim(256, scale, 9), _dim(512, scale, 11), _dim(384, scale, 13)
    out = [
        Check("tanh(a*b+c)*0.5+a", "elementwise", _graph([(n,)] * 3, lambda b, x, y, z: b.op("add", b.op(
            "multiply", b.op("tanh", b.op("add", b.op("multiply", x, y), z)), b.const(0.5)), x)), [r(n), r(n), r(n)]),
        Check("relu(x*row - col)", "elementwise (broadcast)", _graph(
            [(rows, cols), (cols,), (rows, 1)],
            lambda b, x, w, c: b.op("maximum", b.op("subtract", b.op("multiply", x, w), c), b.const(0.0))),
            [r(rows, cols), r(cols), r(rows, 1)]),
        Check("exp(x).sum(1)", "row", _graph([(rows, cols)], lambda b, x: b.op("sum", b.op("exp", x), axis=(1,),
                                                                              keepdims=False)), [r(rows, cols)]),
        Check("(x*x).sum(0)", "column", _graph([(rows, cols)], lambda b, x: b.op(
            "sum", b.op("multiply", x, x), axis=(0,), keepdims=False)), [r(rows, cols)]),
        Check("(x*x).sum(), |x|.max()", "split (two stages)", _graph([(n,)], lambda b, x: (
            b.op("sum", b.op("multiply", x, x), axis=(0,), keepdims=False),
            b.op("max", b.op("absolute", x), axis=(0,), keepdims=False))), [r(n)]),
        Check("softmax rows", "row (one kernel)", _graph([(rows, cols)], _softmax), [r(rows, cols)]),
        Check("layernorm rows", "row (one kernel)", _graph([(rows, cols), (cols,), (cols,)], _layernorm),
              [r(rows, cols), r(cols), r(cols)]),
        Check("relu(x @ w + b)", "matmul+epilogue", _graph(
            [(mm, kk), (kk, nn), (nn,)],
            lambda b, x, w, c: b.op("maximum", b.op("add", b.op("matmul", x, w), c), b.const(0.0))),
            [r(mm, kk), r(kk, nn) * 0.05, r(nn)]),
        Check("softmax(x @ w)", "matmul, then row", _graph([(mm, kk), (kk, nn)], lambda b, x, w: _softmax(
            b, b.op("matmul", x, w))), [r(mm, kk), r(kk, nn) * 0.05]),
        Check("w -= 0.01 * (h.T @ d)", "matmul, beta = 1 in place", _graph(
            [(mm, kk), (mm, nn), (kk, nn)], lambda b, h, d, w: {"mutations": [(2, b.op("subtract", w, b.op(
                "multiply", b.const(0.01), b.op("matmul", b.op("transpose", h, axes=(1, 0)), d))))]}),
            [r(mm, kk), r(mm, nn), r(kk, nn)]),
        Check("adam in place", "elementwise, in place", _graph([(n,)] * 4, _adam),
              [r(n), r(n), r(n) * 0.1, np.abs(r(n)) * 0.01]),
    ]
    return out


def run_check(check: Check, lower: Callable[[Graph], Graph], calls: int = 3) -> tuple[bool, float, str, list[str]]:
    """(agrees, max relative error, what the backend chose, why it did not use cuBLAS or replay) for one check on
    device-resident arguments;
    ``lower`` turns the check's graph into the pipeline's output (``run_pipeline(graph)[0]``).

    The graph runs ``calls`` times on the same device arguments, each call compared with the eager interpreter
    applied as often (mutations accumulate): on a GPU the first call runs the cuBLAS self-check, the second
    records a CUDA graph and the third replays it, so each of those paths is checked against NumPy."""
    compiled = compile_graph(lower(check.graph), {})
    want_args = [a.copy() for a in check.args]
    dev = [runtime.to_device(a) for a in check.args]
    worst = 0.0
    ok = True
    for _ in range(calls):
        want = list(eager.run(check.graph, want_args)) + want_args
        got = [runtime.to_host(o) for o in compiled(dev)] + [runtime.to_host(d) for d in dev]
        for g, w in zip(got, want):
            g, w = np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64)
            err = np.abs(g - w) / (np.abs(w) + 1e-3)
            worst = max(worst, float(err.max()) if err.size else 0.0)
            ok = ok and g.shape == w.shape and bool(np.allclose(g, w, rtol=2e-4, atol=2e-5))
    chosen = ", ".join(p.family + (" (cuBLAS)" if p.gemm is not None and p.gemm.active else "")
                       for p in compiled.plans.values())
    if compiled.replay is not None and compiled.replay.recordings:
        chosen += f"; replayed {compiled.replay.replays}x"
    notes = [p.gemm.describe() for p in compiled.plans.values() if p.gemm is not None and not p.gemm.active]
    if compiled.replay is not None and compiled.replay.reason:
        notes.append(compiled.replay.describe())
    return ok, worst, chosen, notes
