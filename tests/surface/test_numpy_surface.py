"""The NumPy surface of issue 19 against eager NumPy: norms, pads, boolean-mask stores, range/list/tuple indices,
flips, stacking, repeat/tile, linspace, rounding, array_equal, ufunc.outer, sort/argsort, and the named breaks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jitgraph
from tests.tracer.helpers import assert_same, run_both

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
X = np.arange(12.0).reshape(3, 4) - 5
V = np.array([3.0, -4.0, 0.0, 1.5])


def same(fn, *args, graphs=1):
    """Compiled (tracer alone) == eager: value, dtype, shape, type; or the same exception type."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected, exc = fn(*args), None
        except Exception as e:  # noqa: BLE001
            expected, exc = None, type(e)
        cf = jitgraph.compile(fn, backend="eager", cache=False)
        if exc is not None:
            with pytest.raises(exc):
                cf(*args)
            return cf
        assert_same(expected, cf(*args))
    if graphs is not None:
        assert len(cf.graphs()) == graphs, [str(b) for b in cf.break_reasons()]
    return cf


def reason(cf):
    (r,) = cf.break_reasons()
    return str(r)


def split_reason(cf):
    assert not cf.break_reasons()
    return str(cf.explain().split_reasons[0])


arrays = hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5),
                    elements=st.floats(-100, 100, allow_nan=False))


# ---- np.linalg.norm ---------------------------------------------------------------------------------------------
@given(arrays, st.sampled_from([None, 1, 2, np.inf, -np.inf, 0, 3, -1, 0.5]), st.booleans(), st.data())
def test_vector_norms(x, ord, keepdims, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    same(lambda x: np.linalg.norm(x, ord, axis=axis, keepdims=keepdims), x)


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=4),
                  elements=st.floats(-100, 100, allow_nan=False)),
       st.sampled_from([None, "fro", 1, -1, np.inf, -np.inf]), st.booleans(), st.data())
def test_matrix_norms(x, ord, keepdims, data):
    axes = data.draw(st.lists(st.integers(0, x.ndim - 1), min_size=2, max_size=2, unique=True))
    same(lambda x: np.linalg.norm(x, ord, axis=tuple(axes), keepdims=keepdims), x)


@pytest.mark.parametrize("x", [X, V, np.array([3, -4]), np.ones((2, 2, 2), np.float32), np.array(True)])
def test_norm_defaults(x):
    same(lambda x: np.linalg.norm(x), x)
    same(lambda x: np.linalg.norm(x, keepdims=True), x)


def test_norm_breaks_and_errors():
    same(lambda x: np.linalg.norm(x, 2), X)  # the singular values: an svd op in the graph
    same(lambda x: np.linalg.norm(x, "nuc"), X)
    same(lambda x: np.linalg.norm(x, "fro", axis=0), X, graphs=0)  # ValueError: invalid norm order for vectors
    same(lambda x: np.linalg.norm(x, 3, axis=(0, 1)), X, graphs=0)  # ValueError for matrices
    same(lambda x: np.linalg.norm(x, axis=(0, 0)), X, graphs=0)  # duplicate axes
    same(lambda x: np.linalg.norm(x, 1), np.ones((2, 2, 2)), graphs=0)  # improper number of dimensions
    solved = same(lambda a: np.linalg.solve(a, a[0]), np.eye(3))  # a LAPACK op in the graph (issue 19)
    assert not solved.entries[0].traced.split_reasons


def test_vdot_inner():
    same(lambda a, b: np.vdot(a, b), X, X + 1)
    same(lambda a, b: np.inner(a, b), X, X)
    same(lambda a, b: np.inner(a, b), V, V)


# ---- np.pad ------------------------------------------------------------------------------------------------------
@given(arrays, st.sampled_from(["constant", "edge", "reflect", "symmetric", "wrap"]), st.data())
def test_pad_modes(x, mode, data):
    widths = data.draw(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=x.ndim,
                                max_size=x.ndim))
    cf = same(lambda x: np.pad(x, widths, mode=mode), x, graphs=None)
    limit = [n - 1 if mode == "reflect" and n > 1 else n if mode != "reflect" else 10 for n in x.shape]
    if mode in ("constant", "edge") or all(max(w) <= lim for w, lim in zip(widths, limit)):
        assert len(cf.graphs()) == 1, cf.break_reasons()


