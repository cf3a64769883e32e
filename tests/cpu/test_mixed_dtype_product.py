"""Issue 20's bug: ``s = q @ k.T / np.sqrt(d)`` is float64 (an np.float64 scalar is not weak), so the softmax
kernel reads a float32 product and writes float64 rows; its row prefetches met one LLVM declaration for two
pointer types ("Type of #1 arg mismatch: float* != double*") and every entry fell back to eager."""

from __future__ import annotations

import numpy as np
import pytest

import jitgraph


def attention(q, k, v):
    s = q @ k.T / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return p @ v


def mixed_matvec(p, v):
    return np.tanh(p @ v) + v


@pytest.mark.parametrize("n", [16, 300])
def test_mixed_dtype_attention_compiles_and_matches_numpy(n):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((n, 8)).astype(np.float32) for _ in range(3))
    compiled = jitgraph.compile(attention)
    got = compiled(q, k, v)
    assert compiled.cache_info().fallbacks == 0
    want = attention(q, k, v)
    assert got.dtype == want.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_float64_matrix_times_float32_vector():
    rng = np.random.default_rng(1)
    p, v = rng.standard_normal((200, 200)), rng.standard_normal(200).astype(np.float32)
    compiled = jitgraph.compile(mixed_matvec)
    got = compiled(p, v)
    assert compiled.cache_info().fallbacks == 0
    np.testing.assert_allclose(got, mixed_matvec(p, v), rtol=1e-6, atol=1e-6)
