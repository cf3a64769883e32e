"""The loop driver's array loop nests use the vectorisable math library under ``math="fast"``, as the fused
kernels do (``VM_tanh_float32``), and libm's functions under ``math="libm"``; results agree with eager NumPy within
the library's documented ulp bounds, special values (nan, +-inf, signed zeros, log of negatives) included."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import jitgraph


def rnn(xs, h0, W, U, b):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ W + h @ U + b)
    return h


def special(xs):
    e = np.empty_like(xs)
    lg = np.empty_like(xs)
    p = np.empty_like(xs)
    for t in range(xs.shape[0]):
        e[t] = np.exp(xs[t]) * 1.0
        lg[t] = np.log(xs[t]) + np.log1p(xs[t]) * np.expm1(xs[t])
        p[t] = np.power(np.abs(xs[t]), xs[t]) + np.sqrt(xs[t]) * np.tanh(xs[t])
    return e, lg, p


def _compile_and_source(fn, args, caplog: pytest.LogCaptureFixture, **options):
    """The compiled result on ``args`` and the loop driver's source, read from the kernels log."""
    with caplog.at_level(logging.DEBUG, logger="jitgraph.kernels"):
        caplog.clear()
        out = jitgraph.compile(fn, **options)(*args)
    sources = [r.getMessage() for r in caplog.records if "loop driver" in r.getMessage()]
    assert sources, "no loop driver was compiled"
    return out, "\n".join(sources)


def _rnn_args(dtype: type) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    T, B, H = 6, 3, 8
    return (rng.normal(size=(T, B, H)).astype(dtype), np.zeros((B, H), dtype), (rng.normal(size=(H, H)) * 0.5).astype(dtype),
            (rng.normal(size=(H, H)) * 0.5).astype(dtype), rng.normal(size=H).astype(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rnn_tanh_uses_vector_math_and_matches_eager(dtype: type, caplog: pytest.LogCaptureFixture) -> None:
    args = _rnn_args(dtype)
    got, source = _compile_and_source(rnn, args, caplog)
    assert f"VM_tanh_{np.dtype(dtype).name}(" in source, source
    want = rnn(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=8 * np.finfo(dtype).eps, atol=8 * np.finfo(dtype).eps)


def test_libm_option_keeps_numpy_scalar_functions(caplog: pytest.LogCaptureFixture) -> None:
    args = _rnn_args(np.float32)
    got, source = _compile_and_source(rnn, args, caplog, math="libm")
    assert "VM_" not in source and "np.tanh(" in source, source
    np.testing.assert_allclose(got, rnn(*args), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_special_values_follow_numpy(dtype: type, caplog: pytest.LogCaptureFixture) -> None:
    values = [np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, 1.0, -0.5, 0.5, 1e-30, -1e-30, 80.0, -80.0, 700.0, -750.0, 3.0]
    xs = np.array([values, values[::-1]], dtype=dtype)
    with np.errstate(all="ignore"):
        want = special(xs)
        got, source = _compile_and_source(special, (xs,), caplog)
    assert "VM_exp_" in source and "VM_log_" in source, source
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_array_equal(np.isinf(g), np.isinf(w))
        finite = np.isfinite(w)
        np.testing.assert_array_equal(np.signbit(g[finite & (w == 0)]), np.signbit(w[finite & (w == 0)]))
        np.testing.assert_allclose(g[finite], w[finite], rtol=16 * np.finfo(dtype).eps, atol=0)
        np.testing.assert_array_equal(g[~finite], w[~finite])
