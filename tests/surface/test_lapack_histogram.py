"""Issue 19: LAPACK calls (np.linalg.solve, inv, det, cholesky, eigh, eigvalsh, svd) and np.histogram with fixed bins
are graph ops that NumPy runs inside the compiled graph: a function using them is one graph, with NumPy's values,
dtypes, shapes and errors. eig/eigvals (real or complex by the data) and lstsq break with the reason."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jitgraph
from tests.tracer.helpers import assert_same
from tests.tracer.helpers import outcome_type as outcome

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _spd(n: int, seed: int = 0, dtype=np.float64) -> np.ndarray:
    a = np.random.default_rng(seed).standard_normal((n, n))
    return (a @ a.T + n * np.eye(n)).astype(dtype)


def one_graph(fn, *calls, backend="eager", graphs=1):
    """Every call compiled == eager (values, dtypes, shapes, or the same exception type); ``graphs`` graphs."""
    cf = jitgraph.compile(fn, backend=backend)
    for args in calls:
        expected, exc = outcome(fn, *args)
        got, got_exc = outcome(cf, *args)
        assert got_exc == exc, f"compiled raised {got_exc}, eager {exc}"
        if exc is None:
            assert_same(expected, got)
    if graphs is not None:
        assert len(cf.graphs()) == graphs, [str(b) for b in cf.break_reasons()]
        if graphs:
            assert cf.cache_info().fallbacks == 0, [str(b) for b in cf.break_reasons()]
            assert all(not e.traced.split_reasons for e in cf.entries if e.mode == "graph")
    return cf


# ---- LAPACK ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_solve_inv_det_cholesky_in_one_graph(dtype) -> None:
    def f(A, b):
        S = A @ A.T + 3 * np.eye(A.shape[0], dtype=A.dtype)
        x = np.linalg.solve(S, b)
        X = np.linalg.solve(S, np.stack([b, 2 * b], axis=1))
        return x, X, np.linalg.inv(S) @ b, np.linalg.det(S), np.linalg.cholesky(S), np.linalg.cholesky(S, upper=True)

    A = (np.arange(9).reshape(3, 3) % 4).astype(dtype)
    one_graph(f, (A, np.arange(3).astype(dtype)), (A + 1, np.arange(3).astype(dtype) + 1))


def test_batched_solve_and_det() -> None:
    A = np.stack([_spd(3, k) for k in range(4)])
    b1, b2 = np.ones(3), np.ones((4, 3, 2))
    one_graph(lambda A, b: np.linalg.solve(A, b), (A, b1))
    one_graph(lambda A, b: np.linalg.solve(A, b), (A, b2))
    one_graph(lambda A: (np.linalg.det(A), np.linalg.inv(A)), (A,))


def test_eigh_eigvalsh_svd_named_tuples() -> None:
    def f(C, X):
        w, V = np.linalg.eigh(C)
        res = np.linalg.eigh(C, UPLO="U")
        U, S, Vt = np.linalg.svd(X, full_matrices=False)
        full = np.linalg.svd(X)
        return (w, np.abs(V), res.eigenvalues, np.abs(res.eigenvectors), np.linalg.eigvalsh(C), np.abs(U @ Vt), S,
                full.U.shape, full.Vh.shape, np.linalg.svd(X, compute_uv=False), type(res).__name__)

    X = np.random.default_rng(1).standard_normal((5, 3))
    one_graph(f, (_spd(4), X))
    one_graph(f, (_spd(4, 2).astype(np.float32), X.astype(np.float32)))


def test_norm_2_and_nuc_through_the_singular_values() -> None:
    X = np.random.default_rng(2).standard_normal((3, 4, 5))
    for ord in (2, -2, "nuc"):
        one_graph(lambda x, o=ord: np.linalg.norm(x, o, axis=(2, 0)), (X,))
        one_graph(lambda x, o=ord: np.linalg.norm(x[0], o, keepdims=True), (X,))


def test_singular_matrix_raises_numpys_error_and_recovers() -> None:
    f = jitgraph.compile(lambda A, b: np.linalg.solve(A, b) * 2, backend="cpu")
    np.testing.assert_allclose(f(np.eye(2), np.ones(2)), np.full(2, 2.0))
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        f(np.zeros((2, 2)), np.ones(2))
    with pytest.raises(np.linalg.LinAlgError):
        jitgraph.compile(np.linalg.cholesky)(-np.eye(2))
    np.testing.assert_allclose(f(np.eye(2) * 4, np.ones(2)), np.full(2, 0.5))
    assert f.cache_info().fallbacks == 0


def test_an_unused_singular_solve_still_raises() -> None:
    """The LAPACK node may raise: never dropped as dead code, as eager NumPy raises even if the value goes unused."""
    def f(A, b):
        np.linalg.inv(A)
        return b + 1
    one_graph(f, (np.eye(2), np.ones(2)), (np.zeros((2, 2)), np.ones(2)))


def test_an_argument_written_before_a_raising_solve_is_restored() -> None:
    def f(A, b):
        b *= 2
        return np.linalg.solve(A, b)
    cf = jitgraph.compile(f, backend="cpu")
    b = np.ones(2)
    cf(np.eye(2), b)
    np.testing.assert_array_equal(b, [2.0, 2.0])
    with pytest.raises(np.linalg.LinAlgError):
        cf(np.zeros((2, 2)), b)
    np.testing.assert_array_equal(b, [4.0, 4.0])  # written once, as eager NumPy does before it raises


@pytest.mark.parametrize("call", [
    lambda a: np.linalg.inv(a[0]),  # 1-D: LinAlgError
    lambda a: np.linalg.det(a[:, :2]),  # not square
    lambda a: np.linalg.solve(a, a[0, :2]),  # core dimension mismatch
    lambda a: np.linalg.eigh(a.astype(np.float16)),  # float16 is refused by linalg
    lambda a: np.linalg.cholesky(a, upper=1),
])
def test_shape_and_dtype_errors_are_numpys(call) -> None:
    one_graph(call, (_spd(3),), graphs=None)


@pytest.mark.parametrize("name", ["eig", "eigvals", "lstsq"])
def test_data_typed_results_break_with_the_reason(name) -> None:
    fn = getattr(np.linalg, name)
    cf = one_graph(lambda a: fn(a, a[0]) if name == "lstsq" else fn(a), (_spd(3),), graphs=0)
    reason = str(cf.break_reasons()[0])
    assert f"np.linalg.{name}" in reason and ("real or complex" in reason or "rank" in reason)


@pytest.mark.parametrize("backend", ["eager", "cpu"])
def test_lapack_between_kernels_on_the_cpu(backend) -> None:
    def gp(X, y, Xs):
        K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1)) + 1e-2 * np.eye(X.shape[0])
        L = np.linalg.cholesky(K)
        alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
        Ks = np.exp(-0.5 * ((X[:, None] - Xs[None]) ** 2).sum(-1))
        return Ks.T @ alpha, np.log(np.linalg.det(K))

    g = np.random.default_rng(3)
    one_graph(gp, (g.standard_normal((6, 2)), g.standard_normal(6), g.standard_normal((3, 2))), backend=backend)


@given(st.integers(1, 5), st.integers(0, 3), st.sampled_from([np.float64, np.float32]), st.integers(0, 2**16))
def test_solve_matches_numpy(n, k, dtype, seed) -> None:
    g = np.random.default_rng(seed)
    A = g.standard_normal((n, n)).astype(dtype) + n * np.eye(n, dtype=dtype)
    b = g.standard_normal((n, k) if k else (n,)).astype(dtype)
    one_graph(lambda A, b: (np.linalg.solve(A, b), np.linalg.inv(A), np.linalg.det(A)), (A, b))


# ---- histogram ---------------------------------------------------------------------------------------------------
def test_histogram_forms_in_one_graph() -> None:
    def f(x, w):
        h1, e1 = np.histogram(x, bins=5)
        h2, e2 = np.histogram(x, 8, range=(-2, 2), density=True)
        h3, _ = np.histogram(x, bins=4, weights=w)
        h4, e4 = np.histogram(x, bins=np.array([-1.0, 0.0, 0.5, 3.0]))
        h5, _ = np.histogram(x, bins=[-1.0, 0.0, 3.0], range=(0, 1))
        return h1, e1, h2, e2, h3, h4, e4, h5, h1.cumsum() / h1.sum()

    g = np.random.default_rng(4)
    x = g.standard_normal(50)
    for args in ((x, g.random(50)), (x.astype(np.float32), g.random(50).astype(np.float32)),
                 (np.arange(50), np.ones(50, np.int64))):
        one_graph(f, args, backend="cpu")


def test_histogram_errors_are_numpys() -> None:
    x = np.linspace(0, 1, 10)
    one_graph(lambda x: np.histogram(x, 0), (x,), graphs=None)  # ValueError: bins must be positive
    one_graph(lambda x: np.histogram(x, 3, range=(1, 0)), (x,), graphs=None)  # max must be larger than min
    one_graph(lambda x: np.histogram(x, 3, weights=x[:4]), (x,), graphs=None)  # weights of another shape
    one_graph(lambda x: np.histogram(x, [1.0, 0.0]), (x,), graphs=None)  # edges must increase: a run-time error
    one_graph(lambda x: np.histogram(x, 3), (x,), (np.r_[np.nan, x[1:]],))  # range from NaN: run-time error


def test_histogram_auto_bins_break_with_the_reason() -> None:
    cf = one_graph(lambda x: np.histogram(x, "auto"), (np.linspace(0, 1, 10),), graphs=0)
    assert "number of bins depends on the array data" in str(cf.break_reasons()[0])


@given(hnp.arrays(st.sampled_from([np.float64, np.float32, np.int64]), st.integers(1, 40),
                  elements=st.integers(-50, 50)),
       st.integers(1, 12), st.one_of(st.none(), st.tuples(st.integers(-60, 0), st.integers(1, 60))),
       st.booleans())
def test_histogram_matches_numpy(x, bins, range_, density) -> None:
    one_graph(lambda x: np.histogram(x, bins, range=range_, density=density), (x,))
