"""np.histogram over fixed uniform bins counted in one pass (backends/cpu/histogram.py): counts, edges and density
exactly NumPy's, on values at, just beside, and between every edge, outside the range, NaN and infinities; and the
cases that keep NumPy's routine."""

from __future__ import annotations

import re

import numpy as np
import pytest

import jitgraph
from jitgraph.backends.cpu.histogram import UniformHistogram, uniform_histogram
from jitgraph.ir.graph import Node
from jitgraph.ir.types import TensorType


def _node(dtype, bins, bounds, density=False, weighted=False, shape=(5,)):
    """A histogram node as far as the plan reads it (its attrs and its data's type)."""
    x = Node("input", (), TensorType(shape, np.dtype(dtype)))
    attrs = {"bins": bins, "range": bounds, "density": density, "weighted": weighted}
    return Node("histogram", (x,), TensorType((1,), np.dtype(np.intp)), attrs)


def _hard_values(edges: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    near = np.concatenate([edges, np.nextafter(edges, np.inf), np.nextafter(edges, -np.inf)])
    span = edges[-1] - edges[0]
    noise = rng.uniform(edges[0] - 0.2 * span, edges[-1] + 0.2 * span, 300)
    return np.concatenate([near, noise, [np.nan, np.inf, -np.inf]])


@pytest.mark.parametrize("bins", [1, 3, 7, 10, 16, 100])
@pytest.mark.parametrize("bounds", [(0.0, 1.0), (-3, 3), (0.1, 0.7), (-1e-3, 2.5e-3), (2, 2), (1e6, 1e6 + 3)])
@pytest.mark.parametrize("density", [False, True])
def test_counts_and_edges_are_numpys(bins, bounds, density):
    plan = uniform_histogram(_node(np.float64, bins, bounds, density), use_cache=True)
    assert isinstance(plan, UniformHistogram)
    rng = np.random.default_rng(bins)
    data = _hard_values(np.histogram_bin_edges(np.zeros(1), bins, range=bounds), rng)
    got, want = plan(data), np.histogram(data, bins, range=bounds, density=density)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32])
def test_small_integers_are_counted_as_numpy_counts_them(dtype):
    info = np.iinfo(dtype)
    data = np.arange(max(info.min, -300), min(info.max, 300)).astype(dtype)
    for bounds in [(-5, 17), (0.5, 9.5), (3, 3)]:
        plan = uniform_histogram(_node(dtype, 6, bounds), use_cache=False)
        for g, w in zip(plan(data), np.histogram(data, 6, range=bounds)):
            np.testing.assert_array_equal(g, w)
            assert g.dtype == w.dtype


def test_non_contiguous_and_empty_data():
    plan = uniform_histogram(_node(np.float64, 4, (0.0, 1.0), shape=(6, 6)), use_cache=True)
    x = np.random.default_rng(0).random((6, 12))[:, ::2]
    np.testing.assert_array_equal(plan(x)[0], np.histogram(x, 4, range=(0.0, 1.0))[0])
    np.testing.assert_array_equal(plan(np.zeros(0))[0], np.zeros(4, np.intp))


@pytest.mark.parametrize("dtype, bins, bounds, weighted", [
    (np.float32, 4, (0.0, 1.0), False),  # NumPy computes float32 data partly in float32
    (np.int64, 4, (0, 10), False),  # not exact as float64
    (np.float64, None, None, False),  # fixed edges
    (np.float64, 4, (0.0, 1.0), True),  # weights
    (np.float64, 4, (0, 2 ** 60), False),  # a bound float64 cannot hold exactly
])
def test_other_histograms_keep_numpys_routine(dtype, bins, bounds, weighted):
    assert uniform_histogram(_node(dtype, bins, bounds, weighted=weighted), use_cache=True) is None


@pytest.mark.parametrize("dtype", [np.float64, np.int16])
@pytest.mark.parametrize("density", [False, True])
def test_a_range_from_the_data_is_numpys(dtype, density):
    plan = uniform_histogram(_node(dtype, 7, None, density), use_cache=True)
    rng = np.random.default_rng(5)
    cases = [rng.standard_normal(50) * 40, np.full(6, 3.0), np.array([-2.0, 5.0]), np.zeros(0), np.arange(-9, 30)]
    for data in cases:
        data = data.astype(dtype)
        with np.errstate(invalid="ignore"):  # the density of no data is 0 / 0, for NumPy too
            got, want = plan(data), np.histogram(data, 7, density=density)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_range_from_data_that_is_not_finite_raises_numpys_error(bad):
    plan = uniform_histogram(_node(np.float64, 5, None), use_cache=True)
    data = np.array([0.0, 1.0, bad])
    with pytest.raises(ValueError) as want:
        np.histogram(data, 5)
    with pytest.raises(ValueError, match=re.escape(str(want.value))):
        plan(data)


def _entropy(x, bins=10):
    hist, _ = np.histogram(x, bins=bins)
    p = hist / hist.sum()
    return -np.sum(p * np.log(p + 1e-12))


def test_compiled_entropy_of_a_data_range_histogram_matches_eager():
    x = np.random.default_rng(2).standard_normal(40)
    compiled = jitgraph.compile(_entropy)
    assert compiled(x) == _entropy(x)
    assert "counted in one pass" in str(compiled.explain())


def _equalize(img, nbins=16):
    hist, _ = np.histogram(img.ravel(), bins=nbins, range=(0.0, 1.0))
    cdf = hist.cumsum().astype(np.float64)
    cdf = cdf / cdf[-1]
    idx = np.clip((img * nbins).astype(np.int64), 0, nbins - 1)
    return cdf[idx]


def test_compiled_histogram_equalisation_matches_eager_and_says_so():
    img = np.random.default_rng(1).random((6, 6))
    img[0, :4] = [0.0, 1.0, 0.5, 0.0625]  # on edges
    compiled = jitgraph.compile(_equalize)
    np.testing.assert_array_equal(compiled(img), _equalize(img))
    assert "counted in one pass" in str(compiled.explain())
