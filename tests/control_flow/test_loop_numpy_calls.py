"""LAPACK, sorting, histogram and quantile calls inside loop bodies run NumPy's own function in a ``numba.objmode``
block (jitgraph/backends/cpu/scalar/numpy_calls.py): values, dtypes and exceptions are NumPy's (ties in the default
quicksort included), such loops are never ``prange``, and a body with too little compiled work per call runs
eagerly instead (object mode costs more per call than Python's own call)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import jitgraph
from jitgraph.backends.cpu.scalar import numpy_calls


def newton(A, x, n):
    for _ in range(n.shape[0]):
        r = A @ x - x * x * x
        J = A - np.diag(3 * x * x)
        x = x - np.linalg.solve(J, r) * 0.5 + 0.0 * (x + 1.0) * (x - 1.0)
    return x


def everything(A, b, n):
    x = b
    for _ in range(n.shape[0]):
        x = np.linalg.solve(A, x) + np.linalg.det(A) * 0.01
        w, v = np.linalg.eigh(A + A.T)
        x = x + v[:, 0] * w[0] + np.argsort(np.round(x)) + np.linalg.inv(A)[0] + np.quantile(x, 0.3)
        x = x + np.histogram(x, 4)[0] + np.linalg.cholesky(A @ A.T)[1] + np.linalg.eigvalsh(A + A.T)
        x = (x + np.linalg.svd(A)[1] + np.sort(x)) * 0.1
    return x


def only_solve(A, x, n):
    for _ in range(n.shape[0]):
        x = np.linalg.solve(A, x)
    return x


def dets(As):
    out = np.empty(As.shape[0])
    for i in range(As.shape[0]):
        out[i] = np.linalg.det(As[i])
    return out


def _run(fn, args, caplog: pytest.LogCaptureFixture, **options):
    """The compiled result and every log message (driver sources, breaks)."""
    with caplog.at_level(logging.DEBUG, logger="jitgraph"):
        caplog.clear()
        out = jitgraph.compile(fn, **options)(*args)
    return out, "\n".join(r.getMessage() for r in caplog.records)


def _system(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, n)) + n * np.eye(n), rng.normal(size=n)


def test_newton_step_compiles_with_numpy_solve(caplog: pytest.LogCaptureFixture) -> None:
    A, b = _system(6)
    args = (A, b * 0.1, np.zeros(40))
    got, log = _run(newton, args, caplog)
    assert "ref_solve(" in log and "numba.objmode" in log, log
    want = newton(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_every_called_op_matches_numpy_exactly(caplog: pytest.LogCaptureFixture,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(numpy_calls, "WORK_PER_CALL", 0)  # exercise every emitter, whatever the cost rule says
    A, b = _system(4, seed=1)
    args = (A, b, np.zeros(30))
    got, log = _run(everything, args, caplog)
    for op in ("solve", "det", "eigh", "argsort", "inv", "quantile", "histogram", "cholesky", "eigvalsh", "svd",
               "sort"):
        assert f"ref_{op}(" in log, (op, log)
    want = everything(*args)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_singular_matrix_raises_numpy_error(caplog: pytest.LogCaptureFixture) -> None:
    A, b = _system(6)
    A[:, 2], b[2] = 0.0, 0.0  # J's column 2 is A's minus 3 x[2]**2: zero
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        newton(A, b, np.zeros(40))
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        _run(newton, (A, b, np.zeros(40)), caplog)


def test_call_only_body_runs_eagerly(caplog: pytest.LogCaptureFixture) -> None:
    A, b = _system(5)
    args = (A, b, np.zeros(30))
    got, log = _run(only_solve, args, caplog)
    assert "would run slower compiled than eagerly" in log, log
    np.testing.assert_array_equal(got, only_solve(*args))


def test_loop_with_numpy_call_is_never_prange(caplog: pytest.LogCaptureFixture,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(numpy_calls, "WORK_PER_CALL", 0)
    As = np.random.default_rng(2).normal(size=(600, 3, 3))
    got, log = _run(dets, (As,), caplog, parallel=True)
    assert "ref_det(" in log and "numba.prange" not in log and "holds the GIL" in log, log
    np.testing.assert_array_equal(got, dets(As))
