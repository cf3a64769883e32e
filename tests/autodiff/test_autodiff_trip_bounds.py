"""Gradients through loops whose trip count the trace does not know: a ``while``, and a ``for`` over a range
computed at run time. They need ``max_trips`` (the rows the backward saves); without it they are refused at the
loop's line, and a run that goes past it raises ValueError instead of writing out of bounds."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numeric_grad

import jitgraph
from jitgraph.autodiff import DifferentiationError


def grow(x, w):
    while (x * w).sum() < 10.0:
        x = x * 1.5 + w
    return (x * x).sum()


def runtime_range(x, w, n):
    h = x
    for i in range(int(n.sum())):
        h = np.tanh(h * w + i * 0.1)
    return (h * h).sum()


X, W = np.array([1.0, 0.8, 1.2]), np.array([0.5, 0.6, 0.7])


def _check(f, args, argnums, **options) -> None:
    grads = jitgraph.grad(f, argnums=argnums, **options)(*args)
    for k, i in enumerate(argnums):
        np.testing.assert_allclose(grads[k], numeric_grad(f, args, i, 1e-6), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("backend", ["eager", "cpu"])
def test_while_with_max_trips_matches_finite_differences(backend: str) -> None:
    _check(grow, (X, W), (0, 1), backend=backend, max_trips=16)


def test_runtime_range_with_max_trips_matches_finite_differences() -> None:
    for n in ([2, 3], [0, 0], [1, 0]):  # five trips, none, one
        _check(runtime_range, (X * 0.3, W, np.array(n)), (0, 1), backend="eager", max_trips=8)


def test_value_and_grad_and_jvp_through_a_while() -> None:
    (value, (gx, _)) = jitgraph.value_and_grad(grow, argnums=(0, 1), backend="eager", max_trips=16)(X, W)
    assert value == pytest.approx(grow(X, W))
    t = np.array([0.3, -0.2, 0.1])
    out, tangent = jitgraph.jvp(grow, (X, W), (t, np.zeros(3)), backend="eager", max_trips=16)
    assert out == pytest.approx(grow(X, W))
    assert tangent == pytest.approx(float(gx @ t), rel=1e-9)


def test_without_max_trips_the_loop_is_refused_at_its_line() -> None:
    with pytest.raises(DifferentiationError, match="run time") as info:
        jitgraph.grad(runtime_range, backend="eager")(X, W, np.array([1, 2]))
    assert info.value.filename == __file__ and "max_trips" in str(info.value)
    with pytest.raises(DifferentiationError, match="(?s)while loop.*max_trips"):
        jitgraph.grad(grow, backend="eager")(X, W)


def test_a_run_past_max_trips_raises_value_error() -> None:
    g = jitgraph.grad(runtime_range, backend="eager", max_trips=4)
    g(X, W, np.array([2, 2]))  # exactly max_trips: fine
    with pytest.raises(ValueError, match="ran more than max_trips=4 iterations"):
        g(X, W, np.array([3, 2]))


def test_max_trips_is_checked_like_any_option() -> None:
    with pytest.raises(ValueError, match="max_trips"):
        jitgraph.grad(grow, max_trips=0)
