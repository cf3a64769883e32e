"""Issue 19: np.linalg.qr, slogdet, pinv, matrix_rank, matrix_power and lstsq are LAPACK graph ops (NumPy runs them
inside the compiled graph): values, dtypes, shapes and LinAlgErrors are NumPy's, stacked matrices included. lstsq
compiles while its residuals (sized by the rank of the data) are dropped; any use of them runs it eagerly with the
reason. eig/eigvals and qr(mode='raw') still break with the reason."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitgraph
from tests.tracer.helpers import assert_same
from tests.tracer.helpers import outcome_type as outcome

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

RNG = np.random.default_rng(19)
TALL = RNG.standard_normal((5, 3))
WIDE = RNG.standard_normal((3, 5))
SQUARE = RNG.standard_normal((4, 4))
STACK = RNG.standard_normal((2, 4, 3))
SQUARES = RNG.standard_normal((3, 4, 4))
INTS = (np.arange(9).reshape(3, 3) % 4 + np.eye(3, dtype=np.int64)).astype(np.int64)


def same(fn, *calls, backend="eager", compiled=True, rtol=1e-5, atol=1e-8):
    """Every call compiled == eager (values within tolerance, dtypes, shapes, named tuples, or the same exception
    type); then, with ``compiled``, graphs (one per shape) with no break and no fallback, or else no graph at all
    (None: not checked)."""
    cf = jitgraph.compile(fn, backend=backend)
    for args in calls:
        expected, exc = outcome(fn, *args)
        got, got_exc = outcome(cf, *args)
        assert got_exc == exc, f"compiled raised {got_exc}, eager {exc}"
        if exc is None:
            assert_same(expected, got, rtol=rtol, atol=atol)
    if compiled:
        assert cf.break_reasons() == [] and cf.graphs() and cf.cache_info().fallbacks == 0, \
            [str(b) for b in cf.break_reasons()]
    elif compiled is not None:
        assert cf.graphs() == [], "expected no graph"
    return cf


def only_reason(cf) -> str:
    reasons = [str(b) for b in cf.break_reasons()]
    assert reasons, "expected a break"
    return reasons[0]


# ---- qr, slogdet -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_qr_modes_and_slogdet_in_one_graph(dtype) -> None:
    def f(a, s):
        q, r = np.linalg.qr(a)
        full = np.linalg.qr(a, mode="complete")
        sign, logdet = np.linalg.slogdet(s)
        res = np.linalg.slogdet(s)
        return (q @ r, np.abs(q), full.Q.shape, full.R.shape, np.linalg.qr(a, "r"), type(full).__name__, sign,
                logdet, res.logabsdet, type(res).__name__)

    rtol = 1e-4 if dtype == np.float32 else 1e-6
    same(f, ((TALL * 3).astype(dtype), (SQUARE * 3).astype(dtype)), ((WIDE * 3).astype(dtype), INTS.astype(dtype)),
         rtol=rtol, atol=1e-5)


def test_stacked_qr_and_slogdet_and_a_singular_determinant() -> None:
    same(lambda a: (np.linalg.qr(a), np.linalg.qr(a, mode="complete"), np.linalg.qr(a, mode="r")), (STACK,))
    singular = np.stack([np.ones((3, 3)), np.eye(3), -2 * np.eye(3)])
    same(lambda s: tuple(np.linalg.slogdet(s)), (singular,), (SQUARES,))  # sign 0 and -inf for the singular one


def test_qr_raw_and_deprecated_modes_break_with_the_reason() -> None:
    cf = same(lambda a: np.linalg.qr(a, mode="raw"), (TALL,), compiled=False)
    assert "mode='raw'" in only_reason(cf)


# ---- pinv, matrix_rank -------------------------------------------------------------------------------------------
def test_pinv_keywords_stacked_and_dtypes() -> None:
    sym = SQUARE + SQUARE.T

    def f(a, s, st):
        return (np.linalg.pinv(a), np.linalg.pinv(a, rcond=0.5), np.linalg.pinv(a, rtol=0.5),
                np.linalg.pinv(s, hermitian=True), np.linalg.pinv(st), np.linalg.pinv(a.astype(np.float32)),
                np.linalg.pinv(a.astype(np.int64)))

    same(f, (TALL * 3, sym, STACK), (WIDE * 3, sym * 2, STACK[:1]), rtol=1e-4, atol=1e-5)


def test_pinv_of_an_empty_matrix_keeps_its_dtype() -> None:
    same(np.linalg.pinv, (np.zeros((0, 3), np.int64),), (np.zeros((2, 3, 0), bool),), (np.zeros((0, 3, 3), np.int64),))


def test_pinv_with_both_rcond_and_rtol_raises_numpys_error() -> None:
    with pytest.raises(ValueError, match="can't be both set"):
        jitgraph.compile(lambda a: np.linalg.pinv(a, rcond=0.1, rtol=0.1))(TALL)


def test_matrix_rank_is_an_int64_scalar_or_array() -> None:
    deficient = TALL @ RNG.standard_normal((3, 3)) @ np.diag([1.0, 1.0, 0.0])
    sym = SQUARE @ SQUARE.T

    def f(a, s, st):
        return (np.linalg.matrix_rank(a), np.linalg.matrix_rank(a, tol=0.5), np.linalg.matrix_rank(a, rtol=0.9),
                np.linalg.matrix_rank(s, hermitian=True), np.linalg.matrix_rank(st),
                np.linalg.matrix_rank(st.astype(np.float32)), np.linalg.matrix_rank(np.zeros((3, 3))))

    cf = same(f, (TALL, sym, STACK), (deficient, sym, STACK))
    assert cf.break_reasons() == []
    assert type(cf(TALL, sym, STACK)[0]) is np.int64


def test_matrix_rank_of_a_vector_breaks_with_the_reason() -> None:
    cf = same(np.linalg.matrix_rank, (np.arange(3.0),), (np.zeros(3),), compiled=False)
    assert "Python int" in only_reason(cf)


def test_traced_scalar_tolerances_compile() -> None:
    b = TALL[:, 0].copy()

    def f(a, t):
        return (np.linalg.pinv(a, rcond=t), np.linalg.pinv(a, rtol=t), np.linalg.matrix_rank(a, tol=t),
                np.linalg.matrix_rank(a, rtol=t), np.linalg.lstsq(a, b, rcond=t)[0])

    cf = same(f, (TALL, 0.3), (TALL, 0.9), (TALL.astype(np.float32), np.float32(0.5)), (TALL, 2))
    assert cf.break_reasons() == []


def test_tolerances_from_array_data_break_with_the_reason() -> None:
    cf = same(lambda a, t: np.linalg.pinv(a, rcond=t), (STACK, np.array([0.1, 0.2])), compiled=False)
    assert "rcond=" in only_reason(cf)


# ---- matrix_power --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [-3, -1, 0, 2, 3, 5, 8])
def test_matrix_power_exponents(n) -> None:
    same(lambda a, b: (np.linalg.matrix_power(a, n), np.linalg.matrix_power(b, n)), (SQUARE, INTS),
         (SQUARES, INTS.astype(np.float32)), rtol=1e-4)


def test_matrix_power_one_is_the_argument_itself() -> None:
    cf = jitgraph.compile(lambda a: np.linalg.matrix_power(a, 1))
    assert cf(SQUARE) is SQUARE  # NumPy returns a itself, no copy
    assert np.linalg.matrix_power(SQUARE, 1) is SQUARE


@pytest.mark.parametrize("call", [
    lambda a: np.linalg.matrix_power(a, -1),  # singular: LinAlgError from the eager rerun
    lambda a: np.linalg.matrix_power(a[:, :2], 2),  # not square
    lambda a: np.linalg.matrix_power(a[0], 2),  # 1-D
    lambda a: np.linalg.matrix_power(a, 2.0),  # TypeError: exponent must be an integer
    lambda a: np.linalg.slogdet(a[:, :2]),
    lambda a: np.linalg.qr(a[0]),
    lambda a: np.linalg.pinv(a[0]),
    lambda a: np.linalg.matrix_rank(a.astype(np.float16)),
])
def test_errors_are_numpys(call) -> None:
    same(call, (np.ones((3, 3)),), compiled=None)


def test_a_singular_inverse_power_raises_and_recovers() -> None:
    f = jitgraph.compile(lambda a: np.linalg.matrix_power(a, -2) + 1, backend="cpu")
    np.testing.assert_allclose(f(SQUARE), np.linalg.matrix_power(SQUARE, -2) + 1)
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        f(np.ones((4, 4)))
    np.testing.assert_allclose(f(2 * SQUARE), np.linalg.matrix_power(2 * SQUARE, -2) + 1)


# ---- lstsq ---------------------------------------------------------------------------------------------------------
def _lstsq_first(a, b):
    return np.linalg.lstsq(a, b, rcond=None)[0]


def _lstsq_star(a, b):
    x, *_ = np.linalg.lstsq(a, b)
    return x * 2


def _lstsq_names(a, b):
    x, residuals, rank, s = np.linalg.lstsq(a, b)  # noqa: RUF059 - the pattern under test: residuals unused
    return x, rank, s, np.linalg.lstsq(a, b, rcond=0.5)[2]


@pytest.mark.parametrize("fn", [_lstsq_first, _lstsq_star, _lstsq_names])
def test_lstsq_with_the_residuals_dropped_is_one_graph(fn) -> None:
    deficient = np.hstack([TALL, TALL[:, :1]])
    b2 = RNG.standard_normal((5, 2))
    cf = same(fn, (TALL, TALL[:, 0] + 1), (TALL.astype(np.float32), b2.astype(np.float32)), (deficient, b2),
              (INTS, INTS[:, 0].copy()), (WIDE, WIDE[:, 0].copy()), rtol=1e-4, atol=1e-5)
    assert cf.break_reasons() == []


@pytest.mark.parametrize("use", [
    lambda r: r[1],
    lambda r: r[1].sum() + r[0].sum(),
    lambda r: r[1].shape,
    lambda r: len(r[1]),
    lambda r: r,
    lambda r: [*r],
])
def test_using_the_residuals_runs_lstsq_eagerly_with_the_reason(use) -> None:
    full, deficient = TALL, np.hstack([TALL, TALL[:, :1]])  # residuals of shape (1,) and (0,)
    cf = same(lambda a, b: use(np.linalg.lstsq(a, b)), (full, full[:, 0] + 1), (deficient, full[:, 0] + 1),
              compiled=False)
    reason = only_reason(cf)
    assert "np.linalg.lstsq" in reason and "residuals" in reason and "rank" in reason


def test_lstsq_before_a_data_dependent_cut_runs_eagerly_with_the_reason() -> None:
    def f(a, b):
        x = np.linalg.lstsq(a, b)[0]
        return x * 2, np.unique(np.round(a))

    cf = same(f, (TALL, TALL[:, 0] + 1), compiled=False)
    assert "np.linalg.lstsq" in only_reason(cf) and "cut later" in only_reason(cf)


def test_lstsq_residuals_dtype_and_ndim_are_known() -> None:
    def f(a, b):
        _, res, _, _ = np.linalg.lstsq(a, b)
        return res.dtype, res.ndim

    cf = same(f, (TALL, TALL[:, 0].copy()), (TALL.astype(np.float32), TALL[:, 0].astype(np.float32)))
    assert cf.break_reasons() == []


@pytest.mark.parametrize("call", [
    lambda a: np.linalg.lstsq(a, a[:2, 0])[0],  # Incompatible dimensions
    lambda a: np.linalg.lstsq(a[None], a[:, 0])[0],  # stacked: NumPy's lstsq takes 2-D only
    lambda a: np.linalg.lstsq(a, a[None])[0],
])
def test_lstsq_errors_are_numpys(call) -> None:
    same(call, (TALL,), compiled=None)


def test_eig_still_breaks_with_the_reason() -> None:
    cf = same(np.linalg.eig, (SQUARE,), compiled=False)
    assert "real or complex" in only_reason(cf)


# ---- together, on the cpu backend ------------------------------------------------------------------------------------
def test_all_between_kernels_on_the_cpu() -> None:
    def f(a, b, s):
        q, r = np.linalg.qr(a * 2)
        x = np.linalg.lstsq(a, b)[0]
        sign, logdet = np.linalg.slogdet(s + 1)
        return (q @ r + 1, np.linalg.pinv(a) @ b, x * 3, sign * logdet, np.linalg.matrix_rank(s),
                np.linalg.matrix_power(s, 3) - 1)

    cf = same(f, (TALL, TALL[:, 0].copy(), SQUARES), (TALL * 2, TALL[:, 1].copy(), SQUARES * 0.5), backend="cpu", rtol=1e-6)
    assert cf.break_reasons() == []


@settings(max_examples=12)
@given(m=st.integers(1, 5), n=st.integers(1, 5), batch=st.sampled_from([(), (2,)]), k=st.integers(0, 2),
       seed=st.integers(0, 2**16))
def test_shapes_match_numpy(m, n, batch, k, seed) -> None:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (m, n))
    sq = rng.standard_normal(batch + (n, n))
    b = rng.standard_normal((m, k)) if k else rng.standard_normal(m)

    def f(a, sq, b):
        out = (np.linalg.qr(a), np.linalg.qr(a, "complete"), np.linalg.pinv(a), np.linalg.matrix_rank(a),
               tuple(np.linalg.slogdet(sq)), np.linalg.matrix_power(sq, 4))
        return out + ((np.linalg.lstsq(a, b)[0], np.linalg.lstsq(a, b)[3]) if not batch else ())

    same(f, (a, sq, b), rtol=1e-5, atol=1e-6)
