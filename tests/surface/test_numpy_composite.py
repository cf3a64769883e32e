"""Issue 19 beyond the table: np.roll, tensordot, kron, ptp, append, nan_to_num, trapezoid, corrcoef, diagflat and the
constant creators (tri, triu_indices, tril_indices, logspace, geomspace, indices), one graph each, against eager."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.surface.test_lapack_histogram import one_graph

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
G = np.random.default_rng(7)
X = G.standard_normal((3, 4))
V = G.standard_normal(5)


@pytest.mark.parametrize("call", [
    lambda x: np.roll(x, 1), lambda x: np.roll(x, -5, axis=1), lambda x: np.roll(x, (1, 2), axis=(0, 1)),
    lambda x: np.roll(x, 2, axis=(0, 1)), lambda x: np.roll(x, 0, axis=0), lambda x: np.roll(x, 7),
    lambda x: np.tensordot(x, x), lambda x: np.tensordot(x, x, axes=([1], [1])), lambda x: np.tensordot(x, x, 0),
    lambda x: np.tensordot(x[None], x, axes=((1, 2), (0, 1))), lambda x: np.kron(x, np.eye(2)),
    lambda x: np.kron(x[0], x), lambda x: np.kron(2.0, x), lambda x: np.ptp(x), lambda x: np.ptp(x, axis=0),
    lambda x: np.ptp(x, axis=1, keepdims=True), lambda x: np.append(x, x[0]), lambda x: np.append(x, x, axis=0),
    lambda x: np.trapezoid(x), lambda x: np.trapezoid(x, dx=0.5, axis=0), lambda x: np.trapezoid(x, np.arange(4.0) ** 2),
    lambda x: np.trapezoid(x, x ** 2, axis=0), lambda x: np.corrcoef(x), lambda x: np.corrcoef(x, rowvar=False),
    lambda x: np.corrcoef(x[0]), lambda x: np.diagflat(x), lambda x: np.diagflat(x[0], -1),
    lambda x: x[np.triu_indices(3, 1)[0]] * np.tri(3, 4, dtype=np.float32),
    lambda x: x[np.tril_indices(3)] + np.logspace(0, 2, 6) + np.geomspace(1, 8, 6), lambda x: np.indices((2, 3)) * x[0, 0],
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_composites_match_numpy(call, dtype) -> None:
    one_graph(call, ((X * 3).astype(dtype),))


def test_nan_to_num() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 1.5, -0.0])
    for dtype in (np.float64, np.float32):
        one_graph(np.nan_to_num, (x.astype(dtype),))
        one_graph(lambda v: np.nan_to_num(v, nan=-1.0, posinf=9.0), (x.astype(dtype),))
    one_graph(np.nan_to_num, (np.arange(3),))


def test_errors_are_numpys() -> None:
    one_graph(lambda x: np.tensordot(x, x.T), (X,), graphs=None)  # shape-mismatch for sum
    one_graph(lambda x: np.roll(x, 1, axis=3), (X,), graphs=None)  # AxisError
    one_graph(lambda x: np.roll(x, (1, 2, 3), axis=(0, 1)), (X,), graphs=None)  # shapes do not broadcast
    one_graph(lambda x: np.tri(-1.5) + x[0, 0], (X,), graphs=None)


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
                  elements=st.floats(-10, 10)), st.integers(-6, 6), st.data())
def test_roll_matches_numpy(x, shift, data) -> None:
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    one_graph(lambda v: np.roll(v, shift, axis=axis), (x,))


# ---- median, quantile, percentile (one op run by NumPy) ----------------------------------------------------------
@pytest.mark.parametrize("call", [
    np.median, lambda x: np.median(x, axis=0), lambda x: np.median(x, axis=(0, 1), keepdims=True),
    lambda x: np.percentile(x, [5, 50, 95], axis=1), lambda x: np.quantile(x, 0.25, method="nearest"),
    lambda x: np.quantile(x, np.array([[0.1], [0.7]]), axis=-1, keepdims=True),
    lambda x: np.nanmedian(np.where(x > 0.5, np.nan, x), axis=1), lambda x: np.nanpercentile(x, 40),
    lambda x: x - np.median(x, axis=0), lambda x: np.percentile(x, np.abs(x[0, 0]) * 10),
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_order_statistics_match_numpy(call, dtype) -> None:
    one_graph(call, ((X * 3).astype(dtype),), backend="cpu")


def test_order_statistic_errors_are_numpys() -> None:
    one_graph(lambda x: np.quantile(x, 1.5), (X,), graphs=None)  # ValueError: quantiles must be in [0, 1]
    one_graph(lambda x: np.percentile(x, x[0, 0] * 1000), (X,), (X * 0,))  # q from the data: checked at run time
    one_graph(lambda x: np.median(x, axis=2), (X,), graphs=None)  # AxisError
    one_graph(lambda x: np.quantile(x, 0.5, method="nope"), (X,), graphs=None)


@given(hnp.arrays(st.sampled_from([np.float64, np.float32]), hnp.array_shapes(min_dims=1, max_dims=3, min_side=1,
                                                                              max_side=5),
                  elements=st.floats(-100, 100, width=32)), st.floats(0, 1), st.data())
def test_quantile_matches_numpy(x, q, data) -> None:
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    one_graph(lambda v: (np.quantile(v, q, axis=axis), np.median(v, axis=axis)), (x,))


# ---- convolve, correlate, interp, digitize, cross, partition (ops run by NumPy) -----------------------------------
@pytest.mark.parametrize("call", [
    lambda x: np.convolve(x[0], x[1, :3]), lambda x: np.convolve(x[0], x[1], "same"),
    lambda x: np.correlate(x[0], x[1, :2], "valid"), lambda x: np.correlate(x[1, :2], x[0], "same"),
    lambda x: np.interp(x, np.arange(4.0), x[0]), lambda x: np.interp(x[0, 0], [0.0, 1.0], [2.0, 3.0], left=-1.0),
    lambda x: np.interp(x[0], np.arange(4.0), x[1], period=3.0), lambda x: np.digitize(x, [-1.0, 0.0, 1.0]),
    lambda x: np.digitize(x[0], [3.0, 0.0, -3.0], right=True), lambda x: np.cross(x[:, :3], x[0, 1:]),
    lambda x: np.partition(x, 1, axis=0), lambda x: np.partition(x, (0, 2)), lambda x: np.argpartition(x, -1, axis=None),
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_numpy_routines_in_the_graph(call, dtype) -> None:
    one_graph(call, ((X * 3).astype(dtype),), backend="cpu")


def test_numpy_routine_errors() -> None:
    one_graph(lambda x: np.convolve(x, x[0]), (X,), graphs=None)  # 2-D: object too deep
    one_graph(lambda x: np.interp(x, np.arange(3.0), x[0]), (X,), graphs=None)  # xp and fp of other lengths
    one_graph(lambda x: np.digitize(x, x[0]), (X,), (np.tile(np.arange(4.0), (3, 1)),))  # bins from the data: at run
    one_graph(lambda x: np.partition(x, 9), (X,), graphs=None)  # kth out of bounds
    one_graph(lambda x: np.cross(x, x), (X,), graphs=None)  # 4-vectors


# ---- rot90, dstack, hsplit/vsplit/dsplit, polyval, vander, select -----------------------------------------------
@pytest.mark.parametrize("call", [
    np.rot90, lambda x: np.rot90(x, 2), lambda x: np.rot90(x, -1), lambda x: np.rot90(x, 4),
    lambda x: np.rot90(x[None], 1, axes=(2, 1)), lambda x: np.dstack([x, x * 2]), lambda x: np.dstack((x[0], x[1])),
    lambda x: np.hsplit(x, 2), lambda x: np.hsplit(x[0], [1, 3]), lambda x: np.vsplit(x, 3),
    lambda x: np.dsplit(x[None], [1]), lambda x: np.polyval([3, 0, 1], x), lambda x: np.polyval(x[0], x),
    lambda x: np.polyval(x[0], 2.5), lambda x: np.vander(x[0]), lambda x: np.vander(x[1], 3, increasing=True),
    lambda x: np.vander(x[0], 1), lambda x: np.vander(x[0], 0),
    lambda x: np.select([x < -1, x > 1], [x * 2, x], default=-7), lambda x: np.select([x > 0], [1]),
    lambda x: np.select([x > 0, x < 0], [x, 2.5 * x]) + np.rot90(x, 3).sum(),
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_more_composites_match_numpy(call, dtype) -> None:
    one_graph(call, ((X * 3).astype(dtype),))


def test_more_composite_errors() -> None:
    one_graph(lambda x: np.rot90(x, 1, axes=(0, 0)), (X,), graphs=None)
    one_graph(lambda x: np.rot90(x, 1, axes=(0, 5)), (X,), graphs=None)
    one_graph(lambda x: np.vsplit(x[0], 2), (X,), graphs=None)
    one_graph(lambda x: np.hsplit(x, 3), (X,), graphs=None)  # not an equal division
    one_graph(lambda x: np.vander(x), (X,), graphs=None)
    one_graph(lambda x: np.select([x], [x]), (X,), graphs=None)  # conditions must be boolean
