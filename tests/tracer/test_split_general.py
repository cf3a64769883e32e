"""Issue 18, general splitting: a pure call the tracer has no op for (np.linalg.tensorinv, cond; solve, inv, det, eigh,
svd, then qr, slogdet, pinv, matrix_rank and matrix_power became graph ops in issue 19) runs eagerly between two graphs
when nothing before it is deferred; otherwise the whole function falls back with the reason."""

from __future__ import annotations

import numpy as np
import pytest

import jitgraph


def _ridge(X, y, lam):
    A = X.T @ X + lam * np.eye(X.shape[1])
    w = np.linalg.tensorinv(A, ind=1) @ (X.T @ y)
    r = X @ w - y
    return w, (r * r).mean()


def _inv_helper(C):
    return np.linalg.tensorinv(C + np.eye(C.shape[0]), ind=1)


def _nested(X):
    C = X.T @ X
    return X @ _inv_helper(C) * 2.0


def _data(n=6, d=3, dtype=np.float64, seed=0):
    g = np.random.default_rng(seed)
    return g.standard_normal((n, d)).astype(dtype), g.standard_normal(n).astype(dtype)


def _segments(f):
    (entry,) = [e for e in f.entries if e.mode == "graph"]
    return entry.traced.split


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_solve_between_two_array_blocks_splits(dtype) -> None:
    f = jitgraph.compile(_ridge, backend="eager")
    X, y = _data(dtype=dtype)
    for _ in range(3):
        w, mse = f(X, y, 0.5)
        ew, emse = _ridge(X, y, 0.5)
        assert w.dtype == ew.dtype and type(mse) is type(emse)
        np.testing.assert_allclose(w, ew, rtol=1e-5)
        np.testing.assert_allclose(mse, emse, rtol=1e-5)
    plan = _segments(f)
    assert len(plan.segments) == 2 and len(plan.cuts) == 1
    assert "np.linalg.tensorinv() runs eagerly between graphs" in plan.cuts[0].reason
    assert f.cache_info().fallbacks == 0 and f.cache_info().hits == 2


def test_unsupported_call_inside_an_inlined_helper_splits() -> None:
    f = jitgraph.compile(_nested, backend="eager")
    X, _ = _data()
    np.testing.assert_allclose(f(X), _nested(X))
    assert len(_segments(f).segments) == 2
    assert f.cache_info().fallbacks == 0


def test_a_scalar_result_feeds_the_next_graph() -> None:
    def g(A, x):
        d = np.linalg.cond(A @ A.T + np.eye(3))
        return x / d
    f = jitgraph.compile(g, backend="eager")
    A, x = np.arange(9.0).reshape(3, 3) / 10, np.arange(3.0)
    np.testing.assert_allclose(f(A, x), g(A, x))
    assert len(_segments(f).segments) == 2


def test_singular_matrix_raises_as_eager() -> None:
    def g(A, b):
        return np.linalg.tensorinv(A * 2, ind=1) @ b + 1
    f = jitgraph.compile(g, backend="eager")
    b = np.ones(2)
    np.testing.assert_allclose(f(np.eye(2), b), g(np.eye(2), b))
    with pytest.raises(np.linalg.LinAlgError):
        f(np.zeros((2, 2)), b)
    np.testing.assert_allclose(f(np.eye(2), b), g(np.eye(2), b))


def test_a_store_before_the_call_keeps_the_whole_function_eager() -> None:
    class Obj:
        pass

    def g(o, A, b):
        o.A = A * 2
        return np.linalg.tensorinv(o.A, ind=1) @ b
    f = jitgraph.compile(g, backend="eager")
    o = Obj()
    A, b = np.eye(2) + 0.5, np.ones(2)
    np.testing.assert_allclose(f(o, A, b), g(Obj(), A, b))
    np.testing.assert_allclose(o.A, A * 2)
    assert f.cache_info().fallbacks == 1
    assert "could raise after a store" in str(f.break_reasons()[0])


def test_an_argument_write_before_the_call_keeps_the_whole_function_eager() -> None:
    def g(A, b):
        b *= 2
        return np.linalg.tensorinv(A, ind=1) @ b
    f = jitgraph.compile(g, backend="eager")
    A, b, b2 = np.eye(2) + 0.5, np.ones(2), np.ones(2)
    np.testing.assert_allclose(f(A, b), g(A, b2))
    np.testing.assert_array_equal(b, b2)
    assert f.cache_info().fallbacks == 1


