"""Mutation of the caller's arrays happens exactly as in eager NumPy: in-place operators, slice assignment, arrays
inside dict and list arguments, views of arguments, and arguments that alias each other."""

from __future__ import annotations

import numpy as np
import pytest

import jitgraph
from tests.tracer.helpers import assert_same, run_both

rng = np.random.default_rng(2)
M = rng.standard_normal((4, 5)).astype(np.float32)


def inplace_operators(x, y):
    x += y
    x *= 2
    x -= 1
    x /= 3
    x **= 2
    y //= 0.5
    return x.sum()


def slice_assignment(x):
    x[0] = 1
    x[1:3, ::2] = x[1:3, ::2] * 10
    x[..., -1] = np.arange(x.shape[0])
    x[:, None, 0][1] = -5
    idx = np.array([0, 2])
    x[idx] += 100
    x[np.arange(2), [1, 3]] = 7


def dict_and_list_args(params, grads, bufs, lr):
    for k in params:
        params[k] -= lr * grads[k]
    for b in bufs:
        b *= 0.5
    bufs[0][0] = 3


def views_of_arguments(x):
    v = x[1:, :3]
    v += 1
    t = x.T
    t[0] = 0
    r = x.reshape(-1)
    r[::4] = -1
    return v.copy(), t.sum()


def write_then_read(x):
    before = x.copy()
    y = x[0]
    x[0] = 5  # y is a view: it sees the write
    return before, y * 1


def int_array_updates(counts, idx):
    counts[idx] += 1
    np.add.at(counts, idx, 1)
    counts //= 2


def fill_and_out(x, y):
    x.fill(2)
    np.multiply(y, 3, out=y)
    np.add(x, y, out=x)


def dtype_casting_inplace(x_int, x_f32):
    x_int += 3
    x_int *= 2
    x_f32 += np.float64(1.5)
    x_f32 *= 0.5


@pytest.mark.parametrize("fn,args", [
    (inplace_operators, (M, M * 0 + 0.25)),
    (slice_assignment, (M,)),
    (dict_and_list_args, ({"a": M, "b": M[0].copy()}, {"a": M * 0 + 1, "b": M[0] * 0 + 2},
                          [M[:2].copy(), M[2:].copy()], 0.5)),
    (views_of_arguments, (M,)),
    (write_then_read, (M,)),
    (int_array_updates, (np.zeros(5, np.int64), np.array([0, 1, 1, 4]))),
    (fill_and_out, (M, M * 0 + 1)),
    (dtype_casting_inplace, (np.arange(4), np.ones(4, np.float32))),
], ids=lambda c: getattr(c, "__name__", ""))
def test_mutation_matches_eager(fn, args):
    run_both(fn, *args)


def test_view_argument_of_a_larger_array():
    def f(a):
        a += 1

    base_e, base_c = M.copy(), M.copy()
    f(base_e[1:3, ::2])
    jitgraph.compile(f, backend="eager")(base_c[1:3, ::2])
    assert_same(base_e, base_c)


@pytest.mark.parametrize("same", [True, False])
def test_the_same_array_twice(same):
    def f(a, b):
        a *= 2
        b += 1
        return a - b

    e1 = M.copy()
    e2 = e1 if same else M.copy()
    expected = f(e1, e2)
    c1 = M.copy()
    c2 = c1 if same else M.copy()
    compiled = jitgraph.compile(f, backend="eager")
    assert_same(compiled(c1, c2), expected)
    assert_same((c1, c2), (e1, e2))
    assert len(compiled.graphs()) == 1


def test_same_array_in_two_containers():
    def f(params, grads):
        for k in params:
            params[k] -= grads[k]

    a_e = M.copy()
    f({"w": a_e}, {"w": a_e})
    a_c = M.copy()
    jitgraph.compile(f, backend="eager")({"w": a_c}, {"w": a_c})
    assert_same(a_e, a_c)


def test_global_array_is_updated_in_place():
    compiled = jitgraph.compile(_bump_global, backend="eager")
    before = _STATE.copy()
    compiled(np.ones(3))
    compiled(np.ones(3))
    assert_same(_STATE, before + 2)
    assert compiled.cache_info().hits == 1


_STATE = np.zeros(3)


def _bump_global(x):
    _STATE[...] += x
    return _STATE.sum()


def boolean_mask_assignment(x, n):
    x[x > 0.5] = 0
    x[x < -0.5] = n
    y = x.astype(np.int32)
    y[y == 0] = 2.7  # setitem casts unsafely, as NumPy does
    return y


def test_boolean_mask_assignment_is_a_where():
    compiled = run_both(boolean_mask_assignment, M.copy(), np.float64(-1.25))
    ops = [n.op for n in compiled.entries[0].traced_graph.nodes]
    assert ops.count("where") == 3 and "setitem" not in ops


class Dense:
    def __init__(self, n):
        self.W = np.linspace(-1, 1, n * 2, dtype=np.float32).reshape(n, 2)
        self.dW = np.ones((n, 2), np.float32)
        self.steps = 0


def sgd_on_attributes(layer, lr):
    layer.W -= lr * layer.dW
    layer.dW *= 0.5
    return layer.W.sum()


def rebinds_attribute(layer):
    layer.W = layer.W * 2


def test_inplace_update_of_object_attributes():
    compiled = run_both(sgd_on_attributes, Dense(3), 0.1)
    assert sorted(compiled.entries[0].traced_graph.input_names[i] for i, _ in
                  compiled.entries[0].traced_graph.mutations) == ["layer.W", "layer.dW"]


def test_rebinding_an_attribute_is_replayed():
    """Issue 18: the store is recorded, the graph computes the value, the driver stores it after the graph."""
    run_both(rebinds_attribute, Dense(3), graphs=1)


_WEIGHTS = np.ones(4)


def _decay_global(rate):
    global _WEIGHTS
    _WEIGHTS *= rate
    return _WEIGHTS.sum()


def test_inplace_update_of_a_global_with_global_statement():
    compiled = jitgraph.compile(_decay_global, backend="eager")
    compiled(0.5)
    compiled(0.5)
    np.testing.assert_array_equal(_WEIGHTS, np.full(4, 0.25))
    assert len(compiled.graphs()) == 1 and compiled.cache_info().hits == 1
