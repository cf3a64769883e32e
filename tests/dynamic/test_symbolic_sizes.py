"""Symbolic sizes (ir/symbols.py, jit/symbolic_sizes.py): a dimension that became dynamic is traced once as a symbol,
and every later size is an instance of that trace. Each function here runs at four batch sizes (the first two
trace it: static, then symbolic; the last two are instances) and must equal eager NumPy at every size: broadcasting,
slicing, reductions, matmul, concatenation, reshape, creation and loop regions over a symbolic length. Code whose
trace needs a size's value (a branch on it, a slice bound computed from it) keeps the dimension static: still
correct, traced per size (size variants)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitgraph
from jitgraph.ir.instantiate import instantiate, same_graph, symbols_of
from jitgraph.ir.symbols import Sym, SymbolicSizeError
from jitgraph.ir.types import TensorType

W = np.linspace(-1.0, 1.0, 12).reshape(4, 3).astype(np.float32)


def broadcasting(x):
    return (x - x.mean(axis=0)) * np.float32(0.5) + W[0, :3].sum()


def slicing(x):
    return x[:, 1:3] * 2.0 + x[:, None, 0].sum(axis=1, keepdims=True)


def reductions(x):
    return x.sum(axis=1) + x.max(axis=1) - x.std(axis=1), x.argmin(axis=0), x.mean()


def matmul(x):
    return np.tanh(x @ W) @ W.T / x.shape[0]


def concatenation(x):
    return np.concatenate([x, x * 2.0], axis=1), np.stack([x, -x], axis=-1).sum(axis=0)


def reshape(x):
    n = x.shape[0]
    return x.reshape(n, 2, 2).sum(axis=2), x.reshape(-1, 4)[::-1].copy(), x.reshape(n * 2, -1)


def reshape_symbolic(x):
    n = x.shape[0]
    return x.reshape(n, 2, 2).sum(axis=2), x.reshape(-1, 4)[::-1].copy(), x.reshape(x.shape[0], -1).T @ x


def creation(x):
    out = np.zeros((x.shape[0], 3), x.dtype)
    out[:, 0] = x[:, 0]
    return out + np.ones(x.shape[0])[:, None]


def loop_region(x):
    h = np.zeros(4, np.float32)
    for t in range(x.shape[0]):
        h = np.tanh(x[t] * 0.5 + h)
    return h


def size_arithmetic(x):
    xc = x - x.mean(axis=0)
    n = x.shape[0]
    return xc.T @ xc / (n - 1), x * (2 * n - 1) / (n * 3), x.sum() / x.size


def picked_rows(x):
    n = x.shape[0]
    cols = np.argmax(x, axis=1)
    grad = x.copy()
    grad[np.arange(n), cols] -= 1.0  # softmax cross-entropy's gradient, as from-scratch code writes it
    return x[np.arange(n), cols].sum() / n, grad


def floor_of_size(x):
    return x[:, 0] * (x.shape[0] // 2)  # not linear in the size: the graph computes it, the trace is refused


def branch_on_size(x):
    return x * 2.0 if x.shape[0] > 4 else x


SYMBOLIC = [broadcasting, slicing, reductions, matmul, concatenation, reshape_symbolic, creation, loop_region,
            size_arithmetic, picked_rows]
STATIC = [reshape, branch_on_size, floor_of_size]  # n * 2 as a shape, the branch, n // 2: traced per size


def _agree(got: Any, want: Any) -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _agree(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def _run(fn: Callable[..., Any], sizes: tuple[int, ...] = (3, 5, 7, 9)) -> jitgraph.CacheInfo:
    f = jitgraph.compile(fn)
    rng = np.random.default_rng(len(fn.__name__))
    for n in sizes:
        x = rng.standard_normal((n, 4)).astype(np.float32)
        _agree(f(x), fn(x))
    return f.cache_info()


@pytest.mark.parametrize("fn", SYMBOLIC, ids=lambda f: f.__name__)
def test_later_sizes_are_instances_of_one_symbolic_trace(fn: Callable[..., Any]) -> None:
    info = _run(fn)
    assert (info.entries, info.recompiles, info.size_instances, info.size_variants) == (2, 1, 2, 0), info


@pytest.mark.parametrize("fn", STATIC, ids=lambda f: f.__name__)
def test_a_trace_that_needs_the_size_stays_static_and_right(fn: Callable[..., Any]) -> None:
    info = _run(fn)
    assert info.size_instances == 0 and info.fallbacks == 0, info


def test_sizes_zero_and_one_after_the_dimension_is_symbolic() -> None:
    info = _run(matmul, (3, 5, 1, 0, 6))
    assert info.size_instances == 1, info  # 1 and 0 are traced on their own (0/1 specialisation)


def test_shared_symbol_needs_equal_sizes() -> None:
    """x and y share s0 at the traced call (duck sizing): a later call where they differ is not an instance (NumPy
    raises there, and so does the compiled function)."""
    def add(x, y):
        return x + y

    f = jitgraph.compile(add)
    for n in (3, 5, 7):
        a = np.ones(n)
        _agree(f(a, a * 2), add(a, a * 2))
    with pytest.raises(ValueError):
        f(np.ones(7), np.ones(8))
    assert f.cache_info().size_instances == 1


def test_the_printed_graph_shows_the_symbol_and_explain_the_dimensions() -> None:
    f = jitgraph.compile(matmul)
    for n in (3, 5):
        f(np.ones((n, 4), np.float32))
    form = f.entries[-1].symbolic
    assert form is not None and form.describe() == "x.shape[0] = s0"
    assert "f32[s0,4]" in str(form.graph)


def test_sym_answers_only_what_holds_for_every_size() -> None:
    s, t = Sym("s0", 5), Sym("s1", 5)
    assert s == Sym("s0", 3) and s != 1 and s != 0 and s > 1 and min(s, 1) == 1 and bool(s)
    for question in (lambda: s == 5, lambda: s == t, lambda: s < 3, lambda: np.int64(5) == s):
        with pytest.raises(SymbolicSizeError):
            question()
    with pytest.raises(TypeError):
        s + 1
    with pytest.raises(SymbolicSizeError):
        TensorType((s, 3), np.float32).size  # noqa: B018


def test_instantiation_is_the_graph_a_trace_at_those_sizes_records() -> None:
    f = jitgraph.compile(loop_region)
    for n in (3, 5):
        f(np.ones((n, 4), np.float32))
    form = f.entries[-1].symbolic
    assert symbols_of(form.graph) == {"s0"}
    g7 = instantiate(form.graph, {"s0": 7})
    assert not symbols_of(g7)
    traced7 = f.trace(np.ones((7, 4), np.float32)).graph
    assert same_graph(g7, traced7) and not same_graph(instantiate(form.graph, {"s0": 8}), traced7)


def power_steps(a, v, n):
    for _ in range(n):
        v = a @ v
        v = v / np.linalg.norm(v)
    return v


def test_an_int_argument_that_bounds_a_loop_becomes_a_run_time_trip_count() -> None:
    """``range(n)`` with ``n`` an argument: after the first recompile ``n`` is a runtime value (dynamic_ints.py)
    and the loop region reads its trip count at run time: two entries for every ``n``, including 0."""
    f = jitgraph.compile(power_steps)
    a = np.eye(5) + 0.1
    v = np.ones(5)
    for n in (3, 5, 8, 20, 0, 40):
        _agree(f(a, v, n), power_steps(a, v, n))
    info = f.cache_info()
    assert (info.entries, info.recompiles, info.fallbacks) == (2, 1, 0), f.recompile_reasons()


_SHARED = {fn.__name__: jitgraph.compile(fn) for fn in (matmul, size_arithmetic, loop_region, slicing)}


@settings(max_examples=12)  # each example compiles its new sizes: keep the suite's time
@given(sizes=st.lists(st.integers(0, 40), min_size=1, max_size=8), name=st.sampled_from(sorted(_SHARED)))
def test_any_sequence_of_sizes_matches_numpy(sizes: list[int], name: str) -> None:
    """One compiled function per kind, shared by every example: whatever order sizes come in (0 and 1 included,
    repeats, sizes seen by earlier examples), each call equals eager NumPy, or raises what NumPy raises."""
    f = _SHARED[name]
    fn = f.fn
    for n in sizes:
        x = np.linspace(-1.0, 1.0, n * 4, dtype=np.float32).reshape(n, 4)
        with np.errstate(all="ignore"):
            try:
                want = fn(x)
            except Exception as exc:  # noqa: BLE001 - NumPy's own error must be the compiled call's too
                with pytest.raises(type(exc)):
                    f(x)
                continue
            _agree(f(x), want)


class Dense:
    """A from-scratch layer: forward keeps its input on the object, backward reads it (issue 18's corpus style)."""

    def __init__(self) -> None:
        self.W = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
        self.b = np.zeros(3)

    def forward(self, x):
        self.x = x
        return x @ self.W + self.b

    def backward(self, dy):
        self.dW = self.x.T @ dy
        self.db = dy.sum(axis=0)
        return dy @ self.W.T


def test_a_layer_whose_stored_input_changes_size_is_one_symbolic_trace() -> None:
    """``self.x`` (stored by forward at the batch size) takes the batch symbol in backward, guarded to equal it; a
    call where it does not raises NumPy's error, as eager does."""
    layer, twin = Dense(), Dense()
    fwd, bwd = jitgraph.compile(layer.forward), jitgraph.compile(layer.backward)
    for n in (5, 8, 3, 9, 12):
        x = np.linspace(0.0, 1.0, n * 4).reshape(n, 4)
        _agree(fwd(x), twin.forward(x))
        _agree(bwd(x[:, :3] * 2), twin.backward(x[:, :3] * 2))
        for name in ("x", "dW", "db"):
            _agree(getattr(layer, name), getattr(twin, name))
    for f in (fwd, bwd):
        info = f.cache_info()
        assert (info.entries, info.size_instances, info.size_variants) == (2, 3, 0), info
    assert any("self.x: ndarray, shape == (s0, 4)" in g.text for g in bwd.entries[1].symbolic.result.guards.guards)
    layer.x = np.ones((6, 4))
    with pytest.raises(ValueError, match="mismatch"):
        bwd(np.ones((7, 3)))


def cross_attention(q, k, v):
    s = q @ k.T / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def test_another_pattern_of_equal_sizes_gets_its_own_symbolic_trace() -> None:
    """Query and key lengths equal at first (one symbol, duck sizing), then different: the first call with
    different lengths is traced (a variant) and traced again with two symbols; later lengths are instances."""
    f = jitgraph.compile(cross_attention)
    rng = np.random.default_rng(3)
    for nq, nk in ((4, 4), (6, 6), (8, 8), (5, 9), (7, 3), (10, 12), (11, 11)):
        q = rng.standard_normal((nq, 8)).astype(np.float32)
        k, v = (rng.standard_normal((nk, 8)).astype(np.float32) for _ in range(2))
        _agree(f(q, k, v), cross_attention(q, k, v))
    info = f.cache_info()
    assert (info.entries, info.size_variants, info.size_instances) == (3, 1, 4), info


def test_an_instance_needs_the_aliasing_the_symbolic_trace_saw() -> None:
    """Traced with one array passed three times (one graph input), then called with three arrays: a new trace, never
    an instance of the aliased graph (which would read q for k and v)."""
    f = jitgraph.compile(cross_attention)
    rng = np.random.default_rng(4)
    for n in (4, 6, 8):
        q = rng.standard_normal((n, 8)).astype(np.float32)
        _agree(f(q, q, q), cross_attention(q, q, q))
    for n in (8, 9, 10):
        q, k, v = (rng.standard_normal((n, 8)).astype(np.float32) for _ in range(3))
        _agree(f(q, k, v), cross_attention(q, k, v))
    info = f.cache_info()  # 8 with (q, q, q) an instance; (q, k, v) at 8 traced (with symbols), 9 and 10 instances
    assert (info.entries, info.size_instances) == (3, 3), info


def stencil(u, steps):
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return (u[2:] - u[:-2]) * 0.5


def test_slices_with_fixed_ends_have_expression_lengths() -> None:
    """``u[1:-1]`` of ``s0`` elements has ``s0-2`` (ir/symbols.slice_length): one symbolic trace for the stencil;
    a size where such a slice has fewer than 2 elements (it would broadcast, or be empty) is traced on its own."""
    f = jitgraph.compile(stencil)
    for n in (6, 9, 12, 4, 3, 2, 20):
        u, twin = np.linspace(0.0, 1.0, n) ** 2, np.linspace(0.0, 1.0, n) ** 2
        _agree(f(u, 5), stencil(twin, 5))
        _agree(u, twin)
    info = f.cache_info()
    assert (info.size_instances, info.size_variants) == (3, 2), info  # 12, 4, 20; 3 and 2 traced
    form = f.entries[1].symbolic
    assert "f64[s0-2]" in str(form.graph)


def _split_heads(x):
    b, t, d = x.shape
    return x.reshape(b, t, 2, d // 2).transpose(0, 2, 1, 3)


def _reshape_view(x):
    b, t, _ = x.shape
    return x.reshape(b, t, 2, 4)


@pytest.mark.parametrize("fn", [_reshape_view, _split_heads])
def test_returned_view_of_an_input_with_a_symbolic_shape_is_built_at_each_size(fn):
    """Found by a probe corpus: a returned view of an input (no graph output: built from the leaf by its view steps)
    kept the symbol in its reshape's shape, so the third size -- the first instance of the symbolic entry -- raised
    TypeError ('Sym' object cannot be interpreted as an integer). A view step holding a symbol now keeps the entry
    from going symbolic, as a symbol in any other part of the return value does."""
    compiled = jitgraph.compile(fn, cache=False)
    for t in (3, 4, 5, 7):
        x = np.arange(2 * t * 8, dtype=float).reshape(2, t, 8)
        got, want = compiled(x), fn(x)
        np.testing.assert_array_equal(got, want)
        assert np.shares_memory(got, x) == np.shares_memory(want, x)
