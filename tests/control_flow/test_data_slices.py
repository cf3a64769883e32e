"""Slices whose bounds are array data (``data[indptr[i]:indptr[i + 1]]``, the CSR idiom) and gathers through them
(``x[indices[start:end]]``) inside loop regions: one compiled graph, checked against eager NumPy for values, dtypes,
Python's slice rules and NumPy's exceptions (issue 19).

Compiles are the cost here (each one is a Numba compile), so every compiled function keeps one argument shape:
random CSR matrices are padded to a fixed number of stored entries (entries past ``indptr[-1]`` are never read).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import jitgraph

ROWS, COLS, CAPACITY = 7, 6, 24


def csr_spmv(data, indices, indptr, x):
    n = indptr.shape[0] - 1
    y = np.zeros(n)
    for i in range(n):
        start, end = indptr[i], indptr[i + 1]
        y[i] = np.dot(data[start:end], x[indices[start:end]])
    return y


def shifted_rows(data, indices, indptr, x):
    """Bounds through int(), negative and past-the-end bounds (Python's slice rules), elementwise ops, np.sum."""
    out = np.zeros(indptr.shape[0] - 1, dtype=data.dtype)
    for i in range(indptr.shape[0] - 1):
        start, end = int(indptr[i]) - 3, int(indptr[i + 1]) + 2
        out[i] = np.sum(data[start:end] * 2.0 - x[indices[start:end]])
    return out


def scaled_copy(data, indices, indptr, x):
    """Slice assignment of a gather: out[start:end] = data[start:end] * x[indices[start:end]]."""
    out = np.zeros_like(data)
    for i in range(indptr.shape[0] - 1):
        start, end = indptr[i], indptr[i + 1]
        out[start:end] = data[start:end] * x[indices[start:end]]
    return out


def mismatched(data, indices, indptr, x):
    y = np.zeros(indptr.shape[0] - 1)
    for i in range(indptr.shape[0] - 1):
        y[i] = data[indptr[i]:indptr[i + 1]] @ x[indices[indptr[i]:indptr[i + 1] + 1]]
    return y


def scatter(data, indices, indptr, x):
    y = np.zeros_like(x)
    for i in range(indptr.shape[0] - 1):
        y[indices[indptr[i]:indptr[i + 1]]] = 1.0
    return y


def top_level(data, indices, indptr, x):
    """Outside a loop: each view is lowered to a loop of its own."""
    return np.dot(data[indptr[0]:indptr[1]], x[indices[indptr[0]:indptr[1]]]) + np.sum(data[indptr[2]:indptr[3]])


def rows_to_list(data, indices, indptr, x):
    """A side effect on a list: the loop is unrolled, so its views would be lowered one loop per row."""
    out = []
    for i in range(indptr.shape[0] - 1):
        out.append(np.dot(data[indptr[i]:indptr[i + 1]], x[indices[indptr[i]:indptr[i + 1]]]))
    return out


def random_csr(counts: list[int], columns: list[int], values: list[float], index_dtype: type, data_dtype: type,
               x_seed: int = 0) -> tuple[np.ndarray, ...]:
    """A ROWS x COLS CSR matrix with ``counts[r]`` stored entries in row r (0 makes an empty row), padded to
    CAPACITY stored entries."""
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(index_dtype)
    indices = np.array((columns * CAPACITY)[:CAPACITY]).astype(index_dtype)
    data = np.array((values * CAPACITY)[:CAPACITY], dtype=data_dtype)
    x = np.random.default_rng(x_seed).standard_normal(COLS).astype(data_dtype)
    return data, indices, indptr, x


def check(compiled, fn, args: tuple[np.ndarray, ...]) -> None:
    """Same value, dtype and shape as eager NumPy (or the same exception type); arguments unchanged alike."""
    eager_args, jit_args = [a.copy() for a in args], [a.copy() for a in args]
    try:
        want = fn(*eager_args)
    except Exception as exc:  # noqa: BLE001 - the compiled call must raise the same type
        with pytest.raises(type(exc)):
            compiled(*jit_args)
        return
    got = compiled(*jit_args)
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 1e-5 if want.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    for a, b in zip(eager_args, jit_args):
        np.testing.assert_array_equal(a, b)


def one_graph(compiled, raises: bool = False) -> None:
    """One compiled graph served every call. A graph that raised may have been rerun eagerly (a fallback: NumPy
    then raised the same, or the entry would have been demoted to eager mode)."""
    assert compiled.break_reasons() == []
    info = compiled.cache_info()
    assert info.misses == 1 and (raises or info.fallbacks == 0), info
    assert [e.mode for e in compiled.entries] == ["graph"]


def test_corpus_function_is_one_graph() -> None:
    compiled = jitgraph.compile(csr_spmv, backend="cpu")
    for seed in range(3):
        rng = np.random.default_rng(seed)
        counts = [0, 3, 1, 0, 6, 2, 4]  # empty rows first, in the middle and full rows; sum <= CAPACITY
        args = random_csr(counts, list(rng.integers(0, COLS, 20)), list(rng.standard_normal(20)), np.int64,
                          np.float64, seed)
        check(compiled, csr_spmv, args)
    one_graph(compiled)
    assert compiled.cache_info().hits == 2


@pytest.mark.parametrize(("index_dtype", "data_dtype"), [(np.int32, np.float32), (np.uint64, np.float64)])
def test_index_and_data_dtypes(index_dtype: type, data_dtype: type) -> None:
    compiled = jitgraph.compile(shifted_rows, backend="cpu")
    rng = np.random.default_rng(1)
    for counts in ([2, 0, 5, 1, 0, 3, 4], [0] * ROWS):
        args = random_csr(counts, list(rng.integers(0, COLS, 20)), list(rng.standard_normal(20)), index_dtype,
                          data_dtype)
        check(compiled, shifted_rows, args)
    one_graph(compiled)


def test_out_of_range_and_negative_indices() -> None:
    """x[indices[...]] wraps -1 to the last column and raises NumPy's IndexError past either end."""
    compiled = jitgraph.compile(scaled_copy, backend="cpu")
    counts = [2, 1, 0, 3, 1, 0, 2]
    for bad in (-1, -COLS, COLS, -COLS - 1, 10**6):
        args = random_csr(counts, [0, 1, 2, bad, 4, 5, 3], [1.5, -2.0, 0.5], np.int64, np.float64)
        check(compiled, scaled_copy, args)
    one_graph(compiled, raises=True)


def test_mismatched_lengths_raise_value_error() -> None:
    compiled = jitgraph.compile(mismatched, backend="cpu")
    args = random_csr([1, 2, 0, 1, 1, 2, 1], [0, 1, 2, 3], [1.0, 2.0], np.int64, np.float64)
    with pytest.raises(ValueError):
        mismatched(*args)
    check(compiled, mismatched, args)
    one_graph(compiled, raises=True)


def test_top_level_is_one_graph() -> None:
    compiled = jitgraph.compile(top_level, backend="cpu")
    for counts in ([2, 0, 5, 1, 0, 3, 4], [0, 3, 1, 0, 6, 2, 4]):
        check(compiled, top_level, random_csr(counts, [0, 5, 2, -1, 3], [1.5, -2.0, 0.5], np.int64, np.float64))
    one_graph(compiled)


@pytest.mark.parametrize(("fn", "reason"), [(scatter, "scatter"), (rows_to_list, "more than 8 slices")])
def test_unsupported_forms_break_with_a_reason(fn, reason: str) -> None:
    compiled = jitgraph.compile(fn, backend="cpu")
    args = random_csr([1, 2, 0, 1, 1, 2, 1], [0, 1, 2, 3], [1.0, 2.0], np.int64, np.float64)
    got, want = compiled(*args), fn(*args)
    np.testing.assert_allclose(got, want)
    (found,) = {r.reason for r in compiled.break_reasons()}
    assert reason in found


def test_float_bound_raises_type_error_like_numpy() -> None:
    def float_bound(data, bounds):
        total = 0.0
        for i in range(bounds.shape[0] - 1):
            total += np.sum(data[bounds[i]:bounds[i + 1]])
        return total

    compiled = jitgraph.compile(float_bound, backend="cpu")
    args = (np.arange(20.0), np.linspace(0.0, 20.0, 20))
    with pytest.raises(TypeError):
        float_bound(*args)
    with pytest.raises(TypeError):
        compiled(*args)


_COMPILED_SPMV = jitgraph.compile(csr_spmv, backend="cpu")


@given(counts=st.lists(st.integers(0, CAPACITY // ROWS), min_size=ROWS, max_size=ROWS),
       columns=st.lists(st.integers(-COLS, COLS - 1), min_size=1, max_size=CAPACITY),
       values=st.lists(st.floats(-10, 10), min_size=1, max_size=CAPACITY), seed=st.integers(0, 100))
def test_random_csr_matches_numpy(counts: list[int], columns: list[int], values: list[float], seed: int) -> None:
    """Random row lengths (empty rows included), columns (negative ones wrap) and values: one compile for all."""
    check(_COMPILED_SPMV, csr_spmv, random_csr(counts, columns, values, np.int64, np.float64, seed))
    assert _COMPILED_SPMV.break_reasons() == [] and _COMPILED_SPMV.cache_info().misses == 1


def gather_into_itself(x, indices, indptr):
    for i in range(indptr.shape[0] - 1):
        start, end = indptr[i], indptr[i + 1]
        x[start:end] = x[indices[start:end]] * 2.0 + 1.0  # NumPy gathers (a copy) before it stores
    return x


def test_gather_reads_the_array_before_the_assignment() -> None:
    compiled = jitgraph.compile(gather_into_itself, backend="cpu")
    args = (np.arange(12.0), np.array([3, 2, 1, 0, 11, 10, 9, 8, 1, 1, -2, 2]), np.array([0, 4, 8, 12]))
    check(compiled, gather_into_itself, args)
    one_graph(compiled)
