"""Advanced (integer-array) indexing in the loop driver (jitgraph/backends/cpu/scalar/indexing.py): a gather
``x[idx]`` and a store of a scalar ``x[idx] = c`` become loop nests, at the top level of a graph with regions and
inside loop bodies. Each is checked against eager NumPy: values, dtype, shape, negative indices that wrap, and
NumPy's IndexError for an index out of range (the traced graph is specialised on shapes, not on index values, so
the same compiled driver is called with bad indices)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import jitgraph
from jitgraph.backends.cpu.scalar import compile_regions, generate
from jitgraph.errors import UnsupportedError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "realworld"))

import corpus_numeric


def rows_of(x, idx):
    """A 1-D index row per iteration into a 2-D array (whole rows gathered), in a loop region."""
    out = np.zeros((idx.shape[0], idx.shape[1], x.shape[1]), x.dtype)
    for i in range(idx.shape[0]):
        out[i] = x[idx[i]] * 2
    return out


def columns_from_one(x, idx):
    """A slice, then an index array: ``x[1:, idx]``, reduced."""
    out = np.zeros((idx.shape[0], idx.shape[1]))
    for i in range(idx.shape[0]):
        out[i] = x[1:, idx[i]].sum(axis=0)
    return out


def broadcast_pair(x, r, c):
    """Two index arrays broadcast together ((3, 1) with (2,)), and an int among them (``x3[i, :, j]``: not
    adjacent, so the block goes in front; ``None`` adds a dim)."""
    acc = np.zeros((3, 2, 4), x.dtype)
    side = np.zeros((c.shape[0], 2, 3, 4), x.dtype)
    for i in range(c.shape[0]):
        acc = acc + x[r, c[i]]
        side[i] = x[c[i], None, 1] + x[None, c[i], 0:3][0]
    return acc, side


def narrow_types(flags, idx):
    """A bool array gathered with an int8 index array."""
    out = np.zeros((idx.shape[0], idx.shape[1]), np.bool_)
    for i in range(idx.shape[0]):
        out[i] = flags[idx[i]]
    return out


def top_level(y, nearest):
    """knn's shape: a gather at the top level of a graph whose loop forces the loop driver."""
    votes = y[nearest]
    counts = np.zeros((nearest.shape[0], 3))
    for c in range(3):
        counts[:, c] = (votes == c).sum(axis=1)
    return counts, votes


def stores(out, idx):
    """Scalar stores through index arrays (repeated indices write the same value, as in NumPy)."""
    for i in range(idx.shape[0]):
        out[i, idx[i]] = 1.5
    return out


def _driver(fn, *args, **options):
    graph = jitgraph.compile(fn).trace(*args).lower().graph
    return compile_regions(graph, options)


def _same(got, want) -> None:
    for g, w in zip(got, want if isinstance(want, tuple) else (want,)):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


R = np.random.default_rng(0)
X = R.normal(size=(5, 6)).astype(np.float32)
IDX = np.array([[0, -1], [4, 2], [-5, 3], [1, 1]])


@pytest.mark.parametrize(("fn", "args", "size"), [
    (rows_of, (X, IDX), 5),
    (columns_from_one, (X, IDX), 6),
    (broadcast_pair, (X.reshape(5, 6, 1) * np.arange(4), np.array([[0], [-2], [4]]), np.array([[1, -1], [0, 2]])),
     5),
    (narrow_types, (np.array([True, False, True, True]), np.array([[0, -1, 2], [3, -4, 1]], np.int8)), 4),
    (top_level, (np.arange(10) % 3, np.array([[0, 9, -1], [3, 4, -10]])), 10),
    (stores, (np.zeros((3, 4)), np.array([[0, 0], [-1, 2], [3, -4]])), 4),
], ids=lambda v: getattr(v, "__name__", ""))
def test_matches_numpy_and_raises_numpys_index_error(fn, args, size: int) -> None:
    """``size``: the extent of the axis the last index array indexes."""
    driver = _driver(fn, *[a.copy() for a in args])
    assert "= np.int64(" in driver.source  # an index array read element by element (indexing._advanced)
    got_args, want_args = [a.copy() for a in args], [a.copy() for a in args]
    got, want = driver(got_args), fn(*want_args)
    if fn is stores:  # the graph returns nothing: the argument is written in place
        got, want = [got_args[0]], want_args[0]
    assert len(got) == (len(want) if isinstance(want, tuple) else 1)
    _same(got, want)
    _same(got_args, tuple(want_args))  # arguments written (or left alone) as NumPy does
    index = args[-1]
    for bad in (size, -size - 1):
        wrong = index.copy()
        wrong.flat[-1] = bad
        with pytest.raises(IndexError):
            fn(*[a.copy() for a in args[:-1]], wrong)
        with pytest.raises(IndexError):
            driver([*[a.copy() for a in args[:-1]], wrong])


def test_a_prange_body_raises_after_the_loop() -> None:
    driver = _driver(rows_of, X, IDX, parallel=True)
    assert "prange" in driver.source
    _same(driver([X, IDX]), rows_of(X, IDX))
    bad = IDX.copy()
    bad[2, 0] = 7
    with pytest.raises(IndexError):
        driver([X, bad])


def test_what_stays_unsupported_says_why() -> None:
    def put_values(out, idx, v):
        for i in range(idx.shape[0]):
            out[i, idx[i]] = v[i]
        return out

    def unsigned(x, idx):
        out = np.zeros((idx.shape[0], idx.shape[1]))
        for i in range(idx.shape[0]):
            out[i] = x[idx[i]]
        return out

    graph = jitgraph.compile(put_values).trace(np.zeros((3, 4)), IDX[:3], np.ones((3, 2))).lower().graph
    with pytest.raises(UnsupportedError, match="assigning an array through integer-array indices"):
        generate(graph)
    graph = jitgraph.compile(unsigned).trace(np.ones(4), np.ones((3, 2), np.uint64)).lower().graph
    with pytest.raises(UnsupportedError, match="uint64 index arrays"):
        generate(graph)


def test_knn_predict_is_one_compiled_graph() -> None:
    args = (corpus_numeric.arr(10, 3), np.arange(10) % 3, corpus_numeric.arr(4, 3, seed=1))
    f = jitgraph.compile(corpus_numeric.knn_predict)
    got = f(*args)
    want = corpus_numeric.knn_predict(*args)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert f.break_reasons() == []
    info = f.cache_info()
    assert (info.entries, info.fallbacks) == (1, 0)
    assert [type(s.artifact).__name__ for s in f.stages()] == ["RegionDriver"]
