"""Streaming stores (backends/cpu/streaming.py): the row copy itself, when kernels use it, and that results match."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

import jitgraph
from jitgraph.backends.cpu import streaming
from jitgraph.backends.cpu.streaming import jg_stream_fence, jg_stream_row


@njit(cache=False)
def _stream(dst, row, src):
    jg_stream_row(dst, row, src)
    jg_stream_fence()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 3, 7, 8, 9, 17, 100, 1027])
@pytest.mark.parametrize("offset", [0, 1, 2, 3])
def test_stream_row_writes_exactly_the_row(dtype, n, offset):
    """Every alignment of the row start (the head, the streamed middle and the tail), and nothing else changes."""
    big = np.zeros((5, n + 8), dtype)
    dst = big[:, offset:offset + n]
    src = (np.arange(n) + 1).astype(dtype)
    _stream(dst, np.uint64(2), src)
    np.testing.assert_array_equal(big[2, offset:offset + n], src)
    assert not big[[0, 1, 3, 4]].any() and not big[2, :offset].any() and not big[2, offset + n:].any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_stream_row_strided_destination(dtype):
    """A row that is not contiguous (a transposed array) gets plain strided stores."""
    dst = np.zeros((13, 4), dtype).T
    src = np.arange(13, dtype=dtype) - 6.5
    _stream(dst, 1, src)
    np.testing.assert_array_equal(dst[1], src)
    assert not dst[[0, 2, 3]].any()


def test_stream_row_keeps_nan_inf_and_signed_zero():
    src = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-45, 3.4e38, -1.0, 2.0] * 3, np.float32)
    dst = np.ones((1, src.size), np.float32)
    _stream(dst, 0, src)
    np.testing.assert_array_equal(dst[0], src)
    assert np.array_equal(np.signbit(dst[0]), np.signbit(src))


def test_worth_streaming_follows_the_cache_size(monkeypatch):
    assert streaming.last_level_cache_bytes() > 0
    monkeypatch.setattr(streaming, "last_level_cache_bytes", lambda: 1000)
    monkeypatch.setattr(streaming, "available", lambda: True)
    assert not streaming.worth_streaming(749) and streaming.worth_streaming(750)
    monkeypatch.setattr(streaming, "available", lambda: False)
    assert not streaming.worth_streaming(10**12)


def _layernorm(x, w, b):
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    var = (xc * xc).mean(axis=-1, keepdims=True)
    return xc / np.sqrt(var + 1e-5) * w + b


def _kernel_sources(compiled) -> list[str]:
    return [k.source for k in compiled.entries[-1].compiled.kernels.values()]


@pytest.fixture
def stream_everything(monkeypatch):
    """Kernels moving 12 bytes or more stream: small inputs take the streaming path."""
    monkeypatch.setattr(streaming, "last_level_cache_bytes", lambda: 16)
    monkeypatch.setattr(streaming, "available", lambda: True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(2, 9), (7, 300), (64, 1027), (33, 8)])
def test_streamed_layernorm_matches_eager(stream_everything, dtype, shape):
    rng = np.random.default_rng(shape[1])
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in (shape, shape[1:], shape[1:]))
    x[0, :3] = [np.nan, np.inf, -0.0]
    compiled = jitgraph.compile(_layernorm, cache=False)
    got = compiled(x, w, b)
    want = _layernorm(x, w, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)
    (source,) = _kernel_sources(compiled)
    assert "jg_stream_row(o0, i0, sto0)" in source and source.rstrip().endswith("the launcher returns them")
    assert "jg_prefetch_write" not in source  # no read-for-ownership of a row that is streamed


def test_strided_and_transposed_inputs_stream_too(stream_everything):
    rng = np.random.default_rng(3)
    base = rng.standard_normal((40, 70)).astype(np.float32)
    w, b = np.ones(35, np.float32), np.zeros(35, np.float32)
    compiled = jitgraph.compile(_layernorm, cache=False)
    for x in (base[::2, ::2], np.asfortranarray(base[:20, :35]), base.T[:20, :35]):
        assert x.shape == (20, 35)
        np.testing.assert_allclose(compiled(x, w, b), _layernorm(x, w, b), rtol=1e-5, atol=1e-6)
        assert any("jg_stream_row" in s for s in _kernel_sources(compiled))


def test_small_kernels_do_not_stream():
    """At the real threshold (3/4 of the last-level cache) a small layernorm keeps its plain stores."""
    x = np.ones((8, 16), np.float32)
    compiled = jitgraph.compile(_layernorm, cache=False)
    compiled(x, np.ones(16, np.float32), np.zeros(16, np.float32))
    assert all("jg_stream" not in s for s in _kernel_sources(compiled))


def test_math_bound_and_in_place_kernels_do_not_stream(stream_everything):
    """Softmax (exp per element) is bound by its math, and an in-place update writes a row it has just read."""

    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def center(x):
        x -= x.mean(axis=1, keepdims=True)

    x = np.random.default_rng(0).standard_normal((16, 40)).astype(np.float32)
    for fn, args in ((softmax, (x,)), (center, (x.copy(),))):
        compiled = jitgraph.compile(fn, cache=False)
        want_args = [a.copy() for a in args]
        got, want = compiled(*args), fn(*want_args)
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        for a, b in zip(args, want_args):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        assert all("jg_stream" not in s for s in _kernel_sources(compiled))
