"""The public autodiff API: grad/value_and_grad/vjp/jvp as in JAX, pytrees, compiled results, errors."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from gradcheck import numeric_grad

import jitgraph
from jitgraph import DifferentiationError

R = np.random.default_rng(1)


def mlp_loss(params, x, y):
    h = np.tanh(x @ params["W"] + params["b"])
    return ((h @ params["V"] - y) ** 2).mean()


def make_params(dtype=np.float64):
    return {"W": R.normal(size=(4, 5)).astype(dtype), "b": R.normal(size=5).astype(dtype),
            "V": R.normal(size=(5, 2)).astype(dtype)}


def test_grad_of_a_params_dict_matches_finite_differences_on_the_cpu_backend() -> None:
    params, x, y = make_params(), R.normal(size=(6, 4)), R.normal(size=(6, 2))
    g = jitgraph.grad(mlp_loss)(params, x, y)
    assert isinstance(g, dict) and list(g) == ["W", "b", "V"]
    for k in params:
        def f(value, k=k):
            return mlp_loss({**params, k: value}, x, y)

        np.testing.assert_allclose(g[k], numeric_grad(f, [params[k]], 0, 1e-6), rtol=1e-5, atol=1e-8)


def test_value_and_grad_is_one_compiled_graph_that_caches() -> None:
    params, x, y = make_params(np.float32), R.normal(size=(6, 4)).astype(np.float32), \
        R.normal(size=(6, 2)).astype(np.float32)
    vg = jitgraph.value_and_grad(mlp_loss)
    value, g = vg(params, x, y)
    np.testing.assert_allclose(value, mlp_loss(params, x, y), rtol=1e-5)
    assert all(g[k].dtype == np.float32 and g[k].shape == params[k].shape for k in params)
    vg(params, x, y)
    info = vg.cache_info()
    assert (info.misses, info.hits, info.fallbacks) == (1, 1, 0)
    (graph,) = vg.graphs()
    assert len(graph.outputs) == 4  # the loss and three gradients, from one graph
    eager = jitgraph.value_and_grad(mlp_loss, backend="eager")(params, x, y)
    for k in params:
        np.testing.assert_allclose(g[k], eager[1][k], rtol=1e-4, atol=1e-6)


def test_argnums_tuple_lists_tuples_and_namedtuples() -> None:
    Pair = collections.namedtuple("Pair", "a b")

    def f(p, xs, scale):
        return (p.a * xs[0] + p.b * xs[1]).sum() * scale

    p, xs = Pair(R.normal(size=3), R.normal(size=3)), [R.normal(size=3), R.normal(size=3)]
    gp, gxs, gs = jitgraph.grad(f, argnums=(0, 1, 2), backend="eager")(p, xs, 2.0)
    assert isinstance(gp, Pair) and isinstance(gxs, list) and isinstance(gs, float)
    np.testing.assert_allclose(gp.a, xs[0] * 2.0)
    np.testing.assert_allclose(gxs[1], p.b * 2.0)
    np.testing.assert_allclose(gs, f(p, xs, 1.0))
    g1 = jitgraph.grad(f, argnums=-1, backend="eager")(p, xs, 2.0)
    np.testing.assert_allclose(g1, f(p, xs, 1.0))


def test_has_aux() -> None:
    def f(x):
        y = np.sin(x)
        return y.sum(), {"y": y}

    g, aux = jitgraph.grad(f, has_aux=True)(np.arange(3.0))
    np.testing.assert_allclose(g, np.cos(np.arange(3.0)))
    np.testing.assert_allclose(aux["y"], np.sin(np.arange(3.0)))
    (value, aux2), g2 = jitgraph.value_and_grad(f, has_aux=True, backend="eager")(np.arange(3.0))
    assert np.isclose(value, np.sin(np.arange(3.0)).sum())
    np.testing.assert_allclose(aux2["y"], aux["y"])
    np.testing.assert_allclose(g2, g)


def test_vjp_and_jvp() -> None:
    x, w = R.normal(size=(3, 4)), R.normal(size=(4, 2))

    def f(x, w):
        return np.tanh(x @ w), (x ** 2).sum(axis=1)

    out, vjp_fn = jitgraph.vjp(f, x, w, backend="eager")
    np.testing.assert_allclose(out[0], np.tanh(x @ w))
    ct = (R.normal(size=(3, 2)), R.normal(size=3))
    gx, gw = vjp_fn(ct)
    d = ct[0] * (1 - np.tanh(x @ w) ** 2)
    np.testing.assert_allclose(gx, d @ w.T + 2 * x * ct[1][:, None])
    np.testing.assert_allclose(gw, x.T @ d)
    tx, tw = R.normal(size=x.shape), R.normal(size=w.shape)
    (o1, o2), (t1, t2) = jitgraph.jvp(f, (x, w), (tx, tw), backend="eager")
    np.testing.assert_allclose(o1, out[0])
    np.testing.assert_allclose(o2, out[1])
    np.testing.assert_allclose(t1, (1 - np.tanh(x @ w) ** 2) * (tx @ w + x @ tw))
    np.testing.assert_allclose(t2, (2 * x * tx).sum(axis=1))


def test_in_place_code_is_fine_but_a_mutated_argument_is_an_error() -> None:
    def local(x):
        y = x.copy()
        y *= 2.0
        return (y * x).sum()

    np.testing.assert_allclose(jitgraph.grad(local, backend="eager")(np.arange(3.0)), 4 * np.arange(3.0))

    def mutates(x, s):
        x *= 2.0
        return (x * s).sum()

    with pytest.raises(DifferentiationError, match="writes it in place"):
        jitgraph.grad(mutates)(np.arange(3.0), 1.5)
    # differentiating the other argument is fine: the mutation of x happens, as in NumPy
    x = np.arange(3.0)
    assert jitgraph.grad(mutates, argnums=1, backend="eager")(x, 1.5) == pytest.approx(6.0)
    np.testing.assert_array_equal(x, [0.0, 2.0, 4.0])


def test_errors_are_structured() -> None:
    with pytest.raises(DifferentiationError, match="integer or boolean"):
        jitgraph.grad(lambda x: (x * 2.0).sum())(np.arange(3))
    with pytest.raises(DifferentiationError, match="holds a int"):
        jitgraph.grad(lambda x, n: (x * n).sum(), argnums=1)(np.ones(3), 2)
    with pytest.raises(DifferentiationError, match="float scalar"):
        jitgraph.grad(lambda x: x * 2.0)(np.ones(3))
    with pytest.raises(DifferentiationError, match="argnums 3 is out of range"):
        jitgraph.grad(lambda x: x.sum(), argnums=3)(np.ones(3))

    def cumulative(x):
        return np.cumprod(x).sum()  # no rule (cumsum has one since a probe corpus asked for it)

    with pytest.raises(jitgraph.JitgraphError) as info:
        jitgraph.grad(cumulative)(np.ones(3))
    assert info.value.filename == __file__ or "cumprod" in str(info.value)


def test_missing_rule_names_the_op_and_the_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from jitgraph.autodiff import rules

    monkeypatch.delitem(rules.VJP, "tanh")

    def f(x):
        return np.tanh(x).sum()

    with pytest.raises(DifferentiationError, match="no derivative rule for op 'tanh'") as info:
        jitgraph.grad(f, backend="eager")(np.ones(3))
    assert info.value.filename == __file__ and info.value.lineno == f.__code__.co_firstlineno + 1


def test_explain_shows_the_joint_graph_and_saved_values() -> None:
    g = jitgraph.grad(lambda x: np.exp(x).sum(), backend="eager")
    g(np.ones(3))
    text = str(g.explain().graphs[0])
    assert "exp" in text and "broadcast_to" in text
    assert any(s.startswith("exp") for s in g.saved_values())
    text = str(g.explain())
    assert "Autodiff:" in text and "the backward reads" in text and "min-cut" in text


def test_backward_elementwise_work_fuses_with_the_forward() -> None:
    g = jitgraph.grad(lambda w, x: np.tanh(x @ w).sum())
    g(np.ones((3, 2)), np.ones((4, 3)))
    notes = "\n".join(g.explain().backend_notes)
    # the forward's tanh and the backward's g * (1 - tanh**2) are one kernel
    assert "fused_matmul_tanh_sum_multiply" in notes


def test_readme_autodiff_example_runs() -> None:
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Autodiff"):text.index("\n## ", text.index("## Autodiff") + 5)]
    (snippet,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    scope: dict = {"__name__": "readme_autodiff"}
    exec(compile(snippet, "README.md", "exec"), scope)  # noqa: S102
    assert set(scope["grads"]) == {"W", "b"}


def test_min_cut_saves_less_than_every_value_read() -> None:
    """The partition (explain's min-cut) recomputes cheap elementwise values (the ReLU) from saved ones."""
    params = {"W": R.normal(size=(4, 5)), "b": R.normal(size=5), "V": R.normal(size=(5, 2))}

    def loss(params, x):
        h = np.maximum(x @ params["W"] + params["b"], 0.0)
        return np.exp(h @ params["V"]).sum()

    g = jitgraph.grad(loss, backend="eager")
    g(params, R.normal(size=(6, 4)))
    cut = g.joints[-1].cut
    assert cut.saved_bytes < cut.naive_bytes
    assert "maximum" in {n.op for n in cut.recomputed}
    read = set(g.joints[-1].saved)
    assert read <= set(cut.saved) | set(cut.recomputed)
    assert any(line.startswith("min-cut") for line in g.autodiff_notes())


def test_entries_that_cannot_run_compiled_interpret_the_joint_graph() -> None:
    """Eager fallback of a grad function still returns gradients: overlapping arguments, the recompile limit."""
    x = np.arange(5.0)
    g = jitgraph.grad(lambda a, b: (a * b).sum(), argnums=(0, 1))
    ga, gb = g(x[:-1], x[1:])
    np.testing.assert_array_equal(ga, x[1:])
    np.testing.assert_array_equal(gb, x[:-1])
    assert g.cache_info().fallbacks == 1
    g2 = jitgraph.grad(lambda a: (a ** 2).sum(), cache_limit=1, backend="eager")
    g2(np.ones(2))
    np.testing.assert_array_equal(g2(np.ones(3)), [2.0, 2.0, 2.0])
    assert g2.cache_info().fallbacks == 1


def test_calling_a_grad_function_inside_a_compiled_function_is_correct() -> None:
    """(The outer function runs eagerly for now: the tracer does not inline a gradient.)"""
    h = jitgraph.grad(lambda x: (x ** 3).sum())
    outer = jitgraph.compile(lambda x: h(x) * 2.0)
    np.testing.assert_allclose(outer(np.arange(3.0)), 6 * np.arange(3.0) ** 2)


def test_vjp_splits_forward_and_backward_at_the_min_cut() -> None:
    """The forward returns the cut's saved values; vjp_fn's graph recomputes the cheap rest from them."""
    from jitgraph.jit import vjp as vjp_module

    params = {"W": R.normal(size=(4, 5)), "b": R.normal(size=5), "V": R.normal(size=(5, 3))}
    x = R.normal(size=(6, 4))

    def f(params, x):
        h = np.maximum(x @ params["W"] + params["b"], 0.0)
        return np.exp(h @ params["V"]).sum(axis=1)

    out, vjp_fn = jitgraph.vjp(f, params, x)
    np.testing.assert_allclose(out, f(params, x))
    ct = R.normal(size=6)
    g_params, g_x = vjp_fn(ct)
    ref = jitgraph.grad(lambda p, x: (f(p, x) * ct).sum(), argnums=(0, 1), backend="eager")(params, x)
    for k in params:
        np.testing.assert_allclose(g_params[k], ref[0][k], rtol=1e-10)
    np.testing.assert_allclose(g_x, ref[1], rtol=1e-10)
    forward, backward = vjp_module._VJP[f][("split", False, None, ())]
    assert forward.cache_info().misses == 1
    (bgraph,) = backward.graphs()
    assert [n for n in bgraph.inputs if n.attrs and "residual" in bgraph.input_names[n.attrs["index"]]]
    assert {"maximum", "exp"} <= {n.op for n in backward.joints[-1].cut.recomputed}
    vjp_fn(ct)
    assert backward.cache_info().hits == 1


def test_vjp_of_a_loop_takes_the_joint_path() -> None:
    def f(w, xs):
        h = xs[0] * 0.0
        for t in range(xs.shape[0]):
            h = np.tanh(xs[t] * w + h)
        return h

    w, xs = R.normal(size=3), R.normal(size=(10, 3))
    out, vjp_fn = jitgraph.vjp(f, w, xs, backend="eager")
    np.testing.assert_allclose(out, f(w, xs))
    gw, gxs = vjp_fn(np.ones(3))
    ref = jitgraph.grad(lambda w, xs: f(w, xs).sum(), argnums=(0, 1), backend="eager")(w, xs)
    np.testing.assert_allclose(gw, ref[0])
    np.testing.assert_allclose(gxs, ref[1])


def test_keyword_arguments_pass_through_and_vjp_has_aux() -> None:
    def f(x, scale=1.0, *, power=2):
        return (scale * x ** power).sum()

    x = np.arange(3.0)
    np.testing.assert_allclose(jitgraph.grad(f)(x, scale=2.0, power=3), 6.0 * x ** 2)

    def g(x):
        y = np.sin(x)
        return y * 2.0, y.sum()

    out, vjp_fn, aux = jitgraph.vjp(g, x, has_aux=True)
    assert aux == pytest.approx(np.sin(x).sum())
    (gx,) = vjp_fn(np.ones(3))
    np.testing.assert_allclose(gx, 2 * np.cos(x))
    np.testing.assert_allclose(out, 2 * np.sin(x))
