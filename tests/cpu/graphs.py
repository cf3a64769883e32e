"""Hand-built workload graphs (GraphBuilder), shared by the CPU tests so they do not depend on the tracer."""

from __future__ import annotations

import numpy as np

from jitgraph.ir import GraphBuilder, TensorType


def t(shape, dtype="float32"):
    return TensorType(tuple(shape), np.dtype(dtype))


def w1(n=64, dtype="float32"):
    """tanh(a*b + c)*0.5 + a"""
    b = GraphBuilder()
    x, y, z = (b.input(t((n,), dtype), name) for name in "abc")
    r = b.op("add", b.op("multiply", b.op("tanh", b.op("add", b.op("multiply", x, y), z)), b.const(0.5)), x)
    return b.build([r])


def softmax(shape=(8, 16), dtype="float32"):
    b = GraphBuilder()
    x = b.input(t(shape, dtype), "x")
    m = b.op("max", x, axis=(1,), keepdims=True)
    e = b.op("exp", b.op("subtract", x, m))
    s = b.op("sum", e, axis=(1,), keepdims=True)
    return b.build([b.op("divide", e, s)])


def layernorm(shape=(8, 16), dtype="float32"):
    b = GraphBuilder()
    x = b.input(t(shape, dtype), "x")
    w = b.input(t(shape[-1:], dtype), "w")
    bias = b.input(t(shape[-1:], dtype), "b")
    mu = b.op("mean", x, axis=(1,), keepdims=True)
    xc = b.op("subtract", x, mu)
    var = b.op("mean", b.op("multiply", xc, xc), axis=(1,), keepdims=True)
    inv = b.op("divide", b.const(1.0), b.op("sqrt", b.op("add", var, b.const(1e-5))))
    return b.build([b.op("add", b.op("multiply", b.op("multiply", xc, inv), w), bias)])


def adam(n=64, dtype="float32"):
    b = GraphBuilder()
    p, g, m, v = (b.input(t((n,), dtype), name) for name in ("p", "g", "m", "v"))
    lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8
    m2 = b.op("add", b.op("multiply", b.const(b1), m), b.op("multiply", b.const(1 - b1), g))
    v2 = b.op("add", b.op("multiply", b.const(b2), v), b.op("multiply", b.const(1 - b2), b.op("multiply", g, g)))
    mh = b.op("divide", m2, b.const(1 - b1 ** 3))
    vh = b.op("divide", v2, b.const(1 - b2 ** 3))
    p2 = b.op("subtract", p, b.op("divide", b.op("multiply", b.const(lr), mh), b.op("add", b.op("sqrt", vh),
                                                                                       b.const(eps))))
    return b.build([], [(0, p2), (2, m2), (3, v2)])


def mlp_forward(batch=8, din=6, hid=5, dtype="float32"):
    """relu(x @ w1 + b1) @ w2 + b2, then a row softmax: two epilogues, one of them with reductions."""
    b = GraphBuilder()
    x = b.input(t((batch, din), dtype), "x")
    w1 = b.input(t((din, hid), dtype), "w1")
    b1 = b.input(t((hid,), dtype), "b1")
    w2 = b.input(t((hid, 3), dtype), "w2")
    h = b.op("maximum", b.op("add", b.op("matmul", x, w1), b1), b.const(0))
    z = b.op("matmul", h, w2)
    m = b.op("max", z, axis=(1,), keepdims=True)
    e = b.op("exp", b.op("subtract", z, m))
    return b.build([b.op("divide", e, b.op("sum", e, axis=(1,), keepdims=True))])


def cuts(n=16, dtype="float32"):
    """Shapes that must not fuse: a column sum feeding a row-broadcast, and an op with no emitter."""
    b = GraphBuilder()
    x = b.input(t((n, n), dtype), "x")
    s = b.op("sum", b.op("exp", x), axis=(0,), keepdims=True)
    y = b.op("divide", b.op("exp", x), b.op("sum", x, axis=(1,), keepdims=True))
    return b.build([b.op("add", b.op("cbrt", y), s)])
