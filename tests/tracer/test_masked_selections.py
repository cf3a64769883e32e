"""Issue 19: a boolean-mask read or ``np.unique`` whose result is only reduced stays in the graph (one graph, no
cut) as a lazy selection (jitgraph/tracer/selections.py); any other use cuts at that site as before (resume.py).
Everything is compared with eager NumPy: types, dtypes, shapes, values, exceptions, mutated arguments."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import jitgraph
from jitgraph.errors import JitgraphError
from tests.realworld import corpus

DTYPES = [np.bool_, np.int8, np.int32, np.int64, np.uint8, np.float32, np.float64]


def _outcome(fn, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's "Mean of empty slice": the compiled code does not warn
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001
            return exc


def _same(expected, actual, path="result"):
    if isinstance(expected, Exception):
        assert type(actual) is type(expected), f"{path}: {actual!r} != {expected!r}"
        return
    assert type(actual) is type(expected), f"{path}: {type(actual)} != {type(expected)}"
    if isinstance(expected, tuple | list):
        assert len(actual) == len(expected), path
        for i, (e, a) in enumerate(zip(expected, actual)):
            _same(e, a, f"{path}[{i}]")
    elif isinstance(expected, np.ndarray | np.generic):
        assert actual.dtype == expected.dtype and np.shape(actual) == np.shape(expected), path
        tol = 1e-5 if expected.dtype.kind in "fc" and expected.dtype.itemsize <= 4 else 1e-12
        np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol, equal_nan=True, err_msg=path)
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


def _check(compiled, fn, *args):
    """Eager and compiled on copies: the same result (or exception) and the same arguments afterwards."""
    a, b = copy.deepcopy(args), copy.deepcopy(args)
    _same(_outcome(fn, a), _outcome(compiled, b))
    _same(list(a), list(b), "arguments")


def _one_graph(compiled):
    result = compiled.explain()
    assert compiled.cache_info().fallbacks == 0 and result.break_reasons == [] and result.split_reasons == [], \
        (result.break_reasons, result.split_reasons)


def _split(compiled, what="boolean mask read"):
    result = compiled.explain()
    assert result.break_reasons == [] and any(what in str(r) for r in result.split_reasons), \
        (result.break_reasons, result.split_reasons)


# ---- the corpus functions: one graph --------------------------------------------------------------------------
def test_corpus_functions_are_one_graph_on_cpu():
    X = np.random.default_rng(0).standard_normal((5, 4))
    for fn, calls in ((corpus.count_classes, [(np.array([0, 2, 2, 1, 0]), X), (np.array([1, 1, 1, 1, 1]), X)]),
                      (corpus.positive_sum, [(X,), (-np.abs(X),)])):
        compiled = jitgraph.compile(fn)
        for args in calls:
            _check(compiled, fn, *args)
        assert compiled.cache_info().misses == 1
        _one_graph(compiled)


# ---- masked reductions against eager, random data -------------------------------------------------------------
def r_sum(x, m):
    return x[m].sum()


def r_np_sum(x, m):
    return np.sum(x[m])


def r_mean(x, m):
    return x[m].mean()


def r_lengths(x, m):
    sel = x[m]
    return len(sel), sel.size, sel.shape[0], sel.shape, sel.ndim, sel.dtype


def r_count_nonzero(x, m):
    return np.count_nonzero(x[m])


def r_squares(x, m):
    return ((x[m] - 1) ** 2).sum()


def r_ratio(x, m):
    return x[m].sum() / len(x[m])


def r_same_mask(x, m):
    w = np.linspace(-1.0, 1.0, x.shape[0])
    return (np.abs(x[m]) * w[m]).sum(), (x[m] > 0).sum()


def r_any_all(x, m):
    return x[m].any(), x[m].all(), np.any(x[m] > 1)


REDUCTIONS = [r_sum, r_np_sum, r_mean, r_lengths, r_count_nonzero, r_squares, r_ratio, r_same_mask, r_any_all]
COMPILED = {fn: jitgraph.compile(fn, backend="eager", cache_limit=64) for fn in REDUCTIONS}


@st.composite
def masked_data(draw):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    n = 6
    if dtype.kind == "f":
        values = draw(st.lists(st.one_of(st.floats(-4, 4, width=32), st.just(float("nan")), st.just(-0.0)),
                               min_size=n, max_size=n))
    else:
        values = draw(st.lists(st.integers(0 if dtype.kind in "bu" else -4, 1 if dtype.kind == "b" else 4),
                               min_size=n, max_size=n))
    kind = draw(st.sampled_from(["random", "none", "all"]))
    mask = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))) if kind == "random" else \
        np.full(n, kind == "all")
    return np.array(values).astype(dtype), mask


@given(data=masked_data(), fn=st.sampled_from(REDUCTIONS))
def test_masked_reductions_match_eager(data, fn):
    x, m = data
    _check(COMPILED[fn], fn, x, m)
    _one_graph(COMPILED[fn])


def rows(X, m):
    return X[m].sum(axis=0), X[m].mean(), len(X[m]), X[m].size, X[m].shape, (X[m] - X.mean(axis=0)).sum()


@pytest.mark.parametrize("mask", [[True, False, True, True], [False] * 4, [True] * 4])
def test_a_mask_over_rows(mask):
    compiled = jitgraph.compile(rows, backend="eager")
    X = np.arange(12.0).reshape(4, 3) - 5
    _check(compiled, rows, X, np.array(mask))
    _one_graph(compiled)


def test_empty_mean_is_nan_compiled_on_cpu():
    """NumPy returns NaN and warns "Mean of empty slice"; the compiled graph returns NaN without the warning (as
    compiled arithmetic never warns), and never raises."""
    compiled = jitgraph.compile(r_mean)
    x = np.array([1.0, -2.0, 3.0])
    _check(compiled, r_mean, x, np.zeros(3, bool))
    _check(compiled, r_mean, x, x > 0)
    _one_graph(compiled)


# ---- np.unique counted ----------------------------------------------------------------------------------------
def u_count(y):
    u = np.unique(y)
    return len(u), u.size, u.shape[0], u.shape, u.ndim


def u_count_nan_apart(y):
    return len(np.unique(y, equal_nan=False))


U_COMPILED = {fn: jitgraph.compile(fn, backend="eager", cache_limit=64) for fn in (u_count, u_count_nan_apart)}


@st.composite
def unique_data(draw):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    shape = draw(st.sampled_from([(0,), (1,), (5,), (2, 3)]))
    n = int(np.prod(shape))
    if dtype.kind == "f":
        pool = st.sampled_from([0.0, -0.0, 1.0, -1.5, 2.0, float("nan"), float("inf")])
    else:
        pool = st.integers(0, 1) if dtype.kind == "b" else st.integers(0, 3)
    return np.array(draw(st.lists(pool, min_size=n, max_size=n)), dtype=dtype).reshape(shape)


@given(y=unique_data(), fn=st.sampled_from(list(U_COMPILED)))
def test_unique_counts_match_eager(y, fn):
    _check(U_COMPILED[fn], fn, y)
    _one_graph(U_COMPILED[fn])


# ---- any other use cuts there, as before, and stays exact -----------------------------------------------------
def returned(x):
    return x[x > 0] * 2.0


def indexed(x):
    return x[x > 0][0]


def max_of(x):
    return x[x > 0].max()


def helper_call(x):
    return np.sort(x[x > 0]).sum()


def aliased_inplace(x):
    s = x[x > 0]
    t = s
    s += 1.0  # NumPy updates the one copy both names hold
    return t.sum()


def written_after(x, out):
    out += 1.0
    s = x[x > 0]
    return s[:2].sum()


def unique_values(y):
    return np.unique(y) * 2


class Holder:
    pass


def stored(h, x):
    h.kept = x[x > 0]
    return h.kept.sum()


@pytest.mark.parametrize("fn, what", [(returned, "mask"), (indexed, "mask"), (max_of, "mask"), (helper_call, "mask"),
                                      (aliased_inplace, "mask"), (unique_values, "np.unique")])
def test_other_uses_cut_and_match_eager(fn, what):
    compiled = jitgraph.compile(fn, backend="eager")
    for x in (np.array([1.0, -2.0, 3.0, 0.5]), np.array([-1.0, -2.0, -3.0, -0.5])):
        _check(compiled, fn, x)
    _split(compiled, what)


def test_a_cut_after_a_write_runs_the_write_once():
    compiled = jitgraph.compile(written_after, backend="eager")
    _check(compiled, written_after, np.array([1.0, -2.0, 3.0, 0.5]), np.zeros(2))
    _split(compiled)


def test_stored_selection_cuts():
    compiled = jitgraph.compile(stored, backend="eager")
    x = np.array([1.0, -2.0, 3.0])
    h1, h2 = Holder(), Holder()
    _same(stored(h1, x.copy()), compiled(h2, x.copy()))
    _same(h1.kept, h2.kept)
    _split(compiled)


# ---- regions, later cuts, fullgraph ---------------------------------------------------------------------------
def in_cond_and_loop(x):
    s = x[x > 0]
    total = 0.0
    for i in range(3):
        total = total + s.sum() * i
    if s.sum() > 1.0:
        total = total + s.mean()
    return total


def elementwise_in_loop(x):
    s = x[x > 0]
    total = 0.0
    for i in range(3):
        total = total + (s * i).sum()
    return total


def then_nonzero(x):
    s = x[x > 0]
    (idx,) = np.nonzero(x < 0)
    return s.sum() + idx.sum()


def test_reductions_inside_regions_are_one_graph():
    compiled = jitgraph.compile(in_cond_and_loop, backend="eager")
    for x in (np.array([1.0, -2.0, 3.0]), np.array([0.1, -2.0, 0.2])):
        _check(compiled, in_cond_and_loop, x)
    _one_graph(compiled)


@pytest.mark.parametrize("fn, what", [(elementwise_in_loop, "mask"), (then_nonzero, "np.nonzero")])
def test_new_selections_in_regions_and_later_cuts_split(fn, what):
    compiled = jitgraph.compile(fn, backend="eager")
    for x in (np.array([1.0, -2.0, 3.0]), np.array([-0.1, -2.0, 0.2])):
        _check(compiled, fn, x)
    _split(compiled, what)


def test_fullgraph():
    compiled = jitgraph.compile(corpus.positive_sum, fullgraph=True, backend="eager")
    _check(compiled, corpus.positive_sum, np.array([1.0, -2.0, 3.0]))
    with pytest.raises(JitgraphError):
        jitgraph.compile(returned, fullgraph=True, backend="eager")(np.array([1.0, -2.0]))


# ---- the Python ints len()/.size/.shape give ------------------------------------------------------------------
def count_in_floats(x):
    return x.sum() / len(x[x > 0]), len(x[x > 0]) > 1, np.arange(3) + len(x[x > 0]), len(x[x > 0]) + len(x[x < 0])


def count_times_int8(x):
    return np.ones(3, np.int8) * len(x[x > 0])  # NumPy: OverflowError for a Python int beyond int8


def count_times_huge(x):
    return len(x[x > 0]) * 2**62  # a Python int beyond int64


def count_repeats_list(x):
    return [0, 1] * len(x[x > 0])


def test_counts_in_float_and_int64_arithmetic_are_one_graph():
    compiled = jitgraph.compile(count_in_floats, backend="eager")
    for x in (np.array([1.0, -2.0, 3.0]), -np.ones(3)):
        _check(compiled, count_in_floats, x)
    _one_graph(compiled)


@pytest.mark.parametrize("fn", [count_times_int8, count_times_huge, count_repeats_list])
def test_counts_where_int64_could_differ_from_python_cut(fn):
    compiled = jitgraph.compile(fn, backend="eager")
    for x in (np.ones(200), np.array([1.0, -2.0, 3.0])):
        _check(compiled, fn, x)
    assert compiled.explain().split_reasons or compiled.explain().break_reasons
