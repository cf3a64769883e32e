"""Never slower than eager: a graph the CPU backend could only interpret op by op (a loop region whose body holds
an op with no loop-body emitter) makes the entry run the user's function eagerly, with the reason, instead of
running the reference interpreter (slower than the function itself). Grad functions keep interpreting (their
joint graph has no eager twin)."""

from __future__ import annotations

import numpy as np

import jitgraph


def batched_powers(x):
    while x.sum() < 1e6:  # a while region; a batched (3-D) product has no loop-body emitter
        x = x @ x * 0.5 + 1.0
    return x + 1.0


def test_an_interpreted_graph_runs_the_function_eagerly_with_the_reason() -> None:
    f = jitgraph.compile(batched_powers, backend="cpu")
    x = np.stack([np.eye(3) * 2.0, np.ones((3, 3))])
    for _ in range(2):
        np.testing.assert_array_equal(f(x.copy()), batched_powers(x.copy()))
    info = f.cache_info()
    assert info.entries == 1 and info.fallbacks >= 1, info
    text = str(f.explain())
    assert "cannot compile this graph" in text and "matmul" in text


def test_the_eager_backend_still_interprets() -> None:
    f = jitgraph.compile(batched_powers, backend="eager")
    x = np.stack([np.eye(3) * 2.0, np.ones((3, 3))])
    np.testing.assert_array_equal(f(x.copy()), batched_powers(x.copy()))
    assert f.cache_info().fallbacks == 0
