"""Gradients through regions: an RNN trained with BPTT through a ``loop`` region, ``cond``, and ``while`` refused."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import jitgraph
from jitgraph.autodiff import DifferentiationError

R = np.random.default_rng(3)


def rnn_loss(W, U, b, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ W + h @ U + b)
    return (h ** 2).sum()


def rnn_args(steps: int = 40):
    return (R.normal(size=(3, 4)), R.normal(size=(4, 4)) * 0.5, R.normal(size=4), R.normal(size=(steps, 2, 3)),
            R.normal(size=(2, 4)))


def test_the_rnn_is_a_loop_region_and_its_backward_one_too() -> None:
    g = jitgraph.grad(rnn_loss, argnums=(0, 1, 2), backend="eager")
    graph = g.trace(*rnn_args()).graph
    loops = [n for n in graph.nodes if n.op == "loop"]
    assert len(loops) == 2  # forward (recording its history) and backward: nothing unrolled
    assert len(graph.nodes) < 80


@pytest.mark.parametrize("backend", ["eager", "cpu"])
def test_bptt_gradients_match_finite_differences(backend: str) -> None:
    check_grad(rnn_loss, *rnn_args(), argnums=(0, 1, 2, 3, 4), rtol=1e-5, backend=backend)


def test_training_an_rnn_through_the_loop_lowers_the_loss() -> None:
    W, U, b, xs, h0 = rnn_args(30)
    target = np.tanh(xs.sum(axis=0) @ W)

    def loss(params, xs, h0, target):
        h = h0
        for t in range(xs.shape[0]):
            h = np.tanh(xs[t] @ params["W"] + h @ params["U"] + params["b"])
        return ((h - target) ** 2).mean()

    params = {"W": W * 0.1, "U": U * 0.1, "b": b * 0.0}
    vg = jitgraph.value_and_grad(loss)
    first, _ = vg(params, xs, h0, target)
    for _ in range(60):
        value, grads = vg(params, xs, h0, target)
        for k in params:
            params[k] -= 0.5 * grads[k]
    assert value < 0.5 * first
    assert vg.cache_info().misses == 1


def test_loop_carrying_a_python_float_and_a_cond_inside() -> None:
    def f(x, w):
        acc = x * 0.0
        for _ in range(12):
            if acc.sum() > 1.0:
                acc = acc * w
            else:
                acc = acc + x * w
        return (acc * acc).sum()

    check_grad(f, R.uniform(0.1, 0.3, 3), R.uniform(0.5, 0.9, 3))


def test_cond() -> None:
    def f(x, w):
        if x.sum() > 0:
            y = x * w
        else:
            y = np.sin(x) * w
        return y

    check_grad(f, R.uniform(0.1, 1, 3), R.normal(size=3))
    check_grad(f, -R.uniform(0.1, 1, 3), R.normal(size=3))


def test_while_without_a_bound_is_an_error_at_its_line() -> None:
    def f(x, w):
        while (x * w).sum() < 10.0:
            x = x * 1.5
        return x.sum()

    with pytest.raises(DifferentiationError, match="while loop") as info:
        jitgraph.grad(f, backend="eager")(np.ones(3), np.ones(3))
    # the tracer records the while node where the loop ends (its line or the next one)
    assert info.value.filename == __file__
    assert f.__code__.co_firstlineno < info.value.lineno <= f.__code__.co_firstlineno + 3


def test_float_of_an_element_inside_a_loop() -> None:
    """``float(x[i])`` in a loop body is a ``to_python`` node; its gradient passes through."""

    def f(x, w):
        acc = 0.0
        for i in range(8):
            acc = acc + float(x[i]) * w[i % 2]
        return acc * acc

    check_grad(f, R.uniform(0, 1, 8), R.uniform(0, 1, 2))


@pytest.mark.parametrize("backend", ["eager", "cpu"])
def test_jvp_through_a_loop_region(backend: str) -> None:
    """Forward mode through the RNN: the backward loop, differentiated once more, runs forward in time."""

    def rnn(W, U, xs, h0):
        h = h0
        for t in range(xs.shape[0]):
            h = np.tanh(xs[t] @ W + h @ U)
        return h

    primals = (R.normal(size=(3, 4)), R.normal(size=(4, 4)) * 0.5, R.normal(size=(15, 2, 3)), R.normal(size=(2, 4)))
    tangents = tuple(R.normal(size=p.shape) for p in primals)
    out, tangent = jitgraph.jvp(rnn, primals, tangents, backend=backend)
    eps = 1e-6
    plus = rnn(*(p + eps * t for p, t in zip(primals, tangents)))
    minus = rnn(*(p - eps * t for p, t in zip(primals, tangents)))
    np.testing.assert_allclose(out, rnn(*primals))
    np.testing.assert_allclose(tangent, (plus - minus) / (2 * eps), rtol=1e-6, atol=1e-8)


def test_bptt_backward_reads_the_recorded_outputs_and_compiles() -> None:
    """The backward loop reads what each iteration returned from the history (no recomputed matmuls or tanh), and
    the whole joint graph compiles as loop drivers (not interpreted)."""
    g = jitgraph.grad(rnn_loss, argnums=(0, 1, 2))
    args = rnn_args(6)
    g(*args)
    graph = g.trace(*args).graph
    _forward_loop, backward_loop = [n for n in graph.nodes if n.op == "loop"]
    body_ops = [n.op for n in backward_loop.regions[0].nodes]
    assert body_ops.count("matmul") == 3 and "tanh" not in body_ops  # dW, dU, dh only
    compiled = g.explain().compiled_graphs
    assert compiled and not any("interpreted" in c.explain() for c in compiled)


def test_loop_carrying_an_int_a_python_float_and_an_array() -> None:
    """The history of every kind of carried value; outputs read back from it only where the types allow."""

    def f(x, w):
        h, n, s = x, 0, 0.0
        for _ in range(6):
            h = np.tanh(h * w + s)
            n = n + 1
            s = s + float(h[0]) * 0.1
        return (h * n).sum() + s

    check_grad(f, R.uniform(0.1, 0.5, 3), R.uniform(0.5, 0.9, 3))
