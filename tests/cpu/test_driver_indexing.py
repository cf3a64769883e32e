"""The driver spells getitem/setitem as Python indexing, and assigns ``x[idx] = v`` into x's own buffer when x dies
there (backends/cpu/driver_indexing.py): a stencil loop no longer copies its array per step. Values, dtypes,
mutations and independence of results are checked against eager NumPy; the in-place decision through ``explain``."""

from __future__ import annotations

import numpy as np
import pytest
from helpers_cpu import backend_text, cost_model_on, driver_source  # noqa: F401 - the fixture by name

import jitgraph

pytestmark = pytest.mark.usefixtures("cost_model_on")  # the default cost model (helpers_cpu.py)


def _heat(u, alpha=0.1, steps=4):
    u = u.copy()
    for _ in range(steps):
        u[1:-1] = u[1:-1] + alpha * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


def test_stencil_assigns_in_place_and_matches_eager():
    u = np.linspace(0.0, 1.0, 12) ** 2
    before = u.copy()
    compiled = jitgraph.compile(_heat)
    for _ in range(2):  # the second call reuses whatever the first left behind
        np.testing.assert_allclose(compiled(u), _heat(u), rtol=1e-15)
    np.testing.assert_array_equal(u, before)  # the caller's array is never written
    assert "assigned in place into" in backend_text(compiled)
    assert "# setitem in place" in driver_source(compiled)


def _fill_rows(x):
    out = np.zeros((3, 4))
    for i in range(3):
        out[i, :] = x[i] * (i + 1)
    return out


def test_assignments_into_a_constant_copy_it_first():
    x = np.arange(12.0).reshape(3, 4)
    compiled = jitgraph.compile(_fill_rows)
    first = compiled(x)
    second = compiled(x + 1)
    np.testing.assert_array_equal(first, _fill_rows(x))
    np.testing.assert_array_equal(second, _fill_rows(x + 1))
    assert first is not second and not np.shares_memory(first, second)


def _view_read_after(x):
    y = x * 2.0
    head = y[:3].sum()
    y[1:] = 0.0
    return y, head + y[:3].sum()


def test_a_buffer_still_read_later_is_not_assigned_in_place():
    x = np.arange(1.0, 7.0)
    compiled = jitgraph.compile(_view_read_after)
    got, want = compiled(x), _view_read_after(x)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1]


def _mutate_argument(x, v):
    x[2:5] = v
    x[0] = x[1] + 1.0
    return x.sum()


def test_assignments_into_a_callers_array_mutate_it_as_eager():
    x, v = np.arange(8.0), np.array([7.0, 8.0, 9.0])
    xe = x.copy()
    compiled = jitgraph.compile(_mutate_argument)
    assert compiled(x, v) == _mutate_argument(xe, v)
    np.testing.assert_array_equal(x, xe)


def _gather_scatter(table, idx, k):
    out = table * 1.5
    out[k] = -1.0
    return out[idx], out[k - 1, ...]


def test_index_operands_and_gathers_match_eager():
    table = np.linspace(0.0, 1.0, 10).astype(np.float32)
    idx = np.array([[0, 3], [9, 2]])
    compiled = jitgraph.compile(_gather_scatter)
    for k in (4, 7):
        got, want = compiled(table, idx, k), _gather_scatter(table, idx, k)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)


def _overlapping_shift(x):
    y = x + 1.0
    y[1:] = y[:-1]
    return y


def test_an_assignment_from_a_view_of_its_own_target_matches_eager():
    x = np.arange(6.0)
    compiled = jitgraph.compile(_overlapping_shift)
    np.testing.assert_array_equal(compiled(x), _overlapping_shift(x))


def _returns_views_of_mutated(x, g):
    before = x * 2.0
    tail = x[1:]
    x -= 0.5 * g
    m = g * 3.0
    return before, tail, m, x[:2], x


