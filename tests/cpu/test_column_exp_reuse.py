"""Column softmax and logsumexp (reductions over axis 0 of a C-order matrix): the column template computes
``exp`` once per element -- the sum sweep stores it and the final pass reloads it -- and the results still match
eager NumPy, NaN and inf columns included."""

from __future__ import annotations

import numpy as np
import pytest

import jitgraph


def softmax_cols(x):
    e = np.exp(x - x.max(axis=0))
    return e / e.sum(axis=0)


def logsumexp_cols(x):
    m = x.max(axis=0)
    return m + np.log(np.exp(x - m).sum(axis=0))


def _data(dtype: type) -> np.ndarray:
    x = np.random.default_rng(5).standard_normal((37, 21)).astype(dtype) * 4
    x[3, 2] = np.nan
    x[:, 5] = -np.inf
    x[7, 8] = np.inf
    x[:, 9] = np.inf
    return x


def _kernel(f, x: np.ndarray) -> str:
    return next(s.source for s in f.entries[0].compiled.kernel_sources() if s.title.startswith("kernel"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [softmax_cols, logsumexp_cols])
def test_column_exp_values_match_eager(fn, dtype) -> None:
    x = _data(dtype)
    f = jitgraph.compile(fn)
    with np.errstate(all="ignore"):
        want = fn(x)
        got = f(x)
    assert got.shape == want.shape and got.dtype == want.dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)
    assert np.array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.parametrize("fn", [softmax_cols, logsumexp_cols])
def test_column_exp_is_computed_once_per_element(fn) -> None:
    x = _data(np.float32)
    f = jitgraph.compile(fn)
    f(x)
    src = _kernel(f, x)
    body = src.split("def fused", 1)[1]
    assert body.count("VM_exp_float32(") == 1, src
    if fn is softmax_cols:
        final = body.split("# final pass", 1)[1]
        assert "VM_exp_float32(" not in final and "scv" in final, src
