"""A short loop whose body calls NumPy (LAPACK, sorts: ``Op.runs_numpy``) is unrolled, not traced as a region
(jitgraph/tracer/regions.py ``_calls_numpy``): in a region every iteration would leave compiled code for the call,
unrolled the calls sit between compiled kernels. Long loops stay regions."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import jitgraph
from jitgraph.ir.ops import OPS, OpKind
from jitgraph.tracer import regions
from jitgraph.tracer.regions import UNROLL_MAX

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "realworld"))

import corpus_numeric


def log_dets(covs):
    out = np.zeros(covs.shape[0])
    for j in range(covs.shape[0]):
        out[j] = np.log(np.linalg.det(covs[j])) + np.trace(np.linalg.inv(covs[j]))
    return out


def sorted_rows(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = np.sort(x[i]) * 2.0
    return out


def _ops(graph) -> set[str]:
    return {n.op for n in graph.nodes}


def _spd(k: int, n: int, seed: int = 0) -> np.ndarray:
    a = np.random.default_rng(seed).normal(size=(k, n, n))
    return a @ a.transpose(0, 2, 1) + n * np.eye(n)


def test_the_op_table_says_which_ops_run_numpy() -> None:
    assert all(op.runs_numpy for op in OPS.values() if op.kind is OpKind.LAPACK)
    assert OPS["argsort"].runs_numpy and OPS["histogram"].runs_numpy and OPS["convolve"].runs_numpy
    assert not any(op.runs_numpy for op in OPS.values() if op.kind in (OpKind.ELEMENTWISE, OpKind.REDUCTION))


def test_short_loops_that_call_numpy_unroll_and_match_numpy() -> None:
    for fn, args in ((log_dets, (_spd(3, 2),)), (sorted_rows, (np.random.default_rng(1).normal(size=(4, 5)),))):
        f = jitgraph.compile(fn)
        assert "loop" not in _ops(f.trace(*args).graph)
        got, want = f(*args), fn(*args)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12)
        assert f.break_reasons() == []


def test_long_loops_stay_regions(monkeypatch: pytest.MonkeyPatch) -> None:
    covs = _spd(UNROLL_MAX + 1, 2)
    assert "loop" in _ops(jitgraph.compile(log_dets).trace(covs).graph)
    monkeypatch.setattr(regions, "_calls_numpy", lambda nodes: False)  # the rule is what unrolls the short one
    assert "loop" in _ops(jitgraph.compile(log_dets).trace(covs[:3]).graph)


def test_gmm_e_step_is_one_compiled_graph() -> None:
    args = (corpus_numeric.arr(10, 2, seed=2), corpus_numeric.arr(2, 2, seed=3),
            np.stack([corpus_numeric._spd(2, 4), corpus_numeric._spd(2, 5)]), np.array([0.4, 0.6]))
    f = jitgraph.compile(corpus_numeric.gmm_e_step)
    (resp, total), (want_resp, want_total) = f(*args), corpus_numeric.gmm_e_step(*args)
    assert resp.dtype == want_resp.dtype and resp.shape == want_resp.shape
    np.testing.assert_allclose(resp, want_resp, rtol=1e-12)
    np.testing.assert_allclose(total, want_total, rtol=1e-12)
    assert f.break_reasons() == []
    info = f.cache_info()
    assert (info.entries, info.fallbacks) == (1, 0)
    assert "loop" not in _ops(f.graphs()[0])