@pytest.mark.parametrize("n", [6, 40_000])
def test_outputs_beside_mutated_inputs_match_eager(n):
    """Outputs of their own skip the per-call overlap check; views of a mutated input still see eager's values."""
    rng = np.random.default_rng(3)
    x, g = rng.standard_normal(n), rng.standard_normal(n)
    xe = x.copy()
    compiled = jitgraph.compile(_returns_views_of_mutated)
    got, want = compiled(x, g), _returns_views_of_mutated(xe, g)
    np.testing.assert_array_equal(x, xe)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert got[4] is x and not np.shares_memory(got[2], x) and not np.shares_memory(got[0], x)


def _sgd(w, g, v):
    v *= 0.9
    v -= 0.1 * g
    w += v
    return w


@pytest.mark.parametrize("aliasing", ["none", "same array twice", "views of one array"])
def test_in_place_kernels_with_overlapping_arguments_match_eager(aliasing):
    """The driver's per-call overlap check (``CpuCompiled._overlapping``): arrays that own their memory and are
    distinct take the fast path; one array passed twice, or two views of one array, run the safe driver."""
    base = np.arange(1.0, 41.0)

    def make():
        if aliasing == "none":
            return base[:20].copy(), base[20:].copy(), np.ones(20)
        if aliasing == "same array twice":
            return (base[:20].copy(),) * 2 + (np.ones(20),)
        b = base.copy()
        return b[:20], b[10:30], np.ones(20)

    compiled = jitgraph.compile(_sgd)
    for _ in range(2):
        got_args, want_args = make(), make()
        got, want = compiled(*got_args), _sgd(*want_args)
        np.testing.assert_array_equal(got, want)
        for g, w in zip(got_args, want_args):
            np.testing.assert_array_equal(g, w)


def _shift_add(u):
    u = u.copy()
    for _ in range(3):
        u[1:-1] = u[1:-1] + u[2:]  # the value's operands overlap its target, shifted
        u[1:] = u[:-1] * 2.0
    return u


def _col_sums(x):
    out = np.zeros((x.shape[0], 3))
    out[:, 0] = x[:, :, 0].sum(axis=1)
    out[:, 1] = x[:, :, 1].sum(axis=1)
    out[:, 2] = x[:, :, 3].max(axis=1)
    return out


def test_values_computed_straight_into_their_target_match_eager():
    u = np.linspace(-1.0, 1.0, 9)
    compiled = jitgraph.compile(_shift_add)
    np.testing.assert_array_equal(compiled(u), _shift_add(u))
    assert "is computed straight into" in backend_text(compiled) and "out=" in driver_source(compiled)
    x = np.arange(24.0).reshape(2, 3, 4)
    compiled = jitgraph.compile(_col_sums)
    for _ in range(2):
        np.testing.assert_array_equal(compiled(x), _col_sums(x))
    assert "is computed straight into" in backend_text(compiled)


def _not_into(x, a, b, xi):
    y = x * 1.0
    y[0] = y[1:].sum(axis=0)  # the reduction reads a view of its target
    t = a + b
    z = x + 2.0
    z[1:] = t  # t is also returned
    w = x - 1.0
    w[:2] = (a + b)[None, :]  # broadcast: the value's shape is not the target's
    xi = xi + 0
    xi[1:] = a[1:3] * 1.5  # float into int: NumPy casts on assignment
    q = x * 3.0
    s = a * 2.0
    r = q[0].sum()  # reads q after s is computed, before the assignment
    q[1] = s
    return y, z, t, w, xi, q, r


def test_assignments_that_must_not_compute_into_their_target_match_eager():
    x = np.arange(12.0).reshape(3, 4) / 3
    a, b = np.array([0.5, 1.5, 2.5]), np.array([1.0, 2.0, 3.0])
    a4 = np.linspace(0, 1, 4)
    xi = np.arange(3, dtype=np.int64)
    compiled = jitgraph.compile(_not_into)
    got, want = compiled(x, a4, a4 + 1, xi), _not_into(x, a4, a4 + 1, xi)
    for g, w in zip(got, want):
        assert np.result_type(g) == np.result_type(w) and np.shape(g) == np.shape(w)
        np.testing.assert_array_equal(g, w)
    del a, b