def test_a_print_before_the_call_keeps_the_whole_function_eager(capsys: pytest.CaptureFixture[str]) -> None:
    def g(A, b):
        print("solving")
        return np.linalg.tensorinv(A, ind=1) @ b
    f = jitgraph.compile(g, backend="eager")
    f(np.eye(2), np.ones(2))
    assert capsys.readouterr().out.count("solving") == 1
    assert f.cache_info().fallbacks == 1


def test_input_passed_straight_to_the_call_is_not_changed() -> None:
    def g(A, b):
        return np.linalg.tensorinv(A, ind=1) @ b
    f = jitgraph.compile(g, backend="eager")
    A = np.array([[2.0, 1.0], [0.0, 3.0]])
    A0 = A.copy()
    np.testing.assert_allclose(f(A, np.ones(2)), g(A0, np.ones(2)))
    np.testing.assert_array_equal(A, A0)


def test_fullgraph_still_errors() -> None:
    f = jitgraph.compile(_ridge, backend="eager", fullgraph=True)
    X, y = _data()
    with pytest.raises(jitgraph.GraphBreakError, match="tensorinv"):
        f(X, y, 0.5)


def test_explain_shows_each_segment_and_the_reason() -> None:
    f = jitgraph.compile(_ridge, backend="eager")
    X, y = _data()
    f(X, y, 0.5)
    text = str(f.explain())
    assert "segment 0" in text and "segment 1" in text
    assert "np.linalg.tensorinv() runs eagerly between graphs" in text


def test_data_dependent_sizes_split_and_resume_with_the_reason() -> None:
    def g(x):
        return np.unique(x).sum() + x.sum()
    f = jitgraph.compile(g, backend="eager")
    x = np.array([3, 1, 3, 2])
    assert f(x) == g(x)  # np.unique runs eagerly; the rest is traced for its result's size (jit/resume.py)
    assert f.cache_info().fallbacks == 0 and not f.break_reasons()
    assert "np.unique" in str(f.explain().split_reasons[0])


def test_cpu_backend_runs_the_segments() -> None:
    f = jitgraph.compile(_ridge)
    X, y = _data()
    w, mse = f(X, y, 0.5)
    ew, emse = _ridge(X, y, 0.5)
    np.testing.assert_allclose(w, ew)
    np.testing.assert_allclose(mse, emse)


