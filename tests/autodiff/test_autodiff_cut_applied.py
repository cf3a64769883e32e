"""The minimum cut applied to the joint graph: the backward reads only the values the cut saves (and arguments and
constants) and recomputes the rest; the gradients are the ones of the joint graph without the cut."""

from __future__ import annotations

import numpy as np

import jitgraph
from jitgraph.autodiff import differentiate
from jitgraph.backends.eager import evaluate

R = np.random.default_rng(11)


def loss(params, x):
    h = np.maximum(x @ params["W"] + params["b"], 0.0)
    z = h @ params["V"]
    return (np.exp(z - z.max(axis=1, keepdims=True)).sum(axis=1) * np.tanh(z[:, 0])).sum()


def _args():
    return {"W": R.normal(size=(4, 5)), "b": R.normal(size=5), "V": R.normal(size=(5, 3))}, R.normal(size=(6, 4))


def test_grad_applies_the_cut_and_explain_says_so() -> None:
    g = jitgraph.grad(loss, backend="eager")
    g(*_args())
    joint = g.joints[-1]
    assert joint.applied and joint.cut.recomputed and "maximum" in {n.op for n in joint.cut.recomputed}
    assert any(line.startswith("min-cut (applied") for line in g.autodiff_notes())


def test_gradients_equal_the_joint_graph_without_the_cut() -> None:
    args = _args()
    plain = jitgraph.compile(loss, backend="eager").trace(*args).graph
    leaves = [args[0]["W"], args[0]["b"], args[0]["V"], args[1]]
    with_cut, _ = evaluate(differentiate(plain, [0, 1, 2], [0]).graph, leaves)
    without, _ = evaluate(differentiate(plain, [0, 1, 2], [0], apply=False).graph, leaves)
    for a, b in zip(with_cut, without):
        np.testing.assert_array_equal(a, b)
    compiled = jitgraph.grad(loss)(*args)
    for k, b in zip(("W", "b", "V"), without[1:]):
        np.testing.assert_allclose(compiled[k], b, rtol=1e-6, atol=1e-9)
