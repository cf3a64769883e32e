"""Scans, differences, NaN-aware and weighted summaries, closeness, selection, diagonals, triangles and covariance
against eager NumPy (values, dtypes, shapes, errors)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.surface.test_numpy_surface import X, same
from tests.tracer.helpers import run_both

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
NAN = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 2.0]])


@pytest.mark.parametrize("x", [X, np.arange(6, dtype=np.int8), np.array([True, False, True]), NAN])
def test_scans(x):
    for axis in (None, 0, -1):
        same(lambda x, axis=axis: np.cumsum(x, axis=axis), x)
        same(lambda x, axis=axis: np.cumprod(x, axis=axis), x)
    same(lambda x: x.cumsum() * 2, x)
    same(lambda x: np.cumsum(x, dtype=np.float32), x)


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5),
                  elements=st.floats(-100, 100)), st.integers(0, 3), st.data())
def test_diff(x, n, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    same(lambda x: np.diff(x, n, axis), x)


def test_diff_bool_and_errors():
    same(lambda x: np.diff(x), np.array([True, False, False, True]))
    same(lambda x: np.diff(x[0, 0]), X, graphs=0)


def test_searchsorted():
    a = np.array([1.0, 2.0, 2.0, 5.0])
    same(lambda a, v: np.searchsorted(a, v), a, np.array([0.0, 2.0, 6.0]))
    same(lambda a, v: np.searchsorted(a, v, side="right") + 1, a, np.array([[2.0, 3.0]]))
    same(lambda a: a.searchsorted(2.0), a)


def test_nan_summaries():
    for axis in (None, 0, 1):
        same(lambda x, axis=axis: np.nansum(x, axis=axis), NAN)
        same(lambda x, axis=axis: np.nanmean(x, axis=axis), NAN)
    same(lambda x: np.nansum(x, keepdims=True), np.arange(4))
    same(lambda x: np.nanmean(x), np.arange(4))


def test_average():
    same(lambda x: np.average(x), X)
    same(lambda x, w: np.average(x, axis=0, weights=w), X, np.abs(X) + 1)
    same(lambda x, w: np.average(x, weights=w), np.arange(4), np.arange(4) + 1)
    same(lambda x, w: np.average(x, weights=w), X, np.zeros_like(X), graphs=None)  # ZeroDivisionError in NumPy


@given(st.lists(st.sampled_from([0.0, 1.0, 1.0 + 1e-9, 1.1, np.inf, -np.inf, np.nan]), min_size=2, max_size=2),
       st.booleans())
def test_isclose(pair, equal_nan):
    a, b = np.array([pair[0]]), np.array([pair[1]])
    same(lambda a, b: np.isclose(a, b, equal_nan=equal_nan), a, b)
    same(lambda a, b: a * np.allclose(a, b, equal_nan=equal_nan), a, b)  # a NumPy bool (NumPy: a Python bool)


def test_count_nonzero():
    same(lambda x: np.count_nonzero(x, axis=0), X)
    same(lambda x: x * np.count_nonzero(x), X)


def test_take_split_meshgrid():
    same(lambda x: np.take(x, [0, 2, 2]), X)
    same(lambda x: np.take(x, np.array([[1, 0]]), axis=1), X)
    same(lambda x: x.take([1], axis=0), X)
    same(lambda x: np.split(x, 2, axis=1), X)
    same(lambda x: np.split(x, [1, 3], axis=1), X)
    same(lambda x: np.array_split(x, 3, axis=1), X)
    same(lambda x: np.split(x, 3, axis=1), X, graphs=0)  # ValueError: no equal division
    for indexing in ("xy", "ij"):
        same(lambda a, b, ix=indexing: np.meshgrid(a, b, indexing=ix), np.arange(3.0), np.arange(4))
        same(lambda a, b, ix=indexing: np.meshgrid(a, b, a, indexing=ix, sparse=True), np.arange(3.0), np.arange(2))


def test_split_views_write_through():
    def f(x):
        left, right = np.split(x, 2, axis=1)
        left[0, 0] = 100.0
        return x + right.sum()

    run_both(f, X.copy())


@pytest.mark.parametrize("k", [-2, -1, 0, 1, 3])
def test_diagonals_and_triangles(k):
    same(lambda x: np.diagonal(x, k), X)
    same(lambda x: np.trace(x, k), X)
    same(lambda x: np.diag(x, k), X)
    same(lambda x: np.diag(x[0], k), X)
    same(lambda x: np.triu(x, k), X)
    same(lambda x: np.tril(x, k), X)
    same(lambda x: x.diagonal(k) * 2, np.ones((2, 3, 4)))
    same(lambda x: x.trace(), np.arange(27).reshape(3, 3, 3))


@pytest.mark.parametrize("rowvar", [True, False])
@pytest.mark.parametrize("bias", [True, False])
def test_cov(rowvar, bias):
    rng = np.random.default_rng(2)
    same(lambda x: np.cov(x, rowvar=rowvar, bias=bias), rng.random((3, 6)))
    same(lambda x: np.cov(x, ddof=2), rng.integers(0, 9, (2, 5)))
    same(lambda x: np.cov(x), rng.random(5))