def test_pad_forms():
    same(lambda x: np.pad(x, 2), X)
    same(lambda x: np.pad(x, (1, 2)), X)
    same(lambda x: np.pad(x, ((1, 2), (2, 1)), constant_values=((1, 2), (3, 4))), X)
    same(lambda x: np.pad(x, 1, constant_values=7.5), np.array([3, -4, 0]))
    same(lambda x: np.pad(x, ((0, 0), (1, 1), (1, 1))) * 2, np.ones((2, 3, 3)))  # im2col's padding
    assert "wider than the axis" in reason(same(lambda x: np.pad(x, 5, mode="reflect"), X, graphs=0))
    assert "not supported" in reason(same(lambda x: np.pad(x, 1, mode="mean"), X, graphs=0))
    same(lambda x: np.pad(x, -1), X, graphs=0)  # ValueError


# ---- masks and indices -------------------------------------------------------------------------------------------
@given(arrays, st.floats(-100, 100), st.data())
def test_mask_stores(x, value, data):
    k = data.draw(st.integers(1, x.ndim))

    def f(x, t):
        x = x.copy()
        m = x > t if k == x.ndim else x[(Ellipsis,) + (0,) * (x.ndim - k)] > t
        x[m] = value
        return x

    run_both(f, x, 0.0)


def test_mask_store_row_value_and_relu_grad():
    def rows(x, r):
        x = x.copy()
        x[x[:, 0] > 0] = r
        return x

    def relu_grad(g, x):
        g = g.copy()
        g[x <= 0] = 0
        return g

    run_both(rows, X, np.arange(4.0))
    run_both(relu_grad, X, X - 1)
    cf = same(lambda x: x[x > 0] * 2.0, X, graphs=1)  # split at the mask read, resumed after it (issue 18)
    assert "depends on the data" in split_reason(cf)
    cf = same(lambda x: x[x > 0].sum(), X, graphs=1)  # only reduced: no split (issue 19, tracer/selections.py)
    assert not cf.break_reasons() and not cf.explain().split_reasons


def test_range_list_tuple_indices():
    p, y = np.random.default_rng(0).random((5, 3)), np.array([0, 2, 1, 1, 0])

    def grad(p, y):
        d = p.copy()
        d[range(p.shape[0]), y] -= 1
        return d / p.shape[0]

    run_both(grad, p, y)
    run_both(lambda p, y: p[range(5), y], p, y)
    run_both(lambda p: p[(0, 2, 4), :] + p[[1, 1]].sum(), p)
    run_both(lambda p: p[range(1, 5, 2)], p)


# ---- shapes and creation ------------------------------------------------------------------------------------------
def test_flip_is_a_view():
    def f(x):
        y = np.flip(x, 1)
        y[0, 0] = 100.0  # writes through to x, as NumPy's view does
        return x + np.flipud(x) + np.fliplr(x)

    run_both(f, X.copy())
    same(lambda x: np.flip(x), X)


def test_stacking_and_atleast():
    same(lambda a: np.column_stack([a[0], a[1]]), X)
    same(lambda a: np.column_stack((a, a, a[:, 0])), X)
    for fn in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
        same(lambda a, fn=fn: fn(a[0, 0]) * 1, X)
        same(lambda a, fn=fn: fn(a[0]) * 1, X)
        same(lambda a, fn=fn: fn(a) * 1, X)


@pytest.mark.parametrize("args", [(2,), (2, 0), (2, 1), ([1, 0, 2], 0), ((0, 1, 2, 3), 1), (0,)])
def test_repeat(args):
    same(lambda a: np.repeat(a, *args), X)
    same(lambda a: a.repeat(*args), X)


@pytest.mark.parametrize("reps", [2, (2, 1), (1, 2, 2), (0, 1)])
def test_tile(reps):
    same(lambda a: np.tile(a, reps), X)


