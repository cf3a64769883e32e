"""The issue's showcase programs each trace into exactly one graph, with no break, and match eager NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import jitgraph
from tests.tracer import programs as P
from tests.tracer.helpers import run_both


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def test_mlp_train_step(rng):
    params = P.init_mlp(rng)
    x = rng.standard_normal((6, 8)).astype(np.float32)
    y = rng.integers(0, 4, 6)
    compiled = run_both(P.mlp_train_step, params, x, y, 0.1)
    graph = compiled.entries[0].traced_graph
    mutated = sorted(graph.input_names[i] for i, _ in graph.mutations)
    assert mutated == ["params['W1']", "params['W2']", "params['b1']", "params['b2']"]
    assert any(n.op == "getitem" and len(n.inputs) == 3 for n in graph.nodes)  # p[np.arange(n), y]
    assert any(n.op == "setitem" and len(n.inputs) == 4 for n in graph.nodes)  # dlogits[np.arange(n), y] -= 1


def test_mlp_training_loop_stays_in_one_entry(rng):
    params_e = P.init_mlp(rng)
    params_c = {k: v.copy() for k, v in params_e.items()}
    step = jitgraph.compile(P.mlp_train_step, backend="eager")
    for i in range(4):
        x = rng.standard_normal((6, 8)).astype(np.float32)
        y = rng.integers(0, 4, 6)
        lr = 0.1 / (i + 1)  # a changing float learning rate does not recompile
        le = P.mlp_train_step(params_e, x, y, lr)
        lc = step(params_c, x, y, lr)
        np.testing.assert_allclose(lc, le, rtol=1e-5)
    for k in params_e:
        np.testing.assert_allclose(params_c[k], params_e[k], rtol=1e-5, atol=1e-6)
    info = step.cache_info()
    assert (info.misses, info.hits, info.recompiles, info.fallbacks) == (1, 3, 0, 0)


def test_adam_update_mutates_p_m_v(rng):
    p, g = (rng.standard_normal(10).astype(np.float32) for _ in range(2))
    m, v = np.full(10, 0.1, np.float32), np.full(10, 0.2, np.float32)
    compiled = run_both(P.adam_update, p, g, m, v, 3)
    graph = compiled.entries[0].traced_graph
    assert sorted(graph.input_names[i] for i, _ in graph.mutations) == ["m", "p", "v"]


def test_layernorm(rng):
    x = rng.standard_normal((4, 8)).astype(np.float32)
    run_both(P.layernorm, x, rng.standard_normal(8).astype(np.float32), np.zeros(8, np.float32))


def test_softmax_through_helper(rng):
    run_both(P.softmax_rows, rng.standard_normal((3, 5)))


def test_class_based_model_forward(rng):
    model = P.Model(rng)
    x = rng.standard_normal((5, 8)).astype(np.float32)
    compiled = run_both(P.model_forward, model, x)
    texts = compiled.entries[0].guard_texts
    assert "type(model.l1) is Linear" in texts
    assert any(t.startswith("model.l1.W: ndarray, shape == (8, 16)") for t in texts)


def test_model_weights_are_inputs_not_constants(rng):
    model = P.Model(rng)
    x = rng.standard_normal((5, 8)).astype(np.float32)
    fwd = jitgraph.compile(P.model_forward, backend="eager")
    fwd(model, x)
    model.l1.W *= 2  # training changes weights in place; the compiled function must see it
    model.l2.b = model.l2.b + 1  # ... or rebinds them
    np.testing.assert_allclose(fwd(model, x), P.model_forward(model, x), rtol=1e-5)
    assert fwd.cache_info().recompiles == 0


def test_bound_method(rng):
    model = P.Model(rng)
    x = rng.standard_normal((5, 8)).astype(np.float32)
    forward = jitgraph.compile(model.forward, backend="eager")
    np.testing.assert_allclose(forward(x), model.forward(x), rtol=1e-5)
    assert len(forward.graphs()) == 1


def test_dict_comprehension_update(rng):
    params = P.init_mlp(rng)
    grads = {k: np.ones_like(v) for k, v in params.items()}
    run_both(P.sgd_dict_comprehension, params, grads, 0.5)


def test_tanh_loop(rng):
    compiled = run_both(P.tanh_loop, rng.standard_normal((3, 4)), rng.standard_normal((4, 4)))
    ops = [n.op for n in compiled.entries[0].traced_graph.nodes]
    assert ops.count("matmul") == 3 and ops.count("tanh") == 3