def test_a_check_after_a_pure_call_raises_as_eager() -> None:
    def g(A, x):
        d = float(np.linalg.cond(A)) - 1.0
        return x / d  # Python float division: ZeroDivisionError at d == 0.0, a check after the eager call
    f = jitgraph.compile(g, backend="eager")
    A = np.diag([2.0, 4.0])
    assert f(A, 3.0) == g(A, 3.0)
    assert len(_segments(f).segments) == 2
    with pytest.raises(ZeroDivisionError):
        f(np.eye(2) * 2, 3.0)
    assert f(A, 5.0) == g(A, 5.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_named_tuple_results_compile(dtype) -> None:
    """qr and slogdet were the named tuples that split until they became graph ops (issue 19): one graph now."""
    def pca(X, k):
        Xc = X - X.mean(axis=0)
        Q, R = np.linalg.qr(Xc)
        return Xc @ Q[:k].T, R[:k] ** 2

    def eig_whiten(C):
        res = np.linalg.slogdet(C @ C.T + np.eye(3))
        return C * res.sign / np.sqrt(res.logabsdet)

    def logdet(A):
        sign, ld = np.linalg.slogdet(A @ A.T + np.eye(3))
        q, r = np.linalg.qr(A)
        return sign * ld + q.sum() + r.trace()

    X = _data(8, 3, dtype=dtype)[0]
    for fn, args in ((pca, (X, 2)), (eig_whiten, (X[:3],)), (logdet, (X[:3],))):
        f = jitgraph.compile(fn, backend="eager")
        for _ in range(2):
            got, want = f(*args), fn(*args)
            for a, b in zip(np.atleast_1d(got) if not isinstance(got, tuple) else got,
                            np.atleast_1d(want) if not isinstance(want, tuple) else want):
                assert np.asarray(a).dtype == np.asarray(b).dtype
                np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
        assert f.cache_info().fallbacks == 0 and not f.break_reasons(), f.break_reasons()
        assert _segments(f) is None


def test_storing_a_sliced_view_of_a_computed_array() -> None:
    """A replayed store of ``Vt[:k]`` (a view whose path holds a slice, unhashable before Python 3.12)."""
    class Obj:
        pass

    def g(o, X):
        Y = X * 2
        o.top = Y[:2]
        return Y.sum()
    f = jitgraph.compile(g, backend="eager")
    o, X = Obj(), np.arange(6.0).reshape(3, 2)
    assert f(o, X) == 30.0
    np.testing.assert_array_equal(o.top, (X * 2)[:2])
    assert f.cache_info().fallbacks == 0


def test_writes_into_the_result_stay_in_the_next_graph() -> None:
    def g(A, b):
        w = np.linalg.tensorinv(A, ind=1)
        w += 1
        w[0] = 5
        return w, w.sum()
    f = jitgraph.compile(g, backend="eager")
    A, b = np.eye(2) * 2, np.ones(2)
    for _ in range(2):
        (w, s), (ew, es) = f(A, b), g(A, b)
        np.testing.assert_array_equal(w, ew)
        assert s == es
    assert f.cache_info().fallbacks == 0


def test_a_call_inside_a_data_dependent_branch_splits_at_the_branch() -> None:
    """The branch cannot become a cond (a LAPACK call in a region): it is read at run time and each path traced
    on its own (jit/resume.py), the LAPACK call then splitting the path that has it."""
    def g(A, b, x):
        if x.sum() > 0:
            y = np.linalg.tensorinv(A, ind=1) @ b
        else:
            y = b * 2
        return y + 1
    f = jitgraph.compile(g, backend="eager")
    A, b = np.eye(2) * 2, np.ones(2)
    for x in (np.ones(2), -np.ones(2)):
        np.testing.assert_array_equal(f(A, b, x), g(A, b, x))
    assert f.cache_info().fallbacks == 0 and not f.break_reasons()
    reasons = [str(r) for r in f.explain().split_reasons]
    assert "data-dependent branch" in reasons[0] and any("LAPACK" in r for r in reasons)


def _dropout_arg(x, rng, p):
    keep = rng.random(x.shape) >= p
    return np.where(keep, x / (1 - p), 0.0).sum(1)


def _randomstate_arg(x, rs):
    return (x * rs.rand(*x.shape)).sum(0)


class _Dropout:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def forward(self, x):
        mask = self.rng.random(x.shape) >= 0.5
        return np.where(mask, x * 2.0, 0.0)


RNG = np.random.default_rng(0)


def _dropout_global(x):
    return np.where(RNG.random(x.shape) >= 0.5, x, 0.0).sum()


@pytest.mark.parametrize("backend", ["eager", "cpu"])
def test_draw_from_a_generator_argument_or_attribute_splits(backend) -> None:
    """Found by a probe corpus: ``rng.random(shape)`` on a Generator passed in (``dropout(x, rng)``), a RandomState
    passed in, or one kept on ``self`` ran the whole call eagerly ("attribute 'random' of a Generator object
    without __dict__"), where the README promised a split. Each now splits around the draw, drawing from the very
    generator the call was passed (identity-guarded: another generator is a recompile), so values and generator
    states equal eager's."""
    x = np.arange(12.0).reshape(3, 4) + 1
    f = jitgraph.compile(_dropout_arg, backend=backend, cache=False)
    ge, gc = np.random.default_rng(5), np.random.default_rng(5)
    for _ in range(4):
        np.testing.assert_allclose(f(x, gc, 0.3), _dropout_arg(x, ge, 0.3), rtol=1e-12)
    assert gc.bit_generator.state == ge.bit_generator.state
    assert f.cache_info().fallbacks == 0 and f.cache_info().hits == 3
    other_e, other_c = np.random.default_rng(9), np.random.default_rng(9)
    np.testing.assert_allclose(f(x, other_c, 0.3), _dropout_arg(x, other_e, 0.3), rtol=1e-12)
    assert f.cache_info().fallbacks == 0 and len(f.entries) == 2

    r = jitgraph.compile(_randomstate_arg, backend=backend, cache=False)
    re_, rc = np.random.RandomState(3), np.random.RandomState(3)
    for _ in range(3):
        np.testing.assert_allclose(r(x, rc), _randomstate_arg(x, re_), rtol=1e-12)
    assert r.cache_info().fallbacks == 0

    eager_layer, jit_layer = _Dropout(4), _Dropout(4)
    m = jitgraph.compile(jit_layer.forward, backend=backend, cache=False)
    for _ in range(3):
        np.testing.assert_array_equal(m(x), eager_layer.forward(x))
    assert m.cache_info().fallbacks == 0 and m.cache_info().hits == 2


def test_draw_from_a_rebound_global_generator_uses_the_new_one() -> None:
    global RNG
    f = jitgraph.compile(_dropout_global, cache=False)
    x = np.arange(8.0)
    for seed in range(4):
        RNG = np.random.default_rng(seed)
        want = _dropout_global(x)
        RNG = np.random.default_rng(seed)
        assert f(x) == pytest.approx(want, rel=1e-12)
    assert f.cache_info().fallbacks == 0 and len(f.entries) == 1