def test_linspace():
    same(lambda a: np.linspace(0, 1, 7) * a[0, 0], X)
    same(lambda a: np.linspace(-1, 2, 5, endpoint=False, retstep=True)[1] * a, X)
    same(lambda a: np.linspace(a[0, 0], a[2, 3], 9), X)
    same(lambda a: np.linspace(a[0, 0], a[2, 3], 9, endpoint=False), X)
    same(lambda a: np.linspace(a[0, 0], 3, 1), X)
    same(lambda a: np.linspace(a[0, 0], 3, 0), X)


# ---- values ------------------------------------------------------------------------------------------------------
@given(arrays, st.integers(-2, 3))
def test_round(x, decimals):
    same(lambda x: np.round(x / 7, decimals), x)
    same(lambda x: (x * 1.5).round(decimals), x)


def test_round_ints_and_scalars():
    same(lambda x: np.round(x, 2), np.arange(5))
    same(lambda x: np.around(x[0, 0] / 3, 2), X)
    same(lambda x: np.round(x * 0.5), X)


def test_array_equal():
    """A NumPy bool where NumPy returns a Python bool: the same truth in branches and arithmetic."""
    run_both(lambda a, b: a * 2 if np.array_equal(a, b) else a + 1, X, X)
    run_both(lambda a, b: a * 2 if np.array_equal(a, b) else a + 1, X, X + 1)
    run_both(lambda a, b: a + np.array_equal(a, b, equal_nan=True), X, X)
    assert jitgraph.compile(lambda a, b: np.array_equal(a, b), backend="eager")(X, V) is False


def test_ufunc_outer():
    same(lambda a, b: np.add.outer(a, b), V, np.arange(3))
    same(lambda a, b: np.multiply.outer(a, b), X, V)
    same(lambda a, b: np.subtract.outer(a, b) ** 2, V, V)
    same(lambda a, b: np.maximum.outer(a, b), V, V)


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
                  elements=st.integers(-5, 5).map(float)), st.data())
def test_sort_argsort(x, data):
    axis = data.draw(st.sampled_from([None, -1, 0]))
    same(lambda x: np.argsort(x, axis=axis, kind="stable"), x)
    same(lambda x: np.sort(x, axis=axis) * 2, x)


def test_sort_method_in_place_and_kmeans_like():
    def f(x):
        y = x.copy()
        y.sort()
        return y, x.argsort()[:2]

    run_both(f, V)

    def nearest(points, centers):
        d = ((points[:, None, :] - centers[None, :, :]) ** 2).sum(-1)
        return np.argsort(d, axis=1)[:, 0]

    rng = np.random.default_rng(3)
    run_both(nearest, rng.random((10, 2)), rng.random((3, 2)))
    run_both(nearest, rng.random((10, 2)), rng.random((3, 2)), backend="cpu", options={})


@pytest.mark.parametrize("name", ["unique", "nonzero", "flatnonzero", "argwhere", "bincount"])
def test_data_sized_results_split_with_reason(name):
    fn = getattr(np, name)
    cf = same(lambda x: fn(x), np.array([1, 2, 2, 3]), graphs=1)  # run eagerly, the trace resumed after (issue 18)
    assert "depends on the data" in split_reason(cf)


# ---- index tricks, np.ndarray ------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda x: np.c_[x[0], x[1]], lambda x: np.c_[x, x] * 2, lambda x: np.r_[x[0], x[1], 3.0],
    lambda x: x[0] + np.r_[0:4], lambda x: np.c_[np.arange(3), np.ones(3)] @ x[:2, :2],
    lambda x: x + np.mgrid[0:3, 0:4][0], lambda x: x * np.ogrid[0:3, 0:1][0], lambda x: x[np.s_[1:, ::2]],
    lambda x: np.ndarray((2, 3)) * 0 + x[0, 0]])
def test_index_tricks_and_ndarray(fn):
    run_both(fn, X)


def test_index_tricks_break_with_reason():
    assert "slices" in reason(same(lambda x: np.r_[x[0], 0:3], X, graphs=0))
