"""The five size-changing loops of issue 20 (``benchmarks/dynamic.py``, at smaller sizes): every one matches eager
NumPy and traces within the issue's entry budget: the first size static, the first recompile caused by a size
traced again with that dimension symbolic (jit/symbolic_sizes.py), and every later size an instance of that trace
(no trace, no recompile, not an entry). Size-1 and zero-size batches behave as NumPy does."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jitgraph

_spec = importlib.util.spec_from_file_location("bench_dynamic", Path(__file__).resolve().parents[2] / "benchmarks" /
                                               "dynamic.py")
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_dynamic"] = bench  # dataclasses look their module up there
_spec.loader.exec_module(bench)

SYMBOLIC = {"RNN cell, 12 sequence lengths", "softmax attention, 10 lengths", "k-means, 6 point-cloud sizes"}


@pytest.mark.parametrize("loop", bench.LOOPS, ids=lambda loop: loop.step.__name__)
def test_loop_matches_eager_within_budget(loop: Any) -> None:
    expected = loop.run(loop.step, 4)
    f = jitgraph.compile(loop.step)
    got = loop.run(f, 4)
    assert bench.agree(got, expected)
    info = f.cache_info()
    assert info.entries - info.size_variants <= loop.budget, f.recompile_reasons()  # one recompile, then variants
    assert info.entries <= loop.budget, f.recompile_reasons()
    if loop.name in SYMBOLIC:
        assert info.size_instances > 0 and info.size_variants == 0, info  # later sizes: no trace at all


def test_recompile_reason_names_the_dimension() -> None:
    f = jitgraph.compile(bench.attention)
    for n in (4, 6):
        q = np.ones((n, 8), np.float32)
        f(q, q, q)
    assert f.recompile_reasons() == [("q.shape[0]: 4 -> 6; k.shape[0]: 4 -> 6; v.shape[0]: 4 -> 6 "
                                      "(q.shape[0], k.shape[0], v.shape[0] now dynamic)")]


@pytest.mark.parametrize("n", [0, 1, 3])
def test_size_one_and_zero_size_batches_match_numpy(n: int) -> None:
    rng = np.random.default_rng(5)
    w1 = rng.standard_normal((6, 4)).astype(np.float32)
    w2 = rng.standard_normal((4, 3)).astype(np.float32)
    x = rng.standard_normal((n, 6)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, n)]
    f = jitgraph.compile(bench.mlp_step)
    with np.errstate(all="ignore"):  # a zero-size batch divides 0 by 0, as NumPy does
        expected = bench.mlp_step(x, y, w1, w2, 0.1)
        got = f(x, y, w1, w2, 0.1)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5, equal_nan=True)
    points = rng.standard_normal((max(n, 1), 2))
    centroids = points[:1].copy()
    np.testing.assert_allclose(jitgraph.compile(bench.kmeans_step)(points, centroids),
                               bench.kmeans_step(points, centroids))


def _same_as_numpy(step: Any, f: Any, *args: np.ndarray) -> None:
    """``f(*args)`` returns what ``step(*args)`` returns, or raises the same exception type."""
    try:
        with np.errstate(all="ignore"):
            expected = step(*args)
    except Exception as exc:  # noqa: BLE001 - NumPy's own error (argmax of an empty row) must be the graph's too
        with pytest.raises(type(exc)), np.errstate(all="ignore"):
            f(*args)
        return
    with np.errstate(all="ignore"):
        got = f(*args)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize(("step", "make", "recompiles"), [
    (bench.rnn_forward, lambda rng, n: (rng.standard_normal((n, 8)).astype(np.float32), np.zeros(8, np.float32),
                                        np.full((8, 8), 0.1, np.float32), np.full((8, 8), -0.1, np.float32)), 3),
    (bench.attention, lambda rng, n: tuple(rng.standard_normal((n, 4)).astype(np.float32) for _ in range(3)), 2),
    (bench.kmeans_step, lambda rng, n: (rng.standard_normal((n, 3)), rng.standard_normal((4, 3))), 1),
], ids=["rnn", "attention", "kmeans"])
def test_dynamic_lengths_one_and_zero_match_numpy(step: Any, make: Any, recompiles: int) -> None:
    """Lengths 1 and 0 after the length became dynamic: each call equals NumPy (attention over zero tokens raises,
    as NumPy's max of an empty row does); a length-1 or length-0 graph that differs is its own entry, and the next
    ordinary length is again an instance of the symbolic entry traced at an ordinary length."""
    rng = np.random.default_rng(6)
    f = jitgraph.compile(step)
    for n in (5, 9, 1, 0):
        _same_as_numpy(step, f, *make(rng, n))
    instances = f.cache_info().size_instances
    _same_as_numpy(step, f, *make(rng, 7))
    info = f.cache_info()
    assert (info.recompiles, info.size_instances) == (recompiles, instances + 1), f.recompile_reasons()
