"""``jitgraph.dask.map_blocks`` (meta, dtype and chunks by tracing), its plan, raw ``da.map_blocks`` /
``da.blockwise`` / ``da.reduction`` with compiled functions, and cross-chunk moments: in-process (the synchronous
scheduler), so they are quick; the cluster tests repeat the main ones across processes."""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import dask
import dask_helpers as H

import jitgraph
import jitgraph.dask as jd

RNG = np.random.default_rng(0)
XN = RNG.normal(size=(250, 48)).astype(np.float32)
YN = RNG.normal(size=(250, 48)).astype(np.float32)


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def test_map_blocks_traces_instead_of_calling_on_empty_arrays():
    f = jitgraph.compile(H.fused.fn)
    x, y = da.from_array(XN, chunks=(100, 48)), da.from_array(YN, chunks=(100, 48))
    out, plan = jd.map_blocks(f, x, y, explain=True)
    assert f.cache_info().misses == 0  # planning traced; it ran nothing
    assert out.chunks == ((100, 100, 50), (48,)) and out.dtype == np.float32
    assert type(out._meta) is np.ndarray and out._meta.dtype == np.float32
    np.testing.assert_allclose(out.compute(), H.fused_numpy(XN, YN), rtol=1e-5, atol=1e-6)
    assert f.cache_info().misses == 2  # one compile per distinct block shape (100 and the 50-row edge)
    text = str(plan)
    assert "3 task(s)" in text and "2 distinct block shape(s)" in text and "compiled graph" in text


def test_dask_own_map_blocks_calls_on_empty_arrays():
    """Why the helper exists: dask infers meta by calling the function on 0-length blocks (an extra compile)."""
    f = jitgraph.compile(H.fused.fn)
    x, y = da.from_array(XN, chunks=(100, 48)), da.from_array(YN, chunks=(100, 48))
    da.map_blocks(f, x, y)
    assert f.cache_info().misses >= 1  # compiles for shapes no block has (0-length arrays)


def test_row_softmax_and_a_row_reduction_with_drop_axis():
    x = da.from_array(XN, chunks=(64, 48))
    np.testing.assert_allclose(jd.map_blocks(H.softmax, x).compute(), H.softmax_numpy(XN), rtol=1e-5, atol=1e-7)
    rowsum = jitgraph.compile(lambda a: a.sum(axis=1))
    out = jd.map_blocks(rowsum, x, drop_axis=1)
    assert out.chunks == ((64, 64, 64, 58),)
    np.testing.assert_allclose(out.compute(), XN.sum(axis=1), rtol=1e-4, atol=1e-4)
    with pytest.raises(jd.ChunkPlanError, match="drop_axis"):
        jd.map_blocks(rowsum, x)


def test_plan_reports_a_graph_break_and_blocks_still_agree():
    x = da.from_array(XN, chunks=(125, 48))
    out, plan = jd.map_blocks(H.noisy, x, explain=True)
    assert plan.eager and "EAGER (graph break" in str(plan) and "tolist" in str(plan)
    np.testing.assert_array_equal(out.compute(), XN * 2.0)


def test_raw_blockwise_and_reduction_accept_compiled_functions():
    x, y = da.from_array(XN, chunks=(100, 24)), da.from_array(YN, chunks=(100, 24))
    out = da.blockwise(H.fused, "ij", x, "ij", y, "ij", dtype=np.float32)
    np.testing.assert_allclose(out.compute(), H.fused_numpy(XN, YN), rtol=1e-5, atol=1e-6)
    chunk_sum = jitgraph.compile(lambda a, axis, keepdims: a.sum(axis=axis, keepdims=keepdims))
    total = da.reduction(x, chunk_sum, chunk_sum, axis=0, dtype=np.float32)
    np.testing.assert_allclose(total.compute(), XN.sum(axis=0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("axis", [None, 1])
def test_mean_var_from_partial_moments(axis):
    data = (RNG.normal(size=(256, 30)) * 3 + 1e4).astype(np.float32)  # a large mean: naive sums lose digits
    x = da.from_array(data, chunks=(64, 15))  # one block shape (each is a compile); the cluster test has edges
    m, v = dask.compute(*jd.mean_var(x, axis=axis, ddof=1, split_every=2))
    ref = data.astype(np.float64)
    np.testing.assert_allclose(m, ref.mean(axis=axis), rtol=1e-12)
    np.testing.assert_allclose(v, ref.var(axis=axis, ddof=1), rtol=1e-9)
